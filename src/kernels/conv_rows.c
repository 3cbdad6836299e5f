/* conv_rows.c — convolution of one input channel, stride 1, with the vector
 * lanes along the output plane (AVX-512).
 *
 * Is: the forward (+ bias, then a ReLU in registers) and the weight gradient
 * for Ci == 1, stride 1, any kernel size and padding, one image at a time.
 * For each image, kw column-shifted copies of the zero-padded input,
 *   xs_j[r][c] = xpad[r][c + j]   (Hp rows of Wo floats),
 * make the input of output pixel p = oh*Wo + ow under tap (i, j) the float
 * p + i*Wo of xs_j: 16 consecutive output pixels read 16 consecutive floats
 * whatever the row width (rows run on into the next inside a vector), and
 * the output is written in its plain layout, with no transposes.
 *
 * Why: one input channel gives each output pixel only kh*kw multiply-adds,
 * and the batch-blocked direct kernel (conv_direct.c) transposes every
 * element into and out of its blocked layout at ~0.3 cycles each; with 9
 * taps (wide_cnn's conv1) that is as long as the multiplies. With 25 (the
 * seed CNN's conv1) the transposes are a smaller share and the direct
 * kernel's larger register tiles win: tests/bench/kernel_bench.c's conv
 * section shows both, and conv.c takes this method only for few taps.
 *
 * Numbers. fwd: each output sums its taps from +0 in (i, j) order with one
 * FMA each, then adds the bias and applies the ReLU: the order and rounding
 * of the direct kernel, so the same bits (a test holds it to that).
 * bwd_weight: dw[co][i][j] sums dy * x over the batch in 16 lanes (a lane
 * per pixel p mod 16), images in order, and adds the lanes in double at
 * the end: the direct kernel's accuracy (a lane per image there), not its
 * bits; any split of the batch into parts gives the bits of one call.
 * Is not: used for Ci > 1 or below AVX-512 (conv.c chooses), nor for
 * backward-data (a first layer's input needs no gradient).
 */
#include "kernels/conv_rows.h"
#include "kernels/conv_common.h"
#include "kernels/simd.h"
#include "kernels/unroll.h"

#include <string.h>

/* Floats past each shifted copy: a row's last vector runs up to 15 past its
 * end, and a forward tile's last pair of vectors reads up to 31 past the
 * plane it computes. Zeroed. */
#define SLACK 32

/* One shifted copy's floats: Hp rows of Wo, then the slack. */
static size_t copy_floats(const k_conv_shape *s) {
    return (size_t)(s->H + 2 * s->ph) * s->Wo + SLACK;
}

size_t k_conv_rows_bwd_weight_acc_floats(const k_conv_shape *s) {
    return (size_t)s->Co * ((size_t)s->kh * s->kw + 1) * 16; /* the taps' lanes, then db's */
}

size_t k_conv_rows_scratch(const k_conv_shape *s) {
    /* 16 floats to align the start; kw copies; one image's dy (unpooled or
     * not); the accumulators of a whole-batch weight gradient */
    return 16 + (size_t)s->kw * copy_floats(s) + (size_t)s->Co * s->Ho * s->Wo + k_conv_rows_bwd_weight_acc_floats(s);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

#define ROWS_MAX_VECS 64 /* vectors per output row: Wo <= 1024 (k_conv_rows_fits) */

/* Lanes [lo, hi) as a mask */
static __mmask16 lane_range(int lo, int hi) {
    lo = lo < 0 ? 0 : lo;
    hi = hi > 16 ? 16 : hi;
    return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}
/* the first `left` lanes (all 16 when left >= 16) */
static __mmask16 tail_mask(int left) { return lane_range(0, left); }

/* xs_j for j < kw from one image x (H x W), read through pro: the padding
 * stays +0, as the other methods pad what batch norm's apply made; the slack
 * is +0 too. Rows are stored as whole vectors (what runs past a row is
 * rewritten by the next; AVX-512 masked stores are slow on Zen). A vector
 * is loaded whole where every lane that is kept comes from the image and
 * all 16 lie inside it (lanes past the row's Wo columns then carry the next
 * row's pixels, which are not kept), else masked to the lanes that come
 * from the image. */
static TGT void shifted_copies(const k_conv_shape *s, float *xs, const float *x, const k_conv_prologue *pro) {
    int Hp = s->H + 2 * s->ph, Wo = s->Wo, nv = (Wo + 15) / 16;
    size_t cf = copy_floats(s);
    ptrdiff_t img = (ptrdiff_t)s->H * s->W;
    __m512 sc = _mm512_set1_ps(pro->scale ? pro->scale[0] : 1.0f), sh = _mm512_set1_ps(pro->scale ? pro->shift[0] : 0.0f);
    __mmask16 from_image[ROWS_MAX_VECS];
    int whole_row[ROWS_MAX_VECS];
    for (int j = 0; j < s->kw; j++) {
        float *d = xs + (size_t)j * cf;
        for (int v = 0; v < nv; v++) { /* lane l of vector v reads column v*16 + l + j - pw */
            int c = v * 16, col = c + j - s->pw;
            from_image[v] = lane_range(-col, s->W - col) & lane_range(0, Wo - c);
            whole_row[v] = from_image[v] == lane_range(0, Wo - c);
        }
        for (int r = 0; r < Hp; r++) {
            float *o = d + (size_t)r * Wo;
            int h = r - s->ph;
            for (int v = 0; v < nv; v++) {
                __m512 x16 = _mm512_setzero_ps();
                if (h >= 0 && h < s->H) {
                    ptrdiff_t at = (ptrdiff_t)h * s->W + v * 16 + j - s->pw;
                    int whole = whole_row[v] && at >= 0 && at + 16 <= img;
                    x16 = whole ? _mm512_loadu_ps(x + at) : _mm512_maskz_loadu_ps(from_image[v], x + at);
                    if (pro->scale) {
                        x16 = _mm512_mul_ps(x16, sc);
                        x16 = _mm512_add_ps(x16, sh); /* two roundings, never one FMA: the elementwise ops' bits */
                        if (pro->relu) x16 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x16, _mm512_setzero_ps(), _CMP_GT_OQ), x16);
                        x16 = _mm512_maskz_mov_ps(from_image[v], x16); /* the padding stays +0 */
                    }
                }
                _mm512_storeu_ps(o + v * 16, x16);
            }
        }
        float *slack = d + (size_t)Hp * Wo; /* after the last row's overrun */
        _mm512_storeu_ps(slack, _mm512_setzero_ps());
        _mm512_storeu_ps(slack + 16, _mm512_setzero_ps());
    }
}

/* A forward tile: up to CT_FWD output channels x PV vectors of the plane:
 * 16 accumulators that leave registers for the tap's broadcast weights and
 * the two input vectors. 8 x 2 beat 4 x 4 and 6 x 2 on wide conv1 in
 * kernel_bench's conv rows, on one CPU kind (#55 measures choices per CPU). */
#define PV 2
#define CT_FWD 8
#define MAX_TAPS 64 /* kh*kw (k_conv_rows_fits) */

/* Output channels co0 .. co0+CT of one image, its plane PV vectors at a
 * time: the taps in (i, j) order, then + bias, then the ReLU, stored masked. */
static inline __attribute__((always_inline)) TGT void fwd_tile(const int CT, const k_conv_shape *s, const float *xs,
                                                              size_t cf, const float *w, const float *b, int relu,
                                                              int co0, float *y) {
    const int T = s->kh * s->kw, P = s->Ho * s->Wo, Wo = s->Wo, kw = s->kw;
    float wt[CT_FWD * MAX_TAPS]; /* the tile's weights, tap-major */
    for (int t = 0; t < T; t++)
        for (int c = 0; c < CT; c++) wt[t * CT + c] = w[(size_t)(co0 + c) * T + t];
    __m512 bv[CT_FWD];
XT_UNROLL
    for (int c = 0; c < CT; c++) bv[c] = _mm512_set1_ps(b ? b[co0 + c] : -0.0f);
    for (int p0 = 0; p0 < P; p0 += PV * 16) {
        __m512 acc[CT_FWD][PV];
XT_UNROLL
        for (int c = 0; c < CT; c++)
XT_UNROLL
            for (int v = 0; v < PV; v++) acc[c][v] = _mm512_setzero_ps();
        const float *wk = wt;
        for (int i = 0; i < s->kh; i++) {
            const float *xr = xs + (size_t)i * Wo + p0;
            for (int j = 0; j < kw; j++, wk += CT) {
                const float *xp = xr + (size_t)j * cf;
                __m512 xv[PV];
XT_UNROLL
                for (int v = 0; v < PV; v++) xv[v] = _mm512_loadu_ps(xp + v * 16);
XT_UNROLL
                for (int c = 0; c < CT; c++) {
                    __m512 wv = _mm512_set1_ps(wk[c]);
XT_UNROLL
                    for (int v = 0; v < PV; v++) acc[c][v] = _mm512_fmadd_ps(wv, xv[v], acc[c][v]);
                }
            }
        }
XT_UNROLL
        for (int c = 0; c < CT; c++)
XT_UNROLL
            for (int v = 0; v < PV; v++) {
                int p = p0 + v * 16;
                __m512 o = _mm512_add_ps(acc[c][v], bv[c]);
                if (relu) o = _mm512_max_ps(o, _mm512_setzero_ps()); /* +0 for NaN and -0, as the engine's RELU */
                if (p + 16 <= P) _mm512_storeu_ps(y + (size_t)(co0 + c) * P + p, o);
                else _mm512_mask_storeu_ps(y + (size_t)(co0 + c) * P + p, tail_mask(P - p), o);
            }
    }
}

typedef void (*fwd_tile_fn)(const k_conv_shape *s, const float *xs, size_t cf, const float *w, const float *b,
                            int relu, int co0, float *y);
#define FWD_TILE(CT)                                                                                              \
    static TGT void fwd_tile_##CT(const k_conv_shape *s, const float *xs, size_t cf, const float *w, const float *b, \
                                  int relu, int co0, float *y) {                                                  \
        fwd_tile(CT, s, xs, cf, w, b, relu, co0, y);                                                              \
    }
FWD_TILE(1) FWD_TILE(2) FWD_TILE(3) FWD_TILE(4) FWD_TILE(5) FWD_TILE(6) FWD_TILE(7) FWD_TILE(8)
static const fwd_tile_fn fwd_tiles[CT_FWD + 1] = {NULL,      fwd_tile_1, fwd_tile_2, fwd_tile_3, fwd_tile_4,
                                                  fwd_tile_5, fwd_tile_6, fwd_tile_7, fwd_tile_8};

static float *aligned_scratch(float *p) { return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* Output channels in as few tiles of at most CT_FWD as Co allows, evenly
 * (Co 10: two of 5; Co 32: four of 8), so no tile computes a channel past Co. */
static int fwd_channels_per_tile(int Co) {
    int tiles = (Co + CT_FWD - 1) / CT_FWD;
    return (Co + tiles - 1) / tiles;
}

void k_conv_rows_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                         float *scratch, k_conv_prologue pro) {
    float *xs = aligned_scratch(scratch);
    size_t cf = copy_floats(s), img_y = (size_t)s->Co * s->Ho * s->Wo, img_x = (size_t)s->H * s->W;
    int ct = fwd_channels_per_tile(s->Co);
    for (int n = 0; n < s->N; n++) {
        shifted_copies(s, xs, x + n * img_x, &pro);
        for (int co0 = 0; co0 < s->Co; co0 += ct)
            fwd_tiles[s->Co - co0 < ct ? s->Co - co0 : ct](s, xs, cf, w, b, relu, co0, y + n * img_y);
    }
}

/* ---- weight gradient ------------------------------------------------------------- */

/* A tile of CT_BWW channels x TT_BWW taps loads CT + TT vectors for CT*TT
 * FMAs per vector of the plane, and this loop is bound by its loads.
 * 4 x 5 (20 accumulators, 9 loads per 20 FMAs) was the fastest of the tiles
 * kernel_bench's wide conv1 row compared; 3 x 9 and 4 x 9 spill
 * accumulators to the stack. */
#define CT_BWW 4
#define TT_BWW 5

/* acc[(co*T + t)*16] += sum over the image's vectors of dy[co] * x(t), for
 * channels co0 .. co0+CT and taps t0 .. t0+TT. Every load is masked to the
 * plane (plain loads for the whole vectors measured no faster), so the tail
 * vector's lanes past it are +0 in both operands: a NaN or an infinity
 * elsewhere in the copies never meets them. */
static inline __attribute__((always_inline)) TGT void bww_tile(const int CT, const int TT, const k_conv_shape *s,
                                                              const float *xs, size_t cf, const float *dy, int co0,
                                                              int t0, float *acc) {
    int T = s->kh * s->kw, P = s->Ho * s->Wo;
    __m512 a[CT_BWW][TT_BWW];
    const float *xt[TT_BWW];
XT_UNROLL
    for (int u = 0; u < TT; u++) {
        int t = t0 + u, i = t / s->kw, j = t % s->kw;
        xt[u] = xs + (size_t)j * cf + (size_t)i * s->Wo;
XT_UNROLL
        for (int c = 0; c < CT; c++) a[c][u] = _mm512_loadu_ps(acc + ((size_t)(co0 + c) * T + t) * 16);
    }
    const float *dc = dy + (size_t)co0 * P;
    for (int v = 0; v * 16 < P; v++) {
        __mmask16 m = tail_mask(P - v * 16);
        __m512 d[CT_BWW];
XT_UNROLL
        for (int c = 0; c < CT; c++) d[c] = _mm512_maskz_loadu_ps(m, dc + (size_t)c * P + v * 16);
XT_UNROLL
        for (int u = 0; u < TT; u++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, xt[u] + v * 16);
XT_UNROLL
            for (int c = 0; c < CT; c++) a[c][u] = _mm512_fmadd_ps(d[c], xv, a[c][u]);
        }
    }
XT_UNROLL
    for (int u = 0; u < TT; u++)
XT_UNROLL
        for (int c = 0; c < CT; c++) _mm512_storeu_ps(acc + ((size_t)(co0 + c) * T + t0 + u) * 16, a[c][u]);
}

typedef void (*bww_tile_fn)(const k_conv_shape *s, const float *xs, size_t cf, const float *dy, int co0, int t0,
                            float *acc);
#define BWW_TILE(CT, TT)                                                                                          \
    static TGT void bww_tile_##CT##_##TT(const k_conv_shape *s, const float *xs, size_t cf, const float *dy,       \
                                         int co0, int t0, float *acc) {                                           \
        bww_tile(CT, TT, s, xs, cf, dy, co0, t0, acc);                                                            \
    }
#define BWW_TT(CT) BWW_TILE(CT, 1) BWW_TILE(CT, 2) BWW_TILE(CT, 3) BWW_TILE(CT, 4) BWW_TILE(CT, 5)
BWW_TT(1)
BWW_TT(2)
BWW_TT(3)
BWW_TT(4)
#define BWW_ROW(CT) {NULL, bww_tile_##CT##_1, bww_tile_##CT##_2, bww_tile_##CT##_3, bww_tile_##CT##_4, bww_tile_##CT##_5}
static const bww_tile_fn bww_tiles[CT_BWW + 1][TT_BWW + 1] = {{NULL}, BWW_ROW(1), BWW_ROW(2), BWW_ROW(3), BWW_ROW(4)};

/* Taps per tile: as few tiles of at most TT_BWW as T allows, evenly (9:
 * 5 and 4). */
static int bww_taps_per_tile(int T) {
    int tiles = (T + TT_BWW - 1) / TT_BWW;
    return (T + tiles - 1) / tiles;
}

TGT void k_conv_rows_bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                                     k_unpool2 up, float *scratch, float *acc, int first, int last,
                                     k_conv_prologue pro) {
    float *xs = aligned_scratch(scratch), *dy1 = xs + (size_t)s->kw * copy_floats(s);
    int T = s->kh * s->kw, P = s->Ho * s->Wo, tt = bww_taps_per_tile(T);
    size_t cf = copy_floats(s), img_x = (size_t)s->H * s->W, img_y = (size_t)s->Co * P;
    if (!acc) acc = scratch + k_conv_rows_scratch(s) - k_conv_rows_bwd_weight_acc_floats(s); /* a whole-batch call */
    float *accb = acc + (size_t)s->Co * T * 16; /* db's lanes */
    k_pool_shape ps = k_conv_pool2_shape(s, 1);
    size_t img_g = (size_t)ps.C * ps.Ho * ps.Wo;
    if (first) memset(acc, 0, sizeof(float) * k_conv_rows_bwd_weight_acc_floats(s));
    for (int n = 0; n < s->N; n++) {
        const float *d = dy + n * img_y;
        if (up.g) { /* the pool's backward, exactly as the other methods scatter it */
            k_maxpool2d_bwd(&ps, dy1, up.g + n * img_g, up.argmax + n * img_g);
            d = dy1;
        }
        shifted_copies(s, xs, x + n * img_x, &pro);
        for (int co0 = 0; co0 < s->Co; co0 += CT_BWW) {
            int cn = s->Co - co0 < CT_BWW ? s->Co - co0 : CT_BWW;
            for (int t0 = 0; t0 < T; t0 += tt)
                bww_tiles[cn][T - t0 < tt ? T - t0 : tt](s, xs, cf, d, co0, t0, acc);
        }
        if (db)
            for (int co = 0; co < s->Co; co++) {
                __m512 a = _mm512_loadu_ps(accb + (size_t)co * 16);
                for (int v = 0; v * 16 < P; v++)
                    a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(tail_mask(P - v * 16), d + (size_t)co * P + v * 16));
                _mm512_storeu_ps(accb + (size_t)co * 16, a);
            }
    }
    if (!last) return;
    k_lane_sums(acc, (int64_t)s->Co * T, 16, dw); /* dw[co][t]: the lanes of vector co*T + t */
    if (db) k_lane_sums(accb, s->Co, 16, db);
}

int k_conv_rows_fits(const k_conv_shape *s) {
    return s->Ci == 1 && s->sh == 1 && s->sw == 1 && s->kh * s->kw <= MAX_TAPS && s->Wo <= 16 * ROWS_MAX_VECS &&
           k_simd_level() == K_SIMD_AVX512;
}

#else /* not x86-64: never chosen */

int k_conv_rows_fits(const k_conv_shape *s) {
    (void)s;
    return 0;
}
void k_conv_rows_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                         float *scratch, k_conv_prologue pro) {
    (void)s, (void)y, (void)x, (void)w, (void)b, (void)relu, (void)scratch, (void)pro;
}
void k_conv_rows_bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                                 k_unpool2 up, float *scratch, float *acc, int first, int last,
                                 k_conv_prologue pro) {
    (void)s, (void)dw, (void)db, (void)x, (void)dy, (void)up, (void)scratch, (void)acc, (void)first, (void)last,
        (void)pro;
}
#endif
