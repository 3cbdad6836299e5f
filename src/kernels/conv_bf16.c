/* conv_bf16.c — convolution with bf16 operands and fp32 results, every pass,
 * on the path bf16.h picks.
 *
 * Is: k_conv2d_{fwd,bwd_data,bwd_weight}_bf16 and their scratch size.
 *   AVX512-BF16 path: im2col in bf16 and the packed vdpbf16ps GEMM of
 *   gemm_bf16.c, one image per GEMM, the weight operand packed once per call:
 *     fwd         y_n (Co x P)  = W (Co x K) . col_n (K x P)          (+ bias)
 *     bwd_data    dcol (K x P)  = W^T (K x Co) . dy_n (Co x P), then col2im
 *     bwd_weight  dW (Co x K)  += dy_n (Co x P) . col_n^T (P x K)
 *   with K = Ci*kh*kw and P = Ho*Wo.
 *   Reference path: the operands widened to fp32 (exact) and the fp32
 *   k_conv2d_* run on them.
 * Is not: the rounding to bf16 (the engine's cast nodes, bf16.c), the fp32
 * methods (conv.c) or a direct bf16 convolution (not written yet).
 *
 * MEASURED with tests/bench/kernel_bench.c (GFLOP/s, one core, AMD EPYC Zen 5,
 * batch 128; the bf16 GEMM alone: 374-383 GFLOP/s at 256..1024^3, where
 * OpenBLAS's sgemm gets 105): reference path (widen + the fp32 direct
 * kernels) vs AVX512-BF16 (im2col + vdpbf16ps GEMM), fwd / bwd_data / bwd_weight:
 *   seed conv1  1->10 k5 24x24     152 / 41 / 120    vs  50 / 70 / 27
 *   seed conv2  10->20 k5 8x8      198 / 146 / 177   vs  41 / 93 / 34
 *   wide conv1  1->32 k3 26x26      91 / 40 / 63     vs 111 / 83 / 34
 *   wide conv2  32->64 k3 24x24    187 / 157 / 181   vs 202 / 241 / 143
 *   r20 3x3 16->32 s2 16x16        139 / 129 / 116   vs  79 / 81 / 60
 *   r20 3x3 64->64 8x8             203 / 202 / 184   vs 114 / 171 / 96
 *   r20 1x1 32->64 s2 8x8           69 / 52 / 66     vs 104 / 101 / 71
 * The GEMM path pays for im2col and packing per image, which the direct fp32
 * kernels do not: it wins where those are weak (bwd_data into < 8 input
 * channels, pointwise convolutions) and where the GEMM is large (>= 32 output
 * channels over >= 512 output pixels). bwd_weight reduces over pixels, where
 * per-image GEMMs are short: the reference path except for pointwise.
 */
#include "kernels/bf16.h"
#include "kernels/conv_common.h"
#include "kernels/conv_im2col.h"
#include "kernels/gemm_bf16.h"

#include <string.h>

typedef struct dims { int K, P; size_t xs, ys; } dims;

static dims dims_of(const k_conv_shape *s) {
    dims d = {.K = s->Ci * s->kh * s->kw, .P = s->Ho * s->Wo};
    d.xs = (size_t)s->Ci * s->H * s->W;
    d.ys = (size_t)s->Co * d.P;
    return d;
}

static int is_pointwise(const k_conv_shape *s) {
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 && s->pw == 0;
}

/* col[(ci*kh+i)*kw+j][oh*Wo+ow] = x[ci][oh*sh+i-ph][ow*sw+j-pw], 0 in the padding. */
static void im2col_bf16(const k_conv_shape *s, const k_bf16 *x, k_bf16 *col) {
    for (int ci = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                k_bf16 *dst = col + ((size_t)(ci * s->kh + i) * s->kw + j) * s->Ho * s->Wo;
                /* the output columns whose tap j lands inside the row: [lo, hi) */
                int lo = s->pw > j ? (s->pw - j + s->sw - 1) / s->sw : 0;
                int hi = (s->W - 1 + s->pw - j) / s->sw + 1;
                if (s->W - 1 + s->pw - j < 0) hi = 0;
                if (hi > s->Wo) hi = s->Wo;
                if (lo > hi) lo = hi;
                for (int oh = 0; oh < s->Ho; oh++, dst += s->Wo) {
                    int h = oh * s->sh + i - s->ph;
                    if (h < 0 || h >= s->H) {
                        memset(dst, 0, sizeof *dst * (size_t)s->Wo);
                        continue;
                    }
                    const k_bf16 *src = x + ((size_t)ci * s->H + h) * s->W + j - s->pw;
                    memset(dst, 0, sizeof *dst * (size_t)lo);
                    if (s->sw == 1) memcpy(dst + lo, src + lo, sizeof *dst * (size_t)(hi - lo));
                    else
                        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow * s->sw];
                    memset(dst + hi, 0, sizeof *dst * (size_t)(s->Wo - hi));
                }
            }
}

/* image n's column matrix: x_n itself for a pointwise convolution, else built in col */
static const k_bf16 *cols_of(const k_conv_shape *s, const k_bf16 *xn, k_bf16 *col) {
    if (is_pointwise(s)) return xn;
    im2col_bf16(s, xn, col);
    return col;
}

int k_conv_bf16_choose(const k_conv_shape *s, int pass) {
    if (k_bf16_path() != K_BF16_AVX512BF16 || k_bf16_forced() >= 0) return k_bf16_path();
    int big = s->Co >= 32 && s->Ho * s->Wo >= 512;
    int fast = is_pointwise(s) || (pass == K_CONV_FWD && big) || (pass == K_CONV_BWD_DATA && (big || s->Ci < 8));
    return fast ? K_BF16_AVX512BF16 : K_BF16_REF;
}

/* ---- scratch ---------------------------------------------------------------- */

static size_t fast_bytes(const k_conv_shape *s) {
    dims d = dims_of(s);
    size_t col = k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16));
    size_t fwd = k_bf16_pack_a_bytes(s->Co, d.K) + k_bf16_pack_b_bytes(d.K, d.P);
    size_t bwd_d = k_bf16_pack_a_bytes(d.K, s->Co) + k_bf16_pack_b_bytes(s->Co, d.P) +
                   k_bf16_lines((size_t)d.K * d.P * sizeof(float));
    size_t bwd_w = k_bf16_pack_a_bytes(s->Co, d.P) + k_bf16_pack_b_bytes(d.P, d.K);
    size_t m = fwd > bwd_d ? fwd : bwd_d;
    return col + (m > bwd_w ? m : bwd_w);
}

/* two operands widened to fp32, then the fp32 kernels' own scratch */
static size_t ref_bytes(const k_conv_shape *s) {
    size_t x = (size_t)s->N * s->Ci * s->H * s->W, w = (size_t)s->Co * s->Ci * s->kh * s->kw;
    size_t y = (size_t)s->N * s->Co * s->Ho * s->Wo;
    size_t a = x > y ? x : y, b = w > y ? w : y;
    return k_bf16_lines(a * sizeof(float)) + k_bf16_lines(b * sizeof(float)) + k_conv2d_scratch(s) * sizeof(float);
}

size_t k_conv2d_bf16_scratch(const k_conv_shape *s) {
    size_t a = fast_bytes(s), b = ref_bytes(s);
    return a > b ? a : b;
}

/* The reference path's layout: widened operand a, widened operand b, fp32 scratch. */
typedef struct ref_area { float *a, *b, *rest; } ref_area;
static ref_area widen2(const k_bf16 *a, size_t na, const k_bf16 *b, size_t nb, void *scratch, const k_conv_shape *s) {
    size_t x = (size_t)s->N * s->Ci * s->H * s->W, y = (size_t)s->N * s->Co * s->Ho * s->Wo;
    size_t w = (size_t)s->Co * s->Ci * s->kh * s->kw;
    ref_area r = {.a = scratch};
    r.b = (float *)((char *)scratch + k_bf16_lines((x > y ? x : y) * sizeof(float)));
    r.rest = (float *)((char *)r.b + k_bf16_lines((w > y ? w : y) * sizeof(float)));
    k_bf16_expand(na, r.a, a);
    k_bf16_expand(nb, r.b, b);
    return r;
}

/* ---- the three passes ----------------------------------------------------- */

void k_conv2d_fwd_bf16(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                       void *scratch) {
    dims d = dims_of(s);
    if (k_conv_bf16_choose(s, K_CONV_FWD) != K_BF16_AVX512BF16) {
        ref_area r = widen2(x, (size_t)s->N * d.xs, w, (size_t)s->Co * d.K, scratch, s);
        k_conv2d_fwd(s, y, r.a, r.b, b, r.rest);
        return;
    }
    k_bf16 *col = scratch;
    char *Ap = (char *)scratch + k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16)), *Bp = Ap + k_bf16_pack_a_bytes(s->Co, d.K);
    k_bf16_pack_a(s->Co, d.K, w, d.K, 1, Ap);
    for (int n = 0; n < s->N; n++) {
        float *yn = y + n * d.ys;
        k_bf16_pack_b(d.K, d.P, cols_of(s, x + n * d.xs, col), d.P, 1, Bp);
        k_bf16_gemm_packed(s->Co, d.P, d.K, Ap, Bp, 0, yn, d.P);
        for (int co = 0; b && co < s->Co; co++)
            for (int p = 0; p < d.P; p++) yn[(size_t)co * d.P + p] += b[co];
    }
}

void k_conv2d_bwd_data_bf16(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch) {
    dims d = dims_of(s);
    if (k_conv_bf16_choose(s, K_CONV_BWD_DATA) != K_BF16_AVX512BF16) {
        ref_area r = widen2(dy, (size_t)s->N * d.ys, w, (size_t)s->Co * d.K, scratch, s);
        k_conv2d_bwd_data(s, dx, r.a, r.b, r.rest);
        return;
    }
    /* the column area holds no bf16 columns here: it starts the packed operands */
    char *Ap = (char *)scratch + k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16));
    char *Bp = Ap + k_bf16_pack_a_bytes(d.K, s->Co), *dcol = Bp + k_bf16_pack_b_bytes(s->Co, d.P);
    k_bf16_pack_a(d.K, s->Co, w, 1, d.K, Ap); /* W^T: element (k, co) = w[co*K + k] */
    for (int n = 0; n < s->N; n++) {
        k_bf16_pack_b(s->Co, d.P, dy + n * d.ys, d.P, 1, Bp);
        if (is_pointwise(s)) {
            k_bf16_gemm_packed(d.K, d.P, s->Co, Ap, Bp, 0, dx + n * d.xs, d.P);
            continue;
        }
        k_bf16_gemm_packed(d.K, d.P, s->Co, Ap, Bp, 0, (float *)dcol, d.P);
        k_conv_col2im(s, (const float *)dcol, (size_t)d.P, dx + n * d.xs);
    }
}

void k_conv2d_bwd_weight_bf16(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy, void *scratch) {
    dims d = dims_of(s);
    if (k_conv_bf16_choose(s, K_CONV_BWD_WEIGHT) != K_BF16_AVX512BF16) {
        ref_area r = widen2(x, (size_t)s->N * d.xs, dy, (size_t)s->N * d.ys, scratch, s);
        k_conv2d_bwd_weight(s, dw, NULL, r.a, r.b, r.rest);
        return;
    }
    k_bf16 *col = scratch;
    char *Ap = (char *)scratch + k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16)), *Bp = Ap + k_bf16_pack_a_bytes(s->Co, d.P);
    for (int n = 0; n < s->N; n++) {
        k_bf16_pack_a(s->Co, d.P, dy + n * d.ys, d.P, 1, Ap);
        k_bf16_pack_b(d.P, d.K, cols_of(s, x + n * d.xs, col), 1, d.P, Bp); /* col^T: (p, k) = col[k*P + p] */
        k_bf16_gemm_packed(s->Co, d.K, d.P, Ap, Bp, n > 0, dw, d.K);
    }
}
