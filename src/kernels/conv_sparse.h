/* conv_sparse.h — the weight gradient (conv_sparse.c) and backward-data
 * (conv_sparse_data.c) under a 2x2/2 max pool, from the pool's gradient and
 * argmax alone: only the pixel each window kept (private to src/kernels, the
 * kernel tests and the kernel bench).
 *
 * Not here: the choice of method (conv.c), the dense passes (conv_direct.h,
 * conv_rows.h), bf16.
 */
#ifndef XT_KERNELS_CONV_SPARSE_H
#define XT_KERNELS_CONV_SPARSE_H

#include <stddef.h>

#include "kernels/kernels.h"

/* Whether this method can run the shape on this CPU, and should: AVX2 or
 * AVX-512 (x86-64 builds), kernels that cover the kh rows of
 * ceil(kw*Ci / lanes) vectors (whole, or in slices), and the cost model. */
int k_conv_sparse_fits(const k_conv_shape *s);
/* Whether it can run the shape (the above without the cost model): a
 * candidate for a choice measured at compile time (impl.c). */
int k_conv_sparse_runs(const k_conv_shape *s);
/* Tests only: mode 1, run wherever it can (AVX2 and kernels for the
 * shape) whatever the cost model says; 0, never; -1, the cost model.
 * Returns 0 in a build without the method. */
int k_conv_sparse_force(int mode);
/* Scratch floats: one image channels-last, one (image, channel)'s kept
 * pixels, and the accumulators of a whole-batch call. */
size_t k_conv_sparse_scratch(const k_conv_shape *s);
/* The per-lane sums kept between the parts of a batch: 16 lanes (a lane per
 * image mod 16) x Co x kh x the padded kernel row. */
size_t k_conv_sparse_acc_floats(const k_conv_shape *s);
/* dw over consecutive parts of the batch (first starts the sums in acc, last
 * writes dw; acc NULL: in scratch, one call over the batch). dy is the
 * pool's gradient and argmax (up.g, up.argmax; up.share is not used); x is
 * read through pro. The bits of k_conv_direct_bwd_weight_unpool2_part
 * wherever x is finite, for any split into parts of whole 16-image blocks. */
void k_conv_sparse_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 up,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro);
/* Multiply-adds the pass executes for s (the kept pixels' taps, as the
 * vectors carry them), against the dense pass's N*Co*Ho*Wo*Ci*kh*kw. */
double k_conv_sparse_executed_macs(const k_conv_shape *s);

/* Backward-data, dx = conv_transpose(dy, w) with dy the pool's unscattered
 * gradient (up.g, up.argmax; up.share is not used), masked by relu_mask > 0
 * when it is not NULL (k_conv2d_bwd_data_masked). Whether it can run and
 * should (AVX2, kernels for kh x kw*ceil(Ci/lanes) vectors, the cost
 * model; k_conv_sparse_data_force as k_conv_sparse_force, for tests). */
int k_conv_sparse_data_fits(const k_conv_shape *s);
int k_conv_sparse_data_runs(const k_conv_shape *s); /* can run, whatever the cost model says */
void k_conv_sparse_data_force(int mode);
/* 0: each cell of a window summed into d on its own; 1 (the default): side by
 * side pairs at once where a kernel exists. The same bits either way (tests). */
void k_conv_sparse_data_pairs(int on);
/* Scratch floats, and the floats of the packed weights a caller may keep
 * across the micro-batch tiles of a step (k_conv_packed). */
size_t k_conv_sparse_data_scratch(const k_conv_shape *s);
size_t k_conv_sparse_data_packed_floats(const k_conv_shape *s);
void k_conv_sparse_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w,
                                    const float *relu_mask, float *scratch, k_conv_packed pk);
/* Multiply-adds it executes at most (every kept cell; the zero gradients it
 * skips depend on the data), as the vectors carry them. */
double k_conv_sparse_data_executed_macs(const k_conv_shape *s);

#endif
