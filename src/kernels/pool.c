/* pool.c — 2-D max and average pooling, as F.max_pool2d / F.avg_pool2d (floor mode).
 *
 * Is: shape inference, max pool forward (with the argmax the backward needs) and
 * backward, average pool forward/backward with count_include_pad=True, and the
 * naive max pool forward / backward the tests hold the fast ones against.
 * Is not: adaptive or ceil-mode pooling, or dilation.
 *
 * Max pool semantics follow PyTorch: padding acts as -inf; the first maximum in
 * row-major window order wins a tie; a NaN is taken whenever met, so it propagates.
 * The fast paths are the non-overlapping windows of these models (kernel ==
 * stride, no padding): 2x2 runs 4 windows per step (16 with AVX-512 on rows of 8+
 * outputs), and the backward writes each window whole (dy at the argmax, 0
 * elsewhere) instead of zeroing dx first and scattering, which halves the
 * memory traffic. The compares are branch-free (selects): the first version,
 * scalar with a branch per compare, spent most of its time on mispredicted
 * compares. tests/bench/kernel_bench.c's maxpool rows time fwd and bwd beside
 * the naive fwd_ref on the models' shapes.
 */
#include "kernels/bf16.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "kernels/vec4.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define XT_POOL_X86 1

#include "kernels/bf16_simd.h"
#endif

int k_pool_shape_infer(k_pool_shape *s) {
    if (s->N <= 0 || s->C <= 0 || s->H <= 0 || s->W <= 0 || s->kh <= 0 || s->kw <= 0 || s->sh <= 0 || s->sw <= 0 ||
        s->ph < 0 || s->pw < 0)
        return -1;
    /* PyTorch: "pad should be at most half of effective kernel size" (so no window is all padding) */
    if (2 * s->ph > s->kh || 2 * s->pw > s->kw) return -1;
    int eh = s->H + 2 * s->ph - s->kh, ew = s->W + 2 * s->pw - s->kw;
    if (eh < 0 || ew < 0) return -1;
    s->Ho = eh / s->sh + 1;
    s->Wo = ew / s->sw + 1;
    return 0;
}

/* One output of a max pool over plane x (H x W): the window's max and its
 * cell in the window, i*kw + j (padding cells count). As PyTorch: start from
 * -inf at the window's first cell in the plane; a later cell wins if strictly
 * greater or NaN (so NaN propagates). */
static inline void max_window(const k_pool_shape *s, const float *x, int oh, int ow, float *out, uint8_t *arg) {
    int h0 = oh * s->sh - s->ph, w0 = ow * s->sw - s->pw;
    int hs = h0 < 0 ? 0 : h0, ws = w0 < 0 ? 0 : w0;
    int he = h0 + s->kh > s->H ? s->H : h0 + s->kh, we = w0 + s->kw > s->W ? s->W : w0 + s->kw;
    float best = -INFINITY;
    int bi = (hs - h0) * s->kw + (ws - w0);
    for (int h = hs; h < he; h++)
        for (int w = ws; w < we; w++) {
            float v = x[h * s->W + w];
            if (v > best || isnan(v)) {
                best = v;
                bi = (h - h0) * s->kw + (w - w0);
            }
        }
    *out = best;
    *arg = (uint8_t)bi;
}

/* The plane index of window (oh, ow)'s cell `cell` (k_maxpool2d_fwd's argmax) */
static inline size_t cell_index(const k_pool_shape *s, int oh, int ow, int cell) {
    return (size_t)(oh * s->sh - s->ph + cell / s->kw) * s->W + (size_t)(ow * s->sw - s->pw + cell % s->kw);
}

void k_maxpool2d_fwd_ref(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++)
        for (int oh = 0; oh < s->Ho; oh++)
            for (int ow = 0; ow < s->Wo; ow++) {
                size_t o = nc * out_plane + (size_t)oh * s->Wo + ow;
                max_window(s, x + nc * in_plane, oh, ow, &y[o], &argmax[o]);
            }
}

static int is_2x2(const k_pool_shape *s) {
    return s->kh == 2 && s->kw == 2 && s->sh == 2 && s->sw == 2 && s->ph == 0 && s->pw == 0;
}

/* Candidate v (window cell idx) against the running (m, a): the ref's rule, lane-wise. */
#define TAKE4(v, idx)                                    \
    do {                                                 \
        v4i t_ = ((v) > m) | ((v) != (v));               \
        m = v4_select(t_, (v), m);                       \
        a = v4i_select(t_, (idx), a);                    \
    } while (0)

/* 2x2 stride 2, no padding; four outputs per step: the even and odd columns of
 * the two input rows are split out of eight consecutive floats. */
static void maxpool_2x2(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    int W = s->W, Wo = s->Wo, W4 = Wo & ~3;
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        const float *xp = x + nc * in_plane;
        for (int oh = 0; oh < s->Ho; oh++) {
            const float *r0 = xp + (size_t)(2 * oh) * W, *r1 = r0 + W;
            float *yr = y + nc * out_plane + (size_t)oh * Wo;
            uint8_t *ar = argmax + nc * out_plane + (size_t)oh * Wo;
            for (int ow = 0; ow < W4; ow += 4) {
                v4f p0 = v4_load(r0 + 2 * ow), p1 = v4_load(r0 + 2 * ow + 4);
                v4f q0 = v4_load(r1 + 2 * ow), q1 = v4_load(r1 + 2 * ow + 4);
                v4f m = __builtin_shufflevector(p0, p1, 0, 2, 4, 6);
                v4f b = __builtin_shufflevector(p0, p1, 1, 3, 5, 7);
                v4f c = __builtin_shufflevector(q0, q1, 0, 2, 4, 6);
                v4f d = __builtin_shufflevector(q0, q1, 1, 3, 5, 7);
                v4i a = v4i_splat(0);
                TAKE4(b, v4i_splat(1));
                TAKE4(c, v4i_splat(2));
                TAKE4(d, v4i_splat(3));
                v4_store(yr + ow, m);
                for (int k = 0; k < 4; k++) ar[ow + k] = (uint8_t)a[k];
            }
            for (int ow = W4; ow < Wo; ow++) {
                float m = r0[2 * ow];
                int a = 0;
                float cand[3] = {r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
                for (int k = 0; k < 3; k++)
                    if (cand[k] > m || isnan(cand[k])) m = cand[k], a = k + 1;
                yr[ow] = m;
                ar[ow] = (uint8_t)a;
            }
        }
    }
}
#undef TAKE4

#ifdef XT_POOL_X86
/* AVX-512 2x2: up to 16 outputs per step, a row's tail under a lane mask (the
 * models' pooled rows are 12 and 4 wide, narrower than one vector). Even and
 * odd input columns are split by two-source permutes; compares write k-masks. */
#define XT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/* the first out outputs of a step: its lane mask, and the masks of the 2*out input floats */
XT_AVX512 static inline void step_masks(int out, __mmask16 *om, __mmask16 *lo, __mmask16 *hi) {
    *om = (__mmask16)((1u << out) - 1);
    int in = 2 * out;
    *lo = (__mmask16)(in >= 16 ? 0xFFFFu : (1u << in) - 1);
    *hi = (__mmask16)(in >= 32 ? 0xFFFFu : in > 16 ? (1u << (in - 16)) - 1 : 0);
}

/* Masked loads cost more than plain ones here. Compared on wide_cnn's
 * 128x64x24x24 backward (rows of 12 pooled values, under a 12-lane mask;
 * kernel_bench's "maxpool wide" row): every load and store masked was the
 * slowest, the mask hoisted out of the loop better, plain loads best (the
 * ones reaching past a row read the next row, and those lanes are never
 * stored). So a step loads whole vectors unless it is the call's last row,
 * whose lanes past the end may lie outside the buffer; stores with every
 * lane on are plain, and a store's lanes past its row are left to the mask
 * (plain, they would write the next row before its own step reads it in
 * place). */
XT_AVX512 static inline __m512 load_under(const float *p, __mmask16 m, int last) {
    return last && m != 0xFFFFu ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
}
XT_AVX512 static inline void store_under(float *p, __mmask16 m, __m512 v) {
    if (m == 0xFFFFu)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, m, v);
}

XT_AVX512 static void maxpool_2x2_avx512(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    int W = s->W, Wo = s->Wo;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        const float *xp = x + nc * in_plane;
        for (int oh = 0; oh < s->Ho; oh++) {
            const float *r0 = xp + (size_t)(2 * oh) * W, *r1 = r0 + W;
            float *yr = y + nc * out_plane + (size_t)oh * Wo;
            uint8_t *ar = argmax + nc * out_plane + (size_t)oh * Wo;
            /* lanes past the row read the next one and are dropped; the
             * call's last row stays inside under the mask */
            int last = nc + 1 == (size_t)s->N * s->C && oh + 1 == s->Ho;
            for (int ow = 0; ow < Wo; ow += 16) {
                __mmask16 om, lo, hi;
                step_masks(Wo - ow < 16 ? Wo - ow : 16, &om, &lo, &hi);
                __m512 p0 = load_under(r0 + 2 * ow, lo, last), p1 = load_under(r0 + 2 * ow + 16, hi, last);
                __m512 q0 = load_under(r1 + 2 * ow, lo, last), q1 = load_under(r1 + 2 * ow + 16, hi, last);
                __m512 m = _mm512_permutex2var_ps(p0, even, p1);
                __m512i a = _mm512_setzero_si512();
                __m512 c[3] = {_mm512_permutex2var_ps(p0, odd, p1), _mm512_permutex2var_ps(q0, even, q1),
                               _mm512_permutex2var_ps(q0, odd, q1)};
                for (int k = 0; k < 3; k++) { /* strictly greater, or NaN: as the ref */
                    __mmask16 t = _mm512_cmp_ps_mask(c[k], m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c[k], c[k], _CMP_UNORD_Q);
                    m = _mm512_mask_mov_ps(m, t, c[k]);
                    a = _mm512_mask_mov_epi32(a, t, _mm512_set1_epi32(k + 1));
                }
                store_under(yr + ow, om, m);
                _mm512_mask_cvtepi32_storeu_epi8(ar + ow, om, a);
            }
        }
    }
}

/* bf16 stores (a backward made in bf16, pass_bf16_out.c): k_bf16_from_f32's
 * rounding (bf16_simd.h), then the low halves packed */
XT_AVX512 static inline __m256i to_bf16(__m512 v) { return _mm512_cvtepi32_epi16(k_bf16_lanes(v)); }
XT_AVX512 static inline void store_under_bf16(k_bf16 *p, __mmask16 m, __m512 v) {
    if (m == 0xFFFFu)
        _mm256_storeu_si256((__m256i *)p, to_bf16(v));
    else
        _mm256_mask_storeu_epi16(p, m, to_bf16(v));
}

/* One body for both output types (BF16 a constant once inlined): dx is
 * float, or k_bf16 rounded from the same floats. */
XT_AVX512 static inline __attribute__((always_inline)) void maxpool_2x2_bwd_body(const int BF16, const k_pool_shape *s,
                                                                                void *dx, const float *dy,
                                                                                const uint8_t *argmax) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo, esz = BF16 ? 2 : 4;
    int W = s->W, Wo = s->Wo;
    /* interleave p and q (lanes 16+ of the permute index select q) */
    const __m512i ilo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ihi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512i c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2), c3 = _mm512_set1_epi32(3);
#define STORE_ROW(at, m, v) (BF16 ? store_under_bf16((k_bf16 *)(void *)(at), m, v) : store_under((float *)(void *)(at), m, v))
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        char *xp = (char *)dx + nc * in_plane * esz;
        for (int oh = 0; oh < s->Ho; oh++) {
            char *r0 = xp + (size_t)(2 * oh) * W * esz, *r1 = r0 + (size_t)W * esz;
            const float *gr = dy + nc * out_plane + (size_t)oh * Wo;
            const uint8_t *ar = argmax + nc * out_plane + (size_t)oh * Wo;
            /* lanes past the row read the next one; their windows land in
             * store lanes that are off */
            int last = nc + 1 == (size_t)s->N * s->C && oh + 1 == s->Ho;
            for (int ow = 0; ow < Wo; ow += 16) {
                __mmask16 om, lo, hi;
                step_masks(Wo - ow < 16 ? Wo - ow : 16, &om, &lo, &hi);
                __m512 g = load_under(gr + ow, om, last);
                __m512i a = _mm512_cvtepu8_epi32(last && om != 0xFFFFu ? _mm_maskz_loadu_epi8(om, ar + ow)
                                                                       : _mm_loadu_si128((const __m128i *)(ar + ow)));
                __m512 p = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(a, _mm512_setzero_si512()), g);
                __m512 q = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(a, c1), g);
                __m512 u = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(a, c2), g);
                __m512 v = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(a, c3), g);
                STORE_ROW(r0 + 2 * ow * esz, lo, _mm512_permutex2var_ps(p, ilo, q));
                STORE_ROW(r0 + (2 * ow + 16) * esz, hi, _mm512_permutex2var_ps(p, ihi, q));
                STORE_ROW(r1 + 2 * ow * esz, lo, _mm512_permutex2var_ps(u, ilo, v));
                STORE_ROW(r1 + (2 * ow + 16) * esz, hi, _mm512_permutex2var_ps(u, ihi, v));
            }
            if (W & 1) { /* the column no window reaches */
                memset(r0 + (size_t)(W - 1) * esz, 0, esz);
                memset(r1 + (size_t)(W - 1) * esz, 0, esz);
            }
        }
        if (s->H & 1) memset(xp + (size_t)(s->H - 1) * W * esz, 0, esz * (size_t)W); /* +0 in either type */
    }
#undef STORE_ROW
}
XT_AVX512 static void maxpool_2x2_bwd_avx512(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax) {
    maxpool_2x2_bwd_body(0, s, dx, dy, argmax);
}
XT_AVX512 static void maxpool_2x2_bwd_bf16_avx512(const k_pool_shape *s, k_bf16 *dx, const float *dy,
                                                   const uint8_t *argmax) {
    maxpool_2x2_bwd_body(1, s, dx, dy, argmax);
}
#undef XT_AVX512

/* Rows of 8+ outputs: below that the 4-lane loop does less work per row than a
 * mostly-masked 16-lane step (the seed CNN's pool2, 4 outputs wide, ran faster
 * on the 4-lane loop: kernel_bench's "maxpool seed2" row). A threshold
 * measured on one CPU kind; issue #55 replaces it with a choice measured at
 * compile time. */
static int use_avx512(const k_pool_shape *s) {
    return s->Wo >= 8 && k_simd_level() == K_SIMD_AVX512;
}
#endif

void k_maxpool2d_fwd(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x) {
#ifdef XT_POOL_X86
    if (is_2x2(s) && use_avx512(s)) {
        maxpool_2x2_avx512(s, y, argmax, x);
        return;
    }
#endif
    if (is_2x2(s))
        maxpool_2x2(s, y, argmax, x);
    else
        k_maxpool2d_fwd_ref(s, y, argmax, x);
}

void k_maxpool2d_bwd_ref(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    memset(dx, 0, sizeof(float) * in_plane * s->N * s->C);
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++)
        for (int oh = 0; oh < s->Ho; oh++)
            for (int ow = 0; ow < s->Wo; ow++) {
                size_t o = nc * out_plane + (size_t)oh * s->Wo + ow;
                dx[nc * in_plane + cell_index(s, oh, ow, argmax[o])] += dy[o];
            }
}

/* 2x2 backward, written window by window (every input cell exactly once, no
 * zeroing pass): four windows per step, dy where the argmax points, else 0. */
static void maxpool_2x2_bwd(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    int W = s->W, Wo = s->Wo, W4 = Wo & ~3;
    v4f zero = v4_splat(0.0f);
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        float *xp = dx + nc * in_plane;
        for (int oh = 0; oh < s->Ho; oh++) {
            float *r0 = xp + (size_t)(2 * oh) * W, *r1 = r0 + W;
            const float *gr = dy + nc * out_plane + (size_t)oh * Wo;
            const uint8_t *ar = argmax + nc * out_plane + (size_t)oh * Wo;
            for (int ow = 0; ow < W4; ow += 4) {
                v4f g = v4_load(gr + ow);
                v4i a = {ar[ow], ar[ow + 1], ar[ow + 2], ar[ow + 3]};
                v4f p = v4_select(a == 0, g, zero), q = v4_select(a == 1, g, zero);
                v4f u = v4_select(a == 2, g, zero), v = v4_select(a == 3, g, zero);
                v4_store(r0 + 2 * ow, __builtin_shufflevector(p, q, 0, 4, 1, 5));
                v4_store(r0 + 2 * ow + 4, __builtin_shufflevector(p, q, 2, 6, 3, 7));
                v4_store(r1 + 2 * ow, __builtin_shufflevector(u, v, 0, 4, 1, 5));
                v4_store(r1 + 2 * ow + 4, __builtin_shufflevector(u, v, 2, 6, 3, 7));
            }
            for (int ow = W4; ow < Wo; ow++) {
                int a = ar[ow];
                float g = gr[ow];
                r0[2 * ow] = a == 0 ? g : 0.0f;
                r0[2 * ow + 1] = a == 1 ? g : 0.0f;
                r1[2 * ow] = a == 2 ? g : 0.0f;
                r1[2 * ow + 1] = a == 3 ? g : 0.0f;
            }
            if (W & 1) r0[W - 1] = r1[W - 1] = 0.0f; /* the column no window reaches */
        }
        if (s->H & 1) memset(xp + (size_t)(s->H - 1) * W, 0, sizeof(float) * (size_t)W);
    }
}

/* Any other tiling (kernel == stride, no padding): each input cell is in at most
 * one window, so it is written exactly once. */
static void maxpool_bwd_tiled(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    int W = s->W, covered_h = s->Ho * s->kh, covered_w = s->Wo * s->kw;
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        float *xp = dx + nc * in_plane;
        const float *g = dy + nc * out_plane;
        const uint8_t *a = argmax + nc * out_plane;
        for (int oh = 0; oh < s->Ho; oh++) {
            for (int i = 0; i < s->kh; i++) {
                int h = oh * s->kh + i;
                float *row = xp + (size_t)h * W;
                for (int ow = 0; ow < s->Wo; ow++) {
                    int am = a[oh * s->Wo + ow] - i * s->kw; /* the kept column when the cell is in row i */
                    float gv = g[oh * s->Wo + ow];
                    for (int j = 0; j < s->kw; j++) row[ow * s->kw + j] = j == am ? gv : 0.0f;
                }
                for (int w = covered_w; w < W; w++) row[w] = 0.0f; /* columns no window reaches */
            }
        }
        if (covered_h < s->H) memset(xp + (size_t)covered_h * W, 0, sizeof(float) * (size_t)(s->H - covered_h) * W);
    }
}

void k_maxpool2d_bwd(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax) {
#ifdef XT_POOL_X86
    if (is_2x2(s) && use_avx512(s)) {
        maxpool_2x2_bwd_avx512(s, dx, dy, argmax);
        return;
    }
#endif
    if (is_2x2(s))
        maxpool_2x2_bwd(s, dx, dy, argmax);
    else if (s->kh == s->sh && s->kw == s->sw && s->ph == 0 && s->pw == 0)
        maxpool_bwd_tiled(s, dx, dy, argmax);
    else
        k_maxpool2d_bwd_ref(s, dx, dy, argmax);
}

/* Whole planes per piece of the fp32-then-round path: about K_BF16_PIECE_FLOATS, at least one. */
size_t k_maxpool2d_bwd_bf16_scratch_floats(const k_pool_shape *s) {
    size_t plane = (size_t)s->H * s->W;
    return plane < K_BF16_PIECE_FLOATS ? K_BF16_PIECE_FLOATS : plane;
}

void k_maxpool2d_bwd_bf16(const k_pool_shape *s, k_bf16 *dx, const float *dy, const uint8_t *argmax, float *scratch) {
#ifdef XT_POOL_X86
    if (is_2x2(s) && use_avx512(s)) {
        maxpool_2x2_bwd_bf16_avx512(s, dx, dy, argmax);
        return;
    }
#endif
    /* argmax names a cell of its own window, so a piece of whole planes runs alone */
    int64_t planes = (int64_t)s->N * s->C, in_plane = (int64_t)s->H * s->W, out_plane = (int64_t)s->Ho * s->Wo;
    int64_t per = (int64_t)k_maxpool2d_bwd_bf16_scratch_floats(s) / in_plane;
    for (int64_t q = 0; q < planes; q += per) {
        k_pool_shape piece = *s;
        piece.N = 1;
        piece.C = (int)(planes - q < per ? planes - q : per);
        k_maxpool2d_bwd(&piece, scratch, dy + q * out_plane, argmax + q * out_plane);
        k_bf16_cast((size_t)(piece.C * in_plane), dx + q * in_plane, scratch);
    }
}

/* count_include_pad=True in floor mode: every window counts kh*kw cells (a
 * floor-mode window never reaches past the padding), so the divisor is constant. */
void k_avgpool2d_fwd(const k_pool_shape *s, float *y, const float *x) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    float inv = 1.0f / (float)(s->kh * s->kw);
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        const float *xp = x + nc * in_plane;
        for (int oh = 0; oh < s->Ho; oh++)
            for (int ow = 0; ow < s->Wo; ow++) {
                int h0 = oh * s->sh - s->ph, w0 = ow * s->sw - s->pw;
                float acc = 0.0f;
                for (int h = h0 < 0 ? 0 : h0; h < h0 + s->kh && h < s->H; h++)
                    for (int w = w0 < 0 ? 0 : w0; w < w0 + s->kw && w < s->W; w++) acc += xp[h * s->W + w];
                y[nc * out_plane + (size_t)oh * s->Wo + ow] = acc * inv;
            }
    }
}

void k_avgpool2d_bwd(const k_pool_shape *s, float *dx, const float *dy) {
    size_t in_plane = (size_t)s->H * s->W, out_plane = (size_t)s->Ho * s->Wo;
    float inv = 1.0f / (float)(s->kh * s->kw);
    memset(dx, 0, sizeof(float) * in_plane * s->N * s->C);
    for (size_t nc = 0; nc < (size_t)s->N * s->C; nc++) {
        float *xp = dx + nc * in_plane;
        for (int oh = 0; oh < s->Ho; oh++)
            for (int ow = 0; ow < s->Wo; ow++) {
                int h0 = oh * s->sh - s->ph, w0 = ow * s->sw - s->pw;
                float g = dy[nc * out_plane + (size_t)oh * s->Wo + ow] * inv;
                for (int h = h0 < 0 ? 0 : h0; h < h0 + s->kh && h < s->H; h++)
                    for (int w = w0 < 0 ? 0 : w0; w < w0 + s->kw && w < s->W; w++) xp[h * s->W + w] += g;
            }
    }
}
