/* conv_common.h — what the convolution methods and their dispatcher share
 * (private to src/kernels, the kernel tests and tests/bench/kernel_bench.c):
 * the names of the three passes, the bias gradient and the pool epilogue's
 * fallback.
 * Not here: the methods (conv_im2col.h, conv_direct.h) or the choice between
 * them (conv.h).
 */
#ifndef XT_KERNELS_CONV_COMMON_H
#define XT_KERNELS_CONV_COMMON_H

#include "kernels/kernels.h"

enum k_conv_pass { K_CONV_FWD = 0, K_CONV_BWD_DATA = 1, K_CONV_BWD_WEIGHT = 2 };

/* db[co] = sum over n, oh, ow of dy. */
void k_conv_bias_grad(const k_conv_shape *s, float *db, const float *dy);

/* The 2x2, stride-2 max pool over n images of s's output (Co channels of
 * Ho x Wo): the pool the _pool2 passes fuse and the _unpool2 passes undo. */
k_pool_shape k_conv_pool2_shape(const k_conv_shape *s, int n);

/* The conv + 2x2/2 max pool epilogue where the path has none of its own (fp32
 * im2col, the bf16 GEMM and reference paths): image by image, fwd writes the
 * conv output (+ bias, relu) of one image into y (Co*Ho*Wo floats), which is
 * then pooled into vals and argmax as k_maxpool2d_fwd does. x holds elements
 * of x_elem bytes (fp32 or bf16); scratch is fwd's. */
typedef void (*k_conv_fwd_act_fn)(const k_conv_shape *s, float *y, const void *x, const void *w, const float *b,
                                  int relu, void *scratch);
void k_conv_pool2_image_by_image(const k_conv_shape *s, float *vals, uint8_t *argmax, const void *x, size_t x_elem,
                                 const void *w, const float *b, int relu, void *scratch, float *y,
                                 k_conv_fwd_act_fn fwd);

#endif
