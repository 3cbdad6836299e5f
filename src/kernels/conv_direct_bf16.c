/* conv_direct_bf16.c — direct bf16 convolution, batch-blocked, on vdpbf16ps:
 * every pass (AVX512-BF16 CPUs only; the caller checks).
 *
 * Is: the bf16 twin of conv_direct.c. 16 images sit in the 16 lanes of a zmm
 * as there, and each 32-bit lane holds a PAIR of bf16 values, the two halves
 * vdpbf16ps multiplies and adds in one step (low half = the even element):
 *   fwd         pairs of input channels: xb[ci/2][Hp][Wp][16][2] (Ci padded to
 *               even with zeros), weights (w[co][2p][i][j], w[co][2p+1][i][j]);
 *               y tile = CT out channels x PT pixels of one output row, summed
 *               over the Ci/2 * kh * kw pair-taps; or, where it makes fewer
 *               pairs (one input channel: conv1), pairs of neighbouring taps
 *               of a kernel row: xb[ci][Hp][Wp][16] = (xp[h][w], xp[h][w+1]),
 *               weights (w[co][ci][i][2q], w[co][ci][i][2q+1]), Ci*kh*ceil(kw/2)
 *   bwd_data    pairs of output channels: dyb[co/2][Ho][Wo][16][2], weights
 *               (w[2q][ci][i][j], w[2q+1][ci][i][j]); one dx pixel x CT in
 *               channels, summed over exactly the (tap, dy pixel) pairs that
 *               reach it and the Co/2 channel pairs
 *   bwd_weight  pairs of neighbouring output pixels (2v, 2v+1) of a row:
 *               dyb[co][Ho][Wo/2][16][2], and for each filter tap the two input
 *               pixels it meets there, x paired with its neighbour sw to the
 *               right: xb[ci][Hp][Wp][16] = (xp[h][w], xp[h][w+sw]); dw tile =
 *               CT out channels x TT taps, summed over pixel pairs and lanes;
 *               a block swept a few output rows at a time, sized from the L2
 * Results are fp32: fwd and bwd_data blocked t[c][h][w][16], unpacked to NCHW
 * by conv_direct.c's AVX-512 transposes; bwd_weight per-lane sums, added up
 * in double at the end. Packing: 16 pixels of 16 images at a time, two bf16
 * planes widened to 32 bits and merged, or a plane read as 32-bit words
 * (dy pairs), then the 16x16 32-bit transpose of transpose16.h.
 * Why: the im2col + GEMM path (conv_bf16.c) pays im2col and packing per image
 * and its GEMMs are small for the models' 1-64 channels; the fp32 direct
 * kernels do one FMA where this does a pair of products (the table is in
 * conv_bf16.c). Sums are fp32, in another order than the reference path's.
 * The backward passes also take dy as a 2x2/2 max pool's fp32 gradient and
 * argmax (k_unpool2, pass_conv_unpool.c): the pooled planes are blocked (a
 * quarter of the pixels to transpose), then each dy pair is made from its
 * window, g rounded to bf16 where the argmax points and 0 elsewhere: the bits
 * of k_maxpool2d_bwd then the cast, without writing the unpooled dy.
 * Is not: the choice of path (conv_bf16.c), rounding of the other operands to
 * bf16 (the engine's cast nodes).
 */
#include "kernels/conv_direct_bf16.h"

#include <stdint.h>
#include <string.h>

#include "kernels/cache.h"
#include "kernels/conv_common.h"
#include "kernels/conv_direct.h"
#include "kernels/unroll.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/bf16_simd.h"
#include "kernels/transpose16.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")))

#define NB 16     /* images per block: the lanes of a zmm */
#define PT_MAX 8  /* the widest fwd pixel tile */
#define CT_MAX 24 /* the most channels in any tile */

static int div_up(int a, int b) { return (a + b - 1) / b; }

/* ---- micro-kernels --------------------------------------------------------------- */

/* y[c][t] (fp32, 16 lanes) = sum over K2 pair-taps of wpk[k][c] . xb[off[k] + t*xstep] */
static inline __attribute__((always_inline)) TGT void dfwd_body(const int CT, const int PT, const uint32_t *xb,
                                                                const int32_t *off, int K2, const uint32_t *wpk,
                                                                size_t xstep, float *y, size_t ystride) {
    __m512 acc[8][8];
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int t = 0; t < PT; t++) acc[c][t] = _mm512_setzero_ps();
    for (int k = 0; k < K2; k++, wpk += CT) {
        const uint32_t *xs = xb + off[k];
        __m512i xv[8];
XT_UNROLL
        for (int t = 0; t < PT; t++) xv[t] = _mm512_loadu_si512(xs + t * xstep);
XT_UNROLL
        for (int c = 0; c < CT; c++) {
            __m512bh wv = (__m512bh)_mm512_set1_epi32((int)wpk[c]);
XT_UNROLL
            for (int t = 0; t < PT; t++) acc[c][t] = _mm512_dpbf16_ps(acc[c][t], (__m512bh)xv[t], wv);
        }
    }
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int t = 0; t < PT; t++) _mm512_storeu_ps(y + c * ystride + t * NB, acc[c][t]);
}

/* One dx pixel for CT input channels over the taps (i, oh) in rows x (j, ow) in
 * cols that reach it and all Cq channel pairs; wpk is [i][j][q][CT]. */
static inline __attribute__((always_inline)) TGT void dbwd_body(const int CT, const uint32_t *dyb, size_t dstride,
                                                                int Cq, int Wo, const int32_t *rows, int nr,
                                                                const int32_t *cols, int nc, const uint32_t *wpk,
                                                                int kw, float *dx, size_t xstride) {
    __m512 acc[24];
XT_UNROLL
    for (int c = 0; c < CT; c++) acc[c] = _mm512_setzero_ps();
    for (int r = 0; r < nr; r++)
        for (int q = 0; q < nc; q++) {
            int i = rows[2 * r], oh = rows[2 * r + 1], j = cols[2 * q], ow = cols[2 * q + 1];
            const uint32_t *d = dyb + (size_t)(oh * Wo + ow) * NB;
            const uint32_t *wk = wpk + (size_t)(i * kw + j) * Cq * CT;
            for (int p = 0; p < Cq; p++, d += dstride, wk += CT) {
                __m512bh dv = (__m512bh)_mm512_loadu_si512(d);
XT_UNROLL
                for (int c = 0; c < CT; c++)
                    acc[c] = _mm512_dpbf16_ps(acc[c], dv, (__m512bh)_mm512_set1_epi32((int)wk[c]));
            }
        }
XT_UNROLL
    for (int c = 0; c < CT; c++) _mm512_storeu_ps(dx + c * xstride, acc[c]);
}

/* acc_out[c][u] (16 lanes) += sum over the output pixel pairs of one block of
 * dyb[c][pair] . xb[off[u] + pair]: CT channels x TT taps, Ho x Wo2 pixel pairs;
 * with init (a call's first sweep) = instead of +=, so acc_out needs no zeroing
 * (the same bits at the end, as the fp32 twin's nbww_body explains) */
static inline __attribute__((always_inline)) TGT void dbww_body(const int CT, const int TT, const uint32_t *dyb,
                                                                size_t dstride, const uint32_t *xb,
                                                                const int32_t *off, int Ho, int Wo2, size_t xrow,
                                                                size_t xcol, float *acc_out, int init) {
    __m512 acc[8][8];
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int u = 0; u < TT; u++) acc[c][u] = _mm512_setzero_ps();
    for (int oh = 0; oh < Ho; oh++) {
        const uint32_t *xr = xb + oh * xrow, *dr = dyb + (size_t)oh * Wo2 * NB;
        for (int v = 0; v < Wo2; v++, xr += xcol, dr += NB) {
            __m512bh xv[8];
XT_UNROLL
            for (int u = 0; u < TT; u++) xv[u] = (__m512bh)_mm512_loadu_si512(xr + off[u]);
XT_UNROLL
            for (int c = 0; c < CT; c++) {
                __m512bh dv = (__m512bh)_mm512_loadu_si512(dr + c * dstride);
XT_UNROLL
                for (int u = 0; u < TT; u++) acc[c][u] = _mm512_dpbf16_ps(acc[c][u], dv, xv[u]);
            }
        }
    }
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int u = 0; u < TT; u++) {
            float *o = acc_out + (size_t)(c * TT + u) * NB;
            _mm512_storeu_ps(o, init ? acc[c][u] : _mm512_add_ps(_mm512_loadu_ps(o), acc[c][u]));
        }
}

typedef void (*dfwd_fn)(const uint32_t *xb, const int32_t *off, int K2, const uint32_t *wpk, size_t xstep, float *y,
                        size_t ystride);
typedef void (*dbwd_fn)(const uint32_t *dyb, size_t dstride, int Cq, int Wo, const int32_t *rows, int nr,
                        const int32_t *cols, int nc, const uint32_t *wpk, int kw, float *dx, size_t xstride);
typedef struct { int ct, pt; dfwd_fn fn; } dfwd_cfg;
typedef struct { int ct; dbwd_fn fn; } dbwd_cfg;
typedef void (*dbww_fn)(const uint32_t *dyb, size_t dstride, const uint32_t *xb, const int32_t *off, int Ho, int Wo2,
                        size_t xrow, size_t xcol, float *acc_out, int init);
typedef struct { int ct, tt; dbww_fn fn; } dbww_cfg;

/* the fp32 AVX-512 lists: CT*PT accumulators + PT inputs + 1 broadcast <= 32 registers */
#define DFWD_CFGS(X) X(1, 8) X(2, 8) X(3, 8) X(3, 6) X(4, 6) X(4, 4) X(5, 4) X(6, 4) X(4, 3) X(6, 3) X(8, 3) X(8, 2)
#define DBWD_CFGS(X) X(2) X(4) X(6) X(8) X(10) X(12) X(16) X(20) X(24)
#define DBWW_CFGS(X) X(1, 8) X(2, 8) X(3, 6) X(3, 3) X(4, 6) X(4, 5) X(4, 3) X(5, 5) X(5, 4) X(6, 4) X(6, 3) X(8, 3)
#define DFWD_INST(ct, pt)                                                                                      \
    static TGT void dfwd_##ct##_##pt(const uint32_t *xb, const int32_t *off, int K2, const uint32_t *wpk,      \
                                     size_t xstep, float *y, size_t ystride) {                                 \
        dfwd_body(ct, pt, xb, off, K2, wpk, xstep, y, ystride);                                                \
    }
#define DBWD_INST(ct)                                                                                          \
    static TGT void dbwd_##ct(const uint32_t *dyb, size_t dstride, int Cq, int Wo, const int32_t *rows, int nr, \
                              const int32_t *cols, int nc, const uint32_t *wpk, int kw, float *dx,              \
                              size_t xstride) {                                                                 \
        dbwd_body(ct, dyb, dstride, Cq, Wo, rows, nr, cols, nc, wpk, kw, dx, xstride);                          \
    }
#define DBWW_INST(ct, tt)                                                                                      \
    static TGT void dbww_##ct##_##tt(const uint32_t *dyb, size_t dstride, const uint32_t *xb, const int32_t *off, \
                                     int Ho, int Wo2, size_t xrow, size_t xcol, float *acc_out, int init) {     \
        dbww_body(ct, tt, dyb, dstride, xb, off, Ho, Wo2, xrow, xcol, acc_out, init);                          \
    }
DFWD_CFGS(DFWD_INST)
DBWD_CFGS(DBWD_INST)
DBWW_CFGS(DBWW_INST)
#define DFWD_ROW(ct, pt) {ct, pt, dfwd_##ct##_##pt},
#define DBWD_ROW(ct) {ct, dbwd_##ct},
static const dfwd_cfg dfwd_cfgs[] = {DFWD_CFGS(DFWD_ROW)};
static const dbwd_cfg dbwd_cfgs[] = {DBWD_CFGS(DBWD_ROW)};
#define DBWW_ROW(ct, tt) {ct, tt, dbww_##ct##_##tt},
static const dbww_cfg dbww_cfgs[] = {DBWW_CFGS(DBWW_ROW)};
#define NBWW_CFG ((int)(sizeof dbww_cfgs / sizeof dbww_cfgs[0]))
#define NFWD_CFG ((int)(sizeof dfwd_cfgs / sizeof dfwd_cfgs[0]))
#define NBWD_CFG ((int)(sizeof dbwd_cfgs / sizeof dbwd_cfgs[0]))

/* the fp32 kernels' cost models (conv_direct.c): a pair-tap's CT*PT dot
 * products, loads and broadcasts count as an fp32 tap's FMAs, loads and broadcasts */
static int g_forced_tile[3] = {-1, -1, -1}; /* per pass: index into its tile list, or -1 */

int k_conv_direct_bf16_force_tile(int pass, int index) {
    int n = pass == K_CONV_FWD ? NFWD_CFG : pass == K_CONV_BWD_DATA ? NBWD_CFG : pass == K_CONV_BWD_WEIGHT ? NBWW_CFG : 0;
    if (!n || index >= n) return 0;
    g_forced_tile[pass] = index < 0 ? -1 : index;
    return 1;
}

static const dfwd_cfg *pick_fwd(const k_conv_shape *s) {
    if (g_forced_tile[K_CONV_FWD] >= 0) return &dfwd_cfgs[g_forced_tile[K_CONV_FWD]];
    const dfwd_cfg *best = &dfwd_cfgs[0];
    double best_cost = 0;
    for (int i = 0; i < NFWD_CFG; i++) {
        const dfwd_cfg *c = &dfwd_cfgs[i];
        double cost = k_conv_direct_fwd_cost(s, c->ct, c->pt);
        if (i == 0 || cost < best_cost) best = c, best_cost = cost;
    }
    return best;
}

static const dbwd_cfg *pick_bwd(const k_conv_shape *s) {
    if (g_forced_tile[K_CONV_BWD_DATA] >= 0) return &dbwd_cfgs[g_forced_tile[K_CONV_BWD_DATA]];
    const dbwd_cfg *best = &dbwd_cfgs[0];
    double best_cost = 0;
    for (int i = 0; i < NBWD_CFG; i++) {
        const dbwd_cfg *c = &dbwd_cfgs[i];
        double cost = k_conv_direct_bwd_cost(s, c->ct);
        if (i == 0 || cost < best_cost || (cost == best_cost && c->ct > best->ct)) best = c, best_cost = cost;
    }
    return best;
}

static const dbww_cfg *pick_bww(const k_conv_shape *s) {
    if (g_forced_tile[K_CONV_BWD_WEIGHT] >= 0) return &dbww_cfgs[g_forced_tile[K_CONV_BWD_WEIGHT]];
    const dbww_cfg *best = &dbww_cfgs[0];
    double best_cost = 0;
    for (int i = 0; i < NBWW_CFG; i++) {
        const dbww_cfg *c = &dbww_cfgs[i];
        double cost = k_conv_direct_bww_cost(s, c->ct, c->tt);
        if (i == 0 || cost < best_cost) best = c, best_cost = cost;
    }
    return best;
}

/* ---- packing ------------------------------------------------------------------------ */

/* 16 bf16 values under mask m, loaded plain when whole (masked loads cost
 * more: see pool.c's load_under) */
static inline __attribute__((always_inline)) TGT __m256i load16_bf16(const k_bf16 *p, __mmask16 m) {
    return m == 0xFFFFu ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(m, p);
}

/* Blocked pair plane dst[(h+ph)*Wd + w+pw][16] (32-bit: lo = a, hi = b) <- 16
 * images' H x W bf16 planes a[l], b[l] (b's last `bshort` elements read as 0:
 * b may be a shifted by bshort); 16 pixels at a time (the last group with
 * masked loads), widened, merged, transposed. */
static TGT void pack_pair_plane(uint32_t *dst, const k_bf16 *const *a, const k_bf16 *const *b, int bshort, int H,
                                int W, int Wd, int ph, int pw) {
    int P = H * W, h = 0, w = 0;
    for (int p = 0; p < P; p += NB) {
        int n = P - p < NB ? P - p : NB, nbv = P - bshort - p < n ? P - bshort - p : n;
        __mmask16 m = (__mmask16)((1u << n) - 1), mb = (__mmask16)(nbv > 0 ? (1u << nbv) - 1 : 0);
        __m512 r[NB];
XT_UNROLL
        for (int l = 0; l < NB; l++) {
            __m512i lo = _mm512_cvtepu16_epi32(load16_bf16(a[l] + p, m));
            __m512i hi = _mm512_cvtepu16_epi32(load16_bf16(b[l] + p, mb));
            r[l] = _mm512_castsi512_ps(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
        transpose_avx512(r);
        for (int q = 0; q < n; q++) {
            _mm512_storeu_ps((float *)dst + ((size_t)(h + ph) * Wd + w + pw) * NB, r[q]);
            if (++w == W) w = 0, h++;
        }
    }
}

/* Blocked pairs t[C/2 rounded up][Hd][Wd][16] <- nb images of plain bf16 [c][h][w]
 * (image stride img); idle lanes and the missing odd channel read `zeros`. */
static void to_blocked_pairs_strided(uint32_t *t, size_t pstride, const k_bf16 *x, size_t img, int nb, int C, int H,
                                     int W, int ph, int pw, const k_bf16 *zeros) {
    int Wd = W + 2 * pw;
    size_t plane = (size_t)H * W;
    const k_bf16 *a[NB], *b[NB];
    for (int p = 0; p < div_up(C, 2); p++) {
        for (int l = 0; l < NB; l++) {
            a[l] = l < nb ? x + l * img + (size_t)2 * p * plane : zeros;
            b[l] = l < nb && 2 * p + 1 < C ? x + l * img + (size_t)(2 * p + 1) * plane : zeros;
        }
        pack_pair_plane(t + (size_t)p * pstride, a, b, 0, H, W, Wd, ph, pw);
    }
}
static void to_blocked_pairs(uint32_t *t, const k_bf16 *x, size_t img, int nb, int C, int H, int W, int ph, int pw,
                             const k_bf16 *zeros) {
    to_blocked_pairs_strided(t, (size_t)(H + 2 * ph) * (W + 2 * pw) * NB, x, img, nb, C, H, W, ph, pw, zeros);
}

static uint32_t pair_of(k_bf16 lo, k_bf16 hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

/* bwd_weight pairs neighbouring output pixels, so both operands are paired
 * along a row: dy as (dy[2v], dy[2v+1]) and x as (xp[w], xp[w+sw]) (xp: x
 * padded), the two input pixels one filter tap meets at output pixels 2v and
 * 2v+1. With Wo even a dy plane read as 32-bit words is already that pairing;
 * with Wo odd each row is copied out to an even length first (a row of zeros
 * ends it). x pairs come from pack_pair_plane with b = a + sw, then the
 * columns where that crosses a row edge are set one by one. */
static TGT void pack_u32_plane(uint32_t *dst, const uint32_t *const *src, int P) {
    for (int p = 0; p < P; p += NB) {
        int n = P - p < NB ? P - p : NB;
        __mmask16 m = (__mmask16)((1u << n) - 1);
        __m512 r[NB];
XT_UNROLL
        for (int l = 0; l < NB; l++)
            r[l] = _mm512_castsi512_ps(n == NB ? _mm512_loadu_si512(src[l] + p) : _mm512_maskz_loadu_epi32(m, src[l] + p));
        transpose_avx512(r);
        for (int q = 0; q < n; q++) _mm512_storeu_ps((float *)dst + (size_t)(p + q) * NB, r[q]);
    }
}

/* xp[h][w] of one image's plane x (0 in the padding) */
static k_bf16 padded_at(const k_bf16 *x, int H, int W, int ph, int pw, int h, int w) {
    h -= ph, w -= pw;
    return h >= 0 && h < H && w >= 0 && w < W ? x[(size_t)h * W + w] : 0;
}

/* the columns whose pair crosses a row edge: w < pw (partner inside) and w >= pw + W - sw */
static void fix_shifted_edges(uint32_t *t, const k_bf16 *const *a, int H, int W, int Wp, int ph, int pw, int sw) {
    for (int h = ph; h < ph + H; h++)
        for (int w = pw > sw ? pw - sw : 0; w < Wp; w++) {
            if (w == pw && pw + W - sw > pw) w = pw + W - sw;
            for (int l = 0; l < NB; l++) /* idle lanes too (a[l] is then a zero plane): no stale pairs */
                t[((size_t)h * Wp + w) * NB + l] =
                    pair_of(padded_at(a[l], H, W, ph, pw, h, w), padded_at(a[l], H, W, ph, pw, h, w + sw));
        }
}

/* ---- dy from a max pool's gradient and argmax (k_unpool2) ----------------------- */

/* The pooled gradient and argmax of channel c of images n0 .. n0+nb-1, blocked
 * as gb, ib [Hq*Wq][16] (32-bit words: the float's bits, the window cell);
 * idle lanes read `zeros` (and cell 0), so their dy is +0 (the x of an idle
 * lane is 0 too, and 0 * 0 adds nothing to a per-lane sum). */
static void pack_pooled(const k_conv_shape *s, uint32_t *gb, uint32_t *ib, k_unpool2 up, int n0, int nb, int c,
                        const void *zeros) {
    size_t pq = (size_t)(s->Ho / 2) * (s->Wo / 2), img = (size_t)s->Co * pq;
    const uint32_t *g[NB];
    for (int l = 0; l < NB; l++) {
        size_t at = (size_t)(n0 + l) * img + (size_t)c * pq;
        g[l] = l < nb ? (const uint32_t *)(const void *)(up.g + at) : zeros;
    }
    pack_u32_plane(gb, g, (int)pq);
    k_conv_direct_cells_to_blocked16((int32_t *)ib, up.argmax + (size_t)n0 * img + (size_t)c * pq, img, nb, (int)pq);
}

/* The dy word of window cell `cell` (0-3 row-major, the argmax's numbering)
 * of a window whose rounded gradient is b (bf16 in the low half) and argmax
 * a, in the low half (hi 0) or the high half (hi 1) of the word; 0 where the
 * argmax points elsewhere. */
static inline __attribute__((always_inline)) TGT __m512i unpool_cell(__m512i b, __m512i a, int cell, int hi) {
    __m512i v = hi ? _mm512_slli_epi32(b, 16) : b;
    return _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(a, _mm512_set1_epi32(cell)), v);
}

/* bwd_weight: one channel's dy pairs dyb[Ho][Wo2][16] (lo = dy[h][2v], hi =
 * dy[h][2v+1]) from its blocked pooled planes. Window (h/2, v) covers both
 * pixels of pair v in row h. The row (Ho odd) and the column (Wo odd) no
 * window reaches get 0, as k_maxpool2d_bwd writes there. */
static TGT void unpool_row_pairs(uint32_t *dyb, const uint32_t *gb, const uint32_t *ib, int Ho, int Wo) {
    int Hq = Ho / 2, Wq = Wo / 2, Wo2 = div_up(Wo, 2);
    for (int r = 0; r < Hq; r++) {
        uint32_t *r0 = dyb + (size_t)2 * r * Wo2 * NB, *r1 = r0 + (size_t)Wo2 * NB;
        for (int v = 0; v < Wq; v++) {
            size_t at = ((size_t)r * Wq + v) * NB;
            __m512i b = k_bf16_lanes(_mm512_castsi512_ps(_mm512_loadu_si512(gb + at))), a = _mm512_loadu_si512(ib + at);
            _mm512_storeu_si512(r0 + (size_t)v * NB, _mm512_or_si512(unpool_cell(b, a, 0, 0), unpool_cell(b, a, 1, 1)));
            _mm512_storeu_si512(r1 + (size_t)v * NB, _mm512_or_si512(unpool_cell(b, a, 2, 0), unpool_cell(b, a, 3, 1)));
        }
        if (Wo2 > Wq) {
            _mm512_storeu_si512(r0 + (size_t)Wq * NB, _mm512_setzero_si512());
            _mm512_storeu_si512(r1 + (size_t)Wq * NB, _mm512_setzero_si512());
        }
    }
    if (Ho % 2) memset(dyb + (size_t)(Ho - 1) * Wo2 * NB, 0, (size_t)Wo2 * NB * 4);
}

/* bwd_data: one channel pair's dy dyb[Ho][Wo][16] (lo = channel 2q, hi = 2q+1)
 * from the two channels' blocked pooled planes (g1, i1: a zero gradient when
 * 2q+1 is past Co). Cells no window reaches get 0. */
static TGT void unpool_channel_pairs(uint32_t *dyb, const uint32_t *g0, const uint32_t *i0, const uint32_t *g1,
                                     const uint32_t *i1, int Ho, int Wo) {
    int Hq = Ho / 2, Wq = Wo / 2;
    for (int r = 0; r < Hq; r++) {
        for (int v = 0; v < Wq; v++) {
            size_t at = ((size_t)r * Wq + v) * NB;
            __m512i b0 = k_bf16_lanes(_mm512_castsi512_ps(_mm512_loadu_si512(g0 + at))), a0 = _mm512_loadu_si512(i0 + at);
            __m512i b1 = k_bf16_lanes(_mm512_castsi512_ps(_mm512_loadu_si512(g1 + at))), a1 = _mm512_loadu_si512(i1 + at);
            for (int dh = 0; dh < 2; dh++)
                for (int dw = 0; dw < 2; dw++) {
                    size_t at_dy = (size_t)(2 * r + dh) * Wo + 2 * v + dw;
                    int cell = 2 * dh + dw;
                    _mm512_storeu_si512(dyb + at_dy * NB,
                                        _mm512_or_si512(unpool_cell(b0, a0, cell, 0), unpool_cell(b1, a1, cell, 1)));
                }
        }
        if (Wo % 2)
            for (int dh = 0; dh < 2; dh++) _mm512_storeu_si512(dyb + ((size_t)(2 * r + dh) * Wo + Wo - 1) * NB, _mm512_setzero_si512());
    }
    if (Ho % 2) memset(dyb + (size_t)(Ho - 1) * Wo * NB, 0, (size_t)Wo * NB * 4);
}

/* ---- scratch ---------------------------------------------------------------------- */

typedef struct {
    uint32_t *xb, *wpk;
    float *yb, *sink, *pooled;
    k_bf16 *zeros;
    int32_t *off, *pa;
    uint32_t *gb, *ib; /* an unpooled dy's pooled planes, blocked: two channels' */
} dmem;

/* 32-bit words of one channel's blocked pooled plane (a 2x2/2 pool of the Ho x Wo dy) */
static size_t pooled_plane_words(const k_conv_shape *s) { return (size_t)(s->Ho / 2) * (s->Wo / 2) * NB; }

static size_t plane_elems(const k_conv_shape *s) {
    size_t a = (size_t)s->H * s->W, b = (size_t)s->Ho * s->Wo;
    return a > b ? a : b;
}
/* The forward pairs input channels (c, c+1) at one tap, unless neighbouring
 * taps of a row, (i, j) and (i, j+1) of one channel, make fewer pairs: with
 * one input channel (both models' conv1) a channel pair is half zeros, so a
 * 5x5 kernel costs 25 pair-taps where tap pairs need 5 x 3 = 15. */
static int fwd_pairs_taps(const k_conv_shape *s) {
    return (long)s->Ci * s->kh * div_up(s->kw, 2) < (long)div_up(s->Ci, 2) * s->kh * s->kw;
}

/* pair-pixels of one blocked, padded input block (a pair plane per channel
 * pair, or per channel when the forward pairs taps), with slack for the
 * garbage pixels a partial fwd tile reads past the end of a row */
static size_t xb_elems(const k_conv_shape *s) {
    size_t planes = fwd_pairs_taps(s) ? (size_t)s->Ci : (size_t)div_up(s->Ci, 2);
    return (planes * (s->H + 2 * s->ph) * (s->W + 2 * s->pw) + (size_t)PT_MAX * s->sw + 1) * NB;
}

/* one 64-byte-aligned piece of `bytes`; with base NULL only counts */
static void *piece(char *base, size_t *at, size_t bytes) {
    void *r = base ? base + *at : NULL;
    *at += (bytes + 63) & ~(size_t)63;
    return r;
}

/* fwd: xb | yb | wpk | zeros | sink | off | pooled | pa (the pool epilogue's).  bwd: dyb (in xb) | dxb (in yb) | wpk | zeros | sink | rows+cols (in off) */
static size_t carve(const k_conv_shape *s, void *scratch, dmem *m) {
    char *base = scratch ? (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) : NULL;
    size_t at = 0, K2 = (size_t)div_up(s->Ci, 2) * s->kh * s->kw, khw = (size_t)s->kh * s->kw;
    size_t dyb = (size_t)div_up(s->Co, 2) * (s->Ho * s->Wo + 1) * NB, xb = xb_elems(s);
    size_t yb = (size_t)CT_MAX * s->Ho * (s->Wo + PT_MAX) * NB; /* one tile of channels */
    size_t dxb = (size_t)(s->Ci + CT_MAX) * s->H * s->W * NB;
    size_t wf = (size_t)(s->Co + CT_MAX) * K2, wb = khw * div_up(s->Co, 2) * (s->Ci + CT_MAX);
    size_t idx = K2 > 2 * (size_t)(s->kh + s->kw) ? K2 : 2 * (size_t)(s->kh + s->kw);
    m->xb = piece(base, &at, 4 * (xb > dyb ? xb : dyb));
    m->yb = piece(base, &at, 4 * (yb > dxb ? yb : dxb));
    m->wpk = piece(base, &at, 4 * (wf > wb ? wf : wb));
    m->zeros = piece(base, &at, 2 * plane_elems(s));
    m->sink = piece(base, &at, 4 * plane_elems(s));
    m->off = piece(base, &at, 4 * idx);
    m->pooled = piece(base, &at, 4 * k_conv_direct_pool16_floats(s));
    m->pa = piece(base, &at, 4 * k_conv_direct_pool16_floats(s));
    m->gb = piece(base, &at, 4 * 2 * pooled_plane_words(s));
    m->ib = piece(base, &at, 4 * 2 * pooled_plane_words(s));
    return at + 64;
}

typedef struct {
    uint32_t *xb, *dyb;
    float *accv;
    k_bf16 *zeros, *even; /* a zero plane; 16 dy planes copied to an even row length (Wo odd) */
    int32_t *off;
    uint32_t *gb, *ib; /* an unpooled dy's pooled planes, blocked: one channel's */
} wmem;

/* The per-lane weight-gradient sums: 16 lanes per (co, k) pair, padded to
 * whole register tiles; summed across lanes only at the end. */
size_t k_conv_direct_bf16_bwd_weight_acc_floats(const k_conv_shape *s) {
    return (size_t)(s->Co + CT_MAX) * ((size_t)s->Ci * s->kh * s->kw + 8) * NB;
}

/* xb[Ci][Hp][Wp][16] | dyb[Co + CT_MAX][Ho][Wo2][16] | accumulators | zeros | even dy | tap offsets */
static size_t carve_bww(const k_conv_shape *s, void *scratch, wmem *m) {
    char *base = scratch ? (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63) : NULL;
    size_t at = 0, K = (size_t)s->Ci * s->kh * s->kw;
    m->xb = piece(base, &at, 4 * (size_t)s->Ci * (s->H + 2 * s->ph) * (s->W + 2 * s->pw) * NB);
    m->dyb = piece(base, &at, 4 * (size_t)(s->Co + CT_MAX) * s->Ho * div_up(s->Wo, 2) * NB);
    m->accv = piece(base, &at, 4 * k_conv_direct_bf16_bwd_weight_acc_floats(s));
    m->zeros = piece(base, &at, 2 * (plane_elems(s) + 2 * (size_t)s->Ho));
    m->even = piece(base, &at, s->Wo % 2 ? 2 * (size_t)s->Ho * (s->Wo + 1) * NB : 0);
    m->off = piece(base, &at, 4 * (K + 8));
    m->gb = piece(base, &at, 4 * pooled_plane_words(s));
    m->ib = piece(base, &at, 4 * pooled_plane_words(s));
    return at + 64;
}

size_t k_conv_direct_bf16_scratch(const k_conv_shape *s) {
    dmem m;
    wmem w;
    size_t a = carve(s, NULL, &m), b = carve_bww(s, NULL, &w);
    return a > b ? a : b;
}

/* ---- forward ----------------------------------------------------------------------- */

/* wpk[tile][p][i][j][c] = (w[co][2p][i][j], w[co][2p+1][i][j]) with co = tile*ct + c; zero past Co and Ci */
static void pack_fwd_weights(const k_conv_shape *s, const k_bf16 *w, int ct, uint32_t *wpk) {
    int Cp = div_up(s->Ci, 2), khw = s->kh * s->kw, K = s->Ci * khw;
    size_t k = 0;
    for (int t = 0; t < div_up(s->Co, ct); t++)
        for (int p = 0; p < Cp; p++)
            for (int ij = 0; ij < khw; ij++)
                for (int c = 0; c < ct; c++, k++) {
                    int co = t * ct + c;
                    const k_bf16 *wc = w + (size_t)co * K + (size_t)2 * p * khw + ij;
                    k_bf16 lo = co < s->Co ? wc[0] : 0, hi = co < s->Co && 2 * p + 1 < s->Ci ? wc[khw] : 0;
                    wpk[k] = pair_of(lo, hi);
                }
}

/* Tap pairs: wpk[tile][ci][i][jp][c] = (w[co][ci][i][2jp], w[co][ci][i][2jp+1]), zero past kw and Co */
static void pack_fwd_weights_taps(const k_conv_shape *s, const k_bf16 *w, int ct, uint32_t *wpk) {
    int jp = div_up(s->kw, 2), khw = s->kh * s->kw;
    size_t k = 0;
    for (int t = 0; t < div_up(s->Co, ct); t++)
        for (int ci = 0; ci < s->Ci; ci++)
            for (int i = 0; i < s->kh; i++)
                for (int q = 0; q < jp; q++)
                    for (int c = 0; c < ct; c++, k++) {
                        int co = t * ct + c, j = 2 * q;
                        const k_bf16 *wc = w + ((size_t)co * s->Ci + ci) * khw + (size_t)i * s->kw + j;
                        k_bf16 lo = co < s->Co ? wc[0] : 0, hi = co < s->Co && j + 1 < s->kw ? wc[1] : 0;
                        wpk[k] = pair_of(lo, hi);
                    }
}

/* Each channel's padded plane of nb images (zeros past nb) as pairs
 * (xp[h][w], xp[h][w+shift]): xb[ci][Hp][Wp][16]. bwd_weight packs with
 * shift = the column stride, the forward's tap pairs with shift 1. */
static void pack_shifted_planes(const k_conv_shape *s, uint32_t *xb, const k_bf16 *x, size_t img, int nb,
                                const k_bf16 *zeros, int shift) {
    int Hp = s->H + 2 * s->ph, Wp = s->W + 2 * s->pw;
    const k_bf16 *a[NB], *b[NB];
    for (int ci = 0; ci < s->Ci; ci++) {
        for (int l = 0; l < NB; l++) {
            a[l] = l < nb ? x + l * img + (size_t)ci * s->H * s->W : zeros;
            b[l] = a[l] + shift;
        }
        uint32_t *t = xb + (size_t)ci * Hp * Wp * NB;
        pack_pair_plane(t, a, b, shift, s->H, s->W, Wp, s->ph, s->pw);
        fix_shifted_edges(t, a, s->H, s->W, Wp, s->ph, s->pw, shift);
    }
}

void k_conv_direct_bf16_fwd(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                            int relu, void *scratch) {
    k_conv_direct_bf16_fwd_pool(s, y, NULL, x, w, b, relu, scratch);
}

void k_conv_direct_bf16_fwd_pool(const k_conv_shape *s, float *y, uint8_t *argmax, const k_bf16 *x, const k_bf16 *w,
                                 const float *b, int relu, void *scratch) {
    const dfwd_cfg *cfg = pick_fwd(s);
    int taps = fwd_pairs_taps(s), jp = div_up(s->kw, 2), Cp = div_up(s->Ci, 2);
    int ct = cfg->ct, pt = cfg->pt, K2 = taps ? s->Ci * s->kh * jp : Cp * s->kh * s->kw;
    int Hp = s->H + 2 * s->ph, Wp = s->W + 2 * s->pw, wo_pad = div_up(s->Wo, pt) * pt;
    size_t ystride = (size_t)s->Ho * wo_pad * NB;
    dmem m;
    carve(s, scratch, &m);
    if (taps) {
        pack_fwd_weights_taps(s, w, ct, m.wpk);
        for (int ci = 0, k = 0; ci < s->Ci; ci++)
            for (int i = 0; i < s->kh; i++)
                for (int q = 0; q < jp; q++) m.off[k++] = (int32_t)((((size_t)ci * Hp + i) * Wp + 2 * q) * NB);
    } else {
        pack_fwd_weights(s, w, ct, m.wpk);
        for (int p = 0, k = 0; p < Cp; p++)
            for (int i = 0; i < s->kh; i++)
                for (int j = 0; j < s->kw; j++) m.off[k++] = (int32_t)((((size_t)p * Hp + i) * Wp + j) * NB);
    }
    /* packing writes the interior only: the padding border and the slack stay zero */
    memset(m.xb, 0, 4 * xb_elems(s));
    memset(m.zeros, 0, 2 * plane_elems(s));
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_y = (size_t)s->Co * s->Ho * s->Wo;
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        if (taps)
            pack_shifted_planes(s, m.xb, x + n0 * img_x, img_x, nb, m.zeros, 1);
        else
            to_blocked_pairs(m.xb, x + n0 * img_x, img_x, nb, s->Ci, s->H, s->W, s->ph, s->pw, m.zeros);
        /* one tile of channels at a time, through a tile-sized part of yb that stays in L2 (conv_direct.c) */
        for (int t = 0; t < div_up(s->Co, ct); t++) {
            int c0 = t * ct, cn = s->Co - c0 < ct ? s->Co - c0 : ct;
            for (int oh = 0; oh < s->Ho; oh++)
                for (int ow = 0; ow < wo_pad; ow += pt)
                    cfg->fn(m.xb + ((size_t)oh * s->sh * Wp + (size_t)ow * s->sw) * NB, m.off, K2,
                            m.wpk + (size_t)t * K2 * ct, (size_t)s->sw * NB, m.yb + ((size_t)oh * wo_pad + ow) * NB,
                            ystride);
            if (argmax) { /* pooled in the blocked layout (conv_direct.c): the conv output never leaves it */
                size_t img_p = k_conv_direct_pool16_floats(s) / NB; /* one image's pooled values */
                k_conv_direct_pool_from_blocked16(s, c0, cn, m.yb, wo_pad, nb, b, relu, y + n0 * img_p,
                                                  argmax + n0 * img_p, m.pooled, m.pa, m.sink);
                continue;
            }
            k_conv_direct_from_blocked16(y + n0 * img_y + (size_t)c0 * s->Ho * s->Wo, img_y, m.yb, nb, cn, s->Ho, s->Wo,
                                         wo_pad, b ? b + c0 : NULL, relu, m.sink);
        }
    }
}

/* ---- backward data ----------------------------------------------------------------- */

/* wpk[tile][i][j][q][c] = (w[2q][ci][i][j], w[2q+1][ci][i][j]) with ci = tile*ct + c; zero past Ci and Co */
static void pack_bwd_weights(const k_conv_shape *s, const k_bf16 *w, int ct, uint32_t *wpk) {
    int Cq = div_up(s->Co, 2), khw = s->kh * s->kw;
    size_t k = 0, wco = (size_t)s->Ci * khw;
    for (int t = 0; t < div_up(s->Ci, ct); t++)
        for (int ij = 0; ij < khw; ij++)
            for (int q = 0; q < Cq; q++)
                for (int c = 0; c < ct; c++, k++) {
                    int ci = t * ct + c;
                    const k_bf16 *wc = w + (size_t)2 * q * wco + (size_t)ci * khw + ij;
                    k_bf16 lo = ci < s->Ci ? wc[0] : 0, hi = ci < s->Ci && 2 * q + 1 < s->Co ? wc[wco] : 0;
                    wpk[k] = pair_of(lo, hi);
                }
}

/* dy plain (up.g NULL) or unpooled from up */
static void bwd_data(const k_conv_shape *s, float *dx, const k_bf16 *dy, k_unpool2 up, const k_bf16 *w, void *scratch) {
    const dbwd_cfg *cfg = pick_bwd(s);
    int ct = cfg->ct, Cq = div_up(s->Co, 2), khw = s->kh * s->kw;
    size_t dstride = k_conv_direct_spread_stride((size_t)s->Ho * s->Wo, NB), xstride = (size_t)s->H * s->W * NB;
    dmem m;
    carve(s, scratch, &m);
    int32_t *rows = m.off, *cols = m.off + 2 * s->kh;
    size_t pw = pooled_plane_words(s); /* an unpooled dy: the second channel's planes follow the first's */
    pack_bwd_weights(s, w, ct, m.wpk);
    memset(m.zeros, 0, 2 * plane_elems(s));
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_y = (size_t)s->Co * s->Ho * s->Wo;
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        if (!up.g) to_blocked_pairs_strided(m.xb, dstride, dy + n0 * img_y, img_y, nb, s->Co, s->Ho, s->Wo, 0, 0, m.zeros);
        for (int q = 0; up.g && q < Cq; q++) {
            pack_pooled(s, m.gb, m.ib, up, n0, nb, 2 * q, m.zeros);
            if (2 * q + 1 < s->Co) pack_pooled(s, m.gb + pw, m.ib + pw, up, n0, nb, 2 * q + 1, m.zeros);
            else memset(m.gb + pw, 0, 4 * pw), memset(m.ib + pw, 0, 4 * pw); /* no channel 2q+1: a zero gradient */
            unpool_channel_pairs(m.xb + (size_t)q * dstride, m.gb, m.ib, m.gb + pw, m.ib + pw, s->Ho, s->Wo);
        }
        for (int h = 0; h < s->H; h++) {
            int nr = k_conv_taps_for(h, s->kh, s->sh, s->ph, s->Ho, rows);
            for (int ww = 0; ww < s->W; ww++) {
                int nc = k_conv_taps_for(ww, s->kw, s->sw, s->pw, s->Wo, cols);
                for (int t = 0; t < div_up(s->Ci, ct); t++)
                    cfg->fn(m.xb, dstride, Cq, s->Wo, rows, nr, cols, nc, m.wpk + (size_t)t * khw * Cq * ct, s->kw,
                            m.yb + (((size_t)t * ct * s->H + h) * s->W + ww) * NB, xstride);
            }
        }
        k_conv_direct_from_blocked16(dx + n0 * img_x, img_x, m.yb, nb, s->Ci, s->H, s->W, s->W, NULL, 0, m.sink);
    }
}
void k_conv_direct_bf16_bwd_data(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch) {
    bwd_data(s, dx, dy, (k_unpool2){0}, w, scratch);
}
void k_conv_direct_bf16_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w, void *scratch) {
    bwd_data(s, dx, NULL, up, w, scratch);
}

/* ---- backward weight -------------------------------------------------------------- */

/* One block of nb images (from n0) into the paired layouts: x (padded) and
 * dy (plain, or unpooled from up when up.g is set). */
static void bww_pack_block(const k_conv_shape *s, const wmem *m, const k_bf16 *x, const k_bf16 *dy, k_unpool2 up,
                           int n0, int nb) {
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_y = (size_t)s->Co * s->Ho * s->Wo, py = (size_t)s->Ho * s->Wo;
    int Wo2 = div_up(s->Wo, 2);
    const uint32_t *d[NB];
    pack_shifted_planes(s, m->xb, x + n0 * img_x, img_x, nb, m->zeros, s->sw);
    for (int co = 0; up.g && co < s->Co; co++) {
        pack_pooled(s, m->gb, m->ib, up, n0, nb, co, m->zeros);
        unpool_row_pairs(m->dyb + (size_t)co * s->Ho * Wo2 * NB, m->gb, m->ib, s->Ho, s->Wo);
    }
    if (up.g) return;
    dy += n0 * img_y;
    for (int co = 0; co < s->Co; co++) {
        for (int l = 0; l < NB; l++) {
            const k_bf16 *src = l < nb ? dy + l * img_y + co * py : m->zeros;
            if (s->Wo % 2) { /* rows to an even length: the odd pixel's partner is 0 */
                k_bf16 *e = m->even + (size_t)l * s->Ho * (s->Wo + 1);
                for (int oh = 0; oh < s->Ho; oh++) {
                    memcpy(e + (size_t)oh * (s->Wo + 1), src + (size_t)oh * s->Wo, (size_t)s->Wo * sizeof *e);
                    e[(size_t)oh * (s->Wo + 1) + s->Wo] = 0;
                }
                src = e;
            }
            d[l] = (const uint32_t *)(const void *)src;
        }
        pack_u32_plane(m->dyb + (size_t)co * s->Ho * Wo2 * NB, d, s->Ho * Wo2);
    }
}

/* Output rows per sweep of a block: the most rows R whose x pair rows
 * ((R-1)*sh + kh of them) and dy pair rows (R) fit in half the L2 the CPU
 * reports, at least 1. Every (channel tile, tap tile) pass of a block re-reads
 * them, from L2 instead of L3: wide_cnn conv2's 16-image block holds 1.4 MB of
 * x pairs and 1.2 MB of dy pairs, more than a Zen 5 core's 1 MB L2. On that
 * shape (kernel_bench's "bf16 wide conv2" bwd_weight) a few rows per sweep
 * beat the whole block, and one row lost to both (the accumulators' reload
 * dominates). The fp32 twin (half the arithmetic per byte) measured the same
 * chunked or not, so keeps its whole-block sweep. Depends on rows and
 * channels, never on N: a micro-batch tile sums in the whole batch's order. */
static int g_forced_rows;

void k_conv_direct_bf16_force_bww_rows(int rows) { g_forced_rows = rows > 0 ? rows : 0; }

/* x_row, dy_row: one row of the block's x pair planes (all channels) and of
 * its dy pair planes, counted in 32-bit pair words as the budget is */
static int bww_rows(const k_conv_shape *s, size_t x_row, size_t dy_row) {
    if (g_forced_rows) return g_forced_rows < s->Ho ? g_forced_rows : s->Ho;
    size_t budget = k_cache_l2_bytes() / 2 / 4;
    int R = s->Ho;
    while (R > 1 && ((size_t)(R - 1) * s->sh + s->kh) * x_row + (size_t)R * dy_row > budget) R--;
    return R;
}

void k_conv_direct_bf16_bwd_weight(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                   void *scratch) {
    k_conv_direct_bf16_bwd_weight_part(s, dw, x, dy, scratch, NULL, 1, 1);
}

/* dy plain (up.g NULL) or unpooled from up */
static void bwd_weight_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy, k_unpool2 up,
                            void *scratch, float *acc, int first, int last) {
    const dbww_cfg *cfg = pick_bww(s);
    int ct = cfg->ct, tt = cfg->tt, K = s->Ci * s->kh * s->kw, Wo2 = div_up(s->Wo, 2);
    int Hp = s->H + 2 * s->ph, Wp = s->W + 2 * s->pw, co_pad = div_up(s->Co, ct) * ct, k_pad = div_up(K, tt) * tt;
    size_t dstride = (size_t)s->Ho * Wo2 * NB;
    wmem m;
    carve_bww(s, scratch, &m);
    if (acc) m.accv = acc; /* the sums carried from part to part */
    int k = 0;
    for (int ci = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) m.off[k++] = (int32_t)((((size_t)ci * Hp + i) * Wp + j) * NB);
    for (; k < k_pad; k++) m.off[k] = 0; /* padding taps: read valid memory, results dropped */
    memset(m.xb, 0, 4 * (size_t)s->Ci * Hp * Wp * NB);
    memset(m.dyb + (size_t)s->Co * dstride, 0, 4 * (size_t)(co_pad - s->Co) * dstride);
    memset(m.zeros, 0, 2 * (plane_elems(s) + 2 * (size_t)s->Ho)); /* accv: the first sweep stores (dbww_body) */
    size_t xrow = (size_t)s->sh * Wp * NB, drow = (size_t)Wo2 * NB; /* one output row's step in xb, dyb */
    int rows = bww_rows(s, (size_t)s->Ci * Wp * NB, (size_t)co_pad * drow);
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        bww_pack_block(s, &m, x, dy, up, n0, s->N - n0 < NB ? s->N - n0 : NB);
        for (int oh0 = 0; oh0 < s->Ho; oh0 += rows)
            for (int co0 = 0; co0 < co_pad; co0 += ct)
                for (int k0 = 0; k0 < k_pad; k0 += tt)
                    cfg->fn(m.dyb + co0 * dstride + oh0 * drow, dstride, m.xb + oh0 * xrow, m.off + k0,
                            s->Ho - oh0 < rows ? s->Ho - oh0 : rows, Wo2, xrow, (size_t)2 * s->sw * NB,
                            m.accv + ((size_t)co0 * k_pad + (size_t)k0 * ct) * NB, first && n0 == 0 && oh0 == 0);
    }
    if (!last) return;
    /* tile (co0, k0) holds ct x tt vectors, channel-major; each vector's lanes
     * summed in double, compacted in place, then placed in dw */
    float *sums = m.accv;
    k_lane_sums(m.accv, (int64_t)co_pad * k_pad, NB, sums);
    for (int co = 0; co < s->Co; co++)
        for (int kk = 0; kk < K; kk++) {
            int co0 = co / ct * ct, k0 = kk / tt * tt;
            dw[(size_t)co * K + kk] = sums[(size_t)co0 * k_pad + (size_t)k0 * ct + (size_t)((co - co0) * tt + kk - k0)];
        }
}
void k_conv_direct_bf16_bwd_weight_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                        void *scratch, float *acc, int first, int last) {
    bwd_weight_part(s, dw, x, dy, (k_unpool2){0}, scratch, acc, first, last);
}
void k_conv_direct_bf16_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const k_bf16 *x, k_unpool2 up,
                                                void *scratch, float *acc, int first, int last) {
    bwd_weight_part(s, dw, x, NULL, up, scratch, acc, first, last);
}

#else /* not x86-64 GCC/clang: never called (k_bf16_detect finds no AVX512-BF16) */

size_t k_conv_direct_bf16_scratch(const k_conv_shape *s) {
    (void)s;
    return 0;
}
void k_conv_direct_bf16_fwd(const k_conv_shape *s, float *y, const k_bf16 *x, const k_bf16 *w, const float *b,
                            int relu, void *scratch) {
    (void)s, (void)y, (void)x, (void)w, (void)b, (void)relu, (void)scratch;
}
void k_conv_direct_bf16_fwd_pool(const k_conv_shape *s, float *y, uint8_t *argmax, const k_bf16 *x, const k_bf16 *w,
                                 const float *b, int relu, void *scratch) {
    (void)s, (void)y, (void)argmax, (void)x, (void)w, (void)b, (void)relu, (void)scratch;
}
void k_conv_direct_bf16_bwd_data(const k_conv_shape *s, float *dx, const k_bf16 *dy, const k_bf16 *w, void *scratch) {
    (void)s, (void)dx, (void)dy, (void)w, (void)scratch;
}
void k_conv_direct_bf16_bwd_weight(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                   void *scratch) {
    (void)s, (void)dw, (void)x, (void)dy, (void)scratch;
}
size_t k_conv_direct_bf16_bwd_weight_acc_floats(const k_conv_shape *s) {
    (void)s;
    return 0;
}
void k_conv_direct_bf16_bwd_weight_part(const k_conv_shape *s, float *dw, const k_bf16 *x, const k_bf16 *dy,
                                        void *scratch, float *acc, int first, int last) {
    (void)s, (void)dw, (void)x, (void)dy, (void)scratch, (void)acc, (void)first, (void)last;
}
void k_conv_direct_bf16_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 up, const k_bf16 *w, void *scratch) {
    (void)s, (void)dx, (void)up, (void)w, (void)scratch;
}
void k_conv_direct_bf16_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const k_bf16 *x, k_unpool2 up,
                                                void *scratch, float *acc, int first, int last) {
    (void)s, (void)dw, (void)x, (void)up, (void)scratch, (void)acc, (void)first, (void)last;
}
void k_conv_direct_bf16_force_bww_rows(int rows) { (void)rows; }
int k_conv_direct_bf16_force_tile(int pass, int index) {
    (void)pass, (void)index;
    return 0;
}
#endif
