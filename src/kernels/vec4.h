/* vec4.h — a 4-float vector for the memory-bound kernels (private to src/kernels).
 *
 * Is: GCC/clang vector extensions (SSE on x86-64-v2, NEON on arm64), unaligned
 * loads and stores, lane masks and a blend. GCC's auto-vectorizer turns the
 * plain loops of pooling and batch norm into spill-heavy code; spelled with
 * this type they compile to straight vector loops at -O2 as well as -O3.
 * Is not: the conv micro-kernels (conv_direct_simd.h, per-ISA intrinsics).
 * 16-byte vectors only: wider ones change the calling convention without AVX
 * (GCC's -Wpsabi), and these kernels are bound by memory, not arithmetic.
 */
#ifndef XT_KERNELS_VEC4_H
#define XT_KERNELS_VEC4_H

#include <stdint.h>

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v4f_u __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t v4i_u __attribute__((vector_size(16), aligned(4), may_alias));

static inline v4f v4_load(const float *p) {
    return *(const v4f_u *)p;
}
static inline void v4_store(float *p, v4f v) {
    *(v4f_u *)p = v;
}
static inline v4i v4i_load(const int32_t *p) {
    return *(const v4i_u *)p;
}
static inline void v4i_store(int32_t *p, v4i v) {
    *(v4i_u *)p = v;
}
static inline v4f v4_splat(float s) {
    return (v4f){s, s, s, s};
}
static inline v4i v4i_splat(int32_t s) {
    return (v4i){s, s, s, s};
}
/* mask ? a : b, lane-wise (mask lanes all-ones or zero) */
static inline v4f v4_select(v4i mask, v4f a, v4f b) {
    return (v4f)(((v4i)a & mask) | ((v4i)b & ~mask));
}
static inline v4i v4i_select(v4i mask, v4i a, v4i b) {
    return (a & mask) | (b & ~mask);
}
static inline double v4_hsum(v4f v) {
    return ((double)v[0] + (double)v[1]) + ((double)v[2] + (double)v[3]);
}

#endif
