/* transpose8.h — the 8x8 transpose of 32-bit elements in 8 ymm registers
 * (x86-64 with GCC/clang only; callers compile it under an AVX2 target).
 *
 * Is: one always-inline function, shared by the fp32 direct convolution's
 * layout changes (conv_direct.c) and the sparse passes' (conv_sparse_simd.h,
 * conv_sparse_data_simd.h) at 8 lanes. Is not: any other width
 * (transpose16.h is the AVX-512 one).
 */
#ifndef XT_KERNELS_TRANSPOSE8_H
#define XT_KERNELS_TRANSPOSE8_H

#include <immintrin.h>

/* 8x8: pairs of rows interleaved, then pairs of pairs, then 128-bit halves */
__attribute__((target("avx2,fma"))) static inline void transpose_avx2(__m256 *r) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int m = 0; m < 4; m++) {
        r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
        r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
}

#endif
