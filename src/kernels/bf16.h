/* bf16.h — bfloat16 mixed precision: the conversions, the path the bf16
 * kernels take, and the kernels themselves (GEMM and convolution).
 *
 * bf16 here always means mixed precision as torch_xla's XLA_USE_BF16 and
 * PyTorch's autocast do it: the operands of a GEMM or a convolution are
 * rounded to bfloat16 (round to nearest, ties to even; NaN stays NaN), the
 * products are accumulated in fp32 and the result is fp32. Everything else
 * (weights' master copy, optimizer, batch norm, softmax, loss) stays fp32;
 * the engine decides which operands are rounded (engine/pass_precision.c).
 *
 * Two paths, chosen at run time (k_bf16_path):
 *   K_BF16_AVX512BF16  vdpbf16ps kernels (gemm_bf16.c, conv_bf16.c and
 *                      conv_direct_bf16.c), when the CPU has AVX512-BF16 and
 *                      the SIMD level is AVX-512;
 *   K_BF16_REF         the portable path: bf16 operands widened to fp32
 *                      (exactly) and the fp32 kernels run on them, so the
 *                      numbers are those of bf16-rounded operands on any x86-64.
 * AMX-BF16 tiles (Intel) are not here: see the last paragraph of
 * gemm_bf16.c's header comment.
 *
 * Not here: the fp32 kernels (kernels.h) or the choice of fp32 conv method (conv.h).
 */
#ifndef XT_KERNELS_BF16_H
#define XT_KERNELS_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

typedef uint16_t k_bf16;   /* the top 16 bits of an IEEE float32 */

/* K_BF16_DIRECT is the AVX512-BF16 hardware too: for the convolutions'
 * forward and backward-data it names the direct batch-blocked kernels
 * (conv_direct_bf16.c) instead of im2col + GEMM; everything else runs as
 * under K_BF16_AVX512BF16. The CPU's best (k_bf16_detect) is never DIRECT:
 * per shape, k_conv_bf16_choose picks between the three. */
enum k_bf16_path { K_BF16_REF = 0, K_BF16_AVX512BF16 = 1, K_BF16_DIRECT = 2 };

/* The path the bf16 kernels take now; the best one the CPU has unless forced
 * (the fast path also needs k_simd_level() == K_SIMD_AVX512, so forcing the
 * SIMD level down forces the reference path too). */
int k_bf16_path(void);
int k_bf16_detect(void);
/* Force a path (clamped to what the CPU has); -1 returns to automatic.
 * Returns the path now in effect. While forced, every bf16 kernel takes it,
 * whatever k_conv_bf16_choose would pick (tests and benches run each path on
 * every shape). XLATRAIN_BF16_PATH=ref in the environment also forces it. */
int k_bf16_force(int path);
int k_bf16_forced(void);   /* the forced path, or -1 */
/* How many paths this CPU can be forced to: 1 (REF) or 3 (REF, AVX512BF16,
 * DIRECT); tests and benches loop over 0 .. k_bf16_npaths() - 1. */
int k_bf16_npaths(void);
/* XLATRAIN_BF16_PATH: unset, "" or "auto" (the choice per shape), "ref"
 * (the portable path, even with AVX512-BF16). Returns 0 for those, -1 for
 * anything else (the caller reports it; an unknown value then counts as auto). */
int k_bf16_env_check(const char **value);
const char *k_bf16_path_name(int path);

/* float -> bf16, round to nearest even; a NaN stays a (quiet) NaN, infinities
 * stay infinite, a finite value too large rounds to infinity (as IEEE). */
static inline k_bf16 k_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (k_bf16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (k_bf16)(u >> 16);
}
static inline float k_bf16_to_f32(k_bf16 b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* out[i] = bf16(in[i]) / in[i] widened; vectorized where the CPU allows,
 * the same bits on every path. */
void k_bf16_cast(size_t n, k_bf16 *out, const float *in);
void k_bf16_expand(size_t n, float *out, const k_bf16 *in);

/* ---- GEMM: C(M,N) = op(A) op(B) (+ C when accumulate), A and B bf16 ------
 * Row-major as k_gemm; products exact, sums fp32. scratch holds
 * k_gemm_bf16_scratch(M, N, K) bytes, 64-byte aligned. */
size_t k_gemm_bf16_scratch(int M, int N, int K);
void k_gemm_bf16(int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B, int ldb,
                 int accumulate, float *C, int ldc, void *scratch);
/* The twin the tests hold both paths against: the defining sum over widened
 * operands, accumulated in double. */
void k_gemm_bf16_ref(int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B,
                     int ldb, int accumulate, float *C, int ldc);

/* ---- convolution with bf16 operands (k_conv2d_* contract, fp32 outputs) ----
 * scratch holds k_conv2d_bf16_scratch(s) bytes (either path, any pass). */
size_t k_conv2d_bf16_scratch(const k_conv_shape *s);
/* The path k_conv2d_*_bf16 takes for this shape and pass (enum k_conv_pass):
 * the reference path on a CPU without AVX512-BF16; otherwise the direct bf16
 * kernel or im2col + the packed GEMM, by a fixed rule over the shape
 * (conv_bf16.c; kernel_bench's "bf16 " rows compare them). A rule measured
 * on one CPU kind; issue #55 replaces it with a choice measured at compile
 * time. A forced path (k_bf16_force) wins. */
int k_conv_bf16_choose(const k_conv_shape *s, int pass);
/* relu 1: y = relu(conv + b), as the fp32 k_conv2d_fwd_act */
void k_conv2d_fwd_bf16_act(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                           int relu, void *scratch);
void k_conv2d_fwd_bf16(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                       void *scratch);
/* The convolution then a 2x2, stride-2 max pool, as the fp32
 * k_conv2d_fwd_pool2 (values and indices bit for bit those of pooling the
 * k_conv2d_fwd_bf16_act output), in k_conv2d_pool2_bf16_scratch(s) bytes. */
size_t k_conv2d_pool2_bf16_scratch(const k_conv_shape *s);
void k_conv2d_fwd_pool2_bf16(const k_conv_shape *s, float *vals, uint8_t *argmax, const k_bf16 *x, const k_bf16 *w,
                             const float *b, int relu, void *scratch);
void k_conv2d_bwd_data_bf16(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch);
void k_conv2d_bwd_weight_bf16(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy, void *scratch);
/* The same over consecutive parts of the batch, in order (the engine's
 * micro-batch tiles), as the fp32 k_conv2d_bwd_weight_part: first starts the
 * sum, last writes dw, `acc` (k_conv2d_bwd_weight_bf16_acc_floats floats)
 * carries it between calls (NULL: one call, the sum kept in scratch).
 * Bit-identical to k_conv2d_bwd_weight_bf16 over the whole batch when every
 * part but the last is a multiple of 16 images, on every path. */
size_t k_conv2d_bwd_weight_bf16_acc_floats(const k_conv_shape *s);
void k_conv2d_bwd_weight_bf16_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy, void *scratch,
                                   float *acc, int first, int last);
/* The backward passes with dy given as a 2x2/2 max pool's fp32 gradient and
 * argmax (k_unpool2, as the fp32 _unpool2 kernels; pass_conv_unpool.c): the
 * bits of rounding k_maxpool2d_bwd(g, argmax) to bf16 and passing that as dy,
 * on every path. The direct kernels unpool block by block as they pack dy;
 * the other paths unpool the whole dy into scratch first. Scratch:
 * k_conv2d_unpool2_bf16_scratch(s) bytes. */
size_t k_conv2d_unpool2_bf16_scratch(const k_conv_shape *s);
void k_conv2d_bwd_data_unpool2_bf16(const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w, void *scratch);
void k_conv2d_bwd_weight_unpool2_bf16_part(const k_conv_shape *s, float *dw, const k_bf16 *x, k_unpool2 up,
                                           void *scratch, float *acc, int first, int last);

/* The bf16 passes and GEMM with the path given (enum k_bf16_path; fast:
 * the AVX512-BF16 GEMM, else the reference), chosen when the graph compiled
 * (impl.h), rather than per call. */
void k_conv2d_fwd_bf16_act_m(int how, const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w,
                             const float *b, int relu, void *scratch);
void k_conv2d_fwd_pool2_bf16_m(int how, const k_conv_shape *s, float *vals, uint8_t *argmax, const k_bf16 *x,
                               const k_bf16 *w, const float *b, int relu, void *scratch);
void k_conv2d_bwd_data_bf16_m(int how, const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w,
                              void *scratch);
void k_conv2d_bwd_data_unpool2_bf16_m(int how, const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w,
                                      void *scratch);
void k_conv2d_bwd_weight_bf16_part_m(int how, const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                     void *scratch, float *acc, int first, int last);
void k_conv2d_bwd_weight_unpool2_bf16_part_m(int how, const k_conv_shape *s, float *dw, const k_bf16 *x,
                                             k_unpool2 up, void *scratch, float *acc, int first, int last);
void k_gemm_bf16_m(int fast, int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B,
                   int ldb, int accumulate, float *C, int ldc, void *scratch);
/* One path's scratch bytes and tile state floats for a node of kind `kind` (enum k_op_kind). */
size_t k_conv2d_bf16_method_scratch(int how, int kind, const k_conv_shape *s);
size_t k_conv2d_bf16_method_state(int how, int kind, const k_conv_shape *s);

#endif
