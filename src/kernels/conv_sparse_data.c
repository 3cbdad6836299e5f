/* conv_sparse_data.c — the backward-data pass of a convolution whose output a
 * 2x2, stride-2 max pool read, from the pool's gradient and argmax alone
 * (AVX-512): only the pixel each window kept, and only where its gradient is
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
 * channels-last buffer d[h][w][cb][16] (cb = ceil(Ci/16) blocks of lanes), so
 * one tap's share of one pixel is one aligned vector, and a kernel row's kw
 * pixels are kw*cb consecutive vectors; the weights are packed the same way,
 * wp[co][i][j][cb][16]. Then per pool window: for each of its 4 cells a
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

#define LANES 16
/* The most accumulators a cell's sum keeps in registers (of 32): kh*kw*cb,
 * with a broadcast and a load besides; a pair of cells side by side keeps
 * their union, kh*(kw + stride)*cb, with a broadcast besides (the weights
 * are the multiply-adds' memory operands). */
#define MAX_ACC 28
#define MAX_PAIR_ACC 30

static int div_up(int a, int b) { return (a + b - 1) / b; }
static int chan_blocks(const k_conv_shape *s) { return div_up(s->Ci, LANES); }
/* vectors of a kernel row in d and in the packed weights: kw pixels of cb blocks */
static int row_vecs(const k_conv_shape *s) { return s->kw * chan_blocks(s); }
static int co_padded(const k_conv_shape *s) { return div_up(s->Co, LANES) * LANES; }
static size_t windows(const k_conv_shape *s) { return (size_t)(s->Ho / 2) * (s->Wo / 2); }
static size_t d_floats(const k_conv_shape *s) {
    return (size_t)(s->H + 2 * s->ph) * (s->W + 2 * s->pw) * chan_blocks(s) * LANES;
}

size_t k_conv_sparse_data_packed_floats(const k_conv_shape *s) {
    return (size_t)s->Co * s->kh * row_vecs(s) * LANES;
}

size_t k_conv_sparse_data_scratch(const k_conv_shape *s) {
    /* 16 to align the start; the packed weights (when the caller keeps none);
     * d; g and argmax window-major; four cells' channel masks, 16 bits per
     * 16 channels */
    return 16 + k_conv_sparse_data_packed_floats(s) + d_floats(s) + 2 * windows(s) * co_padded(s) + 4 * co_padded(s);
}

double k_conv_sparse_data_executed_macs(const k_conv_shape *s) {
    /* an upper bound: every kept cell's taps as the vectors carry them (the
     * zero gradients skipped depend on the data) */
    return (double)s->N * s->Co * windows(s) * s->kh * row_vecs(s) * LANES;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/transpose16.h"
#include "kernels/unroll.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

/* The kernels by (kh, vectors per kernel row = kw*cb); kh * vecs <= MAX_ACC,
 * checked row by row below. */
#define DATA_CFGS(X)                                                                                                   \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(3, 3) X(3, 6) X(3, 9) X(5, 5)
#define DATA_FITS(kh, vpr) _Static_assert((kh) * (vpr) <= MAX_ACC, "a cell's accumulators fit its array");
DATA_CFGS(DATA_FITS)

/* One cell's sum, added into d where its receptive field lies: for each
 * channel co the cell kept (bit co%16 of keep[co/16], nb masks), in order,
 * d[i*drow + v*16 ..] += g[co] * wp[co][i][v], the kh*VPR vectors of d held
 * in registers across the channels. */
typedef void (*data_fn)(float *d, size_t drow, const uint16_t *keep, int nb, const float *g, const float *wp);

/* The accumulators a[i*U + v] (kh rows of U vectors of d, U >= OFF + VPR)
 * loaded, stored. */
static inline __attribute__((always_inline)) TGT void acc_load(const int KH, const int U, __m512 *a, const float *d,
                                                              size_t drow) {
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < U; v++) a[i * U + v] = _mm512_load_ps(d + i * drow + v * LANES);
}
static inline __attribute__((always_inline)) TGT void acc_store(const int KH, const int U, const __m512 *a, float *d,
                                                               size_t drow) {
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < U; v++) _mm512_store_ps(d + i * drow + v * LANES, a[i * U + v]);
}

/* One cell's channels, in order, added into the accumulators whose rows
 * start OFF vectors in: a[i*U + OFF + v] += g[co] * wp[co][i][v].
 * Loops nested by row and vector, each fully unrolled (XT_UNROLL's count
 * covers either, not 25 in one loop: a 5x5 kernel's accumulators would stay
 * in memory), and the list's loop not unrolled, which would need a second
 * broadcast register and spill accumulators. wp may be the caller's buffer
 * (k_conv_packed), so unaligned loads. */
static inline __attribute__((always_inline)) TGT void cell_fmas(const int KH, const int VPR, const int U, const int OFF,
                                                               __m512 *a, const uint16_t *keep, int nb, const float *g,
                                                               const float *wp) {
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 1
        for (unsigned m = keep[b]; m; m &= m - 1) {
            int co = b * LANES + __builtin_ctz(m);
            __m512 gv = _mm512_set1_ps(g[co]);
            const float *w = wp + (size_t)co * (KH * VPR * LANES);
XT_UNROLL
            for (int i = 0; i < KH; i++)
XT_UNROLL
                for (int v = 0; v < VPR; v++)
                    a[i * U + OFF + v] = _mm512_fmadd_ps(gv, _mm512_loadu_ps(w + (i * VPR + v) * LANES), a[i * U + OFF + v]);
        }
}

#define DATA_FN(kh, vpr)                                                                                               \
    static TGT void data_##kh##_##vpr(float *d, size_t drow, const uint16_t *keep, int nb, const float *g,          \
                                      const float *wp) {                                                             \
        __m512 a[MAX_ACC];                                                                                             \
        acc_load(kh, vpr, a, d, drow);                                                                                 \
        cell_fmas(kh, vpr, vpr, 0, a, keep, nb, g, wp);                                                                \
        acc_store(kh, vpr, a, d, drow);                                                                                \
    }
DATA_CFGS(DATA_FN)

/* Two cells side by side (a window's top or bottom pair), SH vectors apart
 * in d (the stride times cb): their union of accumulators loaded once, the
 * first cell's channels added, then the second's, stored once. Each value
 * of d goes through the same multiply-adds in the same order as with one
 * cell at a time, which stored it between the two and loaded it again: the
 * same bits, 2*kh*VPR loads and stores traded for kh*(VPR + SH). */
#define PAIR_CFGS(X) X(1, 1, 1) X(1, 2, 2) X(1, 3, 3) X(1, 4, 4) X(3, 3, 1) X(3, 6, 2) X(5, 5, 1)
#define PAIR_FITS(kh, vpr, sh)                                                                                         \
    _Static_assert((kh) * ((vpr) + (sh)) <= MAX_PAIR_ACC && (sh) <= (vpr), "a pair's accumulators fit its array, "   \
                                                                             "and the two cells' vectors touch");
PAIR_CFGS(PAIR_FITS)
typedef void (*pair_fn)(float *d, size_t drow, const uint16_t *keep0, const uint16_t *keep1, int nb, const float *g,
                        const float *wp);
#define PAIR_FN(kh, vpr, sh)                                                                                           \
    static TGT void pair_##kh##_##vpr##_##sh(float *d, size_t drow, const uint16_t *keep0, const uint16_t *keep1,      \
                                             int nb, const float *g, const float *wp) {                               \
        __m512 a[MAX_PAIR_ACC];                                                                                        \
        acc_load(kh, vpr + sh, a, d, drow);                                                                            \
        cell_fmas(kh, vpr, vpr + sh, 0, a, keep0, nb, g, wp);                                                          \
        cell_fmas(kh, vpr, vpr + sh, sh, a, keep1, nb, g, wp);                                                         \
        acc_store(kh, vpr + sh, a, d, drow);                                                                           \
    }
PAIR_CFGS(PAIR_FN)

typedef struct {
    int kh, vpr;
    data_fn fn;
} data_cfg;
#define DATA_ROW(kh, vpr) {kh, vpr, data_##kh##_##vpr},
static const data_cfg cfgs[] = {DATA_CFGS(DATA_ROW)};

static data_fn data_kernel(const k_conv_shape *s) {
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        if (cfgs[i].kh == s->kh && cfgs[i].vpr == row_vecs(s)) return cfgs[i].fn;
    return NULL;
}

typedef struct {
    int kh, vpr, sh;
    pair_fn fn;
} pair_cfg;
#define PAIR_ROW(kh, vpr, sh) {kh, vpr, sh, pair_##kh##_##vpr##_##sh},
static const pair_cfg pair_cfgs[] = {PAIR_CFGS(PAIR_ROW)};

static int g_pairs = 1;
void k_conv_sparse_data_pairs(int on) { g_pairs = on; }

/* the pair kernel for this shape, or NULL: cells one at a time */
static pair_fn pair_kernel(const k_conv_shape *s) {
    int sh = s->sw * chan_blocks(s);
    for (size_t i = 0; g_pairs && i < sizeof pair_cfgs / sizeof pair_cfgs[0]; i++)
        if (pair_cfgs[i].kh == s->kh && pair_cfgs[i].vpr == row_vecs(s) && pair_cfgs[i].sh == sh) return pair_cfgs[i].fn;
    return NULL;
}

/* the first n lanes */
static __mmask16 first_lanes(int n) { return n >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* wp[co][i][j][b][l] = w[co][b*16 + l][i][j], +0 past Ci */
static void pack_weights(const k_conv_shape *s, float *wp, const float *w) {
    int cb = chan_blocks(s), K = s->Ci * s->kh * s->kw;
    memset(wp, 0, sizeof(float) * k_conv_sparse_data_packed_floats(s));
    for (int co = 0; co < s->Co; co++)
        for (int ci = 0; ci < s->Ci; ci++)
            for (int i = 0; i < s->kh; i++)
                for (int j = 0; j < s->kw; j++)
                    wp[((((size_t)co * s->kh + i) * s->kw + j) * cb + ci / LANES) * LANES + ci % LANES] =
                        w[(size_t)co * K + ((size_t)ci * s->kh + i) * s->kw + j];
}

/* One image's g and argmax, [co][window], to window-major [window][co_padded]
 * (the argmax as int32), 16 x 16 blocks transposed in registers. Lanes past
 * Co hold +0 and cell 0; the listing masks them off. */
static TGT void to_window_major(const k_conv_shape *s, float *gT, int32_t *aT, const float *g, const uint8_t *am) {
    int Co = s->Co, CoP = co_padded(s), nw = (int)windows(s);
    for (int c0 = 0; c0 < Co; c0 += LANES)
        for (int w0 = 0; w0 < nw; w0 += LANES) {
            __mmask16 wm = first_lanes(nw - w0);
            __m512 rg[LANES], ra[LANES];
            for (int c = 0; c < LANES; c++) {
                if (c0 + c >= Co) {
                    rg[c] = ra[c] = _mm512_setzero_ps();
                    continue;
                }
                size_t at = (size_t)(c0 + c) * nw + w0;
                rg[c] = _mm512_maskz_loadu_ps(wm, g + at);
                ra[c] = _mm512_castsi512_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(wm, am + at)));
            }
            transpose_avx512(rg);
            transpose_avx512(ra);
            for (int k = 0; k < LANES && w0 + k < nw; k++) {
                _mm512_storeu_ps(gT + (size_t)(w0 + k) * CoP + c0, rg[k]);
                _mm512_storeu_ps((float *)aT + (size_t)(w0 + k) * CoP + c0, ra[k]);
            }
        }
}

/* dx[ci][h][w] = d[h + ph][w + pw][ci] (masked by relu_mask > 0 when given),
 * 16 pixels of the image's plane (row-major, across rows) x one block of 16
 * channels at a time, transposed in registers. A plane of 16 pixels or more
 * ends on a group shifted back to its last 16 (rewriting a few values with
 * their own), so every store and mask load is a whole vector: masked ones
 * cost several times more on Zen 5, and with rows of fewer than 16 pixels
 * (the seed CNN's 12) every one was masked. */
static TGT void from_channels_last(const k_conv_shape *s, float *dx, const float *d, const float *mask) {
    int cb = chan_blocks(s), W = s->W, HW = s->H * s->W, Wp = W + 2 * s->pw;
    const __m512 zero = _mm512_setzero_ps();
    for (int p0 = 0; p0 < HW; p0 += LANES) {
        int q0 = p0 + LANES <= HW || HW < LANES ? p0 : HW - LANES, nq = HW - q0 < LANES ? HW - q0 : LANES;
        __mmask16 qm = first_lanes(nq);
        const float *src[LANES];
        int h = q0 / W, w = q0 % W; /* one division per group, not one per pixel */
        for (int q = 0; q < LANES; q++) {
            src[q] = d + ((size_t)(h + s->ph) * Wp + w + s->pw) * cb * LANES;
            if (q + 1 < nq && ++w == W) w = 0, h++; /* past the plane: the last pixel again */
        }
        for (int b = 0; b < cb; b++) {
            __m512 r[LANES];
            for (int q = 0; q < LANES; q++) r[q] = _mm512_load_ps(src[q] + b * LANES);
            transpose_avx512(r);
            int nc = s->Ci - b * LANES < LANES ? s->Ci - b * LANES : LANES;
            for (int c = 0; c < nc; c++) {
                size_t at = (size_t)(b * LANES + c) * HW + q0;
                __m512 v = r[c];
                if (nq == LANES) {
                    if (mask) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(mask + at), zero, _CMP_GT_OQ), v);
                    _mm512_storeu_ps(dx + at, v);
                } else {
                    if (mask)
                        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(qm, mask + at), zero, _CMP_GT_OQ), v);
                    _mm512_mask_storeu_ps(dx + at, qm, v);
                }
            }
        }
        if (q0 != p0) break; /* the shifted group was the last */
    }
}

/* Relative cycles per 2x2 window, for the choice. The dense pass: its 4
 * pixels' K = Ci*kh*kw multiply-adds in 16 lanes at 2 FMAs a cycle. This
 * one: a kept cell's kh*kw*cb FMAs, each with its load, at 2 a cycle, and
 * its sums' loads and stores into d, one a cycle, for at most 4 cells (the
 * zero gradients it skips not counted), and the listing, the layout changes
 * and the zeroing of d, DATA_OVERHEAD cycles. The overhead is set from
 * tests/bench/kernel_bench.c's passes under a 2x2 max pool (N=128, one core,
 * dense and sparse, with g whole and half zero; the figures are in
 * tests/bench/HISTORY.md): by this model both the seed CNN's conv2 (366
 * against 625) and wide_cnn's (664 against 2304) run sparse, and both
 * measured faster so (the seed CNN's even with no g zero; pairs of cells
 * made it faster still). The FMAs run below the 2 a cycle counted here, and
 * the listing and layout changes are a good part of the pass: hence the
 * overhead. */
#define DATA_OVERHEAD 16
static int g_force = -1;
void k_conv_sparse_data_force(int mode) { g_force = mode; }
int k_conv_sparse_data_runs(const k_conv_shape *s) {
    return !(g_force == 0 || k_simd_level() != K_SIMD_AVX512 || s->Ho < 2 || s->Wo < 2 || !data_kernel(s));
}

int k_conv_sparse_data_fits(const k_conv_shape *s) {
    if (!k_conv_sparse_data_runs(s)) return 0;
    if (g_force == 1) return 1;
    double taps = (double)s->kh * row_vecs(s);
    double dense = (double)s->Co * s->Ci * s->kh * s->kw / 8.0;
    double sparse = s->Co * taps / 2.0 + 4.0 * taps + DATA_OVERHEAD;
    return sparse < dense;
}

/* Image by image: d zeroed, g and argmax turned window-major, each window's
 * channels masked by the cell they kept and each cell's sum added into d,
 * then d out to dx. */
static TGT void run_images(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w, const float *relu_mask,
                           float *scratch, k_conv_packed pk) {
    data_fn fn = data_kernel(s);
    pair_fn pair = pair_kernel(s);
    int cb = chan_blocks(s), CoP = co_padded(s), nb = CoP / LANES, Wq = s->Wo / 2, nw = (int)windows(s);
    int Wp = s->W + 2 * s->pw;
    size_t drow = (size_t)Wp * cb * LANES;
    float *base = scratch + ((16 - ((uintptr_t)scratch / sizeof(float)) % 16) % 16); /* 64-byte aligned */
    float *wp = pk.buf ? pk.buf : base;
    float *d = base + k_conv_sparse_data_packed_floats(s);
    float *gT = d + d_floats(s);
    int32_t *aT = (int32_t *)(gT + (size_t)nw * CoP);
    uint16_t *keep = (uint16_t *)(aT + (size_t)nw * CoP); /* [cell][nb] */
    if (!pk.buf || pk.fresh) pack_weights(s, wp, w);
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_g = (size_t)s->Co * nw;
    const __m512 zero = _mm512_setzero_ps();
    for (int n = 0; n < s->N; n++) {
        memset(d, 0, sizeof(float) * d_floats(s));
        to_window_major(s, gT, aT, up.g + n * img_g, up.argmax + n * img_g);
        for (int win = 0; win < nw; win++) {
            const float *gw = gT + (size_t)win * CoP;
            unsigned any[4] = {0, 0, 0, 0};
            for (int b = 0; b < nb; b++) {
                __m512 gv = _mm512_loadu_ps(gw + b * LANES);
                __m512i av = _mm512_loadu_si512(aT + (size_t)win * CoP + b * LANES);
                /* NEQ_UQ: a NaN g is kept, as the dense pass would spread it */
                __mmask16 live = first_lanes(s->Co - b * LANES) & _mm512_cmp_ps_mask(gv, zero, _CMP_NEQ_UQ);
                for (int cell = 0; cell < 4; cell++) {
                    __mmask16 k = _mm512_mask_cmpeq_epi32_mask(live, av, _mm512_set1_epi32(cell));
                    keep[cell * nb + b] = (uint16_t)k;
                    any[cell] |= k;
                }
            }
            int wy = win / Wq, wx = win % Wq;
            for (int cell = 0; cell < 4; cell++) {
                if (!any[cell]) continue;
                int oy = (2 * wy + (cell >> 1)) * s->sh, ox = (2 * wx + (cell & 1)) * s->sw;
                float *at = d + (size_t)oy * drow + (size_t)ox * cb * LANES;
                if (pair && !(cell & 1) && any[cell + 1]) { /* this cell and the one to its right */
                    pair(at, drow, keep + cell * nb, keep + (cell + 1) * nb, nb, gw, wp);
                    cell++;
                    continue;
                }
                fn(at, drow, keep + cell * nb, nb, gw, wp);
            }
        }
        from_channels_last(s, dx + n * img_x, d, relu_mask ? relu_mask + n * img_x : NULL);
    }
}

void k_conv_sparse_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w,
                                    const float *relu_mask, float *scratch, k_conv_packed pk) {
    run_images(s, dx, up, w, relu_mask, scratch, pk);
}

#else /* no AVX-512 build: never chosen */

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
