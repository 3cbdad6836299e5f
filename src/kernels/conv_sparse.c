/* conv_sparse.c — the weight gradient of a convolution whose output a 2x2,
 * stride-2 max pool read, from the pool's gradient and argmax alone (AVX-512).
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
 * each costs kh * ceil(kw*Ci / 16) FMAs with the same broadcast g into as many
 * accumulators, which stay in registers across the list. Why not lanes across
 * images, as the dense kernel: each image keeps a different pixel of a window,
 * so every vector would need a per-lane select of four loads, as dear as the
 * four FMAs it saves.
 *
 * Numbers: the bits of the direct kernel's unpooled weight gradient. There a
 * lane is one image and sums its dy * x over the pixels row-major from +0,
 * one FMA each, then adds that block sum into its lane of the accumulators;
 * a +0 product changes no sum, so the kept pixels alone in the same order give
 * the same image sum. It is added into lane (n mod 16) as the direct kernel
 * adds a block's, and the 16 lanes are summed in double in lane order at the
 * end. The one difference: where x holds an Inf or NaN under a pixel the pool
 * did not keep, the dense 0 * Inf = NaN is not made here.
 * Is not: the choice of method (conv.c), backward-data (the direct kernel
 * scatters dy as it packs it), the bf16 passes, CPUs without AVX-512.
 */
#include "kernels/conv_sparse.h"
#include "kernels/cache.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

#define LANES 16
/* Past the channels-last image: a kernel row's last vector reads up to 15
 * floats beyond the row's kw*Ci. Zeroed. */
#define SLACK 16
/* The most accumulators a kernel keeps in registers (of 32): kh vectors per
 * kernel row, kh rows, a broadcast and a load besides. */
#define MAX_ACC 28

static int div_up(int a, int b) { return (a + b - 1) / b; }

/* vectors per kernel row; floats of one channels-last image with its slack.
 * A pixel holds its Ci floats, unpadded: rounding Ci up to 16 so that every
 * kernel row starts on a cache line ran no faster in kernel_bench's seed
 * conv2 row, and costs memory. */
static int row_vecs(const k_conv_shape *s) { return div_up(s->kw * s->Ci, LANES); }
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
static size_t part_floats(const k_conv_shape *s) { return (size_t)s->Co * s->kh * row_vecs(s) * LANES; }

size_t k_conv_sparse_acc_floats(const k_conv_shape *s) {
    return (size_t)LANES * s->Co * s->kh * row_vecs(s) * LANES;
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
#include <immintrin.h>

#include "kernels/transpose16.h"
#include "kernels/unroll.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

/* The kernels by (kh, vectors per kernel row); kh * vecs <= MAX_ACC. */
#define SPARSE_CFGS(X)                                                                                                 \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(3, 5) X(3, 6)      \
        X(3, 7) X(3, 8) X(5, 1) X(5, 2) X(5, 3) X(5, 4) X(5, 5) X(7, 1) X(7, 2) X(7, 3) X(7, 4)

/* One (image, channel)'s sums over the m kept pixels e of one band of rows,
 * in list order: a[i][v] += g[e] * xc[off[e] + i*xrow + v*16 ..]. The sums
 * start from +0 (start) or from `part`, where the previous band left them;
 * the last band (finish) adds them into the image's lane of the accumulators,
 * acc_out[i*arow + v*16 ..], the others leave them in `part`. */
typedef void (*sparse_fn)(const float *xc, size_t xrow, const int32_t *off, const float *g, int m, float *part,
                          int start, int finish, float *acc_out, size_t arow);

static inline __attribute__((always_inline)) TGT void sparse_body(const int KH, const int VPR, const float *xc,
                                                                 size_t xrow, const int32_t *off, const float *g,
                                                                 int m, float *part, int start, int finish,
                                                                 float *acc_out, size_t arow) {
    __m512 a[MAX_ACC];
XT_UNROLL
    for (int r = 0; r < KH * VPR; r++) a[r] = start ? _mm512_setzero_ps() : _mm512_load_ps(part + r * LANES);
    for (int e = 0; e < m; e++) {
        __m512 gv = _mm512_set1_ps(g[e]);
        const float *p = xc + off[e];
XT_UNROLL
        for (int i = 0; i < KH; i++, p += xrow) /* a pointer step per row: row offsets in registers spilled */
XT_UNROLL
            for (int v = 0; v < VPR; v++)
                a[i * VPR + v] = _mm512_fmadd_ps(gv, _mm512_loadu_ps(p + v * LANES), a[i * VPR + v]);
    }
    if (!finish) {
XT_UNROLL
        for (int r = 0; r < KH * VPR; r++) _mm512_store_ps(part + r * LANES, a[r]);
        return;
    }
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < VPR; v++) {
            float *o = acc_out + i * arow + v * LANES;
            _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(o), a[i * VPR + v]));
        }
}

#define SPARSE_FN(kh, vpr)                                                                                             \
    static TGT void sparse_##kh##_##vpr(const float *xc, size_t xrow, const int32_t *off, const float *g, int m,    \
                                        float *part, int start, int finish, float *acc_out, size_t arow) {           \
        sparse_body(kh, vpr, xc, xrow, off, g, m, part, start, finish, acc_out, arow);                               \
    }
SPARSE_CFGS(SPARSE_FN)

typedef struct {
    int kh, vpr;
    sparse_fn fn;
} sparse_cfg;
#define SPARSE_ROW(kh, vpr) {kh, vpr, sparse_##kh##_##vpr},
static const sparse_cfg cfgs[] = {SPARSE_CFGS(SPARSE_ROW)};

static sparse_fn sparse_kernel(const k_conv_shape *s) {
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        if (cfgs[i].kh == s->kh && cfgs[i].vpr == row_vecs(s)) return cfgs[i].fn;
    return NULL;
}

/* the first n lanes */
static __mmask16 first_lanes(int n) { return n >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* xc[(h + ph)*Wp + w + pw][ci] <- x[ci][h][w] of one image, through pro
 * (relu?(x * scale + shift), the product and the sum each rounded, as the
 * direct kernel's packing makes it); the padding border is left as it is
 * (zero). 16 channels x 16 pixels of a row at a time, transposed in registers;
 * a last partial channel block is stored masked, so no store runs into the
 * next pixel's channels. */
static TGT void to_channels_last(const k_conv_shape *s, float *xc, const float *x, const k_conv_prologue *pro) {
    int Ci = s->Ci, H = s->H, W = s->W, Wp = W + 2 * s->pw;
    const __m512 zero = _mm512_setzero_ps();
    for (int h = 0; h < H; h++)
        for (int w0 = 0; w0 < W; w0 += LANES) {
            int nw = W - w0 < LANES ? W - w0 : LANES;
            __mmask16 wm = first_lanes(nw);
            for (int c0 = 0; c0 < Ci; c0 += LANES) {
                int nc = Ci - c0 < LANES ? Ci - c0 : LANES;
                __m512 r[LANES];
                for (int c = 0; c < LANES; c++) {
                    if (c >= nc) {
                        r[c] = zero;
                        continue;
                    }
                    r[c] = _mm512_maskz_loadu_ps(wm, x + ((size_t)(c0 + c) * H + h) * W + w0);
                    if (pro->scale) {
                        __m512 t = _mm512_mul_ps(r[c], _mm512_set1_ps(pro->scale[c0 + c]));
                        t = _mm512_add_ps(t, _mm512_set1_ps(pro->shift[c0 + c]));
                        r[c] = pro->relu ? _mm512_max_ps(t, zero) : t; /* +0 for NaN and -0, as VRELU */
                    }
                }
                transpose_avx512(r);
                float *dst = xc + ((size_t)(h + s->ph) * Wp + w0 + s->pw) * Ci + c0;
                if (nc == LANES)
                    for (int q = 0; q < nw; q++) _mm512_storeu_ps(dst + (size_t)q * Ci, r[q]);
                else
                    for (int q = 0; q < nw; q++) _mm512_mask_storeu_ps(dst + (size_t)q * Ci, first_lanes(nc), r[q]);
            }
        }
}

/* The kept pixels of pooled row ph of one (image, channel) plane appended
 * to the list's first m, in row-major order of the conv output: the windows
 * whose argmax (the window cell, 0-3 row-major) is in their top row, then
 * those in their bottom row. off: where the pixel's receptive field starts
 * in xc; an argmax past the window's 4 cells (never from k_maxpool2d_fwd)
 * keeps nothing, as the dense scatter writes nothing there.
 * 16 windows at a time, compressed in registers: which row of a window the
 * pool took is a coin toss, and a branch per window mispredicted so often
 * that listing the pixels took twice as long as their multiply-adds.
 * Stores whole vectors: off and gv hold band_max(s) entries. `avail`: the
 * elements of g and am readable from the plane's start on. */
static TGT int kept_pixels(const k_conv_shape *s, int ph, const float *g, const uint8_t *am, size_t avail,
                           int32_t *off, float *gv, int m) {
    int Wq = s->Wo / 2, Wp = s->W + 2 * s->pw;
    g += (size_t)ph * Wq, am += (size_t)ph * Wq;
    const __m512i two_pw = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i one = _mm512_set1_epi32(1), sw = _mm512_set1_epi32(s->sw), ci = _mm512_set1_epi32(s->Ci);
    for (int r = 0; r < 2; r++) {
        int oh = 2 * ph + r;
        for (int pw0 = 0; pw0 < Wq; pw0 += LANES) {
            __mmask16 in = first_lanes(Wq - pw0);
            __m512i col = _mm512_add_epi32(two_pw, _mm512_set1_epi32(2 * pw0)); /* the window's first column */
            /* whole loads where the buffers run on (lanes past the row are
             * dropped by `in`): masked loads cost several times more on Zen 5,
             * and with rows of fewer than 16 windows every load was masked */
            int whole = (size_t)ph * Wq + pw0 + LANES <= avail;
            __m512i a = _mm512_cvtepu8_epi32(whole ? _mm_loadu_si128((const __m128i *)(am + pw0))
                                                   : _mm_maskz_loadu_epi8(in, am + pw0));
            __m512i d = _mm512_sub_epi32(a, _mm512_set1_epi32(2 * r)); /* 0 or 1 (the column): a cell of this row */
            __mmask16 keep = _mm512_mask_cmple_epu32_mask(in, d, one);
            __m512i o = _mm512_mullo_epi32(_mm512_add_epi32(col, d), sw);
            o = _mm512_mullo_epi32(_mm512_add_epi32(o, _mm512_set1_epi32(oh * s->sh * Wp)), ci);
            __m512 gw = whole ? _mm512_loadu_ps(g + pw0) : _mm512_maskz_loadu_ps(in, g + pw0);
            _mm512_storeu_si512(off + m, _mm512_maskz_compress_epi32(keep, o));
            _mm512_storeu_ps(gv + m, _mm512_maskz_compress_ps(keep, gw));
            m += __builtin_popcount((unsigned)keep);
        }
    }
    return m;
}

/* Relative cycles per 2x2 window, for the choice. The dense pass: its 4
 * pixels' K = Ci*kh*kw multiply-adds in 16 lanes at 2 FMAs a cycle (its
 * register tiles reuse each load). This one: the kept pixel's kh * vecs FMAs,
 * each with its own load, at one a cycle, and the listing, the channels-last
 * copy and the sums' loads and stores, SPARSE_OVERHEAD cycles. The overhead
 * is set from train_bench --kernels (make bench; per step at batch 128, the
 * figures in tests/bench/HISTORY.md): by this model wide_cnn's conv2 (18
 * against 36) runs sparse, much faster than dense, and the seed CNN's conv2
 * (20 against 31) stays dense, as measured: the sparse pass was slower there
 * both when the dense pass took backward-data's scattered block
 * (pass_share.c) and since backward-data runs sparse (conv_sparse_data.c)
 * and the dense pass scatters its own blocks. */
#define SPARSE_OVERHEAD 12
static int g_force = -1;
int k_conv_sparse_force(int mode) {
    g_force = mode;
    return 1;
}
int k_conv_sparse_runs(const k_conv_shape *s) {
    if (g_force == 0 || k_simd_level() != K_SIMD_AVX512 || s->Ho < 2 || s->Wo < 2 || !sparse_kernel(s)) return 0;
    return (double)image_floats(s) <= 2e9; /* offsets into one image are int32 */
}

int k_conv_sparse_fits(const k_conv_shape *s) {
    if (!k_conv_sparse_runs(s)) return 0;
    if (g_force == 1) return 1;
    double dense = (double)s->Ci * s->kh * s->kw / 8.0, sparse = (double)s->kh * row_vecs(s) + SPARSE_OVERHEAD;
    return sparse < dense;
}

/* Image by image: copied channels-last, then band by band (pooled rows whose
 * input rows fit in L1; the whole image when it does), every output
 * channel's kept pixels of the band. Why bands: channel by channel over the whole
 * image read it from L2 once per channel, and the kernel, one load per FMA,
 * ran at the L2's pace (wide_cnn's conv2: slower than the dense pass). The
 * running sums go to `part` between bands, which leaves their bits alone. */
void k_conv_sparse_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 up,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    sparse_fn fn = sparse_kernel(s);
    int vpr = row_vecs(s), Lp = vpr * LANES, Hq = s->Ho / 2, Wq = s->Wo / 2, bq = band_rows(s);
    size_t xrow = (size_t)(s->W + 2 * s->pw) * s->Ci, arow = (size_t)Lp, sums = (size_t)s->kh * Lp;
    size_t per_lane = (size_t)s->Co * sums; /* one lane's sums: [co][i][Lp] */
    float *part = scratch + ((16 - ((uintptr_t)scratch / sizeof(float)) % 16) % 16); /* 64-byte aligned */
    float *xc = part + part_floats(s);
    int32_t *off = (int32_t *)(xc + image_floats(s));
    float *gv = (float *)(off + band_max(s));
    if (!acc) acc = gv + band_max(s);
    if (first) memset(acc, 0, sizeof(float) * LANES * per_lane);
    memset(xc, 0, sizeof(float) * image_floats(s)); /* the padding border and the slack */
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_g = (size_t)s->Co * Hq * Wq;
    for (int n = 0; n < s->N; n++) {
        to_channels_last(s, xc, x + n * img_x, &pro);
        float *lane = acc + (size_t)(n % LANES) * per_lane;
        for (int ph0 = 0; ph0 < Hq; ph0 += bq) {
            int ph1 = ph0 + bq < Hq ? ph0 + bq : Hq;
            for (int co = 0; co < s->Co; co++) {
                size_t plane = n * img_g + (size_t)co * Hq * Wq;
                int m = 0;
                size_t avail = (size_t)s->N * img_g - plane; /* g and argmax elements from the plane on */
                for (int ph = ph0; ph < ph1; ph++)
                    m = kept_pixels(s, ph, up.g + plane, up.argmax + plane, avail, off, gv, m);
                fn(xc, xrow, off, gv, m, part + co * sums, ph0 == 0, ph1 == Hq, lane + co * sums, arow);
            }
        }
    }
    if (!last) return;
    /* dw[co][ci][i][j] is the lane sum of (co, i, j*Ci + ci), in double in
     * lane order: a kernel row of every lane at a time, so the lanes are read
     * as rows rather than 16 scattered floats per weight */
    int K = s->Ci * s->kh * s->kw, L = s->kw * s->Ci;
    double t[8 * LANES]; /* Lp <= 8 vectors (SPARSE_CFGS) */
    for (int co = 0; co < s->Co; co++)
        for (int i = 0; i < s->kh; i++) {
            size_t at = (size_t)co * sums + (size_t)i * Lp;
            for (int k = 0; k < L; k++) t[k] = 0.0;
            for (int l = 0; l < LANES; l++) {
                const float *v = acc + (size_t)l * per_lane + at;
                for (int k = 0; k < L; k++) t[k] += v[k];
            }
            for (int j = 0; j < s->kw; j++)
                for (int c = 0; c < s->Ci; c++)
                    dw[(size_t)co * K + ((size_t)c * s->kh + i) * s->kw + j] = (float)t[j * s->Ci + c];
        }
}

#else /* no AVX-512 build: never chosen */

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
