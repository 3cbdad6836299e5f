/* transform.h — per-sample transforms applied while a batch is assembled:
 * u8 pixels -> float, normalized per channel as (v/255 - mean[c]) / std[c]
 * (torchvision's ToTensor + Normalize), with optional augmentation:
 * random crop with padding (torchvision's RandomCrop(size, padding=P): pad P
 * zero pixels on every side, cut a random window of the original size) and
 * random horizontal flip (RandomHorizontalFlip(0.5)), in that order, as the
 * usual CIFAR-10 recipe composes them.
 *
 * The crop offsets and the flip for a sample are a pure function of (seed,
 * epoch, dataset index) — the index is the sample's place in the whole
 * dataset, the same in every worker process — so a batch is identical
 * whichever loader thread or worker builds it. The offsets are drawn first
 * and the flip after them from the same stream, so turning the flip on does
 * not move any crop.
 * Not here: which samples make a batch (sampler.c, loader.c).
 */
#ifndef XT_DATA_TRANSFORM_H
#define XT_DATA_TRANSFORM_H

#include <stdint.h>

#define XT_TRANSFORM_MAX_CHANNELS 3

typedef struct xt_transform {
    float lut[XT_TRANSFORM_MAX_CHANNELS][256]; /* normalized value of each pixel byte, per channel */
    int channels, rows, cols;                  /* image shape, channel-planar */
    int pad;                                   /* random-crop padding P; 0 = no crop */
    int flip;                                  /* 1 = random horizontal flip */
    uint64_t seed;
} xt_transform;

/* mean and std: `channels` entries each (1..XT_TRANSFORM_MAX_CHANNELS). */
void xt_transform_init(xt_transform *t, int channels, int rows, int cols, const double *mean, const double *std,
                       int pad, int flip, uint64_t seed);

/* dst (channels*rows*cols floats) = transform(src) for dataset sample `index` in `epoch`. */
void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index);

/* The crop offsets chosen for (epoch, index), each in [0, 2P] ((P, P) is the
 * identity), and whether the sample is flipped. Exposed for tests. */
void xt_transform_choice(const xt_transform *t, int64_t epoch, int64_t index, int *dy, int *dx, int *flipped);

#endif
