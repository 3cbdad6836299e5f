/* conv_impl.h — the convolution methods behind k_conv2d_* (private to src/kernels,
 * the kernel tests and tests/bench/kernel_bench.c).
 *
 * conv.c picks one method per (shape, pass); these entry points let the tests
 * check every method against conv_ref.c and let the bench time them side by side.
 * All follow the k_conv2d_* contract: outputs overwritten, scratch sized by the
 * method's own *_scratch().
 */
#ifndef XT_KERNELS_CONV_IMPL_H
#define XT_KERNELS_CONV_IMPL_H

#include "kernels/kernels.h"

enum k_conv_pass { K_CONV_FWD = 0, K_CONV_BWD_DATA = 1, K_CONV_BWD_WEIGHT = 2 };
enum k_conv_method { K_CONV_IM2COL = 0, K_CONV_DIRECT = 1 };

/* Which method k_conv2d_* uses for this shape and pass (the measured choice). */
int k_conv_choose(const k_conv_shape *s, int pass);
const char *k_conv_method_name(int method);
/* db[co] = sum over n, oh, ow of dy (shared by the methods; conv.c). */
void k_conv_bias_grad(const k_conv_shape *s, float *db, const float *dy);

/* ---- im2col + OpenBLAS GEMM (conv_im2col.c) -------------------------------
 * `group` images share one GEMM (their columns side by side); 1 = per image,
 * which needs no reshuffling of y/dy. Any shape, stride and padding. */
size_t k_conv_im2col_scratch(const k_conv_shape *s, int group);
void k_conv_im2col_fwd(const k_conv_shape *s, int group, float *y, const float *x, const float *w, const float *b,
                       float *scratch);
void k_conv_im2col_bwd_data(const k_conv_shape *s, int group, float *dx, const float *dy, const float *w,
                            float *scratch);
void k_conv_im2col_bwd_weight(const k_conv_shape *s, int group, float *dw, float *db, const float *x,
                              const float *dy, float *scratch);

/* ---- direct SIMD loops, batch-blocked (conv_direct.c) ------------------------
 * Vector lanes run across images; any stride and padding. The SIMD flavour
 * follows k_simd_level(). */
size_t k_conv_direct_scratch(const k_conv_shape *s);
void k_conv_direct_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b,
                       float *scratch);
void k_conv_direct_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch);
void k_conv_direct_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                              float *scratch);
/* Tests only: make `pass` use entry `index` of the current SIMD flavour's tile
 * list instead of the cost model's pick (index -1: back to the model). Returns 0
 * when the list has no such entry. */
int k_conv_direct_force_tile(int pass, int index);

#endif
