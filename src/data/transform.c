/* transform.c — normalization, random crop, random resized crop and flip;
 * see transform.h. */
#include "data/transform.h"

#include <math.h>
#include <stddef.h>

#include "data/image_resize.h"
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
    t->resized = 0;
}

void xt_transform_set_resized_crop(xt_transform *t, const double scale[2], const double ratio[2]) {
    t->resized = 1;
    t->pad = 0;
    t->scale[0] = scale[0], t->scale[1] = scale[1];
    t->log_ratio[0] = log(ratio[0]), t->log_ratio[1] = log(ratio[1]);
}

/* The resampler's scratch (floats first, for alignment), then one plane of
 * the resampled window as bytes. */
size_t xt_transform_scratch_bytes(const xt_transform *t) {
    if (!t->resized) return 0;
    return xt_image_resize_scratch(t->rows, t->cols, t->rows, t->cols, 1) + (size_t)t->rows * (size_t)t->cols;
}

void xt_transform_resized_box(const xt_transform *t, int64_t epoch, int64_t index, int *y, int *x, int *h, int *w) {
    const int H = t->rows, W = t->cols;
    *y = *x = 0, *h = H, *w = W;
    if (!t->resized) return;
    xt_rng r;
    xt_rng_init(&r, t->seed, XT_RNG_RESIZED_CROP, (uint64_t)epoch, (uint64_t)index);
    const double area = (double)H * W;
    for (int attempt = 0; attempt < 10; attempt++) {
        /* separate statements: C leaves the order of two draws in one expression open (rng.h) */
        double target = area * xt_rng_range(&r, t->scale[0], t->scale[1]);
        double aspect = exp(xt_rng_range(&r, t->log_ratio[0], t->log_ratio[1]));
        /* Python's round() rounds half to even, as nearbyint does in the default mode */
        int cw = (int)nearbyint(sqrt(target * aspect)), ch = (int)nearbyint(sqrt(target / aspect));
        if (cw > 0 && cw <= W && ch > 0 && ch <= H) {
            *y = (int)xt_rng_below(&r, (uint64_t)(H - ch) + 1);
            *x = (int)xt_rng_below(&r, (uint64_t)(W - cw) + 1);
            *h = ch, *w = cw;
            return;
        }
    }
    /* torchvision's fallback: the centre, as large as the ratio range allows */
    double in_ratio = (double)W / H, rmin = exp(t->log_ratio[0]), rmax = exp(t->log_ratio[1]);
    if (in_ratio < rmin) *w = W, *h = (int)nearbyint(W / rmin);
    else if (in_ratio > rmax) *h = H, *w = (int)nearbyint(H * rmax);
    if (*h < 1) *h = 1;
    if (*w < 1) *w = 1;
    if (*h > H) *h = H;
    if (*w > W) *w = W;
    *y = (H - *h) / 2, *x = (W - *w) / 2;
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

void xt_transform_apply(const xt_transform *t, const uint8_t *src, float *dst, int64_t epoch, int64_t index,
                        void *scratch) {
    const int R = t->rows, C = t->cols, hw = R * C;
    int dy, dx, flipped;
    xt_transform_choice(t, epoch, index, &dy, &dx, &flipped);
    if (t->resized) {
        int y0, x0, h, w;
        xt_transform_resized_box(t, epoch, index, &y0, &x0, &h, &w);
        uint8_t *win = (uint8_t *)scratch + xt_image_resize_scratch(R, C, R, C, 1);
        for (int c = 0; c < t->channels; c++) {
            /* the window of this plane back to R x C, then normalized (and flipped) as any image */
            xt_image_resize_window(src + (size_t)c * hw + (size_t)y0 * C + x0, (size_t)C, h, w, R, C, win, R, C, 1,
                                   scratch);
            plane(t->lut[c], win, dst + (size_t)c * hw, R, C, 0, 0, flipped);
        }
        return;
    }
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
