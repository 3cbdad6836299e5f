/* test_kernels_bf16.c — the bf16 kernels: the rounding, then every path of
 * the bf16 GEMM and convolutions against its reference twin.
 *
 * The twins (k_gemm_bf16_ref, and the fp32 reference convolutions of conv_ref.c
 * run on the widened bf16 operands) accumulate in double. A product of two
 * bf16 values is exact in fp32 (8 + 8 significant bits fit in 24), so the
 * only difference a correct fast kernel can show is the fp32 rounding of its
 * running sums: with n terms, |fast - exact| <= gamma_n * sum|a_k b_k|,
 * gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of
 * Numerical Algorithms, 3.1), whatever the order of the sum. vdpbf16ps also
 * treats denormal inputs and results as zero, at most 2^-126 per term. The
 * bound is checked element by element, with sum|a_k b_k| computed by the twin
 * on |a| and |b|; the double twin's own error (about 2^-53 relative) is
 * far below it. Outputs are pre-filled with NaN, scratch is allocated at
 * exactly the advertised size (ASan sees overruns).
 */
#include "test.h"

#include <math.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/conv_common.h"
#include "kernels/conv_direct_bf16.h"
#include "kernels/gemm_bf16.h"
#include "kernels/simd.h"

static k_bf16 bits(float f) { return k_bf16_from_f32(f); }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

TEST(bf16_rounding_is_nearest_even_and_keeps_nan) {
    CHECK_EQ(bits(1.0f), 0x3f80);
    CHECK_EQ(bits(-2.0f), 0xc000);
    CHECK_EQ(bits(from_bits(0x3f808000u)), 0x3f80);   /* a tie, even below: down */
    CHECK_EQ(bits(from_bits(0x3f818000u)), 0x3f82);   /* a tie, odd below: up */
    CHECK_EQ(bits(from_bits(0x3f808001u)), 0x3f81);   /* above the tie: up */
    CHECK_EQ(bits(from_bits(0x3f807fffu)), 0x3f80);   /* below the tie: down */
    CHECK_EQ(bits(INFINITY), 0x7f80);
    CHECK_EQ(bits(-INFINITY), 0xff80);
    CHECK_EQ(bits(from_bits(0x7f7fffffu)), 0x7f80);   /* FLT_MAX rounds to infinity, as IEEE */
    CHECK(isnan(k_bf16_to_f32(bits(from_bits(0x7f800001u))))); /* a NaN whose payload is all in the low bits */
    CHECK(isnan(k_bf16_to_f32(bits(NAN))));
    CHECK_EQ(bits(from_bits(0x00000001u)), 0x0000);   /* the smallest denormal rounds to +0 */
    CHECK_EQ(bits(from_bits(0x00018000u)), 0x0002);   /* denormals round like the rest */
    CHECK_EQ(k_bf16_to_f32(0x3fc0), 1.5f);
}

/* the bulk cast gives the scalar's bits at every SIMD level */
TEST(bf16_cast_matches_scalar_on_every_simd_level) {
    enum { N = 1037 };
    float in[N];
    k_bf16 out[N];
    unsigned s = 7;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        in[i] = from_bits(s);   /* every bit pattern: NaNs, infinities, denormals */
    }
    in[0] = NAN;
    in[1] = -0.0f;
    for (int lvl = K_SIMD_GENERIC; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        k_bf16_cast(N, out, in);
        for (int i = 0; i < N; i++) CHECK_MSG(out[i] == bits(in[i]), "level %d element %d: %04x vs %04x", lvl, i, out[i], bits(in[i]));
        float back[N];
        k_bf16_expand(N, back, out);
        for (int i = 0; i < N; i++) {
            uint32_t u;
            memcpy(&u, &back[i], 4);
            CHECK_EQ(u, (uint32_t)out[i] << 16);
        }
    }
    k_simd_force(-1);
}

static k_bf16 *rand_bf16(size_t n, unsigned *seed) {
    k_bf16 *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = bits((float)((*seed >> 8) & 0xffff) / 16384.0f - 2.0f);
    }
    return p;
}
static k_bf16 *abs_bf16(const k_bf16 *p, size_t n) {
    k_bf16 *q = malloc((n ? n : 1) * sizeof *q);
    for (size_t i = 0; i < n; i++) q[i] = p[i] & 0x7fff;
    return q;
}
static float *nan_f32(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}
static void *scratch_of(size_t bytes) { return aligned_alloc(64, (bytes + 63) & ~(size_t)63); }

/* every |got - want| <= gamma_n * mag + n * 2^-126; returns the worst ratio to the bound */
static double check_bound(const char *what, const float *got, const float *want, const float *mag, size_t count, int nterms) {
    double u = ldexp(1.0, -24), gamma = nterms * u / (1 - nterms * u), worst = 0;
    for (size_t i = 0; i < count; i++) {
        double bound = gamma * mag[i] + nterms * ldexp(1.0, -126), d = fabs((double)got[i] - want[i]);
        if (!(d <= bound)) {
            CHECK_MSG(0, "%s: element %zu: %.9g vs twin %.9g (bound %.3g)", what, i, got[i], want[i], bound);
            return INFINITY;
        }
        if (bound > 0 && d / bound > worst) worst = d / bound;
    }
    return worst;
}

/* the paths this CPU has: the reference one always, AVX512-BF16 (GEMM and direct) when present */
static int npaths(void) { return k_bf16_npaths(); }

static void gemm_case(int tA, int tB, int M, int N, int K, int acc) {
    unsigned seed = (unsigned)(M * 131 + N * 7 + K + tA * 3 + tB * 5 + acc);
    int lda = tA ? M : K, ldb = tB ? K : N;
    size_t na = (size_t)M * K, nb = (size_t)K * N;
    k_bf16 *A = rand_bf16(na, &seed), *B = rand_bf16(nb, &seed), *Aa = abs_bf16(A, na), *Ba = abs_bf16(B, nb);
    float *C0 = nan_f32((size_t)M * N), *want = nan_f32((size_t)M * N), *mag = nan_f32((size_t)M * N);
    for (size_t i = 0; acc && i < (size_t)M * N; i++) C0[i] = (float)(i % 7) - 3.0f;
    memcpy(want, C0, (size_t)M * N * sizeof *want);
    k_gemm_bf16_ref(tA, tB, M, N, K, A, lda, B, ldb, acc, want, N);
    for (size_t i = 0; i < (size_t)M * N; i++) mag[i] = acc ? fabsf(C0[i]) : 0.0f;
    k_gemm_bf16_ref(tA, tB, M, N, K, Aa, lda, Ba, ldb, 1, mag, N);
    void *scratch = scratch_of(k_gemm_bf16_scratch(M, N, K));
    for (int path = 0; path < npaths(); path++) {
        k_bf16_force(path);
        float *C = nan_f32((size_t)M * N);
        memcpy(C, C0, (size_t)M * N * sizeof *C);
        k_gemm_bf16(tA, tB, M, N, K, A, lda, B, ldb, acc, C, N, scratch);
        char what[128];
        snprintf(what, sizeof what, "gemm %s tA%d tB%d M%d N%d K%d acc%d", k_bf16_path_name(path), tA, tB, M, N, K, acc);
        check_bound(what, C, want, mag, (size_t)M * N, K + acc);
        free(C);
    }
    k_bf16_force(-1);
    free(A), free(B), free(Aa), free(Ba), free(C0), free(want), free(mag), free(scratch);
}

/* {40, 48, 100}: the packers' 16x16 transposes of k-pair words (row-major A,
 * B read down its columns) with 2 pairs left over and a block of 8 rows past
 * the last pair of blocks. */
TEST(bf16_gemm_every_path_against_its_twin) {
    static const int shapes[][3] = {{1, 1, 1}, {8, 32, 2}, {7, 15, 3}, {9, 33, 17}, {17, 64, 384}, {16, 31, 385},
                                    {128, 50, 320}, {10, 50, 128}, {3, 100, 800}, {40, 48, 100}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int t = 0; t < 4; t++) gemm_case(t & 1, t >> 1, shapes[i][0], shapes[i][1], shapes[i][2], 0);
    gemm_case(0, 0, 9, 40, 385, 1);
    gemm_case(1, 1, 13, 17, 5, 1);
}

/* The paths the test above runs are the ones it names: on a CPU with
 * AVX512-BF16 the vdpbf16ps path is the default, forcing the SIMD level below
 * AVX-512 turns it off, and k_bf16_force selects the reference path. */
TEST(bf16_gemm_fast_path_is_the_vdpbf16ps_kernel) {
    if (k_bf16_detect() != K_BF16_AVX512BF16) test_skip("this CPU has no AVX512-BF16");
    CHECK_EQ(k_bf16_path(), K_BF16_AVX512BF16);
    CHECK_EQ(k_simd_force(K_SIMD_AVX2), K_SIMD_AVX2);
    CHECK_EQ(k_bf16_path(), K_BF16_REF); /* below AVX-512 the fast path is off */
    k_simd_force(-1);
    CHECK_EQ(k_bf16_force(K_BF16_REF), K_BF16_REF);
    k_bf16_force(-1);
}

/* ---- convolutions ---------------------------------------------------------------- */

typedef enum { FWD, BWD_DATA, BWD_WEIGHT } pass;

static void widen(const k_bf16 *p, size_t n, float *out) { for (size_t i = 0; i < n; i++) out[i] = k_bf16_to_f32(p[i]); }

/* the twin: the fp32 double-accumulating reference on widened operands */
static void conv_twin(pass ps, const k_conv_shape *s, float *out, const k_bf16 *a, size_t na, const k_bf16 *b, size_t nb,
                      const float *bias) {
    float *fa = malloc(na * sizeof *fa), *fb = malloc(nb * sizeof *fb);
    widen(a, na, fa);
    widen(b, nb, fb);
    if (ps == FWD) k_conv2d_fwd_ref(s, out, fa, fb, bias);
    else if (ps == BWD_DATA) k_conv2d_bwd_data_ref(s, out, fa, fb);
    else k_conv2d_bwd_weight_ref(s, out, NULL, fa, fb);
    free(fa), free(fb);
}

/* The pool epilogue (k_conv2d_fwd_pool2_bf16, relu 0 and 1): values and
 * indices bit for bit k_maxpool2d_fwd of the forward output it would have
 * written (y plain, yr with the ReLU), on the path in force. */
static void pool_epilogue_case(const char *what, const k_conv_shape *s, const k_bf16 *x, const k_bf16 *w,
                               const float *bias, const float *y, const float *yr) {
    if (s->Ho < 2 || s->Wo < 2) return;
    k_pool_shape ps = {.N = s->N, .C = s->Co, .H = s->Ho, .W = s->Wo, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&ps), 0);
    size_t np = (size_t)ps.N * ps.C * ps.Ho * ps.Wo;
    void *scratch = scratch_of(k_conv2d_pool2_bf16_scratch(s));
    for (int relu = 0; relu < 2; relu++) {
        float *want = nan_f32(np), *got = nan_f32(np);
        uint8_t *wa = malloc(np * sizeof *wa), *ga = malloc(np * sizeof *ga);
        memset(ga, 0xff, np * sizeof *ga);
        k_maxpool2d_fwd(&ps, want, wa, relu ? yr : y);
        k_conv2d_fwd_pool2_bf16(s, got, ga, x, w, bias, relu, scratch);
        CHECK_MSG(!memcmp(want, got, np * sizeof *got), "%s: pool epilogue (relu %d) values differ", what, relu);
        CHECK_MSG(!memcmp(wa, ga, np * sizeof *ga), "%s: pool epilogue (relu %d) indices differ", what, relu);
        free(want), free(got), free(wa), free(ga);
    }
    free(scratch);
}

static void conv_case(k_conv_shape s, pass ps) {
    CHECK_EQ(k_conv_shape_infer(&s), 0);
    unsigned seed = (unsigned)(s.Ci * 31 + s.Co * 17 + s.H + ps);
    size_t nx = (size_t)s.N * s.Ci * s.H * s.W, nw = (size_t)s.Co * s.Ci * s.kh * s.kw, ny = (size_t)s.N * s.Co * s.Ho * s.Wo;
    /* operands (a, b) and the output's size per pass */
    size_t na = ps == BWD_DATA ? ny : nx, nb = ps == FWD ? nw : ps == BWD_DATA ? nw : ny;
    size_t nout = ps == FWD ? ny : ps == BWD_DATA ? nx : nw;
    int nterms = ps == FWD ? s.Ci * s.kh * s.kw + 1 : ps == BWD_DATA ? s.Co * s.kh * s.kw : s.N * s.Ho * s.Wo;
    k_bf16 *a = rand_bf16(na, &seed), *b = rand_bf16(nb, &seed), *aa = abs_bf16(a, na), *ba = abs_bf16(b, nb);
    float *bias = nan_f32((size_t)s.Co), *abias = nan_f32((size_t)s.Co), *want = nan_f32(nout), *mag = nan_f32(nout);
    for (int c = 0; c < s.Co; c++) abias[c] = fabsf(bias[c] = 0.25f * (float)(c % 5) - 0.5f);
    conv_twin(ps, &s, want, a, na, b, nb, bias);
    conv_twin(ps, &s, mag, aa, na, ba, nb, abias);
    void *scratch = scratch_of(k_conv2d_bf16_scratch(&s));
    for (int path = 0; path < npaths(); path++) {
        k_bf16_force(path);
        float *out = nan_f32(nout);
        if (ps == FWD) k_conv2d_fwd_bf16(&s, out, a, b, bias, scratch);
        else if (ps == BWD_DATA) k_conv2d_bwd_data_bf16(&s, out, a, b, scratch);
        else k_conv2d_bwd_weight_bf16(&s, out, a, b, scratch);
        char what[160];
        snprintf(what, sizeof what, "conv %s pass %d: N%d Ci%d %dx%d Co%d k%dx%d s%d p%d", k_bf16_path_name(path), ps, s.N,
                 s.Ci, s.H, s.W, s.Co, s.kh, s.kw, s.sh, s.ph);
        check_bound(what, out, want, mag, nout, nterms);
        if (ps == FWD) { /* the ReLU epilogue: exactly relu of the plain forward, on every path */
            float *r = nan_f32(nout);
            k_conv2d_fwd_bf16_act(&s, r, a, b, bias, 1, scratch);
            size_t bad = nout;
            for (size_t i = 0; i < nout && bad == nout; i++) {
                float v = out[i] > 0.0f ? out[i] : 0.0f;
                if (memcmp(&v, &r[i], sizeof v)) bad = i;
            }
            CHECK_MSG(bad == nout, "%s: relu epilogue differs at %zu", what, bad);
            pool_epilogue_case(what, &s, a, b, bias, out, r);
            free(r);
        }
        free(out);
    }
    k_bf16_force(-1);
    free(a), free(b), free(aa), free(ba), free(bias), free(abias), free(want), free(mag), free(scratch);
}

TEST(bf16_conv_every_pass_and_path_against_its_twin) {
    static const k_conv_shape shapes[] = {
        {.N = 2, .Ci = 1, .H = 28, .W = 28, .Co = 10, .kh = 5, .kw = 5, .sh = 1, .sw = 1},           /* seed conv1 */
        {.N = 3, .Ci = 10, .H = 12, .W = 12, .Co = 20, .kh = 5, .kw = 5, .sh = 1, .sw = 1},          /* seed conv2 */
        {.N = 2, .Ci = 32, .H = 13, .W = 13, .Co = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1},          /* wide conv2, smaller */
        {.N = 2, .Ci = 3, .H = 9, .W = 7, .Co = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, /* stride, pad, odd P */
        {.N = 2, .Ci = 6, .H = 5, .W = 5, .Co = 9, .kh = 1, .kw = 1, .sh = 1, .sw = 1},              /* pointwise */
        {.N = 1, .Ci = 4, .H = 6, .W = 6, .Co = 3, .kh = 3, .kw = 2, .sh = 1, .sw = 2, .ph = 2, .pw = 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int ps = FWD; ps <= BWD_WEIGHT; ps++) conv_case(shapes[i], (pass)ps);
}

#define SHAPE(n, ci, h, w, co, k, st, pad) \
    {.N = n, .Ci = ci, .H = h, .W = w, .Co = co, .kh = k, .kw = k, .sh = st, .sw = st, .ph = pad, .pw = pad}

/* The direct kernels (conv_direct_bf16.c, every pass) on every
 * convolution of the models/ directory at its real size, and on the edges of their
 * blocking: N not a multiple of the 16 lanes (1, 17, 33), odd Ci and Co (a
 * channel pair half empty), stride 2, padding, 1x1, non-square kernels.
 * conv_case runs every path, the direct one (forced) among them. */
TEST(bf16_conv_direct_every_model_shape_and_edge) {
    static const k_conv_shape shapes[] = {
        SHAPE(17, 1, 28, 28, 10, 5, 1, 0), SHAPE(17, 10, 12, 12, 20, 5, 1, 0),  /* seed CNN (fashion_cnn) */
        SHAPE(3, 1, 28, 28, 32, 3, 1, 0), SHAPE(2, 32, 26, 26, 64, 3, 1, 0),    /* wide_cnn */
        SHAPE(5, 1, 28, 28, 6, 5, 1, 2), SHAPE(5, 6, 14, 14, 16, 5, 1, 0),      /* lenet5 */
        SHAPE(2, 3, 32, 32, 16, 3, 1, 1), SHAPE(2, 16, 16, 16, 32, 3, 1, 1),    /* cifar_cnn */
        SHAPE(2, 32, 8, 8, 64, 3, 1, 1),
        SHAPE(2, 16, 32, 32, 16, 3, 1, 1), SHAPE(2, 16, 32, 32, 32, 3, 2, 1),   /* resnet20 */
        SHAPE(2, 16, 32, 32, 32, 1, 2, 0), SHAPE(2, 32, 16, 16, 32, 3, 1, 1),
        SHAPE(2, 32, 16, 16, 64, 3, 2, 1), SHAPE(2, 32, 16, 16, 64, 1, 2, 0), SHAPE(2, 64, 8, 8, 64, 3, 1, 1),
        SHAPE(2, 1, 28, 28, 16, 3, 1, 1), SHAPE(2, 16, 28, 28, 16, 3, 1, 1),    /* resnet8_mnist */
        SHAPE(2, 16, 28, 28, 32, 3, 2, 1), SHAPE(2, 16, 28, 28, 32, 1, 2, 0),
        SHAPE(2, 32, 14, 14, 64, 3, 2, 1), SHAPE(2, 32, 14, 14, 64, 1, 2, 0), SHAPE(2, 64, 7, 7, 64, 3, 1, 1),
        SHAPE(1, 3, 32, 32, 64, 3, 1, 1), SHAPE(1, 64, 32, 32, 64, 3, 1, 1),    /* resnet18_cifar */
        SHAPE(1, 64, 32, 32, 128, 3, 2, 1), SHAPE(1, 64, 32, 32, 128, 1, 2, 0), SHAPE(1, 128, 16, 16, 128, 3, 1, 1),
        SHAPE(1, 128, 16, 16, 256, 3, 2, 1), SHAPE(1, 128, 16, 16, 256, 1, 2, 0), SHAPE(1, 256, 8, 8, 256, 3, 1, 1),
        SHAPE(1, 256, 8, 8, 512, 3, 2, 1), SHAPE(1, 256, 8, 8, 512, 1, 2, 0), SHAPE(1, 512, 4, 4, 512, 3, 1, 1),
        SHAPE(1, 5, 9, 9, 7, 3, 1, 1), SHAPE(33, 5, 9, 9, 7, 3, 2, 1),          /* odd Ci and Co, N of 1 and 33 */
        SHAPE(17, 3, 7, 11, 1, 3, 2, 1), SHAPE(16, 7, 6, 6, 3, 1, 1, 0),       /* Co 1; odd 1x1 */
        SHAPE(19, 1, 5, 5, 1, 5, 1, 2),                                         /* one channel each way */
        {.N = 18, .Ci = 9, .H = 10, .W = 13, .Co = 11, .kh = 2, .kw = 4, .sh = 1, .sw = 3, .ph = 1, .pw = 2},
        /* the forward's tap pairs (fewer pairs than channel pairs) with odd
         * Ci, odd and even kw, column stride 2 and 3, padding */
        {.N = 17, .Ci = 3, .H = 11, .W = 12, .Co = 5, .kh = 3, .kw = 5, .sh = 2, .sw = 2, .ph = 1, .pw = 2},
        {.N = 3, .Ci = 1, .H = 10, .W = 13, .Co = 4, .kh = 2, .kw = 4, .sh = 1, .sw = 3, .ph = 1, .pw = 2},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int ps = FWD; ps <= BWD_WEIGHT; ps++) conv_case(shapes[i], (pass)ps);
}

/* On a CPU with AVX512-BF16 the direct kernels are what training gets for the
 * models' convolutions (the GEMM where conv_bf16.c's table says), a forced
 * path wins, and the direct path's name is the one the bench prints. */
TEST(bf16_conv_direct_is_chosen_where_it_measured_faster) {
    if (k_bf16_detect() != K_BF16_AVX512BF16) test_skip("this CPU has no AVX512-BF16");
    k_conv_shape wide2 = SHAPE(128, 32, 26, 26, 64, 3, 1, 0), seed1 = SHAPE(128, 1, 28, 28, 10, 5, 1, 0);
    CHECK_EQ(k_conv_shape_infer(&wide2), 0);
    CHECK_EQ(k_conv_shape_infer(&seed1), 0);
    CHECK_EQ(k_conv_bf16_choose(&wide2, K_CONV_FWD), K_BF16_DIRECT);
    CHECK_EQ(k_conv_bf16_choose(&wide2, K_CONV_BWD_DATA), K_BF16_DIRECT);
    CHECK_EQ(k_conv_bf16_choose(&wide2, K_CONV_BWD_WEIGHT), K_BF16_DIRECT);
    CHECK_EQ(k_conv_bf16_choose(&seed1, K_CONV_BWD_DATA), K_BF16_AVX512BF16); /* into one channel: the GEMM */
    CHECK_EQ(k_conv_bf16_choose(&seed1, K_CONV_BWD_WEIGHT), K_BF16_DIRECT);
    CHECK_EQ(k_bf16_force(K_BF16_DIRECT), K_BF16_DIRECT);
    CHECK_EQ(k_conv_bf16_choose(&wide2, K_CONV_BWD_WEIGHT), K_BF16_DIRECT);
    CHECK_EQ(k_bf16_force(K_BF16_REF), K_BF16_REF);
    CHECK_EQ(k_conv_bf16_choose(&wide2, K_CONV_FWD), K_BF16_REF);
    k_bf16_force(-1);
    CHECK(strcmp(k_bf16_path_name(K_BF16_DIRECT), "AVX512-BF16 direct") == 0);
}

/* Every register tile of the direct kernels (the cost model picks only some
 * for the models' shapes), on shapes that leave every tile partly full. */
TEST(bf16_conv_direct_every_tile) {
    if (k_bf16_detect() != K_BF16_AVX512BF16) test_skip("this CPU has no AVX512-BF16");
    static const k_conv_shape shapes[] = {
        SHAPE(17, 5, 9, 9, 7, 3, 1, 1),
        {.N = 3, .Ci = 11, .H = 12, .W = 13, .Co = 9, .kh = 2, .kw = 3, .sh = 2, .sw = 1, .ph = 0, .pw = 1},
    };
    for (int ps = FWD; ps <= BWD_WEIGHT; ps++) {
        int n = 0;
        for (; k_conv_direct_bf16_force_tile(ps, n); n++)
            for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) conv_case(shapes[i], (pass)ps);
        CHECK_MSG(n >= 9, "pass %d: %d tiles", ps, n);
        k_conv_direct_bf16_force_tile(ps, -1);
    }
}

/* bwd_weight sweeps a block a few output rows at a time (as many as half the
 * L2 holds; the models' small shapes take all their rows at once): every
 * forced row count, including ones that leave a short last sweep, against
 * the reference twin, on every register tile's shape class. */
TEST(bf16_conv_direct_bwd_weight_row_sweeps) {
    if (k_bf16_detect() != K_BF16_AVX512BF16) test_skip("this CPU has no AVX512-BF16");
    static const k_conv_shape shapes[] = {
        SHAPE(17, 5, 9, 9, 7, 3, 1, 1),                                                                    /* Ho 9 */
        {.N = 3, .Ci = 11, .H = 12, .W = 13, .Co = 9, .kh = 2, .kw = 3, .sh = 2, .sw = 1, .ph = 0, .pw = 1}, /* row stride 2 */
        SHAPE(20, 32, 13, 13, 64, 3, 1, 0),                                              /* wide conv2, smaller */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int rows = 1; rows <= 5; rows++) {
            k_conv_direct_bf16_force_bww_rows(rows);
            conv_case(shapes[i], BWD_WEIGHT);
        }
    k_conv_direct_bf16_force_bww_rows(0);
}

/* The weight gradient over micro-batch parts (16, 16, then a partial 5)
 * equals one call over the whole batch bit for bit, on every path (direct:
 * per-lane sums carried in acc; GEMM: dW^T carried, image after image;
 * reference: the fp32 kernels' own part form): the engine's tiles rely on
 * it to give the untiled plan's numbers under bf16 too. */
TEST(bf16_conv_bwd_weight_in_parts_is_bit_identical_to_whole) {
    static const k_conv_shape shapes[] = {
        SHAPE(37, 1, 28, 28, 10, 5, 1, 0), SHAPE(37, 32, 13, 13, 64, 3, 1, 0), /* seed conv1, wide conv2 smaller */
        {.N = 37, .Ci = 3, .H = 9, .W = 7, .Co = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, /* odd P */
        SHAPE(37, 6, 5, 5, 9, 1, 1, 0),                                          /* pointwise */
        SHAPE(37, 256, 4, 4, 128, 3, 1, 1),             /* many channels, few pixels: the GEMM's pick */
    };
    unsigned seed = 23;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        k_bf16 *x = rand_bf16(xi * s.N, &seed), *dy = rand_bf16(yi * s.N, &seed);
        void *scratch = scratch_of(k_conv2d_bf16_scratch(&s));
        float *acc = nan_f32(k_conv2d_bwd_weight_bf16_acc_floats(&s));
        for (int path = -1; path < npaths(); path++) { /* -1: the path the CPU's choice takes */
            k_bf16_force(path);
            float *whole = nan_f32(ws), *parts = nan_f32(ws);
            k_conv2d_bwd_weight_bf16(&s, whole, x, dy, scratch);
            for (int n0 = 0; n0 < s.N; n0 += 16) {
                k_conv_shape part = s;
                part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                k_conv2d_bwd_weight_bf16_part(&part, parts, x + n0 * xi, dy + n0 * yi, scratch, acc, n0 == 0,
                                              n0 + part.N == s.N);
            }
            CHECK_MSG(!memcmp(whole, parts, ws * sizeof(float)), "shape %zu, path %s: parts differ from the whole", i,
                      k_bf16_path_name(k_conv_bf16_choose(&s, K_CONV_BWD_WEIGHT)));
            free(whole), free(parts);
        }
        k_bf16_force(-1);
        free(x), free(dy), free(scratch), free(acc);
    }
}

/* The backward passes with dy given as a 2x2/2 max pool's fp32 gradient and
 * argmax (k_conv2d_*_unpool2_bf16: the engine's pass_conv_unpool.c under
 * bf16) give the bits of the pool's backward made in bf16
 * (k_maxpool2d_bwd_bf16, what the graph ran before) then the plain bf16
 * pass, on every path: the direct kernels unpool block by block, the others
 * the whole dy first. Shapes: seed conv1 and conv2, a wide_cnn-like conv2,
 * conv outputs of odd height and width (a row and a column no window
 * reaches), an odd Co (the last channel pair half empty), partial blocks of
 * images, the weight gradient in 16-image parts; gradients with a rounding
 * tie, -0, a denormal and a NaN. */
static k_pool_shape unpool_of(const k_conv_shape *s) {
    k_pool_shape ps = {.N = s->N, .C = s->Co, .H = s->Ho, .W = s->Wo, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&ps), 0);
    return ps;
}

TEST(bf16_conv_backward_unpool2_equals_pool_backward_in_bf16_then_the_pass) {
    static const k_conv_shape shapes[] = {
        SHAPE(37, 1, 28, 28, 10, 5, 1, 0), SHAPE(21, 10, 12, 12, 20, 5, 1, 0), SHAPE(19, 32, 14, 14, 16, 3, 1, 0),
        {.N = 18, .Ci = 9, .H = 9, .W = 10, .Co = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, /* 9 x 10, Co 7 */
        {.N = 5, .Ci = 3, .H = 11, .W = 9, .Co = 4, .kh = 3, .kw = 3, .sh = 1, .sw = 1},                 /* 9 x 7 */
    };
    unsigned seed = 29;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = unpool_of(&s);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, gi = (size_t)ps.C * ps.Ho * ps.Wo;
        size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        k_bf16 *x = rand_bf16(xi * s.N, &seed), *w = rand_bf16(ws, &seed), *dy = malloc(yi * s.N * sizeof *dy);
        float *y = nan_f32(yi * s.N), *g = nan_f32(gi * s.N), *vals = nan_f32(gi * s.N);
        uint8_t *idx = malloc(gi * s.N * sizeof *idx);
        for (size_t k = 0; k < yi * s.N; k++) y[k] = (float)((k * 2654435761u) % 1000) / 1000.0f; /* distinct enough */
        for (size_t k = 0; k < gi * s.N; k++) {
            seed = seed * 1664525u + 1013904223u;
            g[k] = from_bits(0x3f800000u | (seed >> 9)); /* [1, 2), every mantissa: some round up, some down */
        }
        g[1] = from_bits(0x3f818000u), g[3] = -0.0f, g[5] = 1e-40f, g[gi * s.N - 1] = NAN;
        k_maxpool2d_fwd(&ps, vals, idx, y); /* real indices: one cell of each window */
        float *pscr = nan_f32(k_maxpool2d_bwd_bf16_scratch_floats(&ps));
        k_maxpool2d_bwd_bf16(&ps, dy, g, idx, pscr);
        k_unpool2 up = {.g = g, .argmax = idx};
        size_t sb = k_conv2d_unpool2_bf16_scratch(&s);
        void *scr = scratch_of(sb), *scr2 = scratch_of(sb);
        float *acc = nan_f32(k_conv2d_bwd_weight_bf16_acc_floats(&s));
        for (int path = -1; path < npaths(); path++) { /* -1: the path the CPU's choice takes */
            k_bf16_force(path);
            float *want = nan_f32(xi * s.N), *got = nan_f32(xi * s.N);
            k_conv2d_bwd_data_bf16(&s, want, dy, w, scr);
            k_conv2d_bwd_data_unpool2_bf16(&s, got, up, w, scr2);
            CHECK_MSG(!memcmp(want, got, xi * s.N * sizeof *got), "shape %zu, path %s: backward-data differs", i,
                      k_bf16_path_name(k_conv_bf16_choose(&s, K_CONV_BWD_DATA)));
            free(want), free(got);
            float *whole = nan_f32(ws), *parts = nan_f32(ws);
            k_conv2d_bwd_weight_bf16(&s, whole, x, dy, scr);
            for (int n0 = 0; n0 < s.N; n0 += 16) {
                k_conv_shape part = s;
                part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                k_unpool2 pu = {.g = g + n0 * gi, .argmax = idx + n0 * gi};
                k_conv2d_bwd_weight_unpool2_bf16_part(&part, parts, x + n0 * xi, pu, scr2, acc, n0 == 0, n0 + part.N == s.N);
            }
            CHECK_MSG(!memcmp(whole, parts, ws * sizeof(float)), "shape %zu, path %s: the weight gradient differs", i,
                      k_bf16_path_name(k_conv_bf16_choose(&s, K_CONV_BWD_WEIGHT)));
            free(whole), free(parts);
        }
        k_bf16_force(-1);
        free(x), free(w), free(dy), free(y), free(g), free(vals), free(idx), free(pscr), free(scr), free(scr2), free(acc);
    }
}
