/* conv_common.h — what the convolution methods and their dispatcher share
 * (private to src/kernels, the kernel tests and tests/bench/kernel_bench.c):
 * the names of the three passes and the bias gradient.
 * Not here: the methods (conv_im2col.h, conv_direct.h) or the choice between
 * them (conv.h).
 */
#ifndef XT_KERNELS_CONV_COMMON_H
#define XT_KERNELS_CONV_COMMON_H

#include "kernels/kernels.h"

enum k_conv_pass { K_CONV_FWD = 0, K_CONV_BWD_DATA = 1, K_CONV_BWD_WEIGHT = 2 };

/* db[co] = sum over n, oh, ow of dy. */
void k_conv_bias_grad(const k_conv_shape *s, float *db, const float *dy);

#endif
