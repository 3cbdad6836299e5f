/* transform.h — per-sample transforms applied while a batch is assembled:
 * u8 pixels -> float, normalized as (v/255 - mean) / std (torchvision's
 * ToTensor + Normalize), with optional random-crop-with-padding augmentation
 * (torchvision's RandomCrop(28, padding=P): pad P zero pixels on every side,
 * cut a random 28x28 window).
 *
 * The crop offset for a sample is a pure function of (seed, epoch, dataset
 * index), so a batch is identical whichever loader thread builds it.
 * Not here: which samples make a batch (sampler.c, loader.c).
 */
#ifndef XT_DATA_TRANSFORM_H
#define XT_DATA_TRANSFORM_H

#include <stdint.h>

typedef struct xt_transform {
    float lut[256];   /* normalized value of each pixel byte */
    int rows, cols;   /* image size */
    int pad;          /* random-crop padding P; 0 = no augmentation */
    uint64_t seed;
} xt_transform;

void xt_transform_init(xt_transform *t, int rows, int cols, double mean, double std, int pad, uint64_t seed);

/* dst (rows*cols floats) = transform(src) for dataset sample `index` in `epoch`. */
void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index);

/* The crop offsets chosen for (epoch, index), each in [0, 2P]; (P, P) is the
 * identity. Exposed for tests. */
void xt_transform_crop_offset(const xt_transform *t, int64_t epoch, int64_t index, int *dy, int *dx);

#endif
