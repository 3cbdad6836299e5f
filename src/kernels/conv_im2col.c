/* conv_im2col.c — convolution as im2col + one OpenBLAS GEMM (the general method).
 *
 * Is: forward, backward-data and backward-weight for any shape, stride and
 * padding. The patch matrix col has one row per tap (ci,i,j) and one column per
 * output position; `group` images can share one GEMM (their columns side by
 * side), which makes the GEMM wider but costs a reshuffle of y / dy. With
 * group 1, y_n = W * col_n lands in NCHW directly.
 *   fwd:        y_n  = W (Co x K) * col_n (K x P)
 *   bwd_data:   dcol = W^T (K x Co) * dy_n (Co x P), then col2im scatter-adds it into dx_n
 *   bwd_weight: dW  += dy_n (Co x P) * col_n^T (P x K)
 * (K = Ci*kh*kw, P = Ho*Wo.)
 * Is not: the choice of method (conv.c) or the small-channel fast path (conv_direct.c).
 */
#include "kernels/conv_common.h"
#include "kernels/conv_im2col.h"
#include "kernels/vec4.h"

#include <string.h>

/* Inline copies and adds of a few floats: the rows here are 8-24 floats long,
 * where a libc memcpy call costs more than the copy. */
static inline void copy_row(float *d, const float *s, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) v4_store(d + i, v4_load(s + i));
    for (; i < n; i++) d[i] = s[i];
}

static inline void add_row(float *d, const float *s, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) v4_store(d + i, v4_load(d + i) + v4_load(s + i));
    for (; i < n; i++) d[i] += s[i];
}

/* First and one-past-last output column whose tap j lands inside the input row. */
static void valid_cols(const k_conv_shape *s, int j, int *lo, int *hi) {
    int a = s->pw - j > 0 ? (s->pw - j + s->sw - 1) / s->sw : 0;
    int last = s->W - 1 + s->pw - j; /* ow*sw <= last */
    int b = last < 0 ? 0 : last / s->sw + 1;
    if (a > s->Wo) a = s->Wo;
    if (b > s->Wo) b = s->Wo;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* col[(ci*kh+i)*kw+j][oh*Wo+ow] = x[ci][oh*sh+i-ph][ow*sw+j-pw] (0 in the padding); row stride ldc. */
static void im2col(const k_conv_shape *s, const float *x, float *col, size_t ldc) {
    for (int ci = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                float *dst = col + ((size_t)(ci * s->kh + i) * s->kw + j) * ldc;
                int lo, hi;
                valid_cols(s, j, &lo, &hi);
                for (int oh = 0; oh < s->Ho; oh++, dst += s->Wo) {
                    int h = oh * s->sh + i - s->ph;
                    if (h < 0 || h >= s->H) {
                        memset(dst, 0, sizeof(float) * (size_t)s->Wo);
                        continue;
                    }
                    const float *src = x + ((size_t)ci * s->H + h) * s->W + j - s->pw;
                    for (int ow = 0; ow < lo; ow++) dst[ow] = 0.0f;
                    if (s->sw == 1)
                        copy_row(dst + lo, src + lo, hi - lo);
                    else
                        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow * s->sw];
                    for (int ow = hi; ow < s->Wo; ow++) dst[ow] = 0.0f;
                }
            }
}

/* dx = 0, then dx[ci][oh*sh+i-ph][ow*sw+j-pw] += col[(ci,i,j)][oh*Wo+ow]: the adjoint of im2col. */
void k_conv_col2im(const k_conv_shape *s, const float *col, size_t ldc, float *dx) {
    memset(dx, 0, sizeof(float) * (size_t)s->Ci * s->H * s->W);
    for (int ci = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                const float *src = col + ((size_t)(ci * s->kh + i) * s->kw + j) * ldc;
                int lo, hi;
                valid_cols(s, j, &lo, &hi);
                for (int oh = 0; oh < s->Ho; oh++, src += s->Wo) {
                    int h = oh * s->sh + i - s->ph;
                    if (h < 0 || h >= s->H) continue;
                    float *dst = dx + ((size_t)ci * s->H + h) * s->W + j - s->pw;
                    if (s->sw == 1)
                        add_row(dst + lo, src + lo, hi - lo);
                    else
                        for (int ow = lo; ow < hi; ow++) dst[ow * s->sw] += src[ow];
                }
            }
}

/* A 1x1, stride-1, unpadded kernel needs no patch matrix: col_n is x_n itself. */
static int is_pointwise(const k_conv_shape *s) {
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 && s->pw == 0;
}

/* The column matrix of images x[0..g) (each xs floats apart) into col, image
 * gi at columns [gi*P, (gi+1)*P) of rows of length ld = g*P; a 1x1 stride-1
 * convolution's columns are the image itself. Shared by fwd and bwd_weight. */
static void gather_cols(const k_conv_shape *s, const float *x, size_t xs, int g, float *col, size_t ld) {
    int K = s->Ci * s->kh * s->kw;
    size_t P = (size_t)s->Ho * s->Wo;
    for (int gi = 0; gi < g; gi++) {
        const float *xn = x + gi * xs;
        if (is_pointwise(s))
            for (int k = 0; k < K; k++) memcpy(col + k * ld + gi * P, xn + (size_t)k * P, sizeof(float) * P);
        else
            im2col(s, xn, col + (size_t)gi * P, ld);
    }
}

size_t k_conv_im2col_scratch(const k_conv_shape *s, int group) {
    size_t K = (size_t)s->Ci * s->kh * s->kw, P = (size_t)s->Ho * s->Wo, G = group < 1 ? 1 : (size_t)group;
    if (G > (size_t)s->N) G = (size_t)s->N;
    /* col (K x G*P); with G > 1 also the side-by-side y / dy (Co x G*P) */
    return K * G * P + (G > 1 ? (size_t)s->Co * G * P : 0);
}

static int clamp_group(const k_conv_shape *s, int group) {
    return group < 1 ? 1 : group > s->N ? s->N : group;
}

void k_conv_im2col_fwd(const k_conv_shape *s, int group, float *y, const float *x, const float *w, const float *b,
                       float *scratch) {
    int K = s->Ci * s->kh * s->kw, P = s->Ho * s->Wo, G = clamp_group(s, group);
    size_t xs = (size_t)s->Ci * s->H * s->W, ys = (size_t)s->Co * P;
    for (int n0 = 0; n0 < s->N; n0 += G) {
        int g = s->N - n0 < G ? s->N - n0 : G;
        if (g == 1) {
            const float *col = x + n0 * xs;
            if (!is_pointwise(s)) {
                im2col(s, col, scratch, (size_t)P);
                col = scratch;
            }
            k_gemm(0, 0, s->Co, P, K, 1.0f, w, K, col, P, 0.0f, y + n0 * ys, P);
        } else {
            size_t ld = (size_t)g * P;
            float *col = scratch, *yt = scratch + (size_t)K * ld;
            gather_cols(s, x + n0 * xs, (size_t)xs, g, col, ld);
            k_gemm(0, 0, s->Co, (int)ld, K, 1.0f, w, K, col, (int)ld, 0.0f, yt, (int)ld);
            for (int gi = 0; gi < g; gi++)
                for (int co = 0; co < s->Co; co++)
                    memcpy(y + (n0 + gi) * ys + (size_t)co * P, yt + co * ld + (size_t)gi * P, sizeof(float) * P);
        }
        if (b)
            for (int gi = 0; gi < g; gi++)
                for (int co = 0; co < s->Co; co++) {
                    float *yp = y + (n0 + gi) * ys + (size_t)co * P, bv = b[co];
                    for (int p = 0; p < P; p++) yp[p] += bv;
                }
    }
}

void k_conv_im2col_bwd_data(const k_conv_shape *s, int group, float *dx, const float *dy, const float *w,
                            float *scratch) {
    int K = s->Ci * s->kh * s->kw, P = s->Ho * s->Wo, G = clamp_group(s, group);
    size_t xs = (size_t)s->Ci * s->H * s->W, ys = (size_t)s->Co * P;
    for (int n0 = 0; n0 < s->N; n0 += G) {
        int g = s->N - n0 < G ? s->N - n0 : G;
        if (g == 1) {
            if (is_pointwise(s)) {
                k_gemm(1, 0, K, P, s->Co, 1.0f, w, K, dy + n0 * ys, P, 0.0f, dx + n0 * xs, P);
                continue;
            }
            k_gemm(1, 0, K, P, s->Co, 1.0f, w, K, dy + n0 * ys, P, 0.0f, scratch, P);
            k_conv_col2im(s, scratch, (size_t)P, dx + n0 * xs);
        } else {
            size_t ld = (size_t)g * P;
            float *dcol = scratch, *dyg = scratch + (size_t)K * ld;
            for (int gi = 0; gi < g; gi++)
                for (int co = 0; co < s->Co; co++)
                    memcpy(dyg + co * ld + (size_t)gi * P, dy + (n0 + gi) * ys + (size_t)co * P, sizeof(float) * P);
            k_gemm(1, 0, K, (int)ld, s->Co, 1.0f, w, K, dyg, (int)ld, 0.0f, dcol, (int)ld);
            for (int gi = 0; gi < g; gi++) {
                float *dxn = dx + (n0 + gi) * xs;
                if (is_pointwise(s))
                    for (int k = 0; k < K; k++) memcpy(dxn + (size_t)k * P, dcol + k * ld + gi * P, sizeof(float) * P);
                else
                    k_conv_col2im(s, dcol + (size_t)gi * P, ld, dxn);
            }
        }
    }
}

void k_conv_im2col_bwd_weight(const k_conv_shape *s, int group, float *dw, float *db, const float *x,
                              const float *dy, float *scratch) {
    k_conv_im2col_bwd_weight_part(s, group, dw, x, dy, scratch, 1);
    if (db) k_conv_bias_grad(s, db, dy);
}

void k_conv_im2col_bwd_weight_part(const k_conv_shape *s, int group, float *dw, const float *x, const float *dy,
                                   float *scratch, int first) {
    int K = s->Ci * s->kh * s->kw, P = s->Ho * s->Wo, G = clamp_group(s, group);
    size_t xs = (size_t)s->Ci * s->H * s->W, ys = (size_t)s->Co * P;
    for (int n0 = 0; n0 < s->N; n0 += G) {
        int g = s->N - n0 < G ? s->N - n0 : G;
        float beta = first && n0 == 0 ? 0.0f : 1.0f; /* the first GEMM overwrites dw */
        if (g == 1) {
            const float *col = x + n0 * xs;
            if (!is_pointwise(s)) {
                im2col(s, col, scratch, (size_t)P);
                col = scratch;
            }
            k_gemm(0, 1, s->Co, K, P, 1.0f, dy + n0 * ys, P, col, P, beta, dw, K);
        } else {
            size_t ld = (size_t)g * P;
            float *col = scratch, *dyg = scratch + (size_t)K * ld;
            gather_cols(s, x + n0 * xs, (size_t)xs, g, col, ld);
            for (int gi = 0; gi < g; gi++) {
                for (int co = 0; co < s->Co; co++)
                    memcpy(dyg + co * ld + (size_t)gi * P, dy + (n0 + gi) * ys + (size_t)co * P, sizeof(float) * P);
            }
            k_gemm(0, 1, s->Co, K, (int)ld, 1.0f, dyg, (int)ld, col, (int)ld, beta, dw, K);
        }
    }
}
