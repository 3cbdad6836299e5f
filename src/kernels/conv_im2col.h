/* conv_im2col.h — convolution as im2col + OpenBLAS GEMM (conv_im2col.c;
 * private to src/kernels, the kernel tests and the kernel bench).
 *
 * All follow the k_conv2d_* contract: outputs overwritten, scratch sized by
 * k_conv_im2col_scratch(). `group` images share one GEMM (their columns side
 * by side); 1 = per image, which needs no reshuffling of y/dy. Any shape,
 * stride and padding. Not here: the choice of method (conv.h).
 */
#ifndef XT_KERNELS_CONV_IM2COL_H
#define XT_KERNELS_CONV_IM2COL_H

#include <stddef.h>

#include "kernels/kernels.h"

size_t k_conv_im2col_scratch(const k_conv_shape *s, int group);
void k_conv_im2col_fwd(const k_conv_shape *s, int group, float *y, const float *x, const float *w, const float *b,
                       float *scratch);
void k_conv_im2col_bwd_data(const k_conv_shape *s, int group, float *dx, const float *dy, const float *w,
                            float *scratch);
void k_conv_im2col_bwd_weight(const k_conv_shape *s, int group, float *dw, float *db, const float *x,
                              const float *dy, float *scratch);
/* Over consecutive batch parts in order: the first part overwrites dw, the
 * rest add to it, image by image as one call over the whole batch would. */
void k_conv_im2col_bwd_weight_part(const k_conv_shape *s, int group, float *dw, const float *x, const float *dy,
                                   float *scratch, int first);
/* dx = 0, then the adjoint of im2col: each column entry added to the input
 * pixel it was read from (col is K x P, rows ldc apart). Also the bf16
 * convolutions' last step of bwd_data (conv_bf16.c). */
void k_conv_col2im(const k_conv_shape *s, const float *col, size_t ldc, float *dx);

#endif
