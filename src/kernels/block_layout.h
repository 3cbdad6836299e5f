/* block_layout.h — activations between the engine's NCHW and a channel-blocked
 * layout (nChw8c / nChw16c: [N][C/B][H][W][B]), fused with the per-channel work
 * that was already reading or writing them.
 *
 * Is: the layout changes a oneDNN call in a blocked layout used to make as a
 * reorder beside a pass of the engine's over the same tensor: batch norm's
 * apply feeding a convolution (the prologue), written straight into the
 * primitive's layout; a backward-data result read out of it with the ReLU's
 * backward mask applied on the way; and the blocked output of batch norm's
 * statistics gradient (norm.c), where the engine's layout pass
 * (engine/pass_layout.c) gives that value the layout its readers want. The
 * values are those of the two-pass form bit for bit: a layout change moves
 * values, and the elementwise work is the same operations on each
 * (kernels.h's k_conv_prologue rounding; the mask as k_relu_bwd_inplace).
 * Is not: the layout decision (the pass's), nor any block but 8 and 16, nor
 * channel counts that are not a multiple of the block (the padded layouts'
 * zero channels are left to oneDNN's reorder).
 */
#ifndef XT_KERNELS_BLOCK_LAYOUT_H
#define XT_KERNELS_BLOCK_LAYOUT_H

#include <stddef.h>

#include "kernels/kernels.h"

/* out [N][C/B][HW][B] = relu?(x * scale[c] + shift[c]) of x [N][C][HW]; C % B == 0;
 * pro NULL: x's values as they are (a kernel's planes, blocked as it writes them) */
void k_block_prologue(int N, int C, int HW, int B, const k_conv_prologue *pro, const float *x, float *out);

/* out [N][C][HW] = in [N][C/B][HW][B], where mask > 0 (else +0); mask NULL: as it is */
void k_unblock_masked(int N, int C, int HW, int B, const float *in, const float *mask, float *out);

#endif
