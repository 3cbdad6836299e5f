/* conv_direct.h — direct SIMD convolution, batch-blocked (conv_direct.c;
 * private to src/kernels, the kernel tests and the kernel bench).
 *
 * Vector lanes run across images; any stride and padding. The SIMD flavour
 * follows k_simd_level(). All follow the k_conv2d_* contract: outputs
 * overwritten, scratch sized by k_conv_direct_scratch(). Not here: the choice
 * of method (conv.h).
 */
#ifndef XT_KERNELS_CONV_DIRECT_H
#define XT_KERNELS_CONV_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/conv_common.h"
#include "kernels/kernels.h"

size_t k_conv_direct_scratch(const k_conv_shape *s);
void k_conv_direct_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b,
                       float *scratch);
/* relu 1: y = relu(conv + b), applied channel by channel as y leaves the blocked layout */
/* argmax non-NULL: y and argmax receive the 2x2, stride-2 max pool of that
 * output (as k_maxpool2d_fwd, bit for bit), pooled in the blocked layout;
 * the conv output itself is never written. */
/* pro: x read through batch norm's apply (k_conv_prologue), made as x is packed. */
void k_conv_direct_fwd_pool(const k_conv_shape *s, float *y, uint8_t *argmax, const float *x, const float *w,
                            const float *b, int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro);
void k_conv_direct_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                           float *scratch, k_conv_packed pk, k_conv_prologue pro);
/* Floats of the packed weights of the fwd and bwd_data passes (k_conv_packed): a bound for every SIMD flavour */
size_t k_conv_direct_packed_floats(const k_conv_shape *s, int pass);
void k_conv_direct_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch);
/* k_unpool2.share's floats for the direct pair, or 0 when the weight
 * gradient's channel tile does not divide Co (it would need zero channels
 * past Co that backward-data's layout lacks) */
size_t k_conv_direct_unpool2_share_floats(const k_conv_shape *s);
void k_conv_direct_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                              float *scratch);
/* The weight gradient over consecutive batch parts, in order (micro-batch
 * tiles): `acc` (k_conv_direct_bwd_weight_acc_floats) keeps the per-lane
 * sums between calls; first zeroes them, last writes dw. Bit-identical to
 * one call over the whole batch when every part but the last is a whole
 * number of lane blocks (16 images). acc NULL: carved from scratch (one call). */
size_t k_conv_direct_bwd_weight_acc_floats(const k_conv_shape *s);
void k_conv_direct_bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                                   float *scratch, float *acc, int first, int last, k_conv_prologue pro);
/* The backward passes with dy given as a 2x2/2 max pool's gradient and argmax
 * (k_unpool2), scattered into the blocked layout block by block. */
/* Either dy form (dy, or up.g non-NULL); mask non-NULL: then dx = mask > 0 ? dx : 0 as it leaves the blocked layout. */
void k_conv_direct_bwd_data_masked(const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up, const float *w,
                                   const float *mask, float *scratch, k_conv_packed pk);
void k_conv_direct_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro);
/* Tests only: make `pass` (enum k_conv_pass) use entry `index` of the current
 * SIMD flavour's tile list instead of the cost model's pick (index -1: back to
 * the model). Returns 0 when the list has no such entry. */
int k_conv_direct_force_tile(int pass, int index);

/* Shared with the direct bf16 kernels (conv_direct_bf16.c):
 * the (tap, output index) pairs that reach input index h (o*stride + t - pad = h),
 * as list[2n] = t, list[2n+1] = o; returns n. */
int k_conv_taps_for(int h, int k, int stride, int pad, int out, int32_t *list);
/* The tile cost models (relative cycles) the fp32 and bf16 pickers share:
 * fwd, a CT x PT tile (conv_direct.c's pick_fwd says why); bwd_data, CT channels; */
double k_conv_direct_fwd_cost(const k_conv_shape *s, int ct, int pt);
double k_conv_direct_bwd_cost(const k_conv_shape *s, int ct);
double k_conv_direct_bww_cost(const k_conv_shape *s, int ct, int tt); /* bwd_weight, CT channels x TT taps */
/* Plain [c][h][w] (+ bias[c]; then max(., 0) when relu) of nb <= 16 images <-
 * blocked fp32 t[c][H][Wd][16] with AVX-512 transposes (x86-64 builds only,
 * AVX-512 CPUs only); idle lanes go to `sink` (one plane). */
void k_conv_direct_from_blocked16(float *x, size_t img, const float *t, int nb, int C, int H, int W, int Wd,
                                  const float *bias, int relu, float *sink);
/* The 2x2, stride-2 max pool (+ bias, then relu) of channels c0 .. c0+cn of
 * one block's blocked conv output, yb[cn][Ho][wo_pad][16] -> nb images' values
 * y and argmax (of all Co channels: written at channel c0), plain
 * [c][h][w], bit for bit as k_maxpool2d_fwd on the written output (AVX-512
 * only). pooled and pa: blocked scratch of k_conv_direct_pool16_floats(s)
 * elements each; sink: one pooled plane. */
size_t k_conv_direct_pool16_floats(const k_conv_shape *s);

/* The channel stride, in elements, of a blocked layout whose channel planes are
 * `lines` 64-byte lines (one pixel of NB lanes per line). A whole number of
 * 4 KiB puts the same pixel of every channel in one L1 set (64 sets on both CPU
 * kinds here), so a loop over 20 channels evicts its own lines; an odd number of
 * lines spreads them over every set. It shows where dy planes are exactly
 * 4 KiB: the seed CNN's conv2 backward-data, 8x8 planes (kernel_bench's
 * "seed conv2" and "bf16 seed conv2" bwd_data). */
static inline size_t k_conv_direct_spread_stride(size_t lines, int NB) {
    return (lines | 1) * (size_t)NB;
}
/* A channel plane's argmax bytes (n window cells of each of nb images, img
 * bytes apart) to and from the blocked int32 layout [p*16 + l] the pool and
 * unpool steps compare in (idle lanes 0), 16 cells at a time through the
 * 16x16 transpose (AVX-512 only). */
void k_conv_direct_cells_to_blocked16(int32_t *ib, const uint8_t *a, size_t img, int nb, int n);
void k_conv_direct_cells_from_blocked16(uint8_t *a, size_t img, const int32_t *ib, int nb, int n);
void k_conv_direct_pool_from_blocked16(const k_conv_shape *s, int c0, int cn, const float *yb, int wo_pad, int nb,
                                       const float *b, int relu, float *y, uint8_t *argmax, float *pooled, int32_t *pa,
                                       float *sink);

#endif
