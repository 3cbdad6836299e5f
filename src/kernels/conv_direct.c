/* conv_direct.c — direct SIMD convolution, batch-blocked: vector lanes run across images.
 *
 * Is: forward, backward-data and backward-weight for any stride and padding.
 * NB images (NB = the vector width: 16 floats for AVX-512, 8 for AVX2, 4 for the
 * portable flavour) are transposed into a blocked layout t[c][h][w][NB], so one
 * vector load fetches the same pixel of NB images and every lane does useful
 * work whatever the spatial size. Why not vectorize along a row: conv2 of the
 * seed CNN has 8-pixel output rows (half a 16-lane vector), and a "wide row"
 * variant tried first ran well below this one and was dropped (conv.c's
 * header). Why not im2col: with 1-20 channels its GEMMs are too small.
 *   fwd:        y tile = CT out channels x PT pixels of one output row, summed over all taps
 *   bwd_weight: dw tile = CT out channels x TT taps, summed over all output pixels
 *   bwd_data:   stride 1: the fwd tile run over dy (zero-padded by kw-1-pw columns
 *               each side) with the transposed weights, CT in channels x PT dx
 *               pixels of a row, the row's taps exact, a tile's column taps
 *               those that reach real dy columns (column classes); chosen where
 *               the edges still waste few multiplies (see use_bwd_rows).
 *               Otherwise one dx pixel x CT in channels, summed over exactly the
 *               (tap, dy pixel) pairs that reach it, so no multiply is spent on padding
 * The price is the transposes in and out of the blocked layout (16x16 register
 * transposes, ~0.3 cycle per element) against Ci*kh*kw (or Co*kh*kw) FMAs per element.
 * fwd and bwd_data pack the weights in their tile order on each call, or once
 * per step into the caller's buffer (k_conv_packed, kernels.h).
 * Is not: the choice of method (conv.c); the micro-kernels live in conv_direct_simd.h.
 */
#include "kernels/conv_direct.h"
#include "kernels/simd.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define XT_DIRECT_X86 1
#endif

/* How far ahead of its loads the packing into the blocked layout asks for
 * each image's next line (prefetcht0). A block reads NB images side by side,
 * one line of each per step: NB short streams at once (a seed CNN image is
 * 49 lines; bn1's output, 9 lines per channel), which the hardware
 * prefetchers pick up late or not at all, so where the images are not in
 * cache (batch 1024: the batch's images, and bn1's input written a stretch
 * earlier) the packing waited on memory for each line. The address ahead may
 * lie past the plane, in the image's next channel or the next image, which
 * the next call reads, or past the tensor: a prefetch never faults, and the
 * address is formed as an integer, not a pointer past the object.
 * Chosen with perf samples in the two packing functions while train_bench
 * ran the seed CNN (8 distinct batches, pinned, interleaved runs): on a busy
 * host 4 lines ahead cut the packing's samples at batch 1024 and 128 and
 * raised samples/s, 8 and 16 lines ahead cut them less; on a quieter host,
 * where the lines come from cache, the requests cost nothing measurable.
 * Nearer was better, probably because NB streams run at once: 16 x 4 lines
 * are already in flight, and a longer reach runs further past each plane's
 * end. A distance measured on one CPU kind. */
#define PACK_AHEAD 256
/* the one request both packings make: the line PACK_AHEAD bytes past p */
static inline __attribute__((always_inline)) void prefetch_ahead(const void *p) {
    __builtin_prefetch((const void *)((uintptr_t)p + PACK_AHEAD), 0, 3);
}

typedef void (*nfwd_fn)(const float *xb, const int32_t *off, int K, const float *wpk, size_t xstep, float *y,
                        size_t ystride);
typedef void (*nbww_fn)(const float *dyb, size_t dstride, size_t drow, const float *xb, const int32_t *off, int Ho,
                        int Wo, size_t xrow, size_t xcol, float *acc_out, int init);
typedef void (*nbwd_fn)(const float *dyb, size_t dstride, int Co, int Wo, const int32_t *rows, int nr,
                        const int32_t *cols, int nc, const float *wpk, int kw, float *dx, size_t xstride);
typedef struct {
    int ct, pt;
    nfwd_fn fn;
} nfwd_cfg;
typedef struct {
    int ct, tt;
    nbww_fn fn;
} nbww_cfg;
typedef struct {
    int ct;
    nbwd_fn fn;
} nbwd_cfg;
typedef void (*npack_fn)(float *dst, const float *const *src, int H, int W, int Wd, int ph, int pw);
typedef void (*npack_affine_fn)(float *dst, const float *const *src, int H, int W, int Wd, int ph, int pw, int nb,
                                float scale, float shift, int relu);
typedef void (*nunpack_fn)(float *const *dst, const float *src, int H, int W, int Wd, float bias);
typedef void (*nunpack_mask_fn)(float *const *dst, const float *src, int H, int W, int Wd, const float *const *mask);
typedef struct {
    int vl;
    npack_fn pack;
    npack_affine_fn pack_affine; /* pack, x read through batch norm's apply (k_conv_prologue) */
    nunpack_fn unpack;
    nunpack_fn unpack_relu; /* unpack, then max(., 0) in registers */
    nunpack_mask_fn unpack_mask; /* unpack, each value kept where mask > 0, else +0, in registers */
    double (*sum)(const float *p, size_t n);
    /* a 2x2/2 max pool of a block's conv output, blocked (the forward's pool epilogue) */
    void (*pool2)(const k_conv_shape *s, const float *yb, int wo_pad, const float *b, int relu, float *pv, int32_t *pa);
    /* one channel's pooled gradient and argmax scattered into the blocked dy (unpooling) */
    void (*unpool)(float *t, int Wd, int P, const float *gb, const int32_t *ib, int H, int W);
    const nfwd_cfg *fwd;
    int nfwd;
    const nbww_cfg *bww;
    int nbww;
    const nbwd_cfg *bwd;
    int nbwd;
} nisa;

/* Cells p0 .. n-1 of a channel's argmax bytes to and from the blocked int32
 * layout, one by one (cells_to_blocked below) */
static void cells_to_blocked_from(int NB, int32_t *ib, const uint8_t *a, size_t img, int nb, int p0, int n) {
    for (int p = p0; p < n; p++)
        for (int l = 0; l < NB; l++) ib[(size_t)p * NB + l] = l < nb ? a[l * img + p] : 0;
}
static void cells_from_blocked_from(int NB, uint8_t *a, size_t img, const int32_t *ib, int nb, int p0, int n) {
    for (int p = p0; p < n; p++)
        for (int l = 0; l < nb; l++) a[l * img + p] = (uint8_t)ib[(size_t)p * NB + l];
}

/* ---- the three flavours of conv_direct_simd.h ------------------------------- */

typedef float ngen __attribute__((vector_size(16)));
typedef float ngen_u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t ngen_i __attribute__((vector_size(16))); /* a lane mask: all ones or zero */
#define SFX _gen
#define TGT
#define VL 4
#define vec ngen
#define VZERO() ((ngen){0.0f, 0.0f, 0.0f, 0.0f})
#define VLOAD(p) (*(const ngen_u *)(p))
#define VSTORE(p, v) (*(ngen_u *)(p) = (v))
#define VSET1(s) ((ngen){0.0f, 0.0f, 0.0f, 0.0f} + (s))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VHSUM(v) ((v)[0] + (v)[1] + (v)[2] + (v)[3])
static inline ngen relu_gen(ngen v) {
    for (int i = 0; i < 4; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    return v;
}
#define VRELU(v) relu_gen(v)
static inline ngen keep_gen(ngen m, ngen v) {
    for (int i = 0; i < 4; i++) v[i] = m[i] > 0.0f ? v[i] : 0.0f;
    return v;
}
#define VKEEP(m, v) keep_gen(m, v)
#define vmask ngen_i
#define VGT(a, b) ((a) > (b))
#define VNAN(a) ((a) != (a))
#define VMOR(m, n) ((m) | (n))
#define VSEL(m, a, b) ((ngen)(((ngen_i)(a) & ~(m)) | ((ngen_i)(b) & (m))))
#define VEQCELL(a, q) ((ngen_i)(a) == (ngen_i){q, q, q, q})
#define NFWD_CFGS(X) X(1, 6) X(2, 6) X(2, 4) X(3, 4) X(3, 3) X(4, 3) X(4, 2) X(5, 2) X(6, 2)
#define NBWW_CFGS(X) X(1, 7) X(2, 5) X(2, 4) X(3, 3) X(3, 2) X(4, 2) X(5, 2) X(6, 2)
#define NBWD_CFGS(X) X(2) X(4) X(6) X(8) X(10) X(12)
static inline void transpose_gen(ngen *r) {
    ngen t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5), t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
    ngen t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5), t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
    r[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    r[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    r[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    r[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}
#define NTRANSPOSE(r) transpose_gen(r)
#include "kernels/conv_direct_simd.h" /* undefines the flavour's macros but the tile lists */

#ifdef XT_DIRECT_X86
__attribute__((target("avx2,fma"))) static inline float nhsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#define SFX _avx2
#define TGT __attribute__((target("avx2,fma")))
#define VL 8
#define vec __m256
#define VZERO() _mm256_setzero_ps()
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSET1(s) _mm256_set1_ps(s)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VHSUM(v) nhsum_avx2(v)
#define VRELU(v) _mm256_max_ps(v, _mm256_setzero_ps()) /* the second operand (+0) for NaN and for -0 */
#define VKEEP(m, v) _mm256_and_ps(_mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ), v) /* false (NaN too): +0 */
#define vmask __m256
#define VGT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VNAN(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define VMOR(m, n) _mm256_or_ps(m, n)
#define VSEL(m, a, b) _mm256_blendv_ps(a, b, m)
#define VEQCELL(a, q) _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(a), _mm256_set1_epi32(q)))
#include "kernels/transpose8.h"
#define NTRANSPOSE(r) transpose_avx2(r)
#include "kernels/conv_direct_simd.h" /* undefines the flavour's macros but the tile lists */
#undef NFWD_CFGS
#undef NBWW_CFGS
#undef NBWD_CFGS

#define SFX _avx512
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define VL 16
#define vec __m512
#define VZERO() _mm512_setzero_ps()
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSET1(s) _mm512_set1_ps(s)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VHSUM(v) _mm512_reduce_add_ps(v)
#define VRELU(v) _mm512_max_ps(v, _mm512_setzero_ps()) /* the second operand (+0) for NaN and for -0 */
#define VKEEP(m, v) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), v)
#define vmask __mmask16
#define VGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define VNAN(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define VMOR(m, n) ((m) | (n))
#define VSEL(m, a, b) _mm512_mask_mov_ps(a, m, b)
#define VEQCELL(a, q) _mm512_cmpeq_epi32_mask(_mm512_castps_si512(a), _mm512_set1_epi32(q))
#include "kernels/transpose16.h"
#define NTRANSPOSE(r) transpose_avx512(r)
#define NFWD_CFGS(X) X(1, 8) X(2, 8) X(3, 8) X(3, 6) X(4, 6) X(4, 4) X(5, 4) X(6, 4) X(4, 3) X(6, 3) X(8, 3) X(8, 2)
#define NBWW_CFGS(X) X(1, 8) X(2, 8) X(3, 6) X(3, 3) X(4, 6) X(4, 5) X(4, 3) X(5, 5) X(5, 4) X(6, 4) X(6, 3) X(8, 3)
#define NBWD_CFGS(X) X(2) X(4) X(6) X(8) X(10) X(12) X(16) X(20) X(24)
#include "kernels/conv_direct_simd.h" /* undefines the flavour's macros but the tile lists */

/* 16 window cells of 16 images at a time, the rest one by one (conv_direct.h);
 * the bytes are read as the packing reads floats, 16 short streams, and ask
 * for their lines ahead as it does */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void
k_conv_direct_cells_to_blocked16(int32_t *ib, const uint8_t *a, size_t img, int nb, int n) {
    int p = 0;
    for (; p + 16 <= n; p += 16) {
        __m512 r[16];
        if (p % 64 == 0) /* once per line of each image's bytes, as the packing does (PACK_AHEAD) */
            for (int l = 0; l < nb; l++) prefetch_ahead(a + l * img + p);
        for (int l = 0; l < 16; l++)
            r[l] = l < nb ? _mm512_castsi512_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(a + l * img + p))))
                          : _mm512_setzero_ps();
        transpose_avx512(r);
        for (int k = 0; k < 16; k++) _mm512_storeu_ps((float *)ib + (size_t)(p + k) * 16, r[k]);
    }
    cells_to_blocked_from(16, ib, a, img, nb, p, n);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void
k_conv_direct_cells_from_blocked16(uint8_t *a, size_t img, const int32_t *ib, int nb, int n) {
    int p = 0;
    for (; p + 16 <= n; p += 16) {
        __m512 r[16];
        for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_ps((const float *)ib + (size_t)(p + k) * 16);
        transpose_avx512(r);
        for (int l = 0; l < nb; l++)
            _mm_storeu_si128((__m128i *)(a + l * img + p), _mm512_cvtepi32_epi8(_mm512_castps_si512(r[l])));
    }
    cells_from_blocked_from(16, a, img, ib, nb, p, n);
}
#endif
#undef NFWD_CFGS
#undef NBWW_CFGS
#undef NBWD_CFGS

static const nisa *nisa_now(void) {
#ifdef XT_DIRECT_X86
    switch (k_simd_level()) {
    case K_SIMD_AVX512: return &nisa_avx512;
    case K_SIMD_AVX2: return &nisa_avx2;
    default: break;
    }
#endif
    return &nisa_gen;
}

/* ---- tile choice ------------------------------------------------------------------ */

static int g_forced_tile[3] = {-1, -1, -1}; /* per pass: index into the flavour's list, or -1 */

int k_conv_direct_force_tile(int pass, int index) {
    if (pass < K_CONV_FWD || pass > K_CONV_BWD_WEIGHT) return 0;
    if (index < 0) {
        g_forced_tile[pass] = -1;
        return 1;
    }
    const nisa *isa = nisa_now();
    int n = pass == K_CONV_FWD ? isa->nfwd : pass == K_CONV_BWD_DATA ? isa->nbwd : isa->nbww;
    if (index >= n) return 0;
    g_forced_tile[pass] = index;
    return 1;
}

/* ---- scratch layout --------------------------------------------------------------- */

#define NB_MAX 16 /* the widest block (AVX-512) */
#define PT_MAX 8  /* the widest fwd pixel tile */
#define CT_MAX 24 /* the most channels in any tile */
#define ROUND16(n) (((size_t)(n) + 15) & ~(size_t)15)

static int div_up(int a, int b) {
    return (a + b - 1) / b;
}

/* Scratch is carved in order; sizes use the widest block and tiles, so the same
 * total serves every SIMD flavour. With p NULL, only counts. Every piece starts
 * on a 64-byte line (the first is aligned up by align_scratch): a vector load
 * that straddles two lines costs two. */
static float *carve(float **p, size_t *total, size_t n) {
    float *r = *p;
    *total += ROUND16(n);
    if (*p) *p += ROUND16(n);
    return r;
}

/* The engine's scratch may be only float-aligned: round up to 64 bytes (the
 * 16 floats this can skip are counted in every *_carve total). */
static float *align_scratch(float *p, size_t *total) {
    *total += 16;
    if (!p) return NULL;
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* floats of one blocked, padded input block, with slack for the garbage pixels
 * a partial fwd tile reads past the end of a row */
static size_t xb_floats(const k_conv_shape *s) {
    size_t px = (size_t)s->Ci * (s->H + 2 * s->ph) * (s->W + 2 * s->pw) + (size_t)PT_MAX * s->sw + 1;
    return px * NB_MAX;
}

/* Zero what packing never writes: the padding border (all of the block when
 * there is padding: the border is scattered) and the slack past the end.
 * Without padding the interior is rewritten for every block of images, so
 * a call on a micro-batch tile does not clear the whole block again. */
static void clear_xb_border(const k_conv_shape *s, float *xb, int NB) {
    size_t interior = (size_t)s->Ci * (s->H + 2 * s->ph) * (s->W + 2 * s->pw) * NB;
    if (s->ph || s->pw) interior = 0;
    memset(xb + interior, 0, sizeof(float) * (xb_floats(s) - interior));
}

/* one plain plane, the larger of input and output: idle lanes read zeros from one
 * and write into a sink of the same size */
static size_t plane_floats(const k_conv_shape *s) {
    size_t a = (size_t)s->H * s->W, b = (size_t)s->Ho * s->Wo;
    return a > b ? a : b;
}

/* ---- layout changes ------------------------------------------------------------ */

/* Blocked t[c][Hd][Wd][NB] (interior at (ph, pw)) <- nb images of plain [c][h][w]
 * (image stride img), read through pro (k_conv_prologue) when pro->scale is
 * set: the padding border stays zero, as the convolution pads what batch
 * norm's apply made; idle lanes read `zeros`. The border must already be zero. */
static void to_blocked_strided(const nisa *isa, float *t, size_t cstride, const float *x, size_t img, int nb, int C,
                               int H, int W, int ph, int pw, const float *zeros, const k_conv_prologue *pro) {
    int NB = isa->vl, Wd = W + 2 * pw;
    const float *src[NB_MAX];
    for (int c = 0; c < C; c++) {
        for (int l = 0; l < NB; l++) src[l] = l < nb ? x + l * img + (size_t)c * H * W : zeros;
        if (pro && pro->scale)
            isa->pack_affine(t + (size_t)c * cstride, src, H, W, Wd, ph, pw, nb, pro->scale[c], pro->shift[c],
                             pro->relu);
        else
            isa->pack(t + (size_t)c * cstride, src, H, W, Wd, ph, pw);
    }
}
static void to_blocked(const nisa *isa, float *t, const float *x, size_t img, int nb, int C, int H, int W, int ph,
                       int pw, const float *zeros, const k_conv_prologue *pro) {
    size_t cstride = (size_t)(H + 2 * ph) * (W + 2 * pw) * isa->vl;
    to_blocked_strided(isa, t, cstride, x, img, nb, C, H, W, ph, pw, zeros, pro);
}

/* Plain [c][h][w] (+ bias[c]) of nb images <- blocked t[c][H][Wd][NB]; idle lanes go to `sink`.
 * relu: max(., 0) as the planes are stored (unpack_relu);
 * mask (laid out as x, or NULL): each value becomes mask > 0 ? value : +0
 * in registers as it is stored (the ReLU's backward, k_relu_bwd_inplace's
 * bits), which costs less than a second pass over each stored plane (rdtsc
 * around the unpack, and wide_cnn conv2's backward-data in make bench's
 * kernel table, train_bench --kernels).
 * Without a bias the unpack adds -0.0, which leaves every float's bits as
 * they are (-0 included: no flush-to-zero is ever enabled). */
static void from_blocked(const nisa *isa, float *x, size_t img, const float *t, int nb, int C, int H, int W, int Wd,
                         const float *bias, int relu, const float *mask, float *sink) {
    int NB = isa->vl;
    float *dst[NB_MAX];
    const float *keep[NB_MAX];
    assert(!mask || (!bias && !relu));
    for (int c = 0; c < C; c++) {
        const float *plane = t + (size_t)c * H * Wd * NB;
        for (int l = 0; l < NB; l++) dst[l] = l < nb ? x + l * img + (size_t)c * H * W : sink;
        if (mask) { /* idle lanes read the sink they write: their values go nowhere */
            for (int l = 0; l < NB; l++) keep[l] = l < nb ? mask + l * img + (size_t)c * H * W : sink;
            isa->unpack_mask(dst, plane, H, W, Wd, keep);
            continue;
        }
        (relu ? isa->unpack_relu : isa->unpack)(dst, plane, H, W, Wd, bias ? bias[c] : -0.0f);
    }
}

#ifdef XT_DIRECT_X86
void k_conv_direct_from_blocked16(float *x, size_t img, const float *t, int nb, int C, int H, int W, int Wd,
                                  const float *bias, int relu, float *sink) {
    from_blocked(&nisa_avx512, x, img, t, nb, C, H, W, Wd, bias, relu, NULL, sink);
}
#endif

/* ---- dy from a max pool's backward --------------------------------------------- */

/* Where a backward pass's dy comes from: a tensor (up.g NULL), or a 2x2/2 max
 * pool's gradient and argmax (k_unpool2), scattered here as k_maxpool2d_bwd
 * would: g where the argmax points, +0 in the window's other cells and in a
 * last row or column no window reaches. The blocked dy is then the same bits
 * either way, and the (N, Co, Ho, Wo) tensor is never written (seed conv1:
 * 2.9 MB per step at batch 128; wide_cnn conv2: 18.9 MB). */
typedef struct {
    const float *dy;
    k_unpool2 up;
} dy_source;

/* The last column and row of an odd-sized plane, which no window reaches: +0 */
static void zero_unreached(int NB, float *t, int Wd, int P, int H, int W) {
    if (W & 1)
        for (int h = 0; h < H; h++) memset(t + ((size_t)h * Wd + P + W - 1) * NB, 0, sizeof(float) * NB);
    if (H & 1) memset(t + ((size_t)(H - 1) * Wd + P) * NB, 0, sizeof(float) * NB * W);
}

/* floats of one image's pooled gradient (and bytes of its argmax), plain */
static size_t pooled_img(const k_conv_shape *s) { return (size_t)s->Co * (s->Ho / 2) * (s->Wo / 2); }

/* floats of one channel's blocked pooled gradient (and as many for its argmax) */
static size_t unpool_plane_floats(const k_conv_shape *s) {
    return (size_t)(s->Ho / 2) * (s->Wo / 2) * NB_MAX;
}

/* A channel's argmax bytes (n window cells of each of nb images, img bytes
 * apart) <-> the blocked int32 [p*NB + l] that pooling and unpooling compare
 * in registers; idle lanes read 0. 16 cells at a time through the 16x16
 * transpose on AVX-512 (k_conv_direct_cells_*_blocked16, which hand their
 * last cells to cells_*_blocked_from). */
static void cells_to_blocked(int NB, int32_t *ib, const uint8_t *a, size_t img, int nb, int n) {
#ifdef XT_DIRECT_X86
    if (NB == 16) {
        k_conv_direct_cells_to_blocked16(ib, a, img, nb, n);
        return;
    }
#endif
    cells_to_blocked_from(NB, ib, a, img, nb, 0, n);
}
static void cells_from_blocked(int NB, uint8_t *a, size_t img, const int32_t *ib, int nb, int n) {
#ifdef XT_DIRECT_X86
    if (NB == 16) {
        k_conv_direct_cells_from_blocked16(a, img, ib, nb, n);
        return;
    }
#endif
    cells_from_blocked_from(NB, a, img, ib, nb, 0, n);
}

/* Blocked dy t[c][h][P + w][NB] (channel stride cstride, rows Wo + 2P wide)
 * of images n0 .. n0+nb from `src`; idle lanes read `zeros`. Unpooling goes
 * channel by channel: the channel's gradient plane is packed into gb and its
 * argmax bytes widened into ib, then scattered while they are in L1. */
static void dy_to_blocked(const nisa *isa, float *t, size_t cstride, const dy_source *src, int n0, int nb,
                          const k_conv_shape *s, int P, const float *zeros, float *gb, float *ib) {
    size_t img_y = (size_t)s->Co * s->Ho * s->Wo;
    if (!src->up.g) {
        to_blocked_strided(isa, t, cstride, src->dy + n0 * img_y, img_y, nb, s->Co, s->Ho, s->Wo, 0, P, zeros, NULL);
        return;
    }
    int NB = isa->vl, Hq = s->Ho / 2, Wq = s->Wo / 2, Wd = s->Wo + 2 * P;
    size_t plane = (size_t)Hq * Wq, img_g = pooled_img(s);
    const float *g = src->up.g + n0 * img_g;
    const uint8_t *a = src->up.argmax + n0 * img_g;
    const float *from[NB_MAX];
    for (int c = 0; c < s->Co; c++) {
        for (int l = 0; l < NB; l++) from[l] = l < nb ? g + l * img_g + c * plane : zeros;
        isa->pack(gb, from, Hq, Wq, Wq, 0, 0);
        cells_to_blocked(NB, (int32_t *)ib, a + c * plane, img_g, nb, (int)plane);
        isa->unpool(t + c * cstride, Wd, P, gb, (const int32_t *)ib, s->Ho, s->Wo);
        zero_unreached(NB, t + c * cstride, Wd, P, s->Ho, s->Wo);
    }
}

/* ---- a block of scattered dy handed from backward-data to the weight gradient ---- */

/* The head of k_unpool2.share; the blocked dy follows it, 64 bytes in.
 * Backward-data builds its blocks there and, after its last, says which
 * block it holds and in which layout (its own: padded rows on the row path,
 * a spread channel stride on the one-pixel path); the weight gradient takes
 * the block whose (g, argmax) pointers and image count match, reading the
 * rows at that pitch, and marks the share spent. The pointers identify the
 * data only within one step's pair of calls (a tile-local g is rewritten by
 * the next tile), hence `full`. It saves the weight gradient a second
 * scatter of the same block (wide_cnn conv2's weight gradient in make
 * bench's kernel table, train_bench --kernels). */
typedef struct {
    const float *g;        /* the block's first image's pooled gradient and argmax */
    const uint8_t *argmax;
    const float *dy;       /* channel 0, pixel (0, 0) of the blocked dy */
    size_t dstride, drow;  /* floats between channels, between rows */
    int nb, NB;            /* images in the block; lanes of the flavour that wrote it */
    int full;              /* holds a block not yet taken */
} dy_share;
#define SHARE_HEAD_FLOATS 16
_Static_assert(sizeof(dy_share) <= SHARE_HEAD_FLOATS * sizeof(float), "the share's head fits in its 64 bytes");

static dy_share *share_of(const dy_source *dy) { return dy->up.g && dy->up.share ? (dy_share *)dy->up.share : NULL; }

/* Backward-data's last block is in the share: say which, and how it is laid out. */
static void share_last_block(const dy_source *dy, const k_conv_shape *s, int NB, const float *base, size_t dstride,
                             size_t drow) {
    dy_share *sh = share_of(dy);
    if (!sh || s->N <= 0) return;
    int n0 = (s->N - 1) / NB * NB;
    *sh = (dy_share){dy->up.g + n0 * pooled_img(s), dy->up.argmax + n0 * pooled_img(s), base, dstride, drow,
                     s->N - n0, NB, 1};
}

/* ---- forward ------------------------------------------------------------------- */

/* Per tap and tile: CT*PT FMAs (one 512-bit FMA per cycle on Zen 4) against PT
 * vector loads and CT broadcasts, counting the work wasted on rounding Co up to
 * CT and Wo up to PT. Loads also take issue slots, so among equal FMA counts
 * the tile with fewer loads wins (conv1 of the seed CNN: 5x4 and 2x8 do the same
 * FMAs; with aligned scratch they ran equal, with loads straddling cache lines
 * 5x4 ran faster; each tile forced, on kernel_bench's "seed conv1" shape). */
/* one CT x PT tile's relative cycles per k: its FMAs or its loads, whichever bind */
static double fwd_tile_cost(int ct, int pt) {
    double per = ct * pt, ld = pt + 0.5 * ct;
    return (per > ld ? per : ld) + 0.25 * ld;
}

double k_conv_direct_fwd_cost(const k_conv_shape *s, int ct, int pt) {
    return (double)div_up(s->Co, ct) * div_up(s->Wo, pt) * fwd_tile_cost(ct, pt);
}

/* The fwd tile of least cost (the forced one in tests); the forward pass's
 * model, or the backward-data row path's (bwd_rows_cost). */
typedef double (*fwd_cost_fn)(const k_conv_shape *s, int ct, int pt);
static const nfwd_cfg *pick_fwd_by(const nisa *isa, const k_conv_shape *s, fwd_cost_fn cost_of) {
    int forced = g_forced_tile[K_CONV_FWD];
    if (forced >= 0 && forced < isa->nfwd) return &isa->fwd[forced];
    const nfwd_cfg *best = &isa->fwd[0];
    double best_cost = 0;
    for (int i = 0; i < isa->nfwd; i++) {
        const nfwd_cfg *c = &isa->fwd[i];
        double cost = cost_of(s, c->ct, c->pt);
        if (i == 0 || cost < best_cost) best = c, best_cost = cost;
    }
    return best;
}
static const nfwd_cfg *pick_fwd(const nisa *isa, const k_conv_shape *s) {
    return pick_fwd_by(isa, s, k_conv_direct_fwd_cost);
}

typedef struct {
    float *xb, *yb, *wpk, *zeros, *sink, *pooled;
    int32_t *off, *argmax; /* argmax: the pool epilogue's window cells, blocked */
} fwd_mem;

/* the 2x2, stride-2 max pool of a conv output: its size */
static int pool2_out(int n) { return n >= 2 ? (n - 2) / 2 + 1 : 0; }

/* the packed weights, wpk[co tile][k][c], for any tile choice */
static size_t fwd_wpk_floats(const k_conv_shape *s) {
    return (size_t)(s->Co + CT_MAX) * s->Ci * s->kh * s->kw;
}

static size_t fwd_carve(const k_conv_shape *s, float *p, fwd_mem *m) {
    size_t total = 0, K = (size_t)s->Ci * s->kh * s->kw;
    p = align_scratch(p, &total);
    m->xb = carve(&p, &total, xb_floats(s));
    m->yb = carve(&p, &total, (size_t)CT_MAX * s->Ho * (s->Wo + PT_MAX) * NB_MAX); /* one tile of channels */
    m->wpk = carve(&p, &total, fwd_wpk_floats(s));
    m->zeros = carve(&p, &total, plane_floats(s));
    m->sink = carve(&p, &total, plane_floats(s));
    m->off = (int32_t *)carve(&p, &total, K);
    size_t pooled = (size_t)s->Co * pool2_out(s->Ho) * pool2_out(s->Wo) * NB_MAX;
    m->pooled = carve(&p, &total, pooled);
    m->argmax = (int32_t *)carve(&p, &total, pooled);
    return total;
}

void k_conv_direct_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b,
                       float *scratch) {
    k_conv_direct_fwd_act(s, y, x, w, b, 0, scratch, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
}

/* Channels c0 .. c0+cn of one block's conv output (yb holds them from its
 * start, planes Ho x wo_pad) -> their pooled values and indices, out of the
 * blocked layout (the conv output itself never leaves it). */
static void pool_out_channels(const nisa *isa, const k_conv_shape *s, int c0, int cn, const float *yb, int wo_pad,
                              int nb, const float *b, int relu, float *y, uint8_t *argmax, float *pooled, int32_t *pa,
                              float *sink) {
    k_conv_shape part = *s;
    part.Co = cn;
    int pho = pool2_out(s->Ho), pwo = pool2_out(s->Wo);
    size_t plane = (size_t)pho * pwo, img_p = (size_t)s->Co * plane;
    isa->pool2(&part, yb, wo_pad, b ? b + c0 : NULL, relu, pooled, pa);
    from_blocked(isa, y + c0 * plane, img_p, pooled, nb, cn, pho, pwo, pwo, NULL, 0, NULL, sink);
    for (int c = 0; c < cn; c++) cells_from_blocked(isa->vl, argmax + (c0 + c) * plane, img_p, pa + c * plane * isa->vl, nb, (int)plane);
}

#ifdef XT_DIRECT_X86
size_t k_conv_direct_pool16_floats(const k_conv_shape *s) {
    return (size_t)s->Co * pool2_out(s->Ho) * pool2_out(s->Wo) * 16;
}
void k_conv_direct_pool_from_blocked16(const k_conv_shape *s, int c0, int cn, const float *yb, int wo_pad, int nb,
                                       const float *b, int relu, float *y, uint8_t *argmax, float *pooled, int32_t *pa,
                                       float *sink) {
    pool_out_channels(&nisa_avx512, s, c0, cn, yb, wo_pad, nb, b, relu, y, argmax, pooled, pa, sink);
}
#endif

void k_conv_direct_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                           float *scratch, k_conv_packed pk, k_conv_prologue pro) {
    k_conv_direct_fwd_pool(s, y, NULL, x, w, b, relu, scratch, pk, pro);
}

void k_conv_direct_fwd_pool(const k_conv_shape *s, float *y, uint8_t *argmax, const float *x, const float *w,
                            const float *b, int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro) {
    const nisa *isa = nisa_now();
    const nfwd_cfg *cfg = pick_fwd(isa, s);
    int NB = isa->vl, ct = cfg->ct, pt = cfg->pt, K = s->Ci * s->kh * s->kw;
    int Hp = s->H + 2 * s->ph, Wp = s->W + 2 * s->pw, wo_pad = div_up(s->Wo, pt) * pt, co_tiles = div_up(s->Co, ct);
    size_t ystride = (size_t)s->Ho * wo_pad * NB;
    fwd_mem m;
    fwd_carve(s, scratch, &m);
    if (pk.buf) m.wpk = pk.buf;
    /* wpk[tile][k][c] = w[tile*ct + c][k], zero past Co; packed by the step's first tile only (k_conv_packed) */
    for (int t = 0; pk.fresh && t < co_tiles; t++)
        for (int k = 0; k < K; k++)
            for (int c = 0; c < ct; c++) {
                int co = t * ct + c;
                m.wpk[((size_t)t * K + k) * ct + c] = co < s->Co ? w[(size_t)co * K + k] : 0.0f;
            }
    for (int ci = 0, k = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) m.off[k++] = (int32_t)((((size_t)ci * Hp + i) * Wp + j) * NB);
    clear_xb_border(s, m.xb, NB);
    memset(m.zeros, 0, sizeof(float) * plane_floats(s));
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_y = (size_t)s->Co * s->Ho * s->Wo;
    size_t img_p = (size_t)s->Co * pool2_out(s->Ho) * pool2_out(s->Wo); /* pooled */
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        to_blocked(isa, m.xb, x + n0 * img_x, img_x, nb, s->Ci, s->H, s->W, s->ph, s->pw, m.zeros, &pro);
        /* One tile of channels at a time, unpacked or pooled right after it is
         * computed, through a tile-sized yb that stays in L2. The whole block's
         * yb (wide_cnn conv2: 64 x 24 x 24 x 16 floats, 2.4 MB) went through L3.
         * Shown by wide_cnn's conv2 + pool in make bench's kernel table
         * (train_bench --kernels, fp32 and bf16) and kernel_bench's
         * "wide conv1" fwd row. */
        for (int t = 0; t < co_tiles; t++) {
            int c0 = t * ct, cn = s->Co - c0 < ct ? s->Co - c0 : ct;
            for (int oh = 0; oh < s->Ho; oh++)
                for (int ow = 0; ow < wo_pad; ow += pt)
                    cfg->fn(m.xb + ((size_t)oh * s->sh * Wp + (size_t)ow * s->sw) * NB, m.off, K,
                            m.wpk + (size_t)t * K * ct, (size_t)s->sw * NB, m.yb + ((size_t)oh * wo_pad + ow) * NB,
                            ystride);
            if (argmax) { /* pooled: values and indices leave the blocked layout, the conv output never does */
                pool_out_channels(isa, s, c0, cn, m.yb, wo_pad, nb, b, relu, y + n0 * img_p, argmax + n0 * img_p,
                                  m.pooled, m.argmax, m.sink);
                continue;
            }
            from_blocked(isa, y + n0 * img_y + (size_t)c0 * s->Ho * s->Wo, img_y, m.yb, nb, cn, s->Ho, s->Wo, wo_pad,
                         b ? b + c0 : NULL, relu, NULL, m.sink);
        }
    }
}

/* ---- backward weight --------------------------------------------------------------- */

double k_conv_direct_bww_cost(const k_conv_shape *s, int ct, int tt) {
    double per = ct * tt, ld = ct + tt;
    return (double)div_up(s->Co, ct) * div_up(s->Ci * s->kh * s->kw, tt) * ((per > ld ? per : ld) + 0.25 * ld);
}

static const nbww_cfg *pick_bww(const nisa *isa, const k_conv_shape *s) {
    int forced = g_forced_tile[K_CONV_BWD_WEIGHT];
    if (forced >= 0 && forced < isa->nbww) return &isa->bww[forced];
    const nbww_cfg *best = &isa->bww[0];
    double best_cost = 0;
    for (int i = 0; i < isa->nbww; i++) {
        const nbww_cfg *c = &isa->bww[i];
        double cost = k_conv_direct_bww_cost(s, c->ct, c->tt);
        if (i == 0 || cost < best_cost) best = c, best_cost = cost;
    }
    return best;
}

/* Vector accumulators of the weight gradient: NB lanes per (co, k) pair,
 * padded to whole register tiles; summed across lanes only at the end. */
size_t k_conv_direct_bwd_weight_acc_floats(const k_conv_shape *s) {
    return (size_t)(s->Co + 8) * ((size_t)s->Ci * s->kh * s->kw + 8) * NB_MAX;
}

typedef struct {
    float *xb, *dyb, *accv, *zeros, *gb, *ib;
    int32_t *off;
} bww_mem;

/* xb | dyb (Co+8 channels) | vector accumulators (Co+8) x (K+8) x NB | zero plane | offsets */
static size_t bww_carve(const k_conv_shape *s, float *p, bww_mem *m) {
    size_t total = 0, K = (size_t)s->Ci * s->kh * s->kw;
    p = align_scratch(p, &total);
    m->xb = carve(&p, &total, xb_floats(s));
    m->dyb = carve(&p, &total, (size_t)(s->Co + 8) * s->Ho * s->Wo * NB_MAX);
    m->accv = carve(&p, &total, k_conv_direct_bwd_weight_acc_floats(s));
    m->zeros = carve(&p, &total, plane_floats(s));
    m->gb = carve(&p, &total, unpool_plane_floats(s));
    m->ib = carve(&p, &total, unpool_plane_floats(s));
    m->off = (int32_t *)carve(&p, &total, K + 8);
    return total;
}

static void bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const dy_source *dy,
                            float *scratch, float *acc, int first, int last, const k_conv_prologue *pro) {
    const nisa *isa = nisa_now();
    const nbww_cfg *cfg = pick_bww(isa, s);
    int NB = isa->vl, ct = cfg->ct, tt = cfg->tt, K = s->Ci * s->kh * s->kw;
    int Hp = s->H + 2 * s->ph, Wp = s->W + 2 * s->pw, co_pad = div_up(s->Co, ct) * ct, k_pad = div_up(K, tt) * tt;
    size_t dstride = (size_t)s->Ho * s->Wo * NB;
    bww_mem m;
    bww_carve(s, scratch, &m);
    if (acc) m.accv = acc;
    int k = 0;
    for (int ci = 0; ci < s->Ci; ci++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) m.off[k++] = (int32_t)((((size_t)ci * Hp + i) * Wp + j) * NB);
    for (; k < k_pad; k++) m.off[k] = 0; /* padding taps: read valid memory, results dropped */
    size_t img_x = (size_t)s->Ci * s->H * s->W;
    clear_xb_border(s, m.xb, NB);
    memset(m.dyb + (size_t)s->Co * dstride, 0, sizeof(float) * (size_t)(co_pad - s->Co) * dstride); /* channels past Co stay zero */
    /* no zeroing of the accumulators: the first block stores its sums, the
     * later ones add theirs (see nbww_body) */
    memset(m.zeros, 0, sizeof(float) * plane_floats(s));
    if (db && first)
        for (int co = 0; co < s->Co; co++) db[co] = 0.0f;
    dy_share *sh = share_of(dy);
    const dy_share *take = sh && sh->full && sh->NB == NB && co_pad == s->Co && !db ? sh : NULL;
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        to_blocked(isa, m.xb, x + n0 * img_x, img_x, nb, s->Ci, s->H, s->W, s->ph, s->pw, m.zeros, pro);
        const float *dyb = m.dyb;
        size_t ds = dstride, drow = (size_t)s->Wo * NB;
        if (take && take->g == dy->up.g + n0 * pooled_img(s) && take->argmax == dy->up.argmax + n0 * pooled_img(s) &&
            take->nb == nb)
            dyb = take->dy, ds = take->dstride, drow = take->drow; /* backward-data's block: already scattered */
        else
            dy_to_blocked(isa, m.dyb, dstride, dy, n0, nb, s, 0, m.zeros, m.gb, m.ib);
        if (db) /* the bias gradient from the blocked dy while it is in cache (idle lanes are 0) */
            for (int co = 0; co < s->Co; co++) db[co] += (float)isa->sum(dyb + co * ds, ds);
        for (int co0 = 0; co0 < co_pad; co0 += ct)
            for (int k0 = 0; k0 < k_pad; k0 += tt)
                cfg->fn(dyb + co0 * ds, ds, drow, m.xb, m.off + k0, s->Ho, s->Wo, (size_t)s->sh * Wp * NB,
                        (size_t)s->sw * NB, m.accv + ((size_t)co0 * k_pad + (size_t)k0 * ct) * NB, first && n0 == 0);
    }
    if (sh) sh->full = 0;
    if (!last) return;
    /* accv tile (co0, k0) holds ct x tt vectors, channel-major; each vector's
     * lanes summed in double, compacted in place, then placed in dw */
    float *sums = m.accv;
    k_lane_sums(m.accv, (int64_t)co_pad * k_pad, NB, sums);
    for (int co0 = 0; co0 < co_pad; co0 += ct)
        for (int k0 = 0; k0 < k_pad; k0 += tt)
            for (int c = 0; c < ct && co0 + c < s->Co; c++)
                for (int u = 0; u < tt && k0 + u < K; u++)
                    dw[(size_t)(co0 + c) * K + k0 + u] = sums[(size_t)co0 * k_pad + (size_t)k0 * ct + (size_t)(c * tt + u)];
}

void k_conv_direct_bwd_weight_part(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                                   float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    dy_source src = {.dy = dy};
    bwd_weight_part(s, dw, db, x, &src, scratch, acc, first, last, &pro);
}

void k_conv_direct_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy,
                                           float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    dy_source src = {.up = dy};
    bwd_weight_part(s, dw, NULL, x, &src, scratch, acc, first, last, &pro);
}

void k_conv_direct_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                              float *scratch) {
    k_conv_direct_bwd_weight_part(s, dw, db, x, dy, scratch, NULL, 1, 1, K_CONV_NO_PROLOGUE);
}

/* ---- backward data ------------------------------------------------------------------ */

/* fewer than 8 accumulators cannot hide the FMA latency */
double k_conv_direct_bwd_cost(const k_conv_shape *s, int ct) {
    return (double)div_up(s->Ci, ct) * (ct > 8 ? ct : 8);
}

static const nbwd_cfg *pick_bwd(const nisa *isa, const k_conv_shape *s) {
    int forced = g_forced_tile[K_CONV_BWD_DATA];
    if (forced >= 0 && forced < isa->nbwd) return &isa->bwd[forced];
    const nbwd_cfg *best = &isa->bwd[0];
    double best_cost = 0;
    for (int i = 0; i < isa->nbwd; i++) {
        const nbwd_cfg *c = &isa->bwd[i];
        double cost = k_conv_direct_bwd_cost(s, c->ct);
        if (i == 0 || cost < best_cost || (cost == best_cost && c->ct > best->ct)) best = c, best_cost = cost;
    }
    return best;
}

/* The row path's column classes. For a pixel tile, the taps j whose dy
 * column exists for some pixel of the tile form one range [jlo, jlo + jn);
 * the others would only multiply the zero padding, so the tile's k list
 * leaves them out. Tiles with the same range (consecutive ones: both ends
 * grow with the tile's position) share a packing of the weights for just
 * those taps, i outermost so a row's existing dy rows stay one run of k:
 *   wpk[ci tile][i][j - jlo][co][c],  off[(i*jn + j - jlo)*Co + co].
 * Along a row the ranges only grow at one end or the other, so their jn add
 * up to at most kw*kw (kw classes widening, then kw narrowing) in at most
 * 2*kw + 1 classes: the carve's bounds. */
typedef struct {
    int jlo, jn;   /* its taps */
    int q0, nq;    /* its pixel tiles: q0 .. q0+nq-1, the tile at q*pt */
    float *wpk;
    int32_t *off;
} col_class;

typedef struct {
    float *dyb, *dxb, *wpk, *zeros, *sink, *gb, *ib;
    int32_t *rows, *cols, *off;
    col_class *classes;
} bwd_mem;

/* Column padding of dy in the row path: dx column w reads dy columns
 * w + pw - j for taps j, i.e. padded columns w + kw-1-j with P = kw-1-pw. */
static int bwd_rows_pad(const k_conv_shape *s) { return s->kw - 1 - s->pw; }
static int use_bwd_rows(const k_conv_shape *s);

/* taps packed: the row path's column classes have at most kw*kw column taps per row tap */
static size_t bwd_packed_taps(const k_conv_shape *s) {
    return (size_t)s->kh * s->kw * (use_bwd_rows(s) ? s->kw : 1);
}
/* the packed weights of either path, for any tile choice */
static size_t bwd_wpk_floats(const k_conv_shape *s) {
    return bwd_packed_taps(s) * s->Co * (s->Ci + CT_MAX);
}

/* the blocked dy of either path: the row path's padded rows plus slack for
 * a partial pixel tile reading past the last row (also k_unpool2.share's) */
static size_t bwd_dyb_floats(const k_conv_shape *s) {
    size_t P = bwd_rows_pad(s) > 0 ? (size_t)bwd_rows_pad(s) : 0;
    return ((size_t)s->Co * (s->Ho * (s->Wo + 2 * P) + 1) + PT_MAX + 1) * NB_MAX;
}
/* dyb (above); dxb with whole pixel tiles; the row path's weights and
 * offsets for every column class */
static size_t bwd_carve(const k_conv_shape *s, float *p, bwd_mem *m) {
    size_t total = 0;
    int rows = use_bwd_rows(s);
    size_t taps = bwd_packed_taps(s), nclass = 2 * (size_t)s->kw + 1;
    p = align_scratch(p, &total);
    m->dyb = carve(&p, &total, bwd_dyb_floats(s));
    m->dxb = carve(&p, &total, (size_t)(s->Ci + CT_MAX) * s->H * (s->W + PT_MAX) * NB_MAX);
    m->wpk = carve(&p, &total, bwd_wpk_floats(s));
    m->zeros = carve(&p, &total, plane_floats(s));
    m->sink = carve(&p, &total, plane_floats(s));
    m->gb = carve(&p, &total, unpool_plane_floats(s));
    m->ib = carve(&p, &total, unpool_plane_floats(s));
    m->rows = (int32_t *)carve(&p, &total, 2 * (size_t)s->kh);
    m->cols = (int32_t *)carve(&p, &total, 2 * (size_t)s->kw);
    m->off = (int32_t *)carve(&p, &total, rows ? taps * s->Co : 0);
    m->classes = (col_class *)carve(&p, &total, rows ? nclass * (sizeof(col_class) + 3) / 4 : 0);
    return total;
}

int k_conv_taps_for(int h, int k, int stride, int pad, int out, int32_t *list) {
    int n = 0;
    for (int t = 0; t < k; t++) {
        int u = h + pad - t;
        if (u < 0 || u % stride) continue;
        if (u / stride >= out) continue;
        list[2 * n] = t;
        list[2 * n + 1] = u / stride;
        n++;
    }
    return n;
}

/* Backward-data's weights for the column taps [jlo, jlo + jn):
 *   wpk[tile][i][j - jlo][co][c] = w[co][tile*ct + c][i][j], zero past Ci.
 * The one-pixel path packs every tap (0, kw); the row path one column class's.
 * w is read in order (each (co, ci)'s taps), the lanes past Ci zeroed first:
 * the engine packs once per step (k_conv_packed), but callers without a buffer
 * pack on every call, and there the index-order loop was a visible share of
 * a 16-image call on ResNet-20's 64-channel 8x8 layer (perf; the layer is
 * kernel_bench's "r20 3x3 64->64 8x8"). */
static void pack_bwd_taps(const k_conv_shape *s, int ct, const float *w, int jlo, int jn, float *wpk) {
    int kpi = jn * s->Co, Kc = s->kh * kpi; /* k per dy row, k in all */
    if (s->Ci % ct) memset(wpk, 0, sizeof(float) * (size_t)div_up(s->Ci, ct) * Kc * ct);
    for (int co = 0; co < s->Co; co++)
        for (int ci = 0; ci < s->Ci; ci++) {
            const float *src = w + ((size_t)co * s->Ci + ci) * s->kh * s->kw + jlo;
            float *dst = wpk + ((size_t)(ci / ct) * Kc + co) * ct + ci % ct;
            for (int i = 0; i < s->kh; i++)
                for (int jj = 0; jj < jn; jj++) dst[((size_t)i * kpi + (size_t)jj * s->Co) * ct] = src[i * s->kw + jj];
        }
}

/* The row path computes the padded columns' multiplies where a pixel tile
 * straddles an edge (its k list is the union of its pixels' taps) and the
 * pixels of a partial last tile: W*kw per row at worst against the (j, ow)
 * pairs that exist. The fwd tiles run much faster than the one-pixel kernel
 * (kernel_bench's direct fwd and bwd_data figures on the same shapes), so
 * the row path pays while it wastes less than a quarter: wide_cnn's conv2
 * (26 columns from 24, 3 taps: 78 against 72 at worst, 74 with its 2-pixel
 * tiles) and 3x3 pad-1 layers take it. The seed CNN's conv2 (12 from 8, 5
 * taps: 60 against 40 at worst) does not: with column classes its best
 * tile, 5 channels x 4 pixels, still computes 52, and ran slower than the
 * one-pixel path when forced (kernel_bench's "seed conv2" bwd_data). A
 * threshold measured on one CPU kind; issue #55 replaces it with a choice
 * measured at compile time. */
static int use_bwd_rows(const k_conv_shape *s) {
    if (s->sh != 1 || s->sw != 1 || bwd_rows_pad(s) < 0) return 0;
    long valid = 0;
    for (int j = 0; j < s->kw; j++) { /* columns w with 0 <= w + pw - j < Wo */
        int lo = j - s->pw > 0 ? j - s->pw : 0, hi = s->Wo + j - s->pw < s->W ? s->Wo + j - s->pw : s->W;
        valid += hi > lo ? hi - lo : 0;
    }
    return (long)s->W * s->kw * 4 <= valid * 5;
}

/* The taps j that reach a real dy column from some pixel of the tile
 * [w0, w0 + pt) (pixels past W do not count): w + pw - Wo < j <= w + pw. */
static void tile_taps(const k_conv_shape *s, int w0, int pt, int *jlo, int *jn) {
    int wl = (w0 + pt < s->W ? w0 + pt : s->W) - 1, lo = w0 + s->pw - s->Wo + 1, hi = wl + s->pw;
    lo = lo < 0 ? 0 : lo > s->kw ? s->kw : lo;
    hi = hi > s->kw - 1 ? s->kw - 1 : hi < -1 ? -1 : hi;
    *jlo = lo;
    *jn = hi >= lo ? hi - lo + 1 : 0;
}

/* The fwd tile for dx: pick_fwd's model, counting for each pixel tile only
 * the taps it runs (the edges' shorter k lists, a partial tile's whole cost). */
static double bwd_rows_cost(const k_conv_shape *s, int ct, int pt) {
    long taps = 0;
    for (int w0 = 0; w0 < s->W; w0 += pt) {
        int jlo, jn;
        tile_taps(s, w0, pt, &jlo, &jn);
        taps += jn;
    }
    return (double)div_up(s->Ci, ct) * fwd_tile_cost(ct, pt) * (double)taps;
}

/* The column classes of a row's pixel tiles and their offsets, their
 * weights packed when `pack` (else they are in place from an earlier call);
 * returns how many. */
static int build_col_classes(const k_conv_shape *s, int ct, int pt, int NB, int Wp, const float *w, int pack,
                             const bwd_mem *m) {
    int n = 0, ci_tiles = div_up(s->Ci, ct);
    float *wpk = m->wpk;
    int32_t *off = m->off;
    for (int q = 0; q * pt < s->W; q++) {
        int jlo, jn;
        tile_taps(s, q * pt, pt, &jlo, &jn);
        if (n == 0 || m->classes[n - 1].jlo != jlo || m->classes[n - 1].jn != jn) {
            int kpi = jn * s->Co, Kc = s->kh * kpi; /* k per dy row, k in all */
            assert(n < 2 * s->kw + 1 && (size_t)(off - m->off) + (size_t)Kc <= bwd_packed_taps(s) * s->Co);
            m->classes[n++] = (col_class){jlo, jn, q, 0, wpk, off};
            if (pack) pack_bwd_taps(s, ct, w, jlo, jn, wpk);
            for (int i = 0; i < s->kh; i++)
                for (int jj = 0; jj < jn; jj++)
                    for (int co = 0; co < s->Co; co++)
                        off[(size_t)i * kpi + (size_t)jj * s->Co + co] =
                            (int32_t)((((long)co * s->Ho + s->ph - i) * Wp + s->kw - 1 - (jlo + jj)) * NB);
            wpk += (size_t)ci_tiles * Kc * ct;
            off += Kc;
        }
        m->classes[n - 1].nq++;
    }
    return n;
}

/* Stride 1: dx row h, pixels [w0, w0+pt) x ct input channels, is the fwd tile
 * over dy (columns zero-padded by P each side) with the weights transposed,
 * over K = (the taps i whose dy row exists) x (the tile's taps j) x Co. */
static void bwd_data_rows(const nisa *isa, const k_conv_shape *s, float *dx, const dy_source *dy, const float *w,
                          int pack, const float *mask, const bwd_mem *m) {
    const nfwd_cfg *cfg = pick_fwd_by(isa, s, bwd_rows_cost);
    int NB = isa->vl, ct = cfg->ct, pt = cfg->pt, P = bwd_rows_pad(s), Wp = s->Wo + 2 * P;
    int ci_tiles = div_up(s->Ci, ct), w_pad = div_up(s->W, pt) * pt;
    size_t ystride = (size_t)s->H * w_pad * NB;
    int nclass = build_col_classes(s, ct, pt, NB, Wp, w, pack, m);
    memset(m->dyb, 0, sizeof(float) * ((size_t)s->Co * s->Ho * Wp + PT_MAX + 1) * NB); /* the padding columns */
    size_t img_x = (size_t)s->Ci * s->H * s->W;
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        dy_to_blocked(isa, m->dyb, (size_t)s->Ho * Wp * NB, dy, n0, nb, s, P, m->zeros, m->gb, m->ib);
        for (int h = 0; h < s->H; h++) {
            int ilo = h + s->ph - s->Ho + 1 > 0 ? h + s->ph - s->Ho + 1 : 0, ihi = h + s->ph < s->kh - 1 ? h + s->ph : s->kh - 1;
            int ni = ihi >= ilo ? ihi - ilo + 1 : 0;
            ilo = ni ? ilo : 0;
            for (int t = 0; t < ci_tiles; t++)
                for (const col_class *c = m->classes; c < m->classes + nclass; c++) {
                    int kpi = c->jn * s->Co;
                    const int32_t *off = c->off + (size_t)ilo * kpi;
                    const float *wk = c->wpk + ((size_t)t * s->kh * kpi + (size_t)ilo * kpi) * ct;
                    for (int q = c->q0; q < c->q0 + c->nq; q++)
                        cfg->fn(m->dyb + ((size_t)h * Wp + (size_t)q * pt) * NB, off, ni * kpi, wk, (size_t)NB,
                                m->dxb + (((size_t)t * ct * s->H + h) * w_pad + (size_t)q * pt) * NB, ystride);
                }
        }
        from_blocked(isa, dx + n0 * img_x, img_x, m->dxb, nb, s->Ci, s->H, s->W, w_pad, NULL, 0,
                     mask ? mask + n0 * img_x : NULL, m->sink);
    }
    share_last_block(dy, s, NB, m->dyb + (size_t)P * NB, (size_t)s->Ho * Wp * NB, (size_t)Wp * NB);
}

/* mask non-NULL: the ReLU's backward as dx leaves the blocked layout */
static void bwd_data(const k_conv_shape *s, float *dx, const dy_source *dy, const float *w, const float *mask,
                     float *scratch, k_conv_packed pk) {
    const nisa *isa = nisa_now();
    bwd_mem m;
    bwd_carve(s, scratch, &m);
    if (pk.buf) m.wpk = pk.buf;
    dy_share *sh = share_of(dy);
    if (sh) { /* the blocks are built in the share, and the last stays there */
        sh->full = 0;
        m.dyb = dy->up.share + SHARE_HEAD_FLOATS;
    }
    memset(m.zeros, 0, sizeof(float) * plane_floats(s));
    if (use_bwd_rows(s)) {
        bwd_data_rows(isa, s, dx, dy, w, pk.fresh, mask, &m);
        return;
    }
    const nbwd_cfg *cfg = pick_bwd(isa, s);
    int NB = isa->vl, ct = cfg->ct, ci_tiles = div_up(s->Ci, ct), khw = s->kh * s->kw;
    size_t dstride = k_conv_direct_spread_stride((size_t)s->Ho * s->Wo, NB), xstride = (size_t)s->H * s->W * NB;
    if (pk.fresh) pack_bwd_taps(s, ct, w, 0, s->kw, m.wpk);
    size_t img_x = (size_t)s->Ci * s->H * s->W;
    for (int n0 = 0; n0 < s->N; n0 += NB) {
        int nb = s->N - n0 < NB ? s->N - n0 : NB;
        dy_to_blocked(isa, m.dyb, dstride, dy, n0, nb, s, 0, m.zeros, m.gb, m.ib);
        for (int h = 0; h < s->H; h++) {
            int nr = k_conv_taps_for(h, s->kh, s->sh, s->ph, s->Ho, m.rows);
            for (int ww = 0; ww < s->W; ww++) {
                int nc = k_conv_taps_for(ww, s->kw, s->sw, s->pw, s->Wo, m.cols);
                for (int t = 0; t < ci_tiles; t++)
                    cfg->fn(m.dyb, dstride, s->Co, s->Wo, m.rows, nr, m.cols, nc, m.wpk + (size_t)t * khw * s->Co * ct,
                            s->kw, m.dxb + (((size_t)t * ct * s->H + h) * s->W + ww) * NB, xstride);
            }
        }
        from_blocked(isa, dx + n0 * img_x, img_x, m.dxb, nb, s->Ci, s->H, s->W, s->W, NULL, 0,
                     mask ? mask + n0 * img_x : NULL, m.sink);
    }
    share_last_block(dy, s, NB, m.dyb, dstride, (size_t)s->Wo * NB);
}

void k_conv_direct_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch) {
    dy_source src = {.dy = dy};
    bwd_data(s, dx, &src, w, NULL, scratch, K_CONV_PACK_PER_CALL);
}

void k_conv_direct_bwd_data_masked(const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up, const float *w,
                                   const float *mask, float *scratch, k_conv_packed pk) {
    dy_source src = {.dy = dy, .up = up};
    bwd_data(s, dx, &src, w, mask, scratch, pk);
}

size_t k_conv_direct_unpool2_share_floats(const k_conv_shape *s) {
    int ct = pick_bww(nisa_now(), s)->ct;
    return s->Co % ct ? 0 : SHARE_HEAD_FLOATS + bwd_dyb_floats(s);
}

size_t k_conv_direct_packed_floats(const k_conv_shape *s, int pass) {
    return pass == K_CONV_FWD ? fwd_wpk_floats(s) : pass == K_CONV_BWD_DATA ? bwd_wpk_floats(s) : 0;
}

size_t k_conv_direct_scratch(const k_conv_shape *s) {
    fwd_mem f;
    bww_mem g;
    bwd_mem d;
    size_t a = fwd_carve(s, NULL, &f), b = bww_carve(s, NULL, &g), c = bwd_carve(s, NULL, &d);
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
}
