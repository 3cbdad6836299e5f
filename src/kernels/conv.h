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

#endif
