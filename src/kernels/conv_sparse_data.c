/* conv_sparse_data.c — the backward-data pass of a convolution whose output a
 * 2x2, stride-2 max pool read, from the pool's gradient and argmax alone
 * (AVX2 and AVX-512: the vector code is conv_sparse_data_simd.h, once per
 * width): only the pixel each window kept, and only where its gradient is
 * not zero.
 *
 * Is: dx[n][ci][h][w] = sum over output channels co, conv output pixels p and
 * taps (i, j) with p*stride + (i, j) - pad = (h, w) of dy[n][co][p] *
 * w[co][ci][i][j], where dy is the pool's backward: g at the cell of each
 * window its argmax names, +0 at the other three and in a last odd row or
 * column. The dense pass (conv_direct.c) multiplies all four cells' dy; this
 * one skips the three +0 cells and every g that is 0 (a ReLU after the pool,
 * the seed CNN's order, zeroes about half of the kept ones too).
 *
 * Layout: lanes along input channels. Per image, dx is summed in a padded
 * channels-last buffer d[h][w][cb][VL] (cb = ceil(Ci/VL) blocks of VL = 8 or
 * 16 lanes), so
 * one tap's share of one pixel is one aligned vector, and a kernel row's kw
 * pixels are kw*cb consecutive vectors; the weights are packed the same way,
 * wp[co][i][j][cb][VL]. Then per pool window: for each of its 4 cells a
 * bit mask of the output channels that kept it with a non-zero g (one
 * compare per 16 channels, g and argmax first turned window-major); the
 * cell's kh*kw*cb vectors of d loaded into registers, a broadcast g times a
 * weight vector per tap and channel added, and stored back. So d is read and
 * written once per (window, cell), not once per (channel, tap): a scatter
 * per kept value would be bound by the stores, two per multiply-add. Two
 * cells side by side that both kept channels go through d once together
 * (their union of vectors; PAIR_CFGS), with the same bits.
 * Why not lanes across images, as the dense kernel: each image keeps a
 * different cell of a window, so lanes would need a select per cell.
 *
 * Numbers: not the dense pass's bits. Each dx sums the same non-zero products,
 * in another order (windows row-major, cells in order, channels in order
 * within a cell, each cell's sum added to d as a whole), so the two differ by
 * rounding; the tests hold both to the reference within a tolerance. Skipping
 * a zero product changes no sum (d starts at +0), but where a weight is Inf
 * or NaN the dense pass's 0 * Inf = NaN is not made here. Per image, so any
 * split of the batch gives the same bits.
 * Is not: the choice of method (conv.c), the weight gradient (conv_sparse.c),
 * bf16, CPUs without AVX-512.
 */
#include "kernels/conv_sparse.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

/* Scratch and the packed weights are sized for 16 lanes, which round Ci up at
 * least as far as 8 do, so one size serves the width a forced level picks. */
#define LANES 16
/* The channels of one keep mask (uint16_t), at every width. */
#define KEEP_BITS 16

static int div_up(int a, int b) { return (a + b - 1) / b; }
/* vectors of a kernel row in d and in the packed weights: kw pixels of
 * ceil(Ci/vl) blocks */
static int row_vecs(const k_conv_shape *s, int vl) { return s->kw * div_up(s->Ci, vl); }
static int co_padded(const k_conv_shape *s) { return div_up(s->Co, KEEP_BITS) * KEEP_BITS; }
static size_t windows(const k_conv_shape *s) { return (size_t)(s->Ho / 2) * (s->Wo / 2); }
static size_t d_floats(const k_conv_shape *s) {
    return (size_t)(s->H + 2 * s->ph) * (s->W + 2 * s->pw) * div_up(s->Ci, LANES) * LANES;
}

size_t k_conv_sparse_data_packed_floats(const k_conv_shape *s) {
    return (size_t)s->Co * s->kh * row_vecs(s, LANES) * LANES;
}

size_t k_conv_sparse_data_scratch(const k_conv_shape *s) {
    /* 16 to align the start; the packed weights (when the caller keeps none);
     * d; g and argmax window-major; four cells' channel masks, 16 bits per
     * 16 channels */
    return 16 + k_conv_sparse_data_packed_floats(s) + d_floats(s) + 2 * windows(s) * co_padded(s) + 4 * co_padded(s);
}

static int level_lanes(void) {
    int lvl = k_simd_level();
    return lvl == K_SIMD_AVX512 ? 16 : lvl == K_SIMD_AVX2 ? 8 : 0;
}

double k_conv_sparse_data_executed_macs(const k_conv_shape *s) {
    /* an upper bound: every kept cell's taps as the vectors carry them (the
     * zero gradients skipped depend on the data) */
    int vl = level_lanes() ? level_lanes() : LANES;
    return (double)s->N * s->Co * windows(s) * s->kh * row_vecs(s, vl) * vl;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/unroll.h"

/* One cell's sum, added into d where its receptive field lies, for a slice
 * of its kernel rows: for each channel co the cell kept (bit co%16 of
 * keep[co/16], nb masks), in order, d[i*drow + v*VL ..] += g[co] *
 * wp[co*wco + (i*vpr + v)*VL ..], the slice's vectors of d held in registers
 * across the channels. A pair: two cells side by side (PAIR_CFGS). */
typedef void (*data_fn)(float *d, size_t drow, const uint16_t *keep, int nb, const float *g, const float *wp,
                        size_t wco);
typedef void (*pair_fn)(float *d, size_t drow, const uint16_t *keep0, const uint16_t *keep1, int nb, const float *g,
                        const float *wp, size_t wco);
typedef struct {
    int kh, vpr;
    data_fn fn;
} data_cfg;
typedef struct {
    int kh, vpr, sh;
    pair_fn fn;
} pair_cfg;

/* A cell's kh rows cut in slices of R rows, the last one what remains:
 * fn[0] the kernel of a whole slice, fn[1] of the last (pair[] for pairs).
 * The largest R the table's kernels cover, so the fewest passes; with slice
 * 0 only R = kh (AVX-512: the shapes it ran before slices existed, whose
 * bits the engine's choices and the tests know). A kernel height the table
 * has no kernel for at any row length is not run (kh 4 as kh 1 + 1 + 1 + 1
 * at 8 lanes: the AVX-512 pass never ran it either). */
typedef struct {
    int R;
    data_fn fn[2];
    pair_fn pair[2];
} data_plan;

static int data_plan_for(const data_cfg *t, size_t nt, int kh, int vpr, int slice, data_plan *p) {
    int known = 0;
    for (size_t i = 0; i < nt; i++) known |= t[i].kh == kh;
    for (int R = kh; known && R >= (slice ? 1 : kh); R--) {
        data_fn f0 = NULL, f1 = NULL;
        for (size_t i = 0; i < nt; i++) {
            if (t[i].vpr != vpr) continue;
            if (t[i].kh == R) f0 = t[i].fn;
            if (t[i].kh == (kh % R ? kh % R : R)) f1 = t[i].fn;
        }
        if (f0 && f1) {
            *p = (data_plan){R, {f0, f1}, {NULL, NULL}};
            return 1;
        }
    }
    return 0;
}
static int pair_plan_for(const pair_cfg *t, size_t nt, int kh, int vpr, int sh, int slice, data_plan *p) {
    for (int R = kh; R >= (slice ? 1 : kh); R--) {
        pair_fn f0 = NULL, f1 = NULL;
        for (size_t i = 0; i < nt; i++) {
            if (t[i].vpr != vpr || t[i].sh != sh) continue;
            if (t[i].kh == R) f0 = t[i].fn;
            if (t[i].kh == (kh % R ? kh % R : R)) f1 = t[i].fn;
        }
        if (f0 && f1) {
            *p = (data_plan){R, {NULL, NULL}, {f0, f1}};
            return 1;
        }
    }
    return 0;
}

static int g_pairs = 1;
void k_conv_sparse_data_pairs(int on) { g_pairs = on; }

/* wp[co][i][j][b][l] = w[co][b*vl + l][i][j], +0 past Ci */
static void pack_weights(const k_conv_shape *s, float *wp, const float *w, int vl) {
    int cb = div_up(s->Ci, vl), K = s->Ci * s->kh * s->kw;
    memset(wp, 0, sizeof(float) * (size_t)s->Co * s->kh * row_vecs(s, vl) * vl);
    for (int co = 0; co < s->Co; co++)
        for (int ci = 0; ci < s->Ci; ci++) {
            int lane = ci / vl * vl + ci % vl; /* where ci sits in a pixel's cb*vl floats: one division per channel */
            for (int i = 0; i < s->kh; i++)
                for (int j = 0; j < s->kw; j++)
                    wp[(((size_t)co * s->kh + i) * s->kw + j) * cb * vl + lane] =
                        w[(size_t)co * K + ((size_t)ci * s->kh + i) * s->kw + j];
        }
}

/* AVX2: 16 ymm registers, a broadcast and 14 accumulators for a cell, 15 for
 * a pair (the weights are the FMAs' memory operands); a kernel row of up to
 * 14 vectors in slices of one row (wide_cnn's conv2: 12 vectors, 3 slices;
 * the seed CNN's: 10, 5 slices, in pairs). */
#define VW 8
#define DATA_SLICES_avx2 1
#define DATA_MAX_ACC 14
#define PAIR_MAX_ACC 15
#define DATA_CFGS(X)                                                                                                   \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) X(1, 9) X(1, 10) X(1, 11) X(1, 12) X(1, 13)        \
        X(1, 14) X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(2, 5) X(2, 6) X(2, 7) X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(5, 1)      \
            X(5, 2)
#define PAIR_CFGS(X)                                                                                                   \
    X(1, 1, 1) X(1, 2, 2) X(1, 3, 1) X(1, 3, 3) X(1, 4, 4) X(1, 5, 1) X(1, 5, 5) X(1, 6, 2) X(1, 6, 4) X(1, 9, 3)       \
        X(1, 10, 2) X(2, 5, 1) X(3, 3, 1)
#include "kernels/vecw.h"
#include "kernels/conv_sparse_data_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#undef DATA_MAX_ACC
#undef PAIR_MAX_ACC
#undef DATA_CFGS
#undef PAIR_CFGS

/* AVX-512: 32 zmm registers, up to 28 accumulators for a cell and 30 for a
 * pair: a whole kernel at once for the models' shapes. */
#define VW 16
#define DATA_SLICES_avx512 0
#define DATA_MAX_ACC 28
#define PAIR_MAX_ACC 30
#define DATA_CFGS(X) X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(3, 3) X(3, 6) X(3, 9) X(5, 5)
#define PAIR_CFGS(X) X(1, 1, 1) X(1, 2, 2) X(1, 3, 3) X(1, 4, 4) X(3, 3, 1) X(3, 6, 2) X(5, 5, 1)
#include "kernels/vecw.h"
#include "kernels/conv_sparse_data_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#undef DATA_MAX_ACC
#undef PAIR_MAX_ACC
#undef DATA_CFGS
#undef PAIR_CFGS

/* Relative cycles per 2x2 window, for the choice. The dense pass: its 4
 * pixels' K = Ci*kh*kw multiply-adds for each of Co channels in VL lanes at
 * 2 FMAs a cycle, 2*Co*K/VL. This one: a kept cell's kh*kw*cb FMAs, each
 * with its load, at 2 a cycle, and its sums' loads and stores into d, one a
 * cycle, for at most 4 cells (the zero gradients it skips not counted), and
 * the listing, the layout changes and the zeroing of d, DATA_OVERHEAD
 * cycles. The overhead is set from tests/bench/kernel_bench.c's passes under
 * a 2x2 max pool (N=128, one core, dense and sparse, with g whole and half
 * zero; the figures are in tests/bench/HISTORY.md): by this model both the
 * seed CNN's conv2 (366 against 625) and wide_cnn's (664 against 2304) run
 * sparse, and both measured faster so (the seed CNN's even with no g zero;
 * pairs of cells made it faster still). The FMAs run below the 2 a cycle
 * counted here, and the listing and layout changes are a good part of the
 * pass: hence the overhead. At 8 lanes both run sparse too (seed 716
 * against 1250, wide 1312 against 4608). */
#define DATA_OVERHEAD 16
static int g_force = -1;
void k_conv_sparse_data_force(int mode) { g_force = mode; }
int k_conv_sparse_data_runs(const k_conv_shape *s) {
    int vl = level_lanes();
    data_plan p;
    if (g_force == 0 || !vl || s->Ho < 2 || s->Wo < 2) return 0;
    return vl == 16 ? data_plan_for(data_cfgs_avx512, sizeof data_cfgs_avx512 / sizeof data_cfgs_avx512[0], s->kh,
                                    row_vecs(s, 16), DATA_SLICES_avx512, &p)
                    : data_plan_for(data_cfgs_avx2, sizeof data_cfgs_avx2 / sizeof data_cfgs_avx2[0], s->kh,
                                    row_vecs(s, 8), DATA_SLICES_avx2, &p);
}

int k_conv_sparse_data_fits(const k_conv_shape *s) {
    if (!k_conv_sparse_data_runs(s)) return 0;
    if (g_force == 1) return 1;
    int vl = level_lanes();
    double taps = (double)s->kh * row_vecs(s, vl);
    double dense = 2.0 * s->Co * s->Ci * s->kh * s->kw / vl;
    double sparse = s->Co * taps / 2.0 + 4.0 * taps + DATA_OVERHEAD;
    return sparse < dense;
}

void k_conv_sparse_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w,
                                    const float *relu_mask, float *scratch, k_conv_packed pk) {
    if (level_lanes() == 16)
        run_images_avx512(s, dx, up, w, relu_mask, scratch, pk);
    else
        run_images_avx2(s, dx, up, w, relu_mask, scratch, pk);
}

#else /* no x86 build: never chosen */

void k_conv_sparse_data_force(int mode) { (void)mode; }
void k_conv_sparse_data_pairs(int on) { (void)on; }
int k_conv_sparse_data_fits(const k_conv_shape *s) {
    (void)s;
    return 0;
}
int k_conv_sparse_data_runs(const k_conv_shape *s) {
    (void)s;
    return 0;
}
void k_conv_sparse_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w,
                                    const float *relu_mask, float *scratch, k_conv_packed pk) {
    (void)s, (void)dx, (void)up, (void)w, (void)relu_mask, (void)scratch, (void)pk;
}

#endif
