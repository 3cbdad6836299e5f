/* image_resize.c — separable area (shrink) / bilinear (grow) resampling;
 * see image_resize.h.
 *
 * Why precomputed weights per axis: each destination index takes a short,
 * fixed list of (source index, weight) pairs, computed once per call; the
 * pixel loops then only multiply and add. The vertical pass runs first into
 * a float buffer of (dh, sw, c), then the horizontal one into dst. The taps
 * and that buffer live in caller-given scratch, so the loader's
 * random_resized_crop (transform.c) resamples with these same filters
 * without allocating per sample.
 */
#include "data/image_resize.h"

#include <math.h>
#include <stdlib.h>

/* Destination index i of one axis reads src[idx[k]] * wt[k] for k in
 * [start[i], start[i + 1]). */
typedef struct taps {
    int *start, *idx;
    float *wt;
} taps;

/* Taps one destination index may take when n_src shrinks (or grows) to
 * n_dst; it grows with n_src, so the largest source bounds every smaller one. */
static size_t taps_per(int n_src, int n_dst) {
    return n_dst < n_src ? (size_t)((n_src + n_dst - 1) / n_dst + 2) : 2;
}

/* 4-byte words the taps of an axis of at most max_src into n_dst take. */
static size_t taps_words(int max_src, int n_dst) {
    return (size_t)n_dst + 1 + 2 * (size_t)n_dst * taps_per(max_src, n_dst);
}

/* Lay the taps out in `words` (taps_words of it) and fill them. */
static void taps_make(taps *t, int32_t *words, int max_src, int n_src, int n_dst) {
    size_t per = taps_per(max_src, n_dst);
    t->start = (int *)words;
    t->idx = t->start + n_dst + 1;
    t->wt = (float *)(t->idx + (size_t)n_dst * per);
    int k = 0;
    double scale = (double)n_src / n_dst;
    for (int i = 0; i < n_dst; i++) {
        t->start[i] = k;
        if (n_dst == n_src) {
            t->idx[k] = i, t->wt[k++] = 1.0f;
        } else if (n_dst < n_src) { /* area: source span [i*scale, (i+1)*scale) */
            double a = i * scale, b = (i + 1) * scale;
            for (int s = (int)floor(a); s < n_src && s < b; s++) {
                double lo = s > a ? s : a, hi = s + 1 < b ? s + 1 : b;
                if (hi > lo) t->idx[k] = s, t->wt[k++] = (float)((hi - lo) / scale);
            }
        } else { /* bilinear, centres aligned, clamped at the borders */
            double x = (i + 0.5) * scale - 0.5;
            if (x < 0) x = 0;
            int s0 = (int)floor(x), s1 = s0 + 1 < n_src ? s0 + 1 : n_src - 1;
            float f = (float)(x - s0);
            t->idx[k] = s0, t->wt[k++] = 1.0f - f;
            t->idx[k] = s1, t->wt[k++] = f;
        }
    }
    t->start[n_dst] = k;
}

size_t xt_image_resize_scratch(int max_sh, int max_sw, int dh, int dw, int channels) {
    size_t mid = (size_t)dh * (size_t)max_sw * (size_t)channels;
    return sizeof(float) * (mid + taps_words(max_sh, dh) + taps_words(max_sw, dw));
}

void xt_image_resize_window(const uint8_t *src, size_t src_stride, int sh, int sw, int max_sh, int max_sw,
                            uint8_t *dst, int dh, int dw, int channels, void *scratch) {
    taps ty, tx;
    const size_t srow = (size_t)sw * (size_t)channels;
    float *mid = scratch;
    int32_t *words = (int32_t *)(mid + (size_t)dh * (size_t)max_sw * (size_t)channels);
    taps_make(&ty, words, max_sh, sh, dh);
    taps_make(&tx, words + taps_words(max_sh, dh), max_sw, sw, dw);
    for (int y = 0; y < dh; y++) {
        float *m = mid + (size_t)y * srow;
        for (size_t j = 0; j < srow; j++) m[j] = 0;
        for (int k = ty.start[y]; k < ty.start[y + 1]; k++) {
            const uint8_t *s = src + (size_t)ty.idx[k] * src_stride;
            float w = ty.wt[k];
            for (size_t j = 0; j < srow; j++) m[j] += w * s[j];
        }
    }
    for (int y = 0; y < dh; y++) {
        const float *m = mid + (size_t)y * srow;
        uint8_t *d = dst + (size_t)y * (size_t)dw * (size_t)channels;
        for (int x = 0; x < dw; x++)
            for (int c = 0; c < channels; c++) {
                float v = 0;
                for (int k = tx.start[x]; k < tx.start[x + 1]; k++) v += tx.wt[k] * m[(size_t)tx.idx[k] * (size_t)channels + (size_t)c];
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                d[(size_t)x * (size_t)channels + (size_t)c] = (uint8_t)lrintf(v);
            }
    }
}

int xt_image_resize(const uint8_t *src, int sh, int sw, uint8_t *dst, int dh, int dw, int channels) {
    void *scratch = malloc(xt_image_resize_scratch(sh, sw, dh, dw, channels));
    if (!scratch) return -1;
    xt_image_resize_window(src, (size_t)sw * (size_t)channels, sh, sw, sh, sw, dst, dh, dw, channels, scratch);
    free(scratch);
    return 0;
}
