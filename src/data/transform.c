/* transform.c — normalization, random crop and flip; see transform.h. */
#include "data/transform.h"

#include <stddef.h>

#include "data/rng.h"

void xt_transform_init(xt_transform *t, int channels, int rows, int cols, const double *mean, const double *std,
                       int pad, int flip, uint64_t seed) {
    /* A 256-entry table per channel turns the per-pixel divide into a load,
     * and makes the padded border value exactly lut[c][0], as torchvision
     * pads before Normalize. */
    t->channels = channels < 1 ? 1 : channels > XT_TRANSFORM_MAX_CHANNELS ? XT_TRANSFORM_MAX_CHANNELS : channels;
    for (int c = 0; c < t->channels; c++)
        for (int v = 0; v < 256; v++) t->lut[c][v] = (float)((v / 255.0 - mean[c]) / std[c]);
    t->rows = rows;
    t->cols = cols;
    t->pad = pad > 0 ? pad : 0;
    t->flip = flip != 0;
    t->seed = seed;
}

void xt_transform_choice(const xt_transform *t, int64_t epoch, int64_t index, int *dy, int *dx, int *flipped) {
    *dy = *dx = t->pad;
    *flipped = 0;
    if (!t->pad && !t->flip) return;
    xt_rng r;
    xt_rng_init(&r, t->seed, XT_RNG_CROP, (uint64_t)epoch, (uint64_t)index);
    if (t->pad) {
        *dy = (int)xt_rng_below(&r, 2 * (uint64_t)t->pad + 1);
        *dx = (int)xt_rng_below(&r, 2 * (uint64_t)t->pad + 1);
    }
    if (t->flip) *flipped = (int)xt_rng_below(&r, 2);
}

/* One channel: output (y, x) reads padded (y + dy, x + dx) = source (y + oy,
 * x + ox), mirrored in x after the crop when flipped. */
static void plane(const float *lut, const uint8_t *src, float *dst, int R, int C, int oy, int ox, int flipped) {
    const float zero = lut[0];
    for (int y = 0; y < R; y++) {
        int sy = y + oy;
        float *d = dst + y * C;
        if (sy < 0 || sy >= R) {
            for (int x = 0; x < C; x++) d[x] = zero;
            continue;
        }
        const uint8_t *s = src + sy * C;
        for (int x = 0; x < C; x++) {
            int sx = (flipped ? C - 1 - x : x) + ox;
            d[x] = sx >= 0 && sx < C ? lut[s[sx]] : zero;
        }
    }
}

void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index) {
    const int R = t->rows, C = t->cols, hw = R * C;
    int dy, dx, flipped;
    xt_transform_choice(t, epoch, index, &dy, &dx, &flipped);
    for (int c = 0; c < t->channels; c++) {
        const uint8_t *s = src + (size_t)c * hw;
        float *d = dst + (size_t)c * hw;
        if (dy == t->pad && dx == t->pad && !flipped) {
            for (int i = 0; i < hw; i++) d[i] = t->lut[c][s[i]];
            continue;
        }
        plane(t->lut[c], s, d, R, C, dy - t->pad, dx - t->pad, flipped);
    }
}
