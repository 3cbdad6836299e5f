/* reduce.c — the runs SUM_TO reduces with: the sum of a contiguous run of
 * floats, and adding one run into another, compiled for the baseline the
 * binary targets (4 lanes), AVX2 (8) and AVX-512 (16) and picked by
 * k_simd_level() (tests force each).
 *
 * The sum keeps 16 float partial sums, lane k taking elements k, k+16, ...
 * (whatever the vector width: 4 vectors of 4, 2 of 8 or 1 of 16), folded in
 * double in lane order, then the tail in double: error ~ n/16 float
 * roundings per lane instead of n, and the same bits at every width.
 * k_sum_runs sums many consecutive runs of one length, each with exactly
 * k_sum_run's operations: the AVX-512 path takes 8 runs at once, their 16
 * lanes in one zmm each, and folds lane k of the 8 runs in one __m512d add,
 * so the 16 dependent double adds of a fold are paid once per 8 runs (a
 * bias gradient sums thousands of runs of 16-576 floats; one at a time, the
 * fold's latency was most of the cost), and two such groups at once where
 * there are 16 runs, their folds interleaved.
 * k_sum_runs_at does the same for runs at unrelated addresses (a fused
 * group's per-channel sums of a chunk's planes, engine/ew.c): 16 or 8 at a
 * time as above, then four or two with their lane chains interleaved in
 * one loop (one 1024-float run is 64 dependent vector adds and a 16-add
 * fold; two or four chains share that latency), each with k_sum_run's
 * operations.
 * k_lane_sums is the weight gradients' last step, the lanes of each vector
 * accumulator added in double in lane order: k_sum_runs over runs of one
 * vector (one vector at a time, its 16 dependent scalar adds were 8% of the
 * seed CNN's step at batch 16).
 * Is not: the shape bookkeeping of SUM_TO (engine/exec_ops.c).
 */
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "kernels/unroll.h"

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

#ifdef REDUCE_WIDE
#include <immintrin.h>
/* the 8x8 transpose of doubles: r[k] becomes (r[0][k], ..., r[7][k]) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), always_inline)) static inline void transpose8_pd(__m512d *r) {
    __m512d t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);     /* a0 b0 a2 b2 a4 b4 a6 b6 */
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]); /* a1 b1 a3 b3 a5 b5 a7 b7 */
    }
    __m512d u[8];
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++) {
            /* 128-bit pieces: (0, 2) and (1, 3) of the two pairs */
            u[i + h] = _mm512_shuffle_f64x2(t[i + h], t[i + 2 + h], 0x88);
            u[i + 2 + h] = _mm512_shuffle_f64x2(t[i + h], t[i + 2 + h], 0xdd);
        }
    for (int h = 0; h < 4; h++) {
        r[h] = _mm512_shuffle_f64x2(u[h], u[4 + h], 0x88);
        r[4 + h] = _mm512_shuffle_f64x2(u[h], u[4 + h], 0xdd);
    }
}

/* 8*G runs of n floats (G = 1 or 2, a constant once inlined), run r at
 * xp[r]: sums[r] = sum_run_avx512(run r), bit for bit. Lanes: per run,
 * float lane k += x[i + k] in i order (as the scalar lane array), the runs'
 * chains interleaved; fold: acc = 0, then acc += lane k for k = 0..15 in
 * double, a group's 8 runs in the 8 doubles of a zmm (the lanes transposed
 * to that order); tail: acc += x[i] in i order. With G = 2 the two groups'
 * folds are interleaved: a fold is 16 dependent double adds, and for runs of
 * one or two vectors (a bias gradient over 4x4 or 12x12 planes) its latency,
 * not the loads, set the pace when the groups came one after the other. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), always_inline)) static inline void
sum_runs_groups_avx512(const float *const *xp, int64_t n, double *sums, const int G) {
    int64_t full = n / SUM_LANES * SUM_LANES;
    __m512 l[16];
XT_UNROLL
    for (int r = 0; r < 8 * G; r++) l[r] = _mm512_setzero_ps();
    for (int64_t i = 0; i < full; i += SUM_LANES)
XT_UNROLL
        for (int r = 0; r < 8 * G; r++) l[r] = _mm512_add_ps(l[r], _mm512_loadu_ps(xp[r] + i));
    __m512d lo[2][8], hi[2][8]; /* group g's run r: lanes 0-7 and 8-15 as doubles */
XT_UNROLL
    for (int r = 0; r < 8 * G; r++) {
        lo[r / 8][r % 8] = _mm512_cvtps_pd(_mm512_castps512_ps256(l[r]));
        hi[r / 8][r % 8] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l[r]), 1)));
    }
    __m512d acc[2];
XT_UNROLL
    for (int g = 0; g < G; g++) {
        transpose8_pd(lo[g]);
        transpose8_pd(hi[g]);
        acc[g] = _mm512_setzero_pd();
    }
XT_UNROLL
    for (int k = 0; k < 8; k++)
XT_UNROLL
        for (int g = 0; g < G; g++) acc[g] = _mm512_add_pd(acc[g], lo[g][k]);
XT_UNROLL
    for (int k = 0; k < 8; k++)
XT_UNROLL
        for (int g = 0; g < G; g++) acc[g] = _mm512_add_pd(acc[g], hi[g][k]);
    for (int64_t i = full; i < n; i++)
XT_UNROLL
        for (int g = 0; g < G; g++) {
            const float *const *q = xp + 8 * g;
            __m512d t = _mm512_setr_pd(q[0][i], q[1][i], q[2][i], q[3][i], q[4][i], q[5][i], q[6][i], q[7][i]);
            acc[g] = _mm512_add_pd(acc[g], t);
        }
XT_UNROLL
    for (int g = 0; g < G; g++) _mm512_storeu_pd(sums + 8 * g, acc[g]);
}
/* R runs (2 or 4 once inlined) at any addresses, each with sum_run_avx512's
 * operations (16 float lanes from +0, folded in double in lane order, then
 * the tail), their lane chains interleaved in one loop and their folds too. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), always_inline)) static inline void
sum_runs_at_avx512(const float *const *xp, int64_t n, double *sums, const int R) {
    __m512 l[4];
XT_UNROLL
    for (int r = 0; r < R; r++) l[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
XT_UNROLL
        for (int r = 0; r < R; r++) l[r] = _mm512_add_ps(l[r], _mm512_loadu_ps(xp[r] + i));
    float lane[4][SUM_LANES];
    double acc[4];
XT_UNROLL
    for (int r = 0; r < R; r++) {
        _mm512_storeu_ps(lane[r], l[r]);
        acc[r] = 0.0;
    }
XT_UNROLL
    for (int k = 0; k < SUM_LANES; k++)
XT_UNROLL
        for (int r = 0; r < R; r++) acc[r] += lane[r][k];
    for (int64_t t = i; t < n; t++)
XT_UNROLL
        for (int r = 0; r < R; r++) acc[r] += xp[r][t];
XT_UNROLL
    for (int r = 0; r < R; r++) sums[r] = acc[r];
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void sum_runs_at4_avx512(
    const float *const *xp, int64_t n, double *sums) {
    sum_runs_at_avx512(xp, n, sums, 4);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void sum_runs_at2_avx512(
    const float *const *xp, int64_t n, double *sums) {
    sum_runs_at_avx512(xp, n, sums, 2);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void sum_runs8_avx512(
    const float *const *xp, int64_t n, double *sums) {
    sum_runs_groups_avx512(xp, n, sums, 1);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void sum_runs16_avx512(
    const float *const *xp, int64_t n, double *sums) {
    sum_runs_groups_avx512(xp, n, sums, 2);
}

#endif

void k_lane_sums(const float *x, int64_t nvec, int lanes, float *out) {
    /* a vector's lane sum is k_sum_run over its `lanes` floats (its float
     * lanes start from +0 and fold in double from 0.0 in lane order), so
     * k_sum_runs computes them, 64 vectors at a time; each chunk is read
     * before its sums are written, so out may be x */
    double t[64];
    for (int64_t v = 0; v < nvec; v += 64) {
        int64_t n = nvec - v < 64 ? nvec - v : 64;
        k_sum_runs(x + v * lanes, n, lanes, t);
        for (int64_t i = 0; i < n; i++) out[v + i] = (float)t[i];
    }
}

void k_sum_runs(const float *x, int64_t runs, int64_t n, double *sums) {
    /* consecutive runs are runs at addresses too: k_sum_runs_at, 64 at a time */
    const float *xp[64];
    for (int64_t r = 0; r < runs; r += 64) {
        int64_t take = runs - r < 64 ? runs - r : 64;
        for (int64_t k = 0; k < take; k++) xp[k] = x + (r + k) * n;
        k_sum_runs_at(xp, take, n, sums + r);
    }
}

void k_sum_runs_at(const float *const *xp, int64_t runs, int64_t n, double *sums) {
    int64_t r = 0;
#ifdef REDUCE_WIDE
    if (k_simd_level() == K_SIMD_AVX512) {
        for (; r + 16 <= runs; r += 16) sum_runs16_avx512(xp + r, n, sums + r);
        for (; r + 8 <= runs; r += 8) sum_runs8_avx512(xp + r, n, sums + r);
        for (; r + 4 <= runs; r += 4) sum_runs_at4_avx512(xp + r, n, sums + r);
        for (; r + 2 <= runs; r += 2) sum_runs_at2_avx512(xp + r, n, sums + r);
    }
#endif
    for (; r < runs; r++) sums[r] = k_sum_run(xp[r], n);
}

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
