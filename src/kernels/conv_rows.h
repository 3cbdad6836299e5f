/* conv_rows.h — convolution of one input channel, stride 1, vectorized along
 * the output plane (conv_rows.c): the forward and the weight gradient.
 *
 * Private to src/kernels (conv.c dispatches to it; the kernel tests call it
 * directly). Not here: the choice of method (conv.c), the other methods
 * (conv_direct.h, conv_im2col.h).
 */
#ifndef XT_KERNELS_CONV_ROWS_H
#define XT_KERNELS_CONV_ROWS_H

#include "kernels/kernels.h"

/* Whether this method can run the shape on this CPU: Ci == 1, stride 1,
 * AVX-512 (x86-64 builds only). */
int k_conv_rows_fits(const k_conv_shape *s);
/* Scratch floats for either pass: one image's shifted input copies, its dy,
 * and the accumulators k_conv2d_bwd_weight's whole-batch call keeps there. */
size_t k_conv_rows_scratch(const k_conv_shape *s);

/* y = conv(x, w) + b, then max(., 0) when relu, x read through pro (its
 * scale NULL: x as it is). The same bits as k_conv_direct_fwd_act. */
void k_conv_rows_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                         float *scratch, k_conv_prologue pro);

/* Vector accumulators of the weight gradient: 16 lanes per (co, tap). */
size_t k_conv_rows_bwd_weight_acc_floats(const k_conv_shape *s);
/* dw (and db when not NULL) over consecutive parts of the batch: first
 * starts the sums in acc, last writes dw and db (acc NULL: in scratch, for
 * a call over the whole batch). dy plain (up.g NULL) or a
 * 2x2/2 max pool's gradient and argmax, scattered image by image. Any split
 * of the batch into parts gives the bits of one call. */
void k_conv_rows_bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                                 k_unpool2 up, float *scratch, float *acc, int first, int last, k_conv_prologue pro);

#endif
