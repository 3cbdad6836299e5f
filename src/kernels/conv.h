/* conv.h — which convolution method k_conv2d_* uses (conv.c; private to
 * src/kernels, the kernel tests and tests/bench/kernel_bench.c).
 *
 * conv.c picks one method per (shape, pass); the tests check the choice and
 * the bench prints it. Not here: the methods themselves (conv_im2col.h,
 * conv_direct.h) or k_conv2d_* (kernels.h, the engine's interface).
 */
#ifndef XT_KERNELS_CONV_H
#define XT_KERNELS_CONV_H

#include "kernels/conv_common.h"
#include "kernels/kernels.h"

enum k_conv_method { K_CONV_IM2COL = 0, K_CONV_DIRECT = 1, K_CONV_ROWS = 2, K_CONV_SPARSE = 3 };

/* Which method k_conv2d_* uses for this shape and pass (the measured choice). */
int k_conv_choose(const k_conv_shape *s, int pass);
/* The same for the _unpool2 passes (dy a max pool's gradient and argmax):
 * the weight gradient may visit only the kept pixels (conv_sparse.h). */
int k_conv_choose_unpool2(const k_conv_shape *s, int pass);
const char *k_conv_method_name(int method);

/* The k_conv2d_* entry points with the method given (enum k_conv_method),
 * chosen when the graph compiled (impl.h), rather than per call. */
void k_conv2d_fwd_act_m(int method, const k_conv_shape *s, float *y, const float *x, const float *w, const float *b,
                        int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro);
void k_conv2d_fwd_pool2_m(int method, const k_conv_shape *s, float *vals, uint8_t *argmax, const float *x,
                          const float *w, const float *b, int relu, float *scratch, k_conv_packed pk,
                          k_conv_prologue pro);
void k_conv2d_bwd_data_masked_m(int method, const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up,
                                const float *w, const float *relu_mask, float *scratch, k_conv_packed pk);
void k_conv2d_bwd_weight_part_m(int method, const k_conv_shape *s, float *dw, const float *x, const float *dy,
                                float *scratch, float *acc, int first, int last, k_conv_prologue pro);
void k_conv2d_bwd_weight_unpool2_part_m(int method, const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy,
                                        float *scratch, float *acc, int first, int last, k_conv_prologue pro);
/* One method's scratch floats, tile state floats and multiply-adds executed
 * for a node of kind `kind` (enum k_op_kind); the hand-off floats of an
 * unpooling pair running `data` and `weight`. */
size_t k_conv2d_method_scratch(int method, int kind, const k_conv_shape *s);
size_t k_conv2d_method_state(int method, int kind, const k_conv_shape *s);
double k_conv2d_method_macs(int method, int kind, const k_conv_shape *s);
size_t k_conv2d_method_share_floats(const k_conv_shape *s, int data, int weight);

#endif
