/* conv_direct_bf16.h — the direct bf16 convolution, batch-blocked on
 * vdpbf16ps (conv_direct_bf16.c; private to src/kernels, the kernel tests and
 * the kernel bench).
 *
 * Every pass with bf16 operands and fp32 results, any N,
 * stride and padding; the k_conv2d_*_bf16 contract (outputs overwritten,
 * scratch of k_conv_direct_bf16_scratch(s) bytes, any alignment). Only on a
 * CPU with AVX512-BF16 at SIMD level AVX-512 (k_bf16_path() != K_BF16_REF);
 * conv_bf16.c decides when.
 */
#ifndef XT_KERNELS_CONV_DIRECT_BF16_H
#define XT_KERNELS_CONV_DIRECT_BF16_H

#include <stddef.h>

#include "kernels/bf16.h"

size_t k_conv_direct_bf16_scratch(const k_conv_shape *s);
/* relu 1: max(., 0) applied as y leaves the blocked layout */
void k_conv_direct_bf16_fwd(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                            int relu, void *scratch);
/* argmax non-NULL: y and argmax receive the 2x2, stride-2 max pool of that
 * output (values and window cells, bit for bit as k_maxpool2d_fwd), pooled
 * in the blocked layout; the conv output itself is never written. */
void k_conv_direct_bf16_fwd_pool(const k_conv_shape *s, float *y, uint8_t *argmax, const k_bf16 *x, const k_bf16 *w,
                                 const float *b, int relu, void *scratch);
void k_conv_direct_bf16_bwd_data(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch);
/* dw (fp32, [Co][Ci][kh][kw]) overwritten; no bias gradient (the engine sums it in fp32) */
void k_conv_direct_bf16_bwd_weight(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                   void *scratch);
/* The same over consecutive batch parts, in order (micro-batch tiles): `acc`
 * (k_conv_direct_bf16_bwd_weight_acc_floats floats) keeps the per-lane sums
 * between calls; first zeroes them, last writes dw. Bit-identical to one
 * call over the whole batch when every part but the last is a whole number
 * of 16-image lane blocks. acc NULL: carved from scratch (one call). */
size_t k_conv_direct_bf16_bwd_weight_acc_floats(const k_conv_shape *s);
void k_conv_direct_bf16_bwd_weight_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                        void *scratch, float *acc, int first, int last);
/* The backward passes with dy given as a 2x2/2 max pool's fp32 gradient and
 * argmax (k_unpool2; g [N][Co][Ho/2][Wo/2]): the bits of rounding
 * k_maxpool2d_bwd(g, argmax) to bf16 and passing that as dy, unpooled block
 * by block as the kernel packs it. */
void k_conv_direct_bf16_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w, void *scratch);
void k_conv_direct_bf16_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const k_bf16 *x, k_unpool2 up,
                                                void *scratch, float *acc, int first, int last);
/* Tests only: make `pass` (enum k_conv_pass) use entry `index` of its tile
 * list instead of the cost model's pick (index -1: back to the model).
 * Returns 0 when the list has no such entry. */
int k_conv_direct_bf16_force_tile(int pass, int index);
/* Tests only: bwd_weight sweeps a block `rows` output rows at a time instead
 * of the rows its L2 budget allows (rows <= 0: back to the budget). */
void k_conv_direct_bf16_force_bww_rows(int rows);

#endif
