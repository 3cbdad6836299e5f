/* bf16_simd.h — k_bf16_from_f32's rounding, 16 lanes at a time (AVX-512).
 *
 * Is: one inline function for the kernels that round to bf16 as they store
 * or pack (pool.c's backward made in bf16, conv_direct_bf16.c's unpooled dy).
 * Is not: vcvtneps2bf16, which flushes denormal inputs to zero; the cast must
 * give the same bits on every path and CPU (bf16.c says why). Include only
 * in x86-64 GCC/clang code; callers are compiled for AVX-512.
 */
#ifndef XT_KERNELS_BF16_SIMD_H
#define XT_KERNELS_BF16_SIMD_H

#include <immintrin.h>

/* 16 floats rounded to nearest even (a NaN stays a quiet NaN), each bf16 in
 * the low half of its 32-bit lane, the high half 0 */
static inline __attribute__((always_inline, target("avx512f"))) __m512i k_bf16_lanes(__m512 v) {
    __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    __m512i rne = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(hi, _mm512_set1_epi32(1))), 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(rne, nan, hi, _mm512_set1_epi32(0x40));
}

#endif
