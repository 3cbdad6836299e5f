/* conv_sparse.c — the weight gradient of a convolution whose output a 2x2,
 * stride-2 max pool read, from the pool's gradient and argmax alone (AVX2 and
 * AVX-512: the vector code is conv_sparse_simd.h, once per width).
 *
 * Is: dw[co][ci][i][j] = sum over images n and conv output pixels p of
 * dy[n][co][p] * xpad[n][ci][p*stride + (i, j)], where dy is the pool's
 * backward: g at the one pixel of each 2x2 window its argmax names, +0 at the
 * other three and in a last odd row or column. The dense passes
 * (conv_direct.c) multiply all four; this one visits only the kept pixel, a
 * quarter of the multiply-adds (wide_cnn's conv2, the seed CNN's conv2).
 *
 * Layout: vector lanes along one kernel row's (tap column j, input channel
 * ci). Each image is copied channels-last, xc[h][w][ci] (zero-padded, read
 * through batch norm's prologue as the other methods read it), so the kw*Ci
 * inputs a kernel row meets at one output pixel are contiguous. For one
 * (image, output channel) the kept pixels are listed in row-major order, then
 * each costs kh * ceil(kw*Ci / VL) FMAs (VL = 8 or 16 lanes) with the same broadcast g into as many
 * accumulators, which stay in registers across the list (in slices of rows and
 * vectors where they do not all fit: more often in AVX2's 16 registers). Why not lanes across
 * images, as the dense kernel: each image keeps a different pixel of a window,
 * so every vector would need a per-lane select of four loads, as dear as the
 * four FMAs it saves.
 *
 * Numbers: the bits of the direct kernel's unpooled weight gradient. There a
 * lane is one image and sums its dy * x over the pixels row-major from +0,
 * one FMA each, then adds that block sum into its lane of the accumulators;
 * a +0 product changes no sum, so the kept pixels alone in the same order give
 * the same image sum. It is added into lane (n mod VL) as the direct kernel
 * adds a block's (VL = 16 or 8: the direct kernel's lanes at the same width,
 * so each width gives that width's dense bits; the two widths differ by
 * rounding, as the direct kernel's do), and the lanes are summed in double in
 * lane order at the end. The one difference: where x holds an Inf or NaN
 * under a pixel the pool did not keep, the dense 0 * Inf = NaN is not made
 * here.
 * Is not: the choice of method (conv.c), backward-data (conv_sparse_data.c),
 * the bf16 passes, CPUs without AVX2.
 */
#include "kernels/conv_sparse.h"
#include "kernels/cache.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

/* Scratch is sized for 16 lanes, which rounds each kernel row up at least as
 * far as 8 do and holds as many image lanes, so one size serves the width a
 * forced level picks later. */
#define LANES 16
/* Past the channels-last image: a kernel row's last vector reads up to 15
 * floats beyond the row's kw*Ci. Zeroed. */
#define SLACK 16
/* The most floats of a padded kernel row (the lane sums' row buffer) */
#define MAX_ROW 256

static int div_up(int a, int b) { return (a + b - 1) / b; }

/* vectors per kernel row; floats of one channels-last image with its slack.
 * A pixel holds its Ci floats, unpadded: rounding Ci up to 16 so that every
 * kernel row starts on a cache line ran no faster in kernel_bench's seed
 * conv2 row, and costs memory. */
static int row_vecs(const k_conv_shape *s, int vl) { return div_up(s->kw * s->Ci, vl); }
static size_t image_floats(const k_conv_shape *s) {
    return (size_t)(s->H + 2 * s->ph) * (s->W + 2 * s->pw) * s->Ci + SLACK;
}
/* Pooled rows per band: as many as keep the input rows they read in 3/4 of
 * L1 (at least one): longer bands make fewer calls, each of which loads and
 * stores its sums, until the rows no longer stay in L1 (kernel_bench's wide
 * conv2 row, over band lengths of 1 to 12 pooled rows). The budget is read
 * from this CPU's L1 size (cache.c), not a constant. */
static int band_rows(const k_conv_shape *s) {
    size_t row = (size_t)(s->W + 2 * s->pw) * s->Ci * sizeof(float), budget = k_cache_l1d_bytes() * 3 / 4;
    int Hq = s->Ho / 2, b = 1;
    while (b < Hq && (size_t)((2 * (b + 1) - 1) * s->sh + s->kh) * row <= budget) b++;
    return b;
}
/* one band's kept pixels at most (a window's one pixel per pooled column),
 * and room for the whole vectors kept_pixels stores */
static size_t band_max(const k_conv_shape *s) { return (size_t)band_rows(s) * (s->Wo / 2) + 2 * LANES; }
/* one image's running sums, all channels: [co][i][v][16] */
static size_t part_floats(const k_conv_shape *s) { return (size_t)s->Co * s->kh * row_vecs(s, LANES) * LANES; }

size_t k_conv_sparse_acc_floats(const k_conv_shape *s) {
    return (size_t)LANES * s->Co * s->kh * row_vecs(s, LANES) * LANES;
}

size_t k_conv_sparse_scratch(const k_conv_shape *s) {
    /* 16 to align the start; one image's running sums; the image; a band's
     * kept pixels' offsets and values; the accumulators */
    return 16 + part_floats(s) + image_floats(s) + 2 * band_max(s) + k_conv_sparse_acc_floats(s);
}

double k_conv_sparse_executed_macs(const k_conv_shape *s) {
    return (double)s->N * s->Co * (s->Ho / 2) * (s->Wo / 2) * s->Ci * s->kh * s->kw;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/unroll.h"

/* One (image, channel)'s sums over a band's kept pixels, for a slice of the
 * kernel rows' vectors (conv_sparse_simd.h, sparse_body). */
typedef void (*sparse_fn)(const float *xc, size_t xrow, const int32_t *off, const float *g, int m, float *part,
                          int start, int finish, float *acc_out, size_t arow);
typedef struct {
    int kh, vpr;
    sparse_fn fn;
} sparse_cfg;

/* How a kernel row's kh x vpr accumulators are cut: slices of R rows x VB
 * vectors, fn[last rows][last vectors] the kernel of each (the last slices
 * take what remains). The fewest slices (passes over the list) that the
 * table's kernels cover. */
typedef struct {
    int R, VB, passes;
    sparse_fn fn[2][2];
} sparse_plan;

static sparse_fn cfg_fn(const sparse_cfg *t, size_t nt, int kh, int vpr) {
    for (size_t i = 0; i < nt; i++)
        if (t[i].kh == kh && t[i].vpr == vpr) return t[i].fn;
    return NULL;
}
static int plan_for(const sparse_cfg *t, size_t nt, int kh, int vpr, sparse_plan *p) {
    p->passes = 0;
    for (int R = 1; R <= kh; R++)
        for (int VB = 1; VB <= vpr; VB++) {
            int rr = kh % R ? kh % R : R, rv = vpr % VB ? vpr % VB : VB;
            sparse_fn f00 = cfg_fn(t, nt, R, VB), f01 = cfg_fn(t, nt, R, rv);
            sparse_fn f10 = cfg_fn(t, nt, rr, VB), f11 = cfg_fn(t, nt, rr, rv);
            int passes = div_up(kh, R) * div_up(vpr, VB);
            if (!f00 || !f01 || !f10 || !f11 || (p->passes && passes >= p->passes)) continue;
            *p = (sparse_plan){R, VB, passes, {{f00, f01}, {f10, f11}}};
        }
    return p->passes > 0;
}

/* dw[co][ci][i][j] is the lane sum of (co, i, j*Ci + ci), in double in
 * lane order: a kernel row of every lane at a time, so the lanes are read
 * as rows rather than 16 scattered floats per weight. Lp: the floats of a
 * padded kernel row in acc at this width, lanes its image lanes. */
static void lane_sums_to_dw(const k_conv_shape *s, float *dw, const float *acc, int Lp, int lanes) {
    int K = s->Ci * s->kh * s->kw, L = s->kw * s->Ci;
    size_t sums = (size_t)s->kh * Lp, per_lane = (size_t)s->Co * sums;
    double t[MAX_ROW];
    for (int co = 0; co < s->Co; co++)
        for (int i = 0; i < s->kh; i++) {
            size_t at = (size_t)co * sums + (size_t)i * Lp;
            for (int k = 0; k < L; k++) t[k] = 0.0;
            for (int l = 0; l < lanes; l++) {
                const float *v = acc + (size_t)l * per_lane + at;
                for (int k = 0; k < L; k++) t[k] += v[k];
            }
            for (int j = 0; j < s->kw; j++)
                for (int c = 0; c < s->Ci; c++)
                    dw[(size_t)co * K + ((size_t)c * s->kh + i) * s->kw + j] = (float)t[j * s->Ci + c];
        }
}

/* AVX2: 16 ymm registers, a broadcast and 14 accumulators (the loads are the
 * FMAs' memory operands); kernels up to 7 rows, and slices of one row up to
 * 14 vectors (wide_cnn's conv2: 3 passes of 12). */
#define VW 8
#define SPARSE_MAX_ACC 14
#define SPARSE_CFGS(X)                                                                                                 \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) X(1, 9) X(1, 10) X(1, 11) X(1, 12) X(1, 13)        \
        X(1, 14) X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(2, 5) X(2, 6) X(2, 7) X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(5, 1)      \
            X(5, 2) X(7, 1) X(7, 2)
#include "kernels/vecw.h"
#include "kernels/conv_sparse_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#undef SPARSE_MAX_ACC
#undef SPARSE_CFGS

/* AVX-512: 32 zmm registers, up to 28 accumulators: a whole kernel in one
 * pass for every shape of the models (kh * vecs <= 28). */
#define VW 16
#define SPARSE_MAX_ACC 28
#define SPARSE_CFGS(X)                                                                                                 \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(3, 5) X(3, 6)      \
        X(3, 7) X(3, 8) X(5, 1) X(5, 2) X(5, 3) X(5, 4) X(5, 5) X(7, 1) X(7, 2) X(7, 3) X(7, 4)
#include "kernels/vecw.h"
#include "kernels/conv_sparse_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#undef SPARSE_MAX_ACC
#undef SPARSE_CFGS

/* the lanes of the level's vectors, 0 below AVX2 */
static int level_lanes(void) {
    int lvl = k_simd_level();
    return lvl == K_SIMD_AVX512 ? 16 : lvl == K_SIMD_AVX2 ? 8 : 0;
}

/* Relative cycles per 2x2 window, for the choice. The dense pass: its 4
 * pixels' K = Ci*kh*kw multiply-adds in VL lanes at 2 FMAs a cycle (its
 * register tiles reuse each load), 2K/VL. This one: the kept pixel's kh * vecs
 * FMAs, each with its own load, at one a cycle, and the listing, the
 * channels-last copy and the sums' loads and stores, SPARSE_OVERHEAD cycles.
 * The overhead is set from train_bench --kernels (make bench; per step at
 * batch 128, the figures in tests/bench/HISTORY.md): by this model wide_cnn's
 * conv2 (18 against 36) runs sparse, much faster than dense, and the seed
 * CNN's conv2 (20 against 31) stays dense, as measured: the sparse pass was
 * slower there both when the dense pass took backward-data's scattered block
 * (pass_share.c) and since backward-data runs sparse (conv_sparse_data.c)
 * and the dense pass scatters its own blocks. At 8 lanes both conv2s run
 * sparse by the model (wide 48 against 72, seed 47 against 62). */
#define SPARSE_OVERHEAD 12
static int g_force = -1;
int k_conv_sparse_force(int mode) {
    g_force = mode;
    return 1;
}
int k_conv_sparse_runs(const k_conv_shape *s) {
    int vl = level_lanes();
    if (g_force == 0 || !vl || s->Ho < 2 || s->Wo < 2 || row_vecs(s, vl) * vl > MAX_ROW) return 0;
    sparse_plan pl;
    if (!(vl == 16 ? plan_for(cfgs_avx512, sizeof cfgs_avx512 / sizeof cfgs_avx512[0], s->kh, row_vecs(s, 16), &pl)
                   : plan_for(cfgs_avx2, sizeof cfgs_avx2 / sizeof cfgs_avx2[0], s->kh, row_vecs(s, 8), &pl)))
        return 0;
    return (double)image_floats(s) <= 2e9; /* offsets into one image are int32 */
}

int k_conv_sparse_fits(const k_conv_shape *s) {
    if (!k_conv_sparse_runs(s)) return 0;
    if (g_force == 1) return 1;
    int vl = level_lanes();
    double dense = 2.0 * s->Ci * s->kh * s->kw / vl, sparse = (double)s->kh * row_vecs(s, vl) + SPARSE_OVERHEAD;
    return sparse < dense;
}

void k_conv_sparse_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 up,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    if (level_lanes() == 16)
        bwd_weight_avx512(s, dw, x, up, scratch, acc, first, last, pro);
    else
        bwd_weight_avx2(s, dw, x, up, scratch, acc, first, last, pro);
}

#else /* no x86 build: never chosen */

int k_conv_sparse_force(int mode) {
    (void)mode;
    return 0;
}
int k_conv_sparse_fits(const k_conv_shape *s) {
    (void)s;
    return 0;
}
int k_conv_sparse_runs(const k_conv_shape *s) {
    (void)s;
    return 0;
}
void k_conv_sparse_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 up,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    (void)s, (void)dw, (void)x, (void)up, (void)scratch, (void)acc, (void)first, (void)last, (void)pro;
}

#endif
