/* transform.h — per-sample transforms applied while a batch is assembled:
 * u8 pixels -> float, normalized per channel as (v/255 - mean[c]) / std[c]
 * (torchvision's ToTensor + Normalize), with optional augmentation:
 * random crop with padding (torchvision's RandomCrop(size, padding=P): pad P
 * zero pixels on every side, cut a random window of the original size) and
 * random horizontal flip (RandomHorizontalFlip(0.5)), in that order, as the
 * usual CIFAR-10 recipe composes them; or, instead of the padded crop, a
 * random resized crop (torchvision's RandomResizedCrop(size, scale, ratio):
 * a window of a random share of the area and aspect ratio, resampled back
 * to the image's size by image_resize.c's filters) before the flip, as the
 * usual ImageNet recipe composes them.
 *
 * The crop offsets and the flip for a sample are a pure function of (seed,
 * epoch, dataset index) — the index is the sample's place in the whole
 * dataset, the same in every worker process — so a batch is identical
 * whichever loader thread or worker builds it. The offsets are drawn first
 * and the flip after them from the same stream, so turning the flip on does
 * not move any crop. The resized crop's window is a pure function of the
 * same key drawn from its own stream, so it moves neither.
 * Not here: which samples make a batch (sampler.c, loader.c).
 */
#ifndef XT_DATA_TRANSFORM_H
#define XT_DATA_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#define XT_TRANSFORM_MAX_CHANNELS 3

typedef struct xt_transform {
    float lut[XT_TRANSFORM_MAX_CHANNELS][256]; /* normalized value of each pixel byte, per channel */
    int channels, rows, cols;                  /* image shape, channel-planar */
    int pad;                                   /* random-crop padding P; 0 = no crop */
    int flip;                                  /* 1 = random horizontal flip */
    uint64_t seed;
    int resized;                               /* 1 = random resized crop (then pad is 0) */
    double scale[2], log_ratio[2];             /* its area share [a, b] and log aspect (w/h) range */
} xt_transform;

/* mean and std: `channels` entries each (1..XT_TRANSFORM_MAX_CHANNELS). */
void xt_transform_init(xt_transform *t, int channels, int rows, int cols, const double *mean, const double *std,
                       int pad, int flip, uint64_t seed);

/* Turn on the random resized crop: scale = [a, b] with 0 < a <= b <= 1,
 * ratio = [r0, r1] with 0 < r0 <= r1 (width / height), as torchvision takes
 * them (the caller validates). Replaces the padded crop (pad becomes 0). */
void xt_transform_set_resized_crop(xt_transform *t, const double scale[2], const double ratio[2]);

/* Bytes of per-caller scratch xt_transform_apply needs (0 without the
 * resized crop). Each thread that applies the transform at the same time
 * needs its own. */
size_t xt_transform_scratch_bytes(const xt_transform *t);

/* dst (channels*rows*cols floats) = transform(src) for dataset sample
 * `index` in `epoch`. scratch: xt_transform_scratch_bytes of it, float-aligned,
 * or NULL when that is 0. Allocates nothing. */
void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index,
                        void *scratch);

/* The crop offsets chosen for (epoch, index), each in [0, 2P] ((P, P) is the
 * identity), and whether the sample is flipped. Exposed for tests. */
void xt_transform_choice(const xt_transform *t, int64_t epoch, int64_t index, int *dy, int *dx, int *flipped);

/* The resized crop's window for (epoch, index): rows [*y, *y + *h) and
 * columns [*x, *x + *w) of the image, chosen as torchvision's
 * RandomResizedCrop.get_params (ten tries at a random area and aspect, then
 * the centre crop clamped to the ratio range). The whole image without the
 * resized crop. Exposed for tests. */
void xt_transform_resized_box(const xt_transform *t, int64_t epoch, int64_t index, int *y, int *x, int *h, int *w);

#endif
