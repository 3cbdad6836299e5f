/* test_kernels_misc.c — GEMM, pooling, batch norm, log-softmax and the RNG.
 *
 * Fast kernels against their refs (relative to the output's magnitude), refs
 * against hand-computed values, BN's backward against finite differences of a
 * double-precision forward, and Philox against Random123's published vectors.
 */
#include "test.h"

#include "kernels/bf16.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

static float *rand_buf(size_t n, unsigned *seed) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

static float *nan_buf(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static double rel_err(const float *a, const float *ref, size_t n) {
    double mx = 0.0, mag = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(ref[i])) return INFINITY;
        double d = fabs((double)a[i] - ref[i]);
        if (d > mx) mx = d;
        if (fabs(ref[i]) > mag) mag = fabs(ref[i]);
    }
    return mx / mag;
}

/* ---- GEMM ---------------------------------------------------------------------- */

TEST(gemm_ref_hand_computed) {
    const float A[6] = {1, 2, 3, 4, 5, 6};    /* 2x3 */
    const float B[6] = {7, 8, 9, 10, 11, 12}; /* 3x2 */
    float C[4] = {1, 1, 1, 1};
    k_gemm_ref(0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
    CHECK_NEAR(C[0], 58, 0);
    CHECK_NEAR(C[1], 64, 0);
    CHECK_NEAR(C[2], 139, 0);
    CHECK_NEAR(C[3], 154, 0);
    /* A^T (3x2 stored as 2x3) times A: 3x3, element (0,0) = 1 + 16 = 17; alpha 2, beta 1 onto 1 */
    float D[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    k_gemm_ref(1, 0, 3, 3, 2, 2.0f, A, 3, A, 3, 1.0f, D, 3);
    CHECK_NEAR(D[0], 35, 0);
    CHECK_NEAR(D[4], 2 * (4 + 25) + 1, 0);
    CHECK_NEAR(D[2], 2 * (3 + 24) + 1, 0);
}

/* op(A) (M x K) and op(B) (K x N), random, stored with leading dimensions
 * larger than the rows, to catch lda mix-ups; C's rows have one spare column */
typedef struct gemm_case {
    int lda, ldb, ldc;
    float *A, *B;
} gemm_case;

static gemm_case gemm_case_make(int M, int N, int K, int ta, int tb, unsigned *seed) {
    gemm_case g = {.lda = (ta ? M : K) + 3, .ldb = (tb ? K : N) + 2, .ldc = N + 1};
    g.A = rand_buf((size_t)(ta ? K : M) * g.lda, seed);
    g.B = rand_buf((size_t)(tb ? N : K) * g.ldb, seed);
    return g;
}

TEST(gemm_matches_ref_all_transposes) {
    unsigned seed = 3;
    int dims[][3] = {{1, 1, 1}, {7, 5, 3}, {20, 64, 250}, {10, 576, 25}, {33, 17, 65}, {128, 50, 320}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
        int M = dims[d][0], N = dims[d][1], K = dims[d][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                gemm_case g = gemm_case_make(M, N, K, ta, tb, &seed);
                int lda = g.lda, ldb = g.ldb, ldc = g.ldc;
                float *A = g.A, *B = g.B, *C = rand_buf((size_t)M * ldc, &seed), *R = malloc(sizeof(float) * (size_t)M * ldc);
                memcpy(R, C, sizeof(float) * (size_t)M * ldc);
                k_gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, C, ldc);
                k_gemm_ref(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, R, ldc);
                CHECK_MSG(rel_err(C, R, (size_t)M * ldc) <= 1e-5, "gemm %dx%dx%d ta%d tb%d", M, N, K, ta, tb);
                /* beta 0 ignores C, even NaN */
                for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = R[i] = NAN;
                k_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
                k_gemm_ref(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, R, ldc);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        CHECK(!isnan(C[i * ldc + j]));
                        CHECK_NEAR(C[i * ldc + j], R[i * ldc + j], 1e-4 * (1 + fabs(R[i * ldc + j])));
                    }
                free(A), free(B), free(C), free(R);
            }
    }
}

/* k_sgemm (the engine's MATMUL) at every SIMD level: its own AVX-512 kernel
 * where the CPU has it, OpenBLAS below. Shapes cross every blocking edge the
 * kernel has (12-row and 32-column micro-tiles, the KC slice of K, the MC row
 * block and the NC column block, whatever sizes this CPU's caches give) and
 * the model shapes (wide_cnn's fc1: K = 9216). Each element is held to the
 * fp32 summation bound K * 2^-24 * sum|a||b| against the double-precision
 * twin; C starts as NaN, which must never leak (C = op(A) op(B), no beta). */
TEST(sgemm_matches_ref_within_the_fp32_bound_at_every_level) {
    unsigned seed = 11;
    int dims[][3] = {{1, 1, 1},     {12, 32, 16},  {13, 33, 7},   {11, 31, 17},   {25, 65, 193}, {128, 50, 320},
                     {128, 10, 50}, {700, 40, 200}, {20, 2900, 30}, {128, 128, 9216}, {50, 320, 128}, {128, 9216, 12}};
    for (int lvl = k_simd_detect(); lvl >= K_SIMD_AVX2; lvl--) {
        k_simd_force(lvl);
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            int M = dims[d][0], N = dims[d][1], K = dims[d][2];
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    gemm_case g = gemm_case_make(M, N, K, ta, tb, &seed);
                    int lda = g.lda, ldb = g.ldb, ldc = g.ldc;
                    float *A = g.A, *B = g.B, *C = malloc(sizeof(float) * (size_t)M * ldc), *R = malloc(sizeof(float) * (size_t)M * ldc);
                    void *scratch = malloc(k_sgemm_scratch_bytes(M, N, K));
                    for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = NAN;
                    k_sgemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, scratch);
                    k_gemm_ref(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, R, ldc);
                    int bad = 0;
                    for (int i = 0; i < M && !bad; i++)
                        for (int j = 0; j < N && !bad; j++) {
                            double mag = 0;
                            for (int k = 0; k < K; k++)
                                mag += fabs((double)(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                                            (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]));
                            double err = fabs((double)C[(size_t)i * ldc + j] - R[(size_t)i * ldc + j]);
                            if (!(err <= K * 0x1p-24 * mag + 1e-30)) bad = 1;
                            CHECK_MSG(!bad, "sgemm %dx%dx%d ta%d tb%d level %d path %s: C[%d][%d] = %g, twin %g", M, N, K,
                                      ta, tb, lvl, k_sgemm_path_name(M, N, K), i, j, C[(size_t)i * ldc + j],
                                      R[(size_t)i * ldc + j]);
                        }
                    /* the padding column of each C row is never written */
                    for (int i = 0; i < M; i++) CHECK(isnan(C[(size_t)i * ldc + N]));
                    free(A), free(B), free(C), free(R), free(scratch);
                }
        }
    }
    k_simd_force(-1);
    CHECK_EQ(k_sgemm_own(128, 128, 9216), k_simd_detect() == K_SIMD_AVX512);
}

/* ---- pooling --------------------------------------------------------------------- */

TEST(maxpool_hand_computed_and_tie_breaking) {
    /* 1x1x4x4; ties in three windows (5 at 1 and 4, 7 at 6 and 7, -3 at 10 and 14): the first wins;
     * the argmax is the winner's cell in its window (0-3 row-major), not its index in the plane */
    const float x[16] = {1, 5, 2, 0, 5, 3, 7, 7, -1, -2, -3, -4, -5, -6, -3, -4};
    k_pool_shape s = {.N = 1, .C = 1, .H = 4, .W = 4, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 2);
    float y[4], yr[4];
    uint8_t a[4], ar[4];
    const float want_y[4] = {5, 7, -1, -3};
    const uint8_t want_a[4] = {1, 2, 0, 0};
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_maxpool2d_fwd(&s, y, a, x);
        k_maxpool2d_fwd_ref(&s, yr, ar, x);
        for (int i = 0; i < 4; i++) {
            CHECK_NEAR(y[i], want_y[i], 0);
            CHECK_EQ(a[i], want_a[i]);
            CHECK_NEAR(yr[i], want_y[i], 0);
            CHECK_EQ(ar[i], want_a[i]);
        }
        /* all-equal plane: every window points at its first cell */
        float z[16] = {0};
        k_maxpool2d_fwd(&s, y, a, z);
        for (int i = 0; i < 4; i++) CHECK_EQ(a[i], 0);
    }
    k_simd_force(-1);
}

TEST(maxpool_padding_is_minus_infinity) {
    /* all-negative input, k3 s1 p1: the padding must never win */
    float x[9];
    for (int i = 0; i < 9; i++) x[i] = -10.0f - i;
    k_pool_shape s = {.N = 1, .C = 1, .H = 3, .W = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 3);
    float y[9];
    uint8_t a[9];
    k_maxpool2d_fwd(&s, y, a, x);
    CHECK_NEAR(y[0], -10, 0);
    CHECK_EQ(a[0], 4); /* x[0] is the centre cell (1, 1) of the window that starts in the padding */
    CHECK_NEAR(y[8], -14, 0); /* window rows 1-3, cols 1-3: max is x[4] = -14, its first cell */
    CHECK_EQ(a[8], 0);
}

TEST(maxpool_nan_propagates) {
    float x[16] = {0};
    x[5] = NAN;
    x[2] = 1.0f;
    x[7] = 9.0f;
    k_pool_shape s = {.N = 1, .C = 1, .H = 4, .W = 4, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    float y[4], yr[4];
    uint8_t a[4], ar[4];
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_maxpool2d_fwd(&s, y, a, x);
        k_maxpool2d_fwd_ref(&s, yr, ar, x);
        CHECK(isnan(y[0]) && isnan(yr[0]));
        CHECK_EQ(a[0], 3); /* x[5]: the window's cell (1, 1) */
        CHECK_EQ(ar[0], 3);
        CHECK_NEAR(y[1], 9, 0);
    }
    k_simd_force(-1);
}

/* the fast pool paths differ per SIMD flavour: check each */
static void check_pool_at(k_pool_shape s, unsigned seed, int quantize);
static void check_pool(k_pool_shape s, unsigned seed, int quantize) {
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        check_pool_at(s, seed, quantize);
    }
    k_simd_force(-1);
}

static void check_pool_at(k_pool_shape s, unsigned seed, int quantize) {
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    size_t xs = (size_t)s.N * s.C * s.H * s.W, ys = (size_t)s.N * s.C * s.Ho * s.Wo;
    float *x = rand_buf(xs, &seed), *dy = rand_buf(ys, &seed);
    if (quantize) /* few distinct values: lots of ties */
        for (size_t i = 0; i < xs; i++) x[i] = floorf(x[i] * 2.0f);
    float *y = nan_buf(ys), *yr = nan_buf(ys), *dx = nan_buf(xs), *dxr = nan_buf(xs);
    uint8_t *a = malloc(ys), *ar = malloc(ys);
    k_maxpool2d_fwd(&s, y, a, x);
    k_maxpool2d_fwd_ref(&s, yr, ar, x);
    CHECK(memcmp(y, yr, ys * sizeof(float)) == 0);
    CHECK(memcmp(a, ar, ys) == 0);
    k_maxpool2d_bwd(&s, dx, dy, a);
    k_maxpool2d_bwd_ref(&s, dxr, dy, ar);
    CHECK(memcmp(dx, dxr, xs * sizeof(float)) == 0);
    /* made in bf16 (pass_bf16_out.c): every element the rounding of the fp32
     * backward's, k_bf16_from_f32 bit for bit, rounding ties, a subnormal,
     * an overflow to infinity and a NaN among the gradients */
    static const float special[5] = {1.00390625f /* 1 + 2^-8: a tie, to even */, 1.01171875f /* 1 + 3*2^-8: a tie, up */,
                                      1e-40f, 3.4e38f, NAN};
    for (size_t i = 0; i < 5 && i < ys; i++) dy[i * 7 % ys] = special[i];
    k_maxpool2d_bwd(&s, dx, dy, a);
    uint16_t *d16 = malloc(xs * sizeof *d16);
    float *piece = malloc(k_maxpool2d_bwd_bf16_scratch_floats(&s) * sizeof(float));
    memset(d16, 0xA5, xs * sizeof *d16); /* every element must be written */
    k_maxpool2d_bwd_bf16(&s, d16, dy, a, piece);
    size_t bad = 0;
    for (size_t i = 0; i < xs; i++) bad += d16[i] != k_bf16_from_f32(dx[i]);
    CHECK_MSG(bad == 0, "%zu of %zu bf16 elements are not the rounded fp32 backward (%dx%d/%d, simd %d)", bad, xs, s.kh,
              s.kw, s.sh, k_simd_level());
    free(d16), free(piece);
    free(x), free(dy), free(y), free(yr), free(dx), free(dxr), free(a), free(ar);
}

TEST(maxpool_fast_matches_ref) {
    check_pool((k_pool_shape){.N = 7, .C = 10, .H = 24, .W = 24, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 1, 0);
    check_pool((k_pool_shape){.N = 7, .C = 20, .H = 8, .W = 8, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 2, 1);
    check_pool((k_pool_shape){.N = 2, .C = 64, .H = 24, .W = 24, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 3, 1);
    check_pool((k_pool_shape){.N = 3, .C = 2, .H = 11, .W = 13, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 4, 1); /* odd */
    check_pool((k_pool_shape){.N = 1, .C = 2, .H = 6, .W = 64, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 41, 1); /* 2 vectors */
    check_pool((k_pool_shape){.N = 1, .C = 2, .H = 7, .W = 41, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 42, 0); /* 16 + 4 */
    check_pool((k_pool_shape){.N = 1, .C = 3, .H = 9, .W = 10, .kh = 3, .kw = 3, .sh = 3, .sw = 3}, 5, 1);
    check_pool((k_pool_shape){.N = 2, .C = 3, .H = 9, .W = 10, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, 6, 1);
    check_pool((k_pool_shape){.N = 1, .C = 1, .H = 5, .W = 7, .kh = 3, .kw = 2, .sh = 1, .sw = 2, .ph = 1}, 7, 1);
    check_pool((k_pool_shape){.N = 2, .C = 2, .H = 1, .W = 9, .kh = 1, .kw = 2, .sh = 1, .sw = 2}, 8, 1);
    /* planes larger than the bf16 backward's scratch piece: one plane a piece */
    check_pool((k_pool_shape){.N = 1, .C = 3, .H = 96, .W = 97, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 9, 0);
    check_pool((k_pool_shape){.N = 1, .C = 3, .H = 96, .W = 96, .kh = 3, .kw = 3, .sh = 3, .sw = 3}, 10, 0);
}

TEST(maxpool_bwd_overwrites_and_overlapping_windows_add) {
    /* k3 s1: the centre cell is the max of all four windows and collects all four grads */
    float x[16] = {0}, dx[16], dy[4] = {1, 2, 3, 4};
    x[5] = 5;
    k_pool_shape s = {.N = 1, .C = 1, .H = 4, .W = 4, .kh = 3, .kw = 3, .sh = 1, .sw = 1};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    float y[4];
    uint8_t a[4];
    k_maxpool2d_fwd(&s, y, a, x);
    for (int i = 0; i < 16; i++) dx[i] = NAN;
    k_maxpool2d_bwd(&s, dx, dy, a);
    CHECK_NEAR(dx[5], 1 + 2 + 3 + 4, 0);
    CHECK_NEAR(dx[0], 0, 0);
    CHECK_NEAR(dx[15], 0, 0);
}

TEST(avgpool_hand_computed_count_include_pad) {
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    k_pool_shape s = {.N = 1, .C = 1, .H = 3, .W = 3, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .ph = 1, .pw = 1};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 2);
    float y[4];
    k_avgpool2d_fwd(&s, y, x);
    /* every window divides by 4, padding included */
    CHECK_NEAR(y[0], 1.0 / 4, 1e-7);
    CHECK_NEAR(y[1], (2 + 3) / 4.0, 1e-7);
    CHECK_NEAR(y[2], (4 + 7) / 4.0, 1e-7);
    CHECK_NEAR(y[3], (5 + 6 + 8 + 9) / 4.0, 1e-7);
    float dy[4] = {4, 8, 12, 16}, dx[9];
    for (int i = 0; i < 9; i++) dx[i] = NAN;
    k_avgpool2d_bwd(&s, dx, dy);
    const float want[9] = {1, 2, 2, 3, 4, 4, 3, 4, 4};
    for (int i = 0; i < 9; i++) CHECK_NEAR(dx[i], want[i], 1e-7);
}

TEST(avgpool_bwd_is_adjoint_of_fwd) {
    /* <avg(x), dy> == <x, avg_bwd(dy)> for overlapping, padded windows */
    k_pool_shape s = {.N = 2, .C = 3, .H = 7, .W = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 1};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    unsigned seed = 9;
    size_t xs = (size_t)s.N * s.C * s.H * s.W, ys = (size_t)s.N * s.C * s.Ho * s.Wo;
    float *x = rand_buf(xs, &seed), *dy = rand_buf(ys, &seed), *y = nan_buf(ys), *dx = nan_buf(xs);
    k_avgpool2d_fwd(&s, y, x);
    k_avgpool2d_bwd(&s, dx, dy);
    double l = 0, r = 0;
    for (size_t i = 0; i < ys; i++) l += (double)y[i] * dy[i];
    for (size_t i = 0; i < xs; i++) r += (double)x[i] * dx[i];
    CHECK_NEAR(l, r, 1e-5 * (1 + fabs(l)));
    free(x), free(dy), free(y), free(dx);
}

TEST(pool_shape_infer) {
    k_pool_shape s = {.N = 1, .C = 1, .H = 5, .W = 5, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 2); /* floor mode */
    s.ph = 2;          /* more than half the kernel: PyTorch refuses */
    CHECK_EQ(k_pool_shape_infer(&s), -1);
    k_pool_shape t = {.N = 1, .C = 1, .H = 1, .W = 1, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&t), -1);
}

/* ---- batch norm ---------------------------------------------------------------- */

TEST(bn_stats_known_array) {
    /* N=2, C=2, HW=2: channel 0 holds {1,2,5,6}, channel 1 holds {3,3,3,3} */
    const float x[8] = {1, 2, 3, 3, 5, 6, 3, 3};
    float m[2], v[2], mr[2], vr[2];
    k_bn_stats(2, 2, 2, m, v, x);
    k_bn_stats_ref(2, 2, 2, mr, vr, x);
    CHECK_NEAR(m[0], 3.5, 1e-7);
    CHECK_NEAR(v[0], (6.25 + 2.25 + 2.25 + 6.25) / 4, 1e-6); /* biased: / n */
    CHECK_NEAR(m[1], 3, 0);
    CHECK_NEAR(v[1], 0, 0);
    CHECK_NEAR(mr[0], 3.5, 1e-7);
    CHECK_NEAR(vr[0], 4.25, 1e-6);
}

/* k_bn_stats of x (N, C <= 4, HW) at every SIMD level against the double
 * two-pass reference, whose variance must lie in [vlo, vhi]. */
static void bn_stats_hold_to_ref(int N, int C, int HW, const float *x, double vtol, double vlo, double vhi) {
    float m[4], v[4], mr[4], vr[4];
    k_bn_stats_ref(N, C, HW, mr, vr, x);
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_bn_stats(N, C, HW, m, v, x);
        for (int c = 0; c < C; c++) {
            CHECK_NEAR(m[c], mr[c], 1e-3);
            CHECK_NEAR(v[c], vr[c], vtol * vr[c]);
            CHECK(vr[c] > vlo && vr[c] < vhi);
        }
    }
    k_simd_force(-1);
}

TEST(bn_stats_large_offset_is_stable) {
    /* 1e4 + small noise: a one-pass E[x^2]-E[x]^2 in float would lose the variance */
    int N = 64, C = 3, HW = 49;
    size_t n = (size_t)N * C * HW;
    unsigned seed = 5;
    float *x = rand_buf(n, &seed);
    for (size_t i = 0; i < n; i++) x[i] = 1e4f + x[i];
    bn_stats_hold_to_ref(N, C, HW, x, 1e-4, 0.2, 0.45); /* uniform(-1,1): 1/3 */
    free(x);
}

TEST(bn_stats_fast_matches_ref) {
    int shapes[][3] = {{128, 10, 144}, {7, 20, 16}, {3, 3, 1}, {5, 4, 13}, {2, 64, 576}, {17, 3, 83}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0] * (size_t)(k_simd_detect() + 1); k++) {
        k_simd_force((int)(k / (sizeof shapes / sizeof shapes[0]))); /* every shape at every SIMD level */
        size_t sh = k % (sizeof shapes / sizeof shapes[0]);
        int N = shapes[sh][0], C = shapes[sh][1], HW = shapes[sh][2];
        size_t n = (size_t)N * C * HW;
        unsigned seed = 11 + (unsigned)sh;
        float *x = rand_buf(n, &seed), *dy = rand_buf(n, &seed), *g = rand_buf((size_t)C, &seed);
        float *bt = rand_buf((size_t)C, &seed);
        for (size_t i = 0; i < n; i++) x[i] = x[i] * 3.0f + 0.5f;
        float *m = nan_buf((size_t)C), *v = nan_buf((size_t)C), *mr = nan_buf((size_t)C), *vr = nan_buf((size_t)C);
        k_bn_stats(N, C, HW, m, v, x);
        k_bn_stats_ref(N, C, HW, mr, vr, x);
        CHECK(rel_err(m, mr, (size_t)C) <= 1e-5);
        CHECK(rel_err(v, vr, (size_t)C) <= 1e-5);
        free(x), free(dy), free(g), free(bt), free(m), free(v), free(mr), free(vr);
    }
    k_simd_force(-1);
}

/* Micro-batch tiles hand the statistics a part of the batch at a time
 * (whole K_BN_CHUNK-sample chunks, the last part any size): the same bits as
 * the whole batch in one call, at every SIMD level. */
TEST(bn_stats_in_parts_give_the_whole_batchs_bits) {
    int shapes[][3] = {{100, 10, 144}, {64, 20, 16}, {37, 3, 1}, {16, 4, 13}};
    int parts[][4] = {{16, 32, 48, 0}, {32, 32, 0, 0}, {16, 0, 0, 0}, {48, 0, 0, 0}}; /* then the rest */
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
            int N = shapes[sh][0], C = shapes[sh][1], HW = shapes[sh][2];
            unsigned seed = 41 + (unsigned)sh;
            float *x = rand_buf((size_t)N * C * HW, &seed);
            float *m = nan_buf((size_t)C), *v = nan_buf((size_t)C), *mp = nan_buf((size_t)C), *vp = nan_buf((size_t)C);
            double *acc = malloc(k_bn_stats_acc_doubles(C) * sizeof *acc);
            k_bn_stats(N, C, HW, m, v, x);
            for (size_t pt = 0; pt < sizeof parts / sizeof parts[0]; pt++) {
                int n0 = 0;
                k_bn_stats_begin(C, acc);
                for (int j = 0; j < 4 && parts[pt][j] && n0 + parts[pt][j] < N; j++) {
                    k_bn_stats_add(parts[pt][j], C, HW, acc, x + (size_t)n0 * C * HW);
                    n0 += parts[pt][j];
                }
                k_bn_stats_add(N - n0, C, HW, acc, x + (size_t)n0 * C * HW);
                k_bn_stats_end(C, acc, mp, vp);
                CHECK_MSG(!memcmp(m, mp, (size_t)C * sizeof *m) && !memcmp(v, vp, (size_t)C * sizeof *v),
                          "N=%d C=%d HW=%d split %zu level %d", N, C, HW, pt, lvl);
            }
            free(x), free(m), free(v), free(mp), free(vp), free(acc);
        }
    }
    k_simd_force(-1);
}

/* Chunks whose means lie far apart (the batch's first half about +1e3, the
 * second about -1e3): the merge carries the spread between them, as one
 * two-pass sum over the batch would. */
TEST(bn_stats_merges_chunks_with_distant_means) {
    int N = 64, C = 2, HW = 9;
    unsigned seed = 7;
    float *x = rand_buf((size_t)N * C * HW, &seed);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < C * HW; j++) x[(size_t)i * C * HW + j] += i < N / 2 ? 1e3f : -1e3f;
    bn_stats_hold_to_ref(N, C, HW, x, 1e-6, 0.99e6, 1.01e6); /* the halves' spread, 1e3^2, dominates */
    free(x);
}

/* ---- log-softmax ------------------------------------------------------------------ */

TEST(log_softmax_rows_sum_exp_to_one) {
    unsigned seed = 31;
    int rows = 128, cols = 10;
    float *x = rand_buf((size_t)rows * cols, &seed), *y = nan_buf((size_t)rows * cols);
    for (int i = 0; i < cols; i++) x[i] = 1000.0f + (float)i; /* would overflow exp without the shift */
    for (int i = 0; i < cols; i++) x[cols + i] = -1000.0f - (float)i;
    for (int i = 2 * cols; i < rows * cols; i++) x[i] *= 20.0f;
    k_log_softmax_fwd(rows, cols, y, x);
    for (int r = 0; r < rows; r++) {
        double s = 0.0;
        for (int c = 0; c < cols; c++) {
            CHECK(y[r * cols + c] <= 0.0f);
            s += exp((double)y[r * cols + c]);
        }
        CHECK_NEAR(s, 1.0, 1e-5);
    }
    /* hand value: log_softmax([0, ln 3]) = [ln 1/4, ln 3/4] */
    float a[2] = {0.0f, logf(3.0f)}, b[2];
    k_log_softmax_fwd(1, 2, b, a);
    CHECK_NEAR(b[0], log(0.25), 1e-6);
    CHECK_NEAR(b[1], log(0.75), 1e-6);
    free(x), free(y);
}

TEST(log_softmax_bwd_matches_finite_differences) {
    int rows = 3, cols = 5;
    unsigned seed = 41;
    float *x = rand_buf(15, &seed), *r = rand_buf(15, &seed), y[15], dx[15], yp[15], ym[15];
    k_log_softmax_fwd(rows, cols, y, x);
    k_log_softmax_bwd(rows, cols, dx, r, y);
    const float h = 1e-2f;
    for (int i = 0; i < 15; i++) {
        float keep = x[i];
        x[i] = keep + h;
        k_log_softmax_fwd(rows, cols, yp, x);
        x[i] = keep - h;
        k_log_softmax_fwd(rows, cols, ym, x);
        x[i] = keep;
        double lp = 0, lm = 0;
        for (int k = 0; k < 15; k++) lp += (double)r[k] * yp[k], lm += (double)r[k] * ym[k];
        CHECK_NEAR(dx[i], (lp - lm) / (2 * h), 1e-3);
    }
    free(x), free(r);
}

/* ---- RNG ---------------------------------------------------------------------------- */

TEST(philox_known_answers) {
    /* Random123's kat_vectors for philox4x32 with 10 rounds */
    struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        uint32_t out[4];
        k_philox4x32_10(out, kat[k].ctr, kat[k].key);
        for (int i = 0; i < 4; i++) CHECK_MSG(out[i] == kat[k].out[i], "kat %zu word %d: %08x", k, i, out[i]);
    }
}

TEST(rng_uniform_deterministic_range_mean) {
    double sum = 0.0, sq = 0.0;
    int n = 200000, same_counter = 0, same_seed = 0;
    for (int i = 0; i < n; i++) {
        float u = k_rng_uniform(42, 7, (uint64_t)i);
        CHECK(u >= 0.0f && u < 1.0f);
        CHECK(u == k_rng_uniform(42, 7, (uint64_t)i)); /* a pure function */
        if (u == k_rng_uniform(42, 8, (uint64_t)i)) same_counter++;
        if (u == k_rng_uniform(43, 7, (uint64_t)i)) same_seed++;
        sum += u;
        sq += (double)u * u;
        /* 24 random bits: u * 2^24 is a whole number */
        CHECK(u * 16777216.0f == floorf(u * 16777216.0f));
    }
    double mean = sum / n, var = sq / n - mean * mean;
    CHECK_NEAR(mean, 0.5, 0.005);       /* sd of the mean: 0.29/sqrt(2e5) = 6.5e-4 */
    CHECK_NEAR(var, 1.0 / 12.0, 0.002);
    /* different counters (steps) or seeds: independent streams, a match is a 2^-24 event */
    CHECK(same_counter < 5);
    CHECK(same_seed < 5);
    /* high index bits and high counter bits matter too */
    CHECK(k_rng_uniform(1, 0, 1) != k_rng_uniform(1, 0, 1ull << 32 | 1));
    CHECK(k_rng_uniform(1, 1, 5) != k_rng_uniform(1, 1ull << 32 | 1, 5));
}

TEST(rng_fill_matches_single_draws) {
    /* every start alignment and length around the 4-per-block and 64-per-step
     * boundaries, and block numbers that cross 2^32 inside one AVX-512 step */
    uint64_t starts[] = {0, 1, 2, 3, 5, 64, 1000, (1ull << 34) - 37, (1ull << 34) - 64, (1ull << 40) + 3};
    size_t lens[] = {0, 1, 3, 4, 7, 63, 64, 65, 130, 300};
    float out[400];
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t a = 0; a < sizeof starts / sizeof starts[0]; a++)
            for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
                for (size_t j = 0; j < 400; j++) out[j] = -1.0f;
                k_rng_uniform_fill(0x123456789abcdefull, 77, starts[a], lens[b], out);
                int bad = 0;
                for (size_t j = 0; j < lens[b]; j++) bad += out[j] != k_rng_uniform(0x123456789abcdefull, 77, starts[a] + j);
                for (size_t j = lens[b]; j < 400; j++) bad += out[j] != -1.0f; /* nothing past n */
                CHECK_MSG(bad == 0, "simd%d start %llu len %zu: %d mismatches", lvl, (unsigned long long)starts[a],
                          lens[b], bad);
            }
    }
    k_simd_force(-1);
}

/* The boundary: a draw equal to p keeps its element (u < p drops), on every
 * SIMD path. p is set to the draws themselves, so the equality is exact. */
TEST(dropout_keeps_a_draw_equal_to_p) {
    size_t n = 600; /* past one 256-draw chunk, with a partial one after it */
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = 1.0f + (float)i;
    size_t probes[] = {3, 70, 300, 599};
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t a = 0; a < sizeof probes / sizeof probes[0]; a++) {
            float p = k_rng_uniform(17, 3, 1 + probes[a]); /* index0 = 1: chunks start off a Philox block */
            if (!(p > 0.0f && p < 1.0f)) continue;
            k_dropout(n, y, x, p, 17, 3, 1);
            CHECK_MSG(y[probes[a]] == x[probes[a]] * (1.0f / (1.0f - p)), "simd%d index %zu: %g", lvl, probes[a],
                      (double)y[probes[a]]);
        }
    }
    k_simd_force(-1);
    free(x), free(y);
}

TEST(dropout_matches_formula) {
    size_t n = 1000;
    unsigned seed = 51;
    float *x = rand_buf(n, &seed), *y = nan_buf(n), *z = malloc(n * sizeof(float));
    x[10] = NAN; /* dropped or scaled, never mixed with the mask */
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_dropout(n, y, x, 0.3f, 99, 5, 0);
        size_t dropped = 0;
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
            float want = k_rng_uniform(99, 5, i) < 0.3f ? 0.0f : x[i] * (1.0f / (1.0f - 0.3f));
            bad += !(y[i] == want || (isnan(y[i]) && isnan(want)));
            dropped += y[i] == 0.0f;
        }
        CHECK_EQ(bad, 0);
        CHECK(dropped > 240 && dropped < 360); /* ~300 of 1000 */
        memcpy(z, x, n * sizeof(float));       /* in place: y == x */
        k_dropout(n, z, z, 0.3f, 99, 5, 0);
        CHECK(memcmp(z, y, n * sizeof(float)) == 0 || isnan(y[10]));
        for (size_t i = 0; i < n; i++)
            if (i != 10) CHECK(z[i] == y[i]);
    }
    k_simd_force(-1);
    free(x), free(y), free(z);
}

/* Made in bf16 (pass_bf16_out.c): the rounding of the fp32 dropout, element
 * for element, over more than two scratch pieces and from an index that
 * starts inside a Philox block (a micro-batch tile's offset). */
TEST(dropout_bf16_is_the_rounded_fp32_dropout) {
    size_t n = 2 * K_BF16_PIECE_FLOATS + 1001;
    unsigned seed = 52;
    float *x = rand_buf(n, &seed), *y = nan_buf(n), *piece = nan_buf(K_BF16_PIECE_FLOATS);
    x[3] = 1.00390625f; /* 1 + 2^-8 scaled by 1/(1-p): rounding away from the tie must still match */
    x[K_BF16_PIECE_FLOATS + 5] = NAN;
    uint16_t *y16 = malloc(n * sizeof *y16);
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        memset(y16, 0xA5, n * sizeof *y16);
        k_dropout(n, y, x, 0.25f, 7, 11, 6);
        k_dropout_bf16(n, y16, x, 0.25f, 7, 11, 6, piece);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += y16[i] != k_bf16_from_f32(y[i]);
        CHECK_MSG(bad == 0, "%zu of %zu elements differ at simd level %d", bad, n, lvl);
    }
    k_simd_force(-1);
    free(x), free(y), free(piece), free(y16);
}

TEST(simd_force_clamps_to_cpu) {
    int best = k_simd_detect();
    CHECK(best >= K_SIMD_GENERIC && best <= K_SIMD_AVX512);
    CHECK_EQ(k_simd_force(K_SIMD_GENERIC), K_SIMD_GENERIC);
    CHECK_EQ(k_simd_level(), K_SIMD_GENERIC);
    CHECK_EQ(k_simd_force(K_SIMD_AVX512 + 5), best);
    CHECK_EQ(k_simd_force(-1), best);
}

/* The gradient through (mean, variance): by the formula in double, and the
 * same bits at every SIMD width (HW = 37 leaves a tail at each). */
TEST(bn_stats_bwd_matches_the_formula_at_every_width) {
    enum { N = 3, C = 2, HW = 37 };
    static float x[N * C * HW], dx[3][N * C * HW];
    float ds[2 * C] = {0.5f, -1.25f, 0.75f, 2.0f}, st[C] = {0.1f, -0.3f};
    for (int i = 0; i < N * C * HW; i++) x[i] = (float)((i * 29) % 53) / 7.0f - 3.0f;
    int64_t count = 5 * HW; /* as for a tile of 3 samples of a batch of 5 */
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_bn_stats_bwd(N, C, HW, count, dx[lvl], ds, x, st);
        if (lvl) CHECK_MSG(!memcmp(dx[lvl], dx[0], sizeof dx[0]), "SIMD level %d differs from the baseline", lvl);
    }
    k_simd_force(-1);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            for (int k = 0; k < HW; k++) {
                int o = (i * C + c) * HW + k;
                double want = (double)ds[c] / count + 2.0 * ds[C + c] * ((double)x[o] - st[c]) / count;
                CHECK_NEAR(dx[0][o], want, 1e-6 * (1 + fabs(want)));
            }
}

/* The statistics gradient with an addend and a ReLU's mask folded in gives
 * the bits of the separate steps, at every SIMD width, with the addend on
 * either side, without either, with the addend made by a per-channel product
 * (u * uf[c]: the MUL it replaces) or not, and with masks that are NaN, -0,
 * +0 and negative (each masks to +0). */
TEST(bn_stats_bwd_fused_gives_the_separate_ops_bits) {
    enum { N = 3, C = 2, HW = 37, L = N * C * HW };
    static float x[L], u[L], m[L], dx[L], want[L];
    float ds[2 * C] = {0.5f, -1.25f, 0.75f, 2.0f}, st[C] = {0.1f, -0.3f}, uf[C] = {0.3f, -1.7f};
    for (int i = 0; i < L; i++) {
        x[i] = (float)((i * 29) % 53) / 7.0f - 3.0f;
        u[i] = (float)((i * 17) % 41) / 3.0f - 6.5f;
        m[i] = i % 5 == 0 ? NAN : i % 5 == 1 ? -0.0f : i % 5 == 2 ? 0.0f : i % 5 == 3 ? -1.5f : 2.0f + (float)i;
    }
    int64_t count = 5 * HW;
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (int mode = 0; mode < 12; mode++) { /* addend none / after / first, times mask or not, times scaled or not */
            int add = mode % 3, masked = mode / 3 % 2, scaled = mode / 6;
            if (scaled && !add) continue;
            k_bn_stats_bwd(N, C, HW, count, want, ds, x, st);
            for (int i = 0; i < L; i++) {
                volatile float w = scaled ? u[i] * uf[i / HW % C] : u[i]; /* the MUL's own rounding */
                float v = want[i];
                if (add) v = add == 2 ? w + v : v + w;
                if (masked) v = m[i] > 0.0f ? v : 0.0f;
                want[i] = v;
            }
            k_bn_stats_bwd_fused(N, C, HW, count, dx, ds, x, st, add ? u : NULL, scaled ? uf : NULL, add == 2,
                                 masked ? m : NULL);
            CHECK_MSG(!memcmp(dx, want, sizeof dx), "SIMD level %d, addend %d, mask %d, scaled %d", lvl, add, masked,
                      scaled);
        }
    }
    k_simd_force(-1);
}

/* Written blocked (nChw8c / nChw16c, for the oneDNN rows that read it:
 * engine/pass_layout.c), the statistics gradient's values are the plain
 * form's, moved: element (n, c, p) at ((n * C/B + c/B) * HW + p) * B + c%B.
 * At every SIMD width, for planes of whole vectors (the transposes) and not
 * (HW = 37: the scalar loops), with the addend and the mask, and with dx
 * written over the addend (the memory plan may put it there). */
TEST(bn_stats_bwd_blocked_is_the_plain_one_moved) {
    enum { N = 3, C = 32, HWMAX = 64, L = N * C * HWMAX };
    static float x[L], u[L], m[L], plain[L], got[L], planes[16 * HWMAX];
    float ds[2 * C], st[C], uf[C];
    for (int c = 0; c < C; c++) ds[c] = 0.25f * (float)(c % 7) - 0.5f, ds[C + c] = 0.125f * (float)(c % 5) - 0.25f, st[c] = 0.01f * (float)c;
    for (int c = 0; c < C; c++) uf[c] = 0.3f * (float)(c % 9) - 1.1f;
    for (int i = 0; i < L; i++) {
        x[i] = (float)((i * 29) % 53) / 7.0f - 3.0f;
        u[i] = (float)((i * 17) % 41) / 3.0f - 6.5f;
        m[i] = i % 3 == 0 ? -1.0f : 1.0f;
    }
    static const int hws[] = {64, 16, 37};
    int64_t count = 5 * 64;
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (int h = 0; h < 6; h++)
            for (int B = 8; B <= 16; B *= 2) {
                int HW = hws[h % 3];
                const float *f = h >= 3 ? uf : NULL; /* the addend a per-channel product */
                size_t n = (size_t)N * C * HW;
                CHECK(k_bn_stats_bwd_blocked_floats(HW, B) <= sizeof planes / sizeof *planes);
                k_bn_stats_bwd_fused(N, C, HW, count, plain, ds, x, st, u, f, 1, m);
                memcpy(got, u, n * sizeof(float)); /* in place: dx is the addend's buffer */
                k_bn_stats_bwd_fused_blocked(N, C, HW, B, count, got, ds, x, st, got, f, 1, m, planes);
                int bad = 0;
                for (int i = 0; i < N; i++)
                    for (int c = 0; c < C; c++)
                        for (int q = 0; q < HW; q++) {
                            float want = plain[((size_t)i * C + c) * HW + q];
                            float g = got[(((size_t)i * (C / B) + c / B) * HW + q) * B + c % B];
                            bad += memcmp(&want, &g, sizeof g) != 0;
                        }
                CHECK_MSG(!bad, "level %d, HW %d, block %d: %d values moved wrong or changed", lvl, HW, B, bad);
            }
    }
    k_simd_force(-1);
}

/* k_sum_runs (16 or 8 runs at a time on AVX-512, their lanes transposed to
 * fold together) gives each run exactly k_sum_run's bits, at every SIMD level,
 * for run lengths below, at and past the 16 lanes, with tails, and run
 * counts around the blocks of 8 and 16. Two lanes hold +-1e18, 2^60 above the
 * rest, so that folding the lanes in another order changes the double. */
TEST(sum_runs_give_each_run_the_bits_of_sum_run) {
    static const int lens[] = {1, 5, 15, 16, 17, 31, 64, 144, 577};
    static const int counts[] = {1, 7, 8, 9, 15, 16, 17, 24, 33};
    static float x[33 * 577];
    double sums[33];
    for (int i = 0; i < 33 * 577; i++) {
        float v = (float)((i * 37) % 101) / 7.0f - 7.0f;
        x[i] = i % 16 == 3 ? 1e18f + v : i % 16 == 11 ? -1e18f : v; /* two lanes that cancel, 2^60 above the rest */
    }
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t a = 0; a < sizeof lens / sizeof *lens; a++)
            for (size_t b = 0; b < sizeof counts / sizeof *counts; b++) {
                int n = lens[a], runs = counts[b];
                k_sum_runs(x, runs, n, sums);
                for (int r = 0; r < runs; r++) {
                    double want = k_sum_run(x + (size_t)r * n, n);
                    CHECK_MSG(sums[r] == want, "level %d, %d runs of %d: run %d %.17g, alone %.17g", lvl, runs, n, r,
                              sums[r], want);
                }
            }
    }
    k_simd_force(-1);
}

/* k_sum_runs_at (runs at unrelated addresses, four or two chains at once)
 * gives each run k_sum_run's bits at every SIMD level, for 1-7 runs (the
 * 4, 2 and 1 paths), lengths with and without tails, runs in reverse order
 * and overlapping. The +-1e18 lanes make another fold order show. */
TEST(sum_runs_at_give_each_run_the_bits_of_sum_run) {
    static const int lens[] = {2, 15, 16, 25, 144, 1024};
    static float x[8 * 1024];
    const float *xp[7];
    double sums[7];
    for (int i = 0; i < 8 * 1024; i++) {
        float v = (float)((i * 41) % 103) / 9.0f - 5.0f;
        x[i] = i % 16 == 3 ? 1e18f + v : i % 16 == 11 ? -1e18f : v;
    }
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t a = 0; a < sizeof lens / sizeof *lens; a++)
            for (int runs = 1; runs <= 7; runs++) {
                int n = lens[a];
                for (int r = 0; r < runs; r++) xp[r] = x + (size_t)(runs - 1 - r) * 1024 + (size_t)r * 3;
                k_sum_runs_at(xp, runs, n, sums);
                for (int r = 0; r < runs; r++) {
                    double want = k_sum_run(xp[r], n);
                    CHECK_MSG(sums[r] == want, "level %d, %d runs of %d: run %d %.17g, alone %.17g", lvl, runs, n, r,
                              sums[r], want);
                }
            }
    }
    k_simd_force(-1);
}

/* k_lane_sums (on AVX-512 16 or 32 vectors at a time, transposed so that a
 * lane of 16 vectors is one zmm) gives each vector the bits of the scalar
 * definition, 0.0 + lane 0 + ... + lane 15 in double, rounded to float once,
 * at every SIMD level, for vector counts around the groups of 16 and 32, at 4,
 * 8 and 16 lanes, into a separate array and compacted in place. Lanes 3 and 11
 * hold +-1e18 (2^60 above the rest): adding the lanes in another order, or
 * rounding to float before the end, changes the result. */
TEST(lane_sums_give_each_vector_the_bits_of_the_lane_order_sum) {
    static const int counts[] = {1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100};
    static const int lanes[] = {4, 8, 16};
    enum { MAXV = 100 };
    static float x[MAXV * 16], inplace[MAXV * 16], out[MAXV], want[MAXV];
    for (int i = 0; i < MAXV * 16; i++) {
        float v = (float)((i * 37) % 101) / 7.0f - 7.0f;
        x[i] = i % 16 == 3 ? 1e18f + v : i % 16 == 11 ? -1e18f : v;
    }
    x[5 * 16 + 2] = -0.0f;
    x[7 * 16 + 9] = NAN;
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (size_t a = 0; a < sizeof lanes / sizeof *lanes; a++)
            for (size_t b = 0; b < sizeof counts / sizeof *counts; b++) {
                int L = lanes[a], n = counts[b];
                for (int v = 0; v < n; v++) {
                    double t = 0.0;
                    for (int l = 0; l < L; l++) t += x[v * L + l];
                    want[v] = (float)t;
                }
                k_lane_sums(x, n, L, out);
                memcpy(inplace, x, sizeof(float) * (size_t)n * L);
                k_lane_sums(inplace, n, L, inplace);
                CHECK_MSG(!memcmp(out, want, sizeof(float) * (size_t)n), "level %d, %d vectors of %d lanes", lvl, n, L);
                CHECK_MSG(!memcmp(inplace, want, sizeof(float) * (size_t)n), "level %d, %d vectors of %d lanes, in place",
                          lvl, n, L);
            }
    }
    k_simd_force(-1);
}

/* SUM_TO's runs give the same bits at every SIMD width, and the sum is
 * within float rounding of the double sum (1003 elements: a tail at each). */
TEST(sum_and_add_runs_agree_at_every_width) {
    enum { N = 1003 };
    static float x[N], y[3][N];
    double want = 0, got[3];
    for (int i = 0; i < N; i++) want += x[i] = (float)((i * 31) % 97) / 13.0f - 3.5f;
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        got[lvl] = k_sum_run(x, N);
        for (int i = 0; i < N; i++) y[lvl][i] = (float)i * 0.5f;
        k_add_run(y[lvl], x, N);
        if (lvl) {
            CHECK_MSG(got[lvl] == got[0], "SIMD level %d: sum %.17g, baseline %.17g", lvl, got[lvl], got[0]);
            CHECK(!memcmp(y[lvl], y[0], sizeof y[0]));
        }
    }
    k_simd_force(-1);
    CHECK_NEAR(got[0], want, 1e-4);
    CHECK_EQ(y[0][10], 5.0f + x[10]);
}

/* ---- the ISA cap ------------------------------------------------------------------ */

/* The cap stops detection (and so every kernel's choice of width), clamps
 * forcing, and takes the AVX512-BF16 path away below AVX-512; the values
 * parse as XLATRAIN_ISA's, and the reason names what set the cap. */
TEST(isa_cap_stops_detection_forcing_and_the_bf16_path) {
    int hw = k_simd_hardware();
    CHECK_EQ(k_isa_parse("avx512"), K_SIMD_AVX512);
    CHECK_EQ(k_isa_parse("avx2"), K_SIMD_AVX2);
    CHECK_EQ(k_isa_parse("generic"), K_SIMD_GENERIC);
    CHECK_EQ(k_isa_parse("auto"), K_ISA_AUTO);
    CHECK_EQ(k_isa_parse(""), K_ISA_AUTO);
    CHECK_EQ(k_isa_parse(NULL), K_ISA_AUTO);
    CHECK_EQ(k_isa_parse("AVX2"), -2);
    CHECK_EQ(k_isa_parse("avx"), -2);
    char why[128];
    for (int cap = K_SIMD_GENERIC; cap <= K_SIMD_AVX512; cap++) {
        k_isa_set_cap(cap, "test cap");
        int want = cap < hw ? cap : hw;
        CHECK_EQ(k_isa_cap(), cap);
        CHECK_STR_EQ(k_isa_cap_name(), k_simd_name(cap));
        CHECK_EQ(k_simd_detect(), want);
        CHECK_EQ(k_simd_level(), want);
        CHECK_EQ(k_simd_force(K_SIMD_AVX512), want);
        k_simd_force(-1);
        CHECK_EQ(k_isa_reason(why, sizeof why), want);
        if (cap <= hw) CHECK_STR_EQ(why, "test cap");
        else CHECK_STR_CONTAINS(why, "above this CPU");
        if (cap < K_SIMD_AVX512) {
            CHECK_EQ(k_simd_has_avx512bf16(), 0);
            CHECK_EQ(k_bf16_detect(), K_BF16_REF);
            CHECK_EQ(k_bf16_force(K_BF16_DIRECT), K_BF16_REF);
            k_bf16_force(-1);
        }
    }
    /* a forced level does not outlive a lower cap set after it */
    k_isa_set_cap(K_ISA_AUTO, "");
    k_simd_force(hw);
    k_isa_set_cap(K_SIMD_GENERIC, "test cap");
    CHECK_EQ(k_simd_level(), K_SIMD_GENERIC);
    k_simd_force(-1);
    k_isa_set_cap(K_ISA_AUTO, "");
    CHECK_EQ(k_simd_detect(), hw);
    CHECK_STR_EQ(k_isa_cap_name(), "auto");
    CHECK_EQ(k_isa_reason(why, sizeof why), hw);
    CHECK_STR_EQ(why, "detected");
}

/* The convolutions' ReLU epilogue and backward mask (act.c) at every SIMD
 * level against the formula: NaN and -0 become +0 (as the engine's RELU),
 * over lengths that leave every tail of 8 and 16 lanes. */
TEST(relu_and_its_backward_mask_match_the_formula_at_every_level) {
    enum { N = 53 };
    static const float special[] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1e-45f, -1e-45f, 3.5f, -2.0f};
    float x[N], dy[N], a[N], b[N];
    unsigned seed = 7;
    float *r = rand_buf(N, &seed);
    for (int i = 0; i < N; i++) {
        x[i] = i % 5 == 0 ? special[(i / 5) % 9] : r[i];
        dy[i] = r[(i * 7) % N] + 0.5f;
    }
    free(r);
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        CHECK_EQ(k_simd_force(lvl), lvl);
        for (int n = 0; n <= N; n++) {
            memcpy(a, x, sizeof a);
            memcpy(b, dy, sizeof b);
            k_relu_inplace(a, (size_t)n);
            k_relu_bwd_inplace(b, x, (size_t)n);
            for (int i = 0; i < N; i++) {
                float ra = i < n ? (x[i] > 0.0f ? x[i] : 0.0f) : x[i];
                float rb = i < n ? (x[i] > 0.0f ? dy[i] : 0.0f) : dy[i];
                CHECK_MSG(!memcmp(&a[i], &ra, 4), "level %d n %d: relu[%d] = %g, want %g", lvl, n, i, a[i], ra);
                CHECK_MSG(!memcmp(&b[i], &rb, 4), "level %d n %d: mask[%d] = %g, want %g", lvl, n, i, b[i], rb);
            }
        }
    }
    k_simd_force(-1);
}
