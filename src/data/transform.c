/* transform.c — normalization and random crop; see transform.h. */
#include "data/transform.h"

#include "data/rng.h"

void xt_transform_init(xt_transform *t, int rows, int cols, double mean, double std, int pad, uint64_t seed) {
    /* A 256-entry table turns the per-pixel divide into a load, and makes the
     * padded border value exactly lut[0], as torchvision pads before Normalize. */
    for (int v = 0; v < 256; v++) t->lut[v] = (float)((v / 255.0 - mean) / std);
    t->rows = rows;
    t->cols = cols;
    t->pad = pad > 0 ? pad : 0;
    t->seed = seed;
}

void xt_transform_crop_offset(const xt_transform *t, int64_t epoch, int64_t index, int *dy, int *dx) {
    if (!t->pad) {
        *dy = *dx = 0;
        return;
    }
    xt_rng r;
    xt_rng_init(&r, t->seed, XT_RNG_CROP, (uint64_t)epoch, (uint64_t)index);
    *dy = (int)xt_rng_below(&r, 2 * (uint64_t)t->pad + 1);
    *dx = (int)xt_rng_below(&r, 2 * (uint64_t)t->pad + 1);
}

void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index) {
    const int R = t->rows, C = t->cols;
    int dy, dx;
    xt_transform_crop_offset(t, epoch, index, &dy, &dx);
    if (!t->pad || (dy == t->pad && dx == t->pad)) {
        for (int i = 0; i < R * C; i++) dst[i] = t->lut[src[i]];
        return;
    }
    /* Output (y, x) reads padded (y + dy, x + dx) = source (y + dy - P, x + dx - P). */
    const int oy = dy - t->pad, ox = dx - t->pad;
    const float zero = t->lut[0];
    for (int y = 0; y < R; y++) {
        int sy = y + oy;
        float *d = dst + y * C;
        if (sy < 0 || sy >= R) {
            for (int x = 0; x < C; x++) d[x] = zero;
            continue;
        }
        for (int x = 0; x < C; x++) {
            int sx = x + ox;
            d[x] = sx >= 0 && sx < C ? t->lut[src[sy * C + sx]] : zero;
        }
    }
}
