/* transpose16.h — the 16x16 transpose of 32-bit elements in 16 zmm registers
 * (x86-64 with GCC/clang only; callers compile it under an AVX-512 target).
 *
 * Is: one always-inline function, shared by the fp32 direct convolution's
 * layout changes (conv_direct.c) and the bf16 one's (conv_direct_bf16.c, which
 * moves pairs of bf16 as one 32-bit element). Is not: any other width.
 */
#ifndef XT_KERNELS_TRANSPOSE16_H
#define XT_KERNELS_TRANSPOSE16_H

#include <immintrin.h>

/* 16x16: rows interleaved in pairs (ps), pairs of pairs (pd): every 128-bit lane
 * then holds a transposed 4x4 block; two rounds of 128-bit lane shuffles put
 * the blocks in place. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static inline __attribute__((always_inline)) void transpose_avx512(__m512 *r) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

#endif
