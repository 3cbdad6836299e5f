/* reduce.c — the runs SUM_TO reduces with: the sum of a contiguous run of
 * floats, and adding one run into another, compiled for the baseline the
 * binary targets (4 lanes), AVX2 (8) and AVX-512 (16) and picked by
 * k_simd_level() (tests force each).
 *
 * The sum keeps 16 float partial sums, lane k taking elements k, k+16, ...
 * (whatever the vector width: 4 vectors of 4, 2 of 8 or 1 of 16), folded in
 * double in lane order, then the tail in double: error ~ n/16 float
 * roundings per lane instead of n, and the same bits at every width.
 * Is not: the shape bookkeeping of SUM_TO (engine/exec_ops.c).
 */
#include "kernels/kernels.h"
#include "kernels/simd.h"

#define SUM_LANES 16

#define DEFINE_RUNS(sfx, attr)                                              \
    static attr double sum_run##sfx(const float *x, int64_t n) {          \
        float lane[SUM_LANES] = {0};                                        \
        int64_t i = 0;                                                      \
        for (; i + SUM_LANES <= n; i += SUM_LANES)                          \
            for (int k = 0; k < SUM_LANES; k++) lane[k] += x[i + k];        \
        double acc = 0;                                                     \
        for (int k = 0; k < SUM_LANES; k++) acc += lane[k];                 \
        for (; i < n; i++) acc += x[i];                                     \
        return acc;                                                         \
    }                                                                       \
    static attr void add_run##sfx(float *y, const float *x, int64_t n) {  \
        for (int64_t i = 0; i < n; i++) y[i] += x[i];                       \
    }

DEFINE_RUNS(_gen, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REDUCE_WIDE 1
DEFINE_RUNS(_avx2, __attribute__((target("avx2,fma"))))
DEFINE_RUNS(_avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))))
#endif

double k_sum_run(const float *x, int64_t n) {
#ifdef REDUCE_WIDE
    int lvl = k_simd_level();
    if (lvl == K_SIMD_AVX512) return sum_run_avx512(x, n);
    if (lvl == K_SIMD_AVX2) return sum_run_avx2(x, n);
#endif
    return sum_run_gen(x, n);
}

void k_add_run(float *y, const float *x, int64_t n) {
#ifdef REDUCE_WIDE
    int lvl = k_simd_level();
    if (lvl == K_SIMD_AVX512) { add_run_avx512(y, x, n); return; }
    if (lvl == K_SIMD_AVX2) { add_run_avx2(y, x, n); return; }
#endif
    add_run_gen(y, x, n);
}
