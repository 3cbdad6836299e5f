/* conv_bf16.c — convolution with bf16 operands and fp32 results, every pass,
 * on the path bf16.h picks.
 *
 * Is: k_conv2d_{fwd,bwd_data,bwd_weight}_bf16, their scratch size and the
 * choice among three paths per shape and pass (k_conv_bf16_choose):
 *   AVX512-BF16 direct: the batch-blocked kernels of conv_direct_bf16.c (16
 *   images in the lanes, channel or pixel pairs in each 32-bit lane).
 *   AVX512-BF16: im2col in bf16 and the packed vdpbf16ps GEMM of
 *   gemm_bf16.c, one image per GEMM, the weight operand packed once per call:
 *     fwd         y_n (Co x P)  = W (Co x K) . col_n (K x P)          (+ bias)
 *     bwd_data    dcol (K x P)  = W^T (K x Co) . dy_n (Co x P), then col2im
 *     bwd_weight  dW^T (K x Co) += col_n (K x P) . dy_n^T (P x Co), then transposed
 *   with K = Ci*kh*kw and P = Ho*Wo.
 *   Reference path: the operands widened to fp32 (exact) and the fp32
 *   k_conv2d_* run on them.
 * Is not: the rounding to bf16 (the engine's cast nodes, bf16.c) or the fp32
 * methods (conv.c).
 *
 * The choice is measured by tests/bench/kernel_bench.c's "bf16 " rows
 * (GFLOP/s of the fp32 kernels on fp32 operands, bf16 im2col + GEMM and bf16
 * direct, per pass, one core, batch 128, over the seed CNN's, wide_cnn's,
 * lenet5's, the CIFAR CNN's and resnet8/20/18's convolutions); the figures
 * are in tests/bench/HISTORY.md. The direct kernels do twice the fp32
 * kernels' work per instruction and pay no im2col: they win nearly
 * everywhere, most on the 3x3 and 5x5 convolutions with >= 6 channels. The
 * GEMM keeps bwd_data into fewer than 4 input channels (the direct dx tile is
 * >= 2 channels wide and needs 8 accumulators to hide latency: 1 useful of 8)
 * and through 1x1 convolutions, and bwd_weight at >= 128 output channels over
 * <= 64 pixels (r18 256->256 8x8). The reference path is never chosen where
 * AVX512-BF16 exists (it is the fallback without it and the twin the tests
 * compare with).
 */
#include "kernels/bf16.h"
#include "kernels/conv_common.h"
#include "kernels/conv_direct_bf16.h"
#include "kernels/conv_im2col.h"
#include "kernels/gemm_bf16.h"

#include <stdint.h>
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
                /* rows are short (Wo of 8..32): plain loops, not a library call per row */
                for (int oh = 0; oh < s->Ho; oh++, dst += s->Wo) {
                    int h = oh * s->sh + i - s->ph;
                    if (h < 0 || h >= s->H) {
                        for (int ow = 0; ow < s->Wo; ow++) dst[ow] = 0;
                        continue;
                    }
                    const k_bf16 *src = x + ((size_t)ci * s->H + h) * s->W + j - s->pw;
                    for (int ow = 0; ow < lo; ow++) dst[ow] = 0;
                    if (s->sw == 1)
                        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow];
                    else
                        for (int ow = lo; ow < hi; ow++) dst[ow] = src[ow * s->sw];
                    for (int ow = hi; ow < s->Wo; ow++) dst[ow] = 0;
                }
            }
}

/* image n's column matrix: x_n itself for a pointwise convolution, else built in col */
static const k_bf16 *cols_of(const k_conv_shape *s, const k_bf16 *xn, k_bf16 *col) {
    if (is_pointwise(s)) return xn;
    im2col_bf16(s, xn, col);
    return col;
}

/* From the bench above: the direct kernels for every forward pass (ahead or
 * level everywhere); for backward-data except into fewer than 4 input
 * channels (a dx tile of one channel wastes most of its 8 accumulators) and
 * through 1x1 convolutions (no taps to share: the GEMM is better there); for
 * backward-weight except over few pixels into many channels (>= 128 output
 * channels, <= 64 output pixels: resnet18's 8x8 stage), where the GEMM's
 * K x Co blocks are large and the direct kernel's rows of pixel pairs short. */
int k_conv_bf16_choose(const k_conv_shape *s, int pass) {
    int p = k_bf16_path();
    if (p == K_BF16_REF || k_bf16_forced() >= 0) return p;
    int pointwise = s->kh == 1 && s->kw == 1;
    if (pass == K_CONV_FWD) return K_BF16_DIRECT;
    if (pass == K_CONV_BWD_DATA) return pointwise || s->Ci < 4 ? K_BF16_AVX512BF16 : K_BF16_DIRECT;
    return s->Co >= 128 && s->Ho * s->Wo <= 64 ? K_BF16_AVX512BF16 : K_BF16_DIRECT;
}

/* ---- scratch ---------------------------------------------------------------- */

static size_t fast_bytes(const k_conv_shape *s) {
    dims d = dims_of(s);
    size_t col = k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16));
    size_t fwd = k_bf16_pack_a_bytes(s->Co, d.K) + k_bf16_pack_b_bytes(d.K, d.P);
    size_t bwd_d = k_bf16_pack_a_bytes(d.K, s->Co) + k_bf16_pack_b_bytes(s->Co, d.P) +
                   k_bf16_lines((size_t)d.K * d.P * sizeof(float));
    size_t bwd_w = k_bf16_pack_a_bytes(d.K, d.P) + k_bf16_pack_b_bytes(d.P, s->Co) +
                   k_bf16_lines((size_t)d.K * s->Co * sizeof(float));
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
    size_t a = fast_bytes(s), b = ref_bytes(s), c = k_conv_direct_bf16_scratch(s);
    a = a > b ? a : b;
    return a > c ? a : c;
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
    k_conv2d_fwd_bf16_act(s, y, x, w, b, 0, scratch);
}

void k_conv2d_fwd_bf16_act(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                           int relu, void *scratch) {
    k_conv2d_fwd_bf16_act_m(k_conv_bf16_choose(s, K_CONV_FWD), s, y, x, w, b, relu, scratch);
}
void k_conv2d_fwd_bf16_act_m(int how, const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w,
                             const float *b, int relu, void *scratch) {
    dims d = dims_of(s);
    if (how == K_BF16_DIRECT) {
        k_conv_direct_bf16_fwd(s, y, x, w, b, relu, scratch);
        return;
    }
    if (how != K_BF16_AVX512BF16) {
        ref_area r = widen2(x, (size_t)s->N * d.xs, w, (size_t)s->Co * d.K, scratch, s);
        k_conv2d_fwd_act(s, y, r.a, r.b, b, relu, r.rest, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
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
        if (relu) k_relu_inplace(yn, d.ys);
    }
}

/* The conv output one image at a time (the fallback's), after the kernels' scratch. */
size_t k_conv2d_pool2_bf16_scratch(const k_conv_shape *s) {
    return k_conv2d_bf16_scratch(s) + ((size_t)s->Co * s->Ho * s->Wo + 16) * sizeof(float);
}

/* the per-image forward of the image-by-image pool path, one per path it serves */
static void fwd_act_gemm(const k_conv_shape *s, float *y, const void *x, const void *w, const float *b, int relu,
                         void *scratch) {
    k_conv2d_fwd_bf16_act_m(K_BF16_AVX512BF16, s, y, x, w, b, relu, scratch);
}
static void fwd_act_ref(const k_conv_shape *s, float *y, const void *x, const void *w, const float *b, int relu,
                        void *scratch) {
    k_conv2d_fwd_bf16_act_m(K_BF16_REF, s, y, x, w, b, relu, scratch);
}

void k_conv2d_fwd_pool2_bf16(const k_conv_shape *s, float *vals, uint8_t *argmax, const k_bf16 *x, const k_bf16 *w,
                             const float *b, int relu, void *scratch) {
    k_conv2d_fwd_pool2_bf16_m(k_conv_bf16_choose(s, K_CONV_FWD), s, vals, argmax, x, w, b, relu, scratch);
}
void k_conv2d_fwd_pool2_bf16_m(int how, const k_conv_shape *s, float *vals, uint8_t *argmax, const k_bf16 *x,
                               const k_bf16 *w, const float *b, int relu, void *scratch) {
    if (how == K_BF16_DIRECT) {
        k_conv_direct_bf16_fwd_pool(s, vals, argmax, x, w, b, relu, scratch);
        return;
    }
    k_conv_pool2_image_by_image(s, vals, argmax, x, sizeof *x, w, b, relu, scratch,
                                (float *)((char *)scratch + k_conv2d_bf16_scratch(s)),
                                how == K_BF16_AVX512BF16 ? fwd_act_gemm : fwd_act_ref);
}

void k_conv2d_bwd_data_bf16(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch) {
    k_conv2d_bwd_data_bf16_m(k_conv_bf16_choose(s, K_CONV_BWD_DATA), s, dx, dy, w, scratch);
}
void k_conv2d_bwd_data_bf16_m(int how, const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w,
                              void *scratch) {
    dims d = dims_of(s);
    if (how == K_BF16_DIRECT) {
        k_conv_direct_bf16_bwd_data(s, dx, dy, w, scratch);
        return;
    }
    if (how != K_BF16_AVX512BF16) {
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
    k_conv2d_bwd_weight_bf16_part(s, dw, x, dy, scratch, NULL, 1, 1);
}

/* What carries a weight gradient from part to part, on any of the three
 * paths (the plan sizes it before knowing which one runs): the direct
 * kernel's per-lane sums, the GEMM path's dW^T, or the fp32 kernels' own. */
size_t k_conv2d_bwd_weight_bf16_acc_floats(const k_conv_shape *s) {
    size_t direct = k_conv_direct_bf16_bwd_weight_acc_floats(s), ref = k_conv2d_bwd_weight_acc_floats(s);
    size_t gemm = (size_t)s->Ci * s->kh * s->kw * s->Co;
    size_t m = direct > ref ? direct : ref;
    return m > gemm ? m : gemm;
}

void k_conv2d_bwd_weight_bf16_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy, void *scratch,
                                   float *acc, int first, int last) {
    k_conv2d_bwd_weight_bf16_part_m(k_conv_bf16_choose(s, K_CONV_BWD_WEIGHT), s, dw, x, dy, scratch, acc, first, last);
}
void k_conv2d_bwd_weight_bf16_part_m(int how, const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                     void *scratch, float *acc, int first, int last) {
    dims d = dims_of(s);
    if (how == K_BF16_DIRECT) {
        k_conv_direct_bf16_bwd_weight_part(s, dw, x, dy, scratch, acc, first, last);
        return;
    }
    if (how != K_BF16_AVX512BF16) {
        ref_area r = widen2(x, (size_t)s->N * d.xs, dy, (size_t)s->N * d.ys, scratch, s);
        k_conv2d_bwd_weight_part(s, dw, r.a, r.b, r.rest, acc, first, last, K_CONV_NO_PROLOGUE);
        return;
    }
    /* transposed, dW^T (K x Co) += col_n (K x P) . dy_n^T (P x Co): the large
     * operand, col_n, pairs neighbouring pixels of a row, so the kernel reads it
     * in place (packed only when P is odd); only the small dy_n is gathered.
     * Image by image in batch order, so parts add up to the whole batch's bits. */
    k_bf16 *col = scratch;
    char *Ap = (char *)scratch + k_bf16_lines((size_t)d.K * d.P * sizeof(k_bf16)), *Bp = Ap + k_bf16_pack_a_bytes(d.K, d.P);
    float *dwt = acc ? acc : (float *)(Bp + k_bf16_pack_b_bytes(d.P, s->Co));
    for (int n = 0; n < s->N; n++) {
        const k_bf16 *cn = cols_of(s, x + n * d.xs, col);
        int add = n > 0 || !first;
        k_bf16_pack_b(d.P, s->Co, dy + n * d.ys, 1, d.P, Bp); /* dy^T: (p, co) = dy[co*P + p] */
        if (d.P % 2 == 0 && ((uintptr_t)cn & 3) == 0) { /* col_n's rows are whole k pairs: read in place */
            k_bf16_gemm_rows(d.K, s->Co, d.P, cn, d.P, Bp, add, dwt, s->Co);
            continue;
        }
        k_bf16_pack_a(d.K, d.P, cn, d.P, 1, Ap);
        k_bf16_gemm_packed(d.K, s->Co, d.P, Ap, Bp, add, dwt, s->Co);
    }
    if (!last) return;
    for (int co = 0; co < s->Co; co++)
        for (int k = 0; k < d.K; k++) dw[(size_t)co * d.K + k] = dwt[(size_t)k * s->Co + co];
}

/* ---- dy from a max pool's gradient and argmax --------------------------------- */

/* [the passes' scratch | the unpooled bf16 dy | the pool backward's fp32 pieces] */
size_t k_conv2d_unpool2_bf16_scratch(const k_conv_shape *s) {
    k_pool_shape p = k_conv_pool2_shape(s, s->N);
    return k_conv2d_bf16_scratch(s) + k_bf16_lines((size_t)s->N * s->Co * s->Ho * s->Wo * sizeof(k_bf16)) +
           k_maxpool2d_bwd_bf16_scratch_floats(&p) * sizeof(float);
}

/* The paths without the direct kernels' own unpooling: the whole dy first,
 * as the pool's backward kernel makes it in bf16 (k_maxpool2d_bwd_bf16). */
static const k_bf16 *unpooled(const k_conv_shape *s, k_unpool2 up, void *scratch) {
    k_pool_shape p = k_conv_pool2_shape(s, s->N);
    k_bf16 *dy = (k_bf16 *)((char *)scratch + k_conv2d_bf16_scratch(s));
    float *rest = (float *)((char *)dy + k_bf16_lines((size_t)s->N * s->Co * s->Ho * s->Wo * sizeof(k_bf16)));
    k_maxpool2d_bwd_bf16(&p, dy, up.g, up.argmax, rest);
    return dy;
}

void k_conv2d_bwd_data_unpool2_bf16(const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w, void *scratch) {
    k_conv2d_bwd_data_unpool2_bf16_m(k_conv_bf16_choose(s, K_CONV_BWD_DATA), s, dx, up, w, scratch);
}
void k_conv2d_bwd_data_unpool2_bf16_m(int how, const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w,
                                      void *scratch) {
    if (how == K_BF16_DIRECT) k_conv_direct_bf16_bwd_data_unpool2(s, dx, up, w, scratch);
    else k_conv2d_bwd_data_bf16_m(how, s, dx, unpooled(s, up, scratch), w, scratch);
}

void k_conv2d_bwd_weight_unpool2_bf16_part(const k_conv_shape *s, float *dw, const k_bf16 *x, k_unpool2 up,
                                           void *scratch, float *acc, int first, int last) {
    k_conv2d_bwd_weight_unpool2_bf16_part_m(k_conv_bf16_choose(s, K_CONV_BWD_WEIGHT), s, dw, x, up, scratch, acc,
                                            first, last);
}
void k_conv2d_bwd_weight_unpool2_bf16_part_m(int how, const k_conv_shape *s, float *dw, const k_bf16 *x,
                                             k_unpool2 up, void *scratch, float *acc, int first, int last) {
    if (how == K_BF16_DIRECT) k_conv_direct_bf16_bwd_weight_unpool2_part(s, dw, x, up, scratch, acc, first, last);
    else k_conv2d_bwd_weight_bf16_part_m(how, s, dw, x, unpooled(s, up, scratch), scratch, acc, first, last);
}

/* ---- one path's needs (the engine's choice at compile time, impl.c) ------------ */

/* Bytes of scratch the path needs for a node of this kind (enum k_op_kind):
 * the direct kernels their own; the others keep the layouts above (the
 * per-image pool output and the unpooled dy after k_conv2d_bf16_scratch). */
size_t k_conv2d_bf16_method_scratch(int how, int kind, const k_conv_shape *s) {
    if (how == K_BF16_DIRECT) return k_conv_direct_bf16_scratch(s) + 64;
    if (kind == K_OP_CONV_FWD_POOL2) return k_conv2d_pool2_bf16_scratch(s);
    if (kind == K_OP_CONV_BWD_DATA_UNPOOL2 || kind == K_OP_CONV_BWD_WEIGHT_UNPOOL2) return k_conv2d_unpool2_bf16_scratch(s);
    return k_conv2d_bf16_scratch(s);
}

/* Floats a tiled weight gradient keeps between tiles on the path (0 for the other passes). */
size_t k_conv2d_bf16_method_state(int how, int kind, const k_conv_shape *s) {
    if (kind != K_OP_CONV_BWD_WEIGHT && kind != K_OP_CONV_BWD_WEIGHT_UNPOOL2) return 0;
    if (how == K_BF16_DIRECT) return k_conv_direct_bf16_bwd_weight_acc_floats(s);
    if (how == K_BF16_AVX512BF16) return (size_t)s->Ci * s->kh * s->kw * s->Co;
    return k_conv2d_bwd_weight_bf16_acc_floats(s); /* the reference path: the fp32 kernels' own, by their rule */
}
