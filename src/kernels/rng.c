/* rng.c — counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11) and dropout.
 *
 * Is: the Philox-4x32-10 block function; k_rng_uniform, a pure function of
 * (seed, counter, index): the key is the 64-bit seed, the 128-bit counter block
 * is (index / 4, counter) and the index picks one of the block's four words
 * (as cuRAND and PyTorch draw four values per Philox call); a bulk fill giving
 * the same values 64 blocks at a time on AVX-512 (four independent groups of
 * 16); and dropout on top of it. No state, so a replayed step (same seed,
 * step, index) draws the same mask in any worker and any order, and backward
 * recomputes the mask instead of storing it.
 * Philox passes BigCrush; PyTorch's CUDA generator and JAX use it.
 * Is not: a stream generator or anything cryptographic.
 */
#include "kernels/bf16.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "kernels/vec4.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define XT_RNG_X86 1
#endif

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */
#define TWO_M24 (1.0f / 16777216.0f)

void k_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The four words of block `block` of stream (seed, counter). */
static void block_words(uint64_t seed, uint64_t counter, uint64_t block, uint32_t w[4]) {
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)counter, (uint32_t)(counter >> 32)};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    k_philox4x32_10(w, ctr, key);
}

/* The top 24 bits of a word, scaled by 2^-24: exactly representable floats in
 * [0, 1), every one equally likely. */
static inline float to_unit(uint32_t w) {
    return (float)(w >> 8) * TWO_M24;
}

/* Callers loop over consecutive indices, and four of them share a block: the
 * last block is kept per thread, so such a loop runs Philox once per 4 values.
 * Same results as without the cache (it is keyed on everything the block
 * depends on). */
static _Thread_local struct {
    int valid;
    uint64_t seed, counter, block;
    uint32_t w[4];
} g_last;

float k_rng_uniform(uint64_t seed, uint64_t counter, uint64_t i) {
    uint64_t block = i >> 2;
    if (!g_last.valid || g_last.block != block || g_last.seed != seed || g_last.counter != counter) {
        block_words(seed, counter, block, g_last.w);
        g_last.valid = 1, g_last.seed = seed, g_last.counter = counter, g_last.block = block;
    }
    return to_unit(g_last.w[i & 3]);
}

#ifdef XT_RNG_X86
#define XT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

/* both 32-bit halves of the 32x32-bit products, lane-wise (m: a constant in every
 * lane), from the two 64-bit products of the even and the odd lanes: cheaper than
 * a separate low multiply (vpmulld is two multiplies' worth on these cores) */
XT_AVX512 static inline void mul_hilo_epu32(__m512i a, __m512i m, __m512i *hi, __m512i *lo) {
    __m512i even = _mm512_mul_epu32(a, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* The counter words (c0, c1) of blocks block0 .. block0+15, one block per lane. */
XT_AVX512 static inline void block_counters(uint64_t block0, __m512i *c0, __m512i *c1) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i base = _mm512_set1_epi32((int)(uint32_t)block0), hi = _mm512_set1_epi32((int)(uint32_t)(block0 >> 32));
    *c0 = _mm512_add_epi32(base, iota);
    __mmask16 carry = _mm512_cmplt_epu32_mask(*c0, base); /* the low word wrapped */
    *c1 = _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1));
}

/* Words (f0..f3: word w of block b in lane b) as uniform floats, stored in index
 * order: out[4b + w]. Per 128-bit chunk k, u_m becomes the 4 words of block 4k+m;
 * then a 4x4 transpose of chunks. */
XT_AVX512 static inline void store_block_major(__m512i w0, __m512i w1, __m512i w2, __m512i w3, float *out) {
    const __m512 scale = _mm512_set1_ps(TWO_M24);
    __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w0, 8)), scale);
    __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w1, 8)), scale);
    __m512 f2 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w2, 8)), scale);
    __m512 f3 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w3, 8)), scale);
    __m512 t0 = _mm512_unpacklo_ps(f0, f1), t1 = _mm512_unpackhi_ps(f0, f1);
    __m512 t2 = _mm512_unpacklo_ps(f2, f3), t3 = _mm512_unpackhi_ps(f2, f3);
    __m512 u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    __m512 u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    __m512 u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    __m512 u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    __m512 a = _mm512_shuffle_f32x4(u0, u1, 0x44), b = _mm512_shuffle_f32x4(u0, u1, 0xEE);
    __m512 c = _mm512_shuffle_f32x4(u2, u3, 0x44), d = _mm512_shuffle_f32x4(u2, u3, 0xEE);
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(a, c, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(a, c, 0xDD));
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(b, d, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(b, d, 0xDD));
}

/* out[0..64*G) = the 4 words of blocks block0 .. block0+16*G-1, in index order.
 * A Philox round is a chain of ~8 cycles (multiply, shift, blend, xor) against
 * ~16 instructions, so one group of 16 blocks leaves the core idle between
 * rounds; G groups are independent chains the core interleaves. Four groups
 * ran much faster than one (kernel_bench's "dropout 128x9216" row). */
XT_AVX512 static inline __attribute__((always_inline)) void fill_groups(const int G, uint64_t seed, uint64_t counter,
                                                                       uint64_t block0, float *out) {
    __m512i c0[4], c1[4], c2[4], c3[4];
    const __m512i m0 = _mm512_set1_epi32((int)PHILOX_M0), m1 = _mm512_set1_epi32((int)PHILOX_M1);
    for (int g = 0; g < G; g++) {
        block_counters(block0 + 16 * (uint64_t)g, &c0[g], &c1[g]);
        c2[g] = _mm512_set1_epi32((int)(uint32_t)counter), c3[g] = _mm512_set1_epi32((int)(uint32_t)(counter >> 32));
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++, k0 += PHILOX_W0, k1 += PHILOX_W1) {
        __m512i kv0 = _mm512_set1_epi32((int)k0), kv1 = _mm512_set1_epi32((int)k1);
        for (int g = 0; g < G; g++) {
            __m512i hi0, lo0, hi1, lo1;
            mul_hilo_epu32(c0[g], m0, &hi0, &lo0);
            mul_hilo_epu32(c2[g], m1, &hi1, &lo1);
            c0[g] = _mm512_xor_si512(_mm512_xor_si512(hi1, c1[g]), kv0);
            c1[g] = lo1;
            c2[g] = _mm512_xor_si512(_mm512_xor_si512(hi0, c3[g]), kv1);
            c3[g] = lo0;
        }
    }
    for (int g = 0; g < G; g++) store_block_major(c0[g], c1[g], c2[g], c3[g], out + 64 * g);
}
XT_AVX512 static void fill4_avx512(uint64_t seed, uint64_t counter, uint64_t block0, float *out) {
    fill_groups(4, seed, counter, block0, out);
}
XT_AVX512 static void fill1_avx512(uint64_t seed, uint64_t counter, uint64_t block0, float *out) {
    fill_groups(1, seed, counter, block0, out);
}
#undef XT_AVX512
#endif

void k_rng_uniform_fill(uint64_t seed, uint64_t counter, uint64_t i0, size_t n, float *out) {
    size_t j = 0;
    for (; j < n && ((i0 + j) & 3); j++) out[j] = k_rng_uniform(seed, counter, i0 + j);
#ifdef XT_RNG_X86
    if (k_simd_level() == K_SIMD_AVX512) {
        for (; n - j >= 256; j += 256) fill4_avx512(seed, counter, (i0 + j) >> 2, out + j);
        for (; n - j >= 64; j += 64) fill1_avx512(seed, counter, (i0 + j) >> 2, out + j);
    }
#endif
    for (; n - j >= 4; j += 4) {
        uint32_t w[4];
        block_words(seed, counter, (i0 + j) >> 2, w);
        for (int k = 0; k < 4; k++) out[j + k] = to_unit(w[k]);
    }
    for (; j < n; j++) out[j] = k_rng_uniform(seed, counter, i0 + j);
}

/* Branch-free select: a drop is a coin flip the branch predictor cannot learn
 * (the branchy loop spent its time mostly on mispredictions). Dropped
 * elements are exactly 0, not x*0 (which would keep a NaN or an inf). Chunks
 * start on a Philox block (4 draws), so all but the first run whole blocks.
 * The select stays 4 lanes wide: a 16-lane masked multiply was faster in
 * DROPOUT and in kernel_bench's "dropout" row but much slower in
 * wide_cnn's DROPOUT_BWD in the engine (make bench's kernel table,
 * train_bench --kernels); the cause is not found: a microbenchmark of loads
 * and stores 4 KiB apart showed no aliasing cost. */
void k_dropout(size_t n, float *y, const float *x, float p, uint64_t seed, uint64_t counter, uint64_t index0) {
    float scale = 1.0f / (1.0f - p), u[256];
    v4f pv = v4_splat(p), sv = v4_splat(scale), zero = v4_splat(0.0f);
    for (size_t i0 = 0, m; i0 < n; i0 += m) {
        m = 256 - ((index0 + i0) & 3);
        m = n - i0 < m ? n - i0 : m;
        size_t j = 0;
        k_rng_uniform_fill(seed, counter, index0 + i0, m, u);
        for (; j + 4 <= m; j += 4)
            v4_store(y + i0 + j, v4_select(v4_load(u + j) < pv, zero, v4_load(x + i0 + j) * sv));
        for (; j < m; j++) y[i0 + j] = u[j] < p ? 0.0f : x[i0 + j] * scale;
    }
}

void k_dropout_bf16(size_t n, uint16_t *y, const float *x, float p, uint64_t seed, uint64_t counter, uint64_t index0,
                    float *scratch) {
    for (size_t i = 0; i < n; i += K_BF16_PIECE_FLOATS) {
        size_t m = n - i < K_BF16_PIECE_FLOATS ? n - i : K_BF16_PIECE_FLOATS;
        k_dropout(m, scratch, x + i, p, seed, counter, index0 + i);
        k_bf16_cast(m, y + i, scratch);
    }
}
