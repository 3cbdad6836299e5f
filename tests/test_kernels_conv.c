/* test_kernels_conv.c — convolution kernels: refs against hand-computed values
 * and finite differences, every fast method (and SIMD flavour) against the refs.
 *
 * Fast outputs are compared with max|fast - ref| <= 1e-4 * max|ref| (the
 * magnitude of the output), outputs and scratch are pre-filled with NaN so
 * that accumulating into an output or reading unwritten scratch fails, and
 * scratch is allocated at exactly the advertised size so ASan sees overruns.
 */
#include "test.h"

#include "kernels/conv.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_im2col.h"
#include "kernels/conv_rows.h"
#include "kernels/conv_sparse.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

#include <float.h>
#include <string.h>

static float *nan_buf(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static float *rand_buf(size_t n, unsigned *seed) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

/* max|a-b| / max|ref|; NaN anywhere gives +inf */
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

static void shape_str(const k_conv_shape *s, char *buf, size_t cap) {
    snprintf(buf, cap, "N%d Ci%d %dx%d Co%d k%dx%d s%dx%d p%dx%d", s->N, s->Ci, s->H, s->W, s->Co, s->kh, s->kw, s->sh,
             s->sw, s->ph, s->pw);
}

/* ---- hand-computed cases --------------------------------------------------- */

static const float X33[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; /* 1x1x3x3 */
static const float W22[4] = {1, 2, 3, 4};                /* 1x1x2x2 */

TEST(conv_ref_fwd_hand_computed) {
    k_conv_shape s = {.N = 1, .Ci = 1, .H = 3, .W = 3, .Co = 1, .kh = 2, .kw = 2, .sh = 1, .sw = 1};
    CHECK_EQ(k_conv_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 2);
    CHECK_EQ(s.Wo, 2);
    float y[4], b = 0.5f;
    k_conv2d_fwd_ref(&s, y, X33, W22, &b);
    /* y00 = 1*1 + 2*2 + 4*3 + 5*4 = 37, y01 = 47, y10 = 67, y11 = 77; + bias */
    CHECK_NEAR(y[0], 37.5, 1e-6);
    CHECK_NEAR(y[1], 47.5, 1e-6);
    CHECK_NEAR(y[2], 67.5, 1e-6);
    CHECK_NEAR(y[3], 77.5, 1e-6);
}

TEST(conv_ref_fwd_hand_computed_stride_pad) {
    /* k2, stride 2, pad 1: windows start at -1 and 1 */
    k_conv_shape s = {.N = 1, .Ci = 1, .H = 3, .W = 3, .Co = 1, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .ph = 1, .pw = 1};
    CHECK_EQ(k_conv_shape_infer(&s), 0);
    CHECK_EQ(s.Ho, 2);
    float y[4];
    k_conv2d_fwd_ref(&s, y, X33, W22, NULL);
    CHECK_NEAR(y[0], 4, 1e-6);  /* x00*w11 */
    CHECK_NEAR(y[1], 18, 1e-6); /* x01*w10 + x02*w11 = 2*3 + 3*4 */
    CHECK_NEAR(y[2], 36, 1e-6); /* x10*w01 + x20*w11 = 4*2 + 7*4 */
    CHECK_NEAR(y[3], 77, 1e-6); /* x11*w00 + x12*w01 + x21*w10 + x22*w11 */
}

TEST(conv_ref_bwd_hand_computed) {
    k_conv_shape s = {.N = 1, .Ci = 1, .H = 3, .W = 3, .Co = 1, .kh = 2, .kw = 2, .sh = 1, .sw = 1};
    CHECK_EQ(k_conv_shape_infer(&s), 0);
    const float dy[4] = {1, 2, 3, 4};
    float dx[9], dw[4], db;
    k_conv2d_bwd_data_ref(&s, dx, dy, W22);
    /* dx[h][w] = sum dy[oh][ow] * w[h-oh][w-ow] (the full convolution of dy with w) */
    const float want_dx[9] = {1, 4, 4, 6, 20, 16, 9, 24, 16};
    for (int i = 0; i < 9; i++) CHECK_NEAR(dx[i], want_dx[i], 1e-6);
    k_conv2d_bwd_weight_ref(&s, dw, &db, X33, dy);
    /* dw[i][j] = sum dy[oh][ow] * x[oh+i][ow+j]: the same sums as the forward */
    const float want_dw[4] = {37, 47, 67, 77};
    for (int i = 0; i < 4; i++) CHECK_NEAR(dw[i], want_dw[i], 1e-6);
    CHECK_NEAR(db, 10, 1e-6);
}

TEST(conv_shape_infer_rejects_bad_shapes) {
    k_conv_shape s = {.N = 1, .Ci = 1, .H = 3, .W = 3, .Co = 1, .kh = 5, .kw = 5, .sh = 1, .sw = 1};
    CHECK_EQ(k_conv_shape_infer(&s), -1); /* kernel larger than the input */
    s.ph = s.pw = 1;
    CHECK_EQ(k_conv_shape_infer(&s), 0);  /* 3 + 2 - 5 + 1 = 1 */
    CHECK_EQ(s.Ho, 1);
    s.sh = 0;
    CHECK_EQ(k_conv_shape_infer(&s), -1);
    k_conv_shape t = {.N = 1, .Ci = 1, .H = 28, .W = 28, .Co = 10, .kh = 5, .kw = 5, .sh = 2, .sw = 2, .ph = 2, .pw = 2};
    CHECK_EQ(k_conv_shape_infer(&t), 0);
    CHECK_EQ(t.Ho, 14); /* (28 + 4 - 5)/2 + 1 */
}

/* ---- finite differences of the refs --------------------------------------- */

/* L(x, w, b) = sum r * conv(x, w, b), in double. */
static double conv_loss(const k_conv_shape *s, const float *x, const float *w, const float *b, const float *r) {
    size_t ys = (size_t)s->N * s->Co * s->Ho * s->Wo;
    float *y = malloc(ys * sizeof(float));
    k_conv2d_fwd_ref(s, y, x, w, b);
    double L = 0.0;
    for (size_t i = 0; i < ys; i++) L += (double)r[i] * y[i];
    free(y);
    return L;
}

TEST(conv_ref_gradients_match_finite_differences) {
    k_conv_shape s = {.N = 2, .Ci = 2, .H = 5, .W = 6, .Co = 3, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 1};
    CHECK_EQ(k_conv_shape_infer(&s), 0);
    unsigned seed = 7;
    size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
    size_t ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
    float *x = rand_buf(xs, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
    float *r = rand_buf(ys, &seed), *dx = nan_buf(xs), *dw = nan_buf(ws), *db = nan_buf((size_t)s.Co);
    k_conv2d_bwd_data_ref(&s, dx, r, w);
    k_conv2d_bwd_weight_ref(&s, dw, db, x, r);
    /* L is linear in each argument, so a large step is exact up to float rounding of y */
    const float h = 0.5f;
    for (size_t i = 0; i < xs; i++) {
        float keep = x[i];
        x[i] = keep + h;
        double lp = conv_loss(&s, x, w, b, r);
        x[i] = keep - h;
        double lm = conv_loss(&s, x, w, b, r);
        x[i] = keep;
        CHECK_NEAR(dx[i], (lp - lm) / (2.0 * h), 1e-5);
    }
    for (size_t i = 0; i < ws; i++) {
        float keep = w[i];
        w[i] = keep + h;
        double lp = conv_loss(&s, x, w, b, r);
        w[i] = keep - h;
        double lm = conv_loss(&s, x, w, b, r);
        w[i] = keep;
        CHECK_NEAR(dw[i], (lp - lm) / (2.0 * h), 1e-5);
    }
    for (int i = 0; i < s.Co; i++) {
        float keep = b[i];
        b[i] = keep + h;
        double lp = conv_loss(&s, x, w, b, r);
        b[i] = keep - h;
        double lm = conv_loss(&s, x, w, b, r);
        b[i] = keep;
        CHECK_NEAR(db[i], (lp - lm) / (2.0 * h), 1e-5);
    }
    free(x), free(w), free(b), free(r), free(dx), free(dw), free(db);
}

/* ---- fast methods against the refs ---------------------------------------- */

enum { RUN_DISPATCH, RUN_IM2COL1, RUN_IM2COL3, RUN_DIRECT, RUN_ROWS, RUN_COUNT };

/* Runs `pass` of method `m` with exactly the scratch it advertises (NaN-filled). */
static void run_method(int m, int pass, const k_conv_shape *s, float *out, float *db, const float *x,
                       const float *w, const float *b, const float *dy) {
    size_t n = m == RUN_DISPATCH ? k_conv2d_scratch(s)
               : m == RUN_DIRECT ? k_conv_direct_scratch(s)
               : m == RUN_ROWS   ? k_conv_rows_scratch(s)
                                 : k_conv_im2col_scratch(s, m == RUN_IM2COL1 ? 1 : 3);
    float *scr = nan_buf(n);
    int g = m == RUN_IM2COL1 ? 1 : 3;
    if (pass == K_CONV_FWD) {
        if (m == RUN_DISPATCH) k_conv2d_fwd(s, out, x, w, b, scr);
        else if (m == RUN_DIRECT) k_conv_direct_fwd(s, out, x, w, b, scr);
        else if (m == RUN_ROWS) k_conv_rows_fwd_act(s, out, x, w, b, 0, scr, K_CONV_NO_PROLOGUE);
        else k_conv_im2col_fwd(s, g, out, x, w, b, scr);
    } else if (pass == K_CONV_BWD_DATA) {
        if (m == RUN_DISPATCH) k_conv2d_bwd_data(s, out, dy, w, scr);
        else if (m == RUN_DIRECT) k_conv_direct_bwd_data(s, out, dy, w, scr);
        else k_conv_im2col_bwd_data(s, g, out, dy, w, scr);
    } else {
        if (m == RUN_DISPATCH) k_conv2d_bwd_weight(s, out, db, x, dy, scr);
        else if (m == RUN_DIRECT) k_conv_direct_bwd_weight(s, out, db, x, dy, scr);
        else if (m == RUN_ROWS) k_conv_rows_bwd_weight_part(s, out, db, x, dy, (k_unpool2){0}, scr, NULL, 1, 1, K_CONV_NO_PROLOGUE);
        else k_conv_im2col_bwd_weight(s, g, out, db, x, dy, scr);
    }
    free(scr);
}

/* Every method x SIMD flavour x pass on one shape; returns the number of failures. */
static int check_shape(k_conv_shape s, unsigned seed) {
    char name[128];
    if (k_conv_shape_infer(&s)) {
        test_fail_at(__FILE__, __LINE__, "bad test shape");
        return 1;
    }
    shape_str(&s, name, sizeof name);
    size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
    size_t ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
    float *x = rand_buf(xs, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
    float *dy = rand_buf(ys, &seed);
    float *ry = nan_buf(ys), *rdx = nan_buf(xs), *rdw = nan_buf(ws), *rdb = nan_buf((size_t)s.Co);
    k_conv2d_fwd_ref(&s, ry, x, w, b);
    k_conv2d_bwd_data_ref(&s, rdx, dy, w);
    k_conv2d_bwd_weight_ref(&s, rdw, rdb, x, dy);
    const float *refs[3] = {ry, rdx, rdw};
    size_t sizes[3] = {ys, xs, ws};
    static const char *pass_name[3] = {"fwd", "bwd_data", "bwd_weight"};
    static const char *meth_name[RUN_COUNT] = {"k_conv2d", "im2col g1", "im2col g3", "direct", "rows"};
    int fails = 0;
    for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
        k_simd_force(lvl);
        for (int m = 0; m < RUN_COUNT; m++) {
            if (lvl > 0 && (m == RUN_IM2COL1 || m == RUN_IM2COL3)) continue; /* no SIMD dispatch inside */
            if (m == RUN_ROWS && !k_conv_rows_fits(&s)) continue;           /* one channel, stride 1, AVX-512 */
            for (int pass = 0; pass < 3; pass++) {
                if (m == RUN_ROWS && pass == K_CONV_BWD_DATA) continue;     /* forward and weight gradient only */
                float *out = nan_buf(sizes[pass]), *db = nan_buf((size_t)s.Co);
                run_method(m, pass, &s, out, db, x, w, pass == K_CONV_FWD ? b : NULL, dy);
                double e = rel_err(out, refs[pass], sizes[pass]);
                if (!(e <= 1e-4)) {
                    test_fail_at(__FILE__, __LINE__, "%s %s simd%d on %s: rel err %.3g", meth_name[m], pass_name[pass],
                                 lvl, name, e);
                    fails++;
                }
                if (pass == K_CONV_BWD_WEIGHT && !(rel_err(db, rdb, (size_t)s.Co) <= 1e-4)) {
                    test_fail_at(__FILE__, __LINE__, "%s db simd%d on %s", meth_name[m], lvl, name);
                    fails++;
                }
                free(out), free(db);
            }
        }
    }
    k_simd_force(-1);
    free(x), free(w), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
    return fails;
}

#define SHAPE(n, ci, h, w, co, kh_, kw_, sh_, sw_, ph_, pw_)                                                    \
    (k_conv_shape) {                                                                                          \
        .N = n, .Ci = ci, .H = h, .W = w, .Co = co, .kh = kh_, .kw = kw_, .sh = sh_, .sw = sw_, .ph = ph_, .pw = pw_ \
    }

TEST(conv_fast_matches_ref_seed_cnn_shapes) {
    check_shape(SHAPE(7, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), 1);  /* conv1 */
    check_shape(SHAPE(7, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), 2); /* conv2 */
    check_shape(SHAPE(1, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), 3);
    check_shape(SHAPE(1, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), 4);
}

TEST(conv_fast_matches_ref_wide_cnn_shapes) {
    check_shape(SHAPE(7, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0), 5);  /* conv1 */
    check_shape(SHAPE(2, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0), 6); /* conv2 */
}

TEST(conv_fast_matches_ref_batches_across_groups) {
    /* 33 images: several direct bwd_weight groups and a ragged last one */
    check_shape(SHAPE(33, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), 7);
    check_shape(SHAPE(33, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), 8);
}

TEST(conv_fast_matches_ref_odd_shapes) {
    check_shape(SHAPE(7, 3, 11, 13, 5, 3, 3, 1, 1, 1, 1), 9);
    check_shape(SHAPE(1, 1, 9, 7, 1, 1, 1, 1, 1, 0, 0), 10);   /* 1x1, one channel */
    check_shape(SHAPE(7, 10, 6, 5, 7, 1, 1, 1, 1, 0, 0), 11);  /* pointwise */
    check_shape(SHAPE(3, 3, 7, 7, 4, 7, 7, 1, 1, 0, 0), 12);   /* output 1x1 */
    check_shape(SHAPE(3, 2, 6, 1, 2, 3, 1, 1, 1, 1, 0), 13);   /* width 1 */
    check_shape(SHAPE(7, 32, 7, 7, 3, 3, 3, 1, 1, 2, 2), 14);  /* padding 2 with k3 */
    check_shape(SHAPE(2, 10, 12, 12, 20, 5, 5, 1, 1, 2, 2), 15); /* "same" k5 */
    check_shape(SHAPE(2, 1, 4, 4, 2, 2, 2, 1, 1, 2, 2), 16);   /* padding >= kernel: bwd_data not direct */
    check_shape(SHAPE(2, 3, 9, 11, 17, 4, 2, 1, 1, 0, 1), 17); /* non-square kernel, 17 channels */
    check_shape(SHAPE(1, 1, 30, 35, 33, 5, 5, 1, 1, 0, 0), 18);
    check_shape(SHAPE(3, 1, 5, 4, 3, 3, 3, 1, 1, 0, 0), 23);    /* one channel, rows narrower than a vector */
    check_shape(SHAPE(2, 1, 6, 40, 9, 3, 3, 1, 1, 1, 1), 24);   /* one channel, rows of 2.5 vectors, padded */
}

TEST(conv_fast_matches_ref_strided) {
    check_shape(SHAPE(7, 1, 28, 28, 10, 5, 5, 2, 2, 2, 2), 19);
    check_shape(SHAPE(7, 3, 10, 9, 4, 3, 2, 2, 2, 1, 1), 20);
    check_shape(SHAPE(2, 10, 12, 13, 6, 3, 3, 2, 1, 0, 1), 21); /* stride only in h */
    check_shape(SHAPE(1, 32, 9, 9, 8, 1, 1, 2, 2, 0, 0), 22);   /* strided 1x1 */
}

TEST(conv_direct_every_tile_matches_ref) {
    /* the cost model picks few of the instantiated tiles; force each one in turn */
    /* the seed CNN's conv2 (bwd_data one pixel at a time), a strided one, and stride-1 shapes whose
     * bwd_data takes the row path (3x3 pad 1; 3x2 pad (2,1) with a partial pixel tile; 3x5 pad (1,2),
     * whose edge tiles leave out up to two of the five column taps, in five column classes with one-pixel tiles;
     * wide_cnn's conv2 (3x3 unpadded: dx 26 wide from dy 24), fewer images and channels) */
    k_conv_shape shapes[] = {SHAPE(3, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), SHAPE(5, 3, 9, 11, 13, 3, 2, 2, 1, 1, 0),
                             SHAPE(17, 9, 7, 13, 11, 3, 3, 1, 1, 1, 1), SHAPE(2, 5, 6, 9, 7, 3, 2, 1, 1, 2, 1),
                             SHAPE(4, 3, 6, 11, 5, 3, 5, 1, 1, 1, 2),   SHAPE(3, 6, 26, 26, 10, 3, 3, 1, 1, 0, 0)};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        char name[128];
        shape_str(&s, name, sizeof name);
        unsigned seed = 100 + (unsigned)i;
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        size_t ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        float *x = rand_buf(xs, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
        float *dy = rand_buf(ys, &seed);
        float *ref[3] = {nan_buf(ys), nan_buf(xs), nan_buf(ws)}, *rdb = nan_buf((size_t)s.Co);
        size_t sizes[3] = {ys, xs, ws};
        k_conv2d_fwd_ref(&s, ref[0], x, w, b);
        k_conv2d_bwd_data_ref(&s, ref[1], dy, w);
        k_conv2d_bwd_weight_ref(&s, ref[2], rdb, x, dy);
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            for (int pass = 0; pass < 3; pass++) {
                int tiles = 0;
                for (int t = 0; k_conv_direct_force_tile(pass, t); t++, tiles++) {
                    float *out = nan_buf(sizes[pass]), *db = nan_buf((size_t)s.Co);
                    run_method(RUN_DIRECT, pass, &s, out, db, x, w, pass == K_CONV_FWD ? b : NULL, dy);
                    double e = rel_err(out, ref[pass], sizes[pass]);
                    CHECK_MSG(e <= 1e-4, "direct pass %d tile #%d simd%d on %s: rel err %.3g", pass, t, lvl, name, e);
                    if (pass == K_CONV_BWD_WEIGHT) CHECK(rel_err(db, rdb, (size_t)s.Co) <= 1e-4);
                    if (pass == K_CONV_FWD) { /* stride-1 bwd_data runs the fwd tiles over the padded dy */
                        float *dx = nan_buf(xs);
                        run_method(RUN_DIRECT, K_CONV_BWD_DATA, &s, dx, NULL, x, w, NULL, dy);
                        e = rel_err(dx, ref[1], xs);
                        CHECK_MSG(e <= 1e-4, "direct bwd_data with fwd tile #%d simd%d on %s: rel err %.3g", t, lvl, name, e);
                        free(dx);
                    }
                    free(out), free(db);
                }
                CHECK(tiles >= 6);
                k_conv_direct_force_tile(pass, -1);
            }
        }
        k_simd_force(-1);
        free(x), free(w), free(b), free(dy), free(ref[0]), free(ref[1]), free(ref[2]), free(rdb);
    }
}

TEST(conv_scratch_covers_every_pass) {
    /* the dispatcher's scratch must be enough for either method, at any SIMD level */
    k_conv_shape shapes[] = {SHAPE(128, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(128, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(128, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0), SHAPE(5, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1)};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        CHECK_EQ(k_conv_shape_infer(&shapes[i]), 0);
        size_t need = k_conv2d_scratch(&shapes[i]);
        CHECK(k_conv_direct_scratch(&shapes[i]) <= need);
        CHECK(k_conv_im2col_scratch(&shapes[i], 1) <= need);
    }
}

TEST(conv_choice_for_the_models) {
    /* the measured choices recorded in conv.c */
    if (k_simd_detect() < K_SIMD_AVX2) test_skip("choices are for AVX2/AVX-512 machines");
    k_conv_shape c1 = SHAPE(128, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), c2 = SHAPE(128, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0);
    k_conv_shape w1 = SHAPE(128, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0), w2 = SHAPE(128, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0);
    CHECK_EQ(k_conv_shape_infer(&c1) + k_conv_shape_infer(&c2) + k_conv_shape_infer(&w1) + k_conv_shape_infer(&w2), 0);
    CHECK_EQ(k_conv_choose(&c1, K_CONV_FWD), K_CONV_DIRECT);
    CHECK_EQ(k_conv_choose(&c1, K_CONV_BWD_DATA), K_CONV_IM2COL);
    CHECK_EQ(k_conv_choose(&c1, K_CONV_BWD_WEIGHT), K_CONV_DIRECT);
    for (int pass = 0; pass < 3; pass++) CHECK_EQ(k_conv_choose(&c2, pass), K_CONV_DIRECT);
    /* wide_cnn's conv1, one channel and 9 taps: along the output plane where AVX-512 is */
    int one_channel = k_simd_detect() == K_SIMD_AVX512 ? K_CONV_ROWS : K_CONV_DIRECT;
    CHECK_EQ(k_conv_choose(&w1, K_CONV_FWD), one_channel);
    CHECK_EQ(k_conv_choose(&w1, K_CONV_BWD_DATA), K_CONV_IM2COL);
    CHECK_EQ(k_conv_choose(&w1, K_CONV_BWD_WEIGHT), one_channel);
    for (int pass = 0; pass < 3; pass++) CHECK_EQ(k_conv_choose(&w2, pass), K_CONV_DIRECT);
    /* under a 2x2 max pool, with AVX2 or AVX-512: backward-data from the kept
     * pixels for both conv2s (conv_sparse_data.c), the weight gradient for
     * wide_cnn's; with AVX2 the weight gradient for both (8 lanes make the dense pass
     * twice as dear against the same sparse FMAs: 1375 against 675 us at the
     * seed CNN's conv2, kernel_bench) */
    int sparse = k_simd_detect() >= K_SIMD_AVX2 ? K_CONV_SPARSE : K_CONV_DIRECT;
    CHECK_EQ(k_conv_choose_unpool2(&c2, K_CONV_BWD_DATA), sparse);
    CHECK_EQ(k_conv_choose_unpool2(&w2, K_CONV_BWD_DATA), sparse);
    CHECK_EQ(k_conv_choose_unpool2(&c2, K_CONV_BWD_WEIGHT), k_simd_detect() == K_SIMD_AVX2 ? K_CONV_SPARSE : K_CONV_DIRECT);
    CHECK_EQ(k_conv_choose_unpool2(&w2, K_CONV_BWD_WEIGHT), sparse);
}

/* The weight gradient over micro-batch parts (16, 16, then a partial 5)
 * equals one call over the whole batch bit for bit, on every SIMD flavour:
 * the engine's tiles rely on it to give the untiled plan's numbers. */
TEST(conv_bwd_weight_in_parts_is_bit_identical_to_whole) {
    k_conv_shape shapes[] = {SHAPE(37, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(37, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(37, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1), SHAPE(37, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0),
                             SHAPE(37, 1, 9, 7, 5, 3, 2, 1, 1, 1, 1)};
    unsigned seed = 11;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        float *x = rand_buf(xi * s.N, &seed), *dy = rand_buf(yi * s.N, &seed);
        float *scr = nan_buf(k_conv2d_scratch(&s)), *acc = nan_buf(k_conv2d_bwd_weight_acc_floats(&s));
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            float *whole = nan_buf(ws), *parts = nan_buf(ws);
            k_conv2d_bwd_weight(&s, whole, NULL, x, dy, scr);
            for (int n0 = 0; n0 < s.N; n0 += 16) {
                k_conv_shape part = s;
                part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                k_conv2d_bwd_weight_part(&part, parts, x + n0 * xi, dy + n0 * yi, scr, acc, n0 == 0, n0 + part.N == s.N, K_CONV_NO_PROLOGUE);
            }
            CHECK_MSG(!memcmp(whole, parts, ws * sizeof(float)), "shape %zu, simd %d (%s): parts differ from the whole",
                      i, lvl, k_conv_method_name(k_conv_choose(&s, K_CONV_BWD_WEIGHT)));
            free(whole), free(parts);
        }
        k_simd_force(-1);
        free(x), free(dy), free(scr), free(acc);
    }
}

/* The ReLU epilogue (k_conv2d_fwd_act, relu 1) gives exactly relu of the plain
 * forward, at every SIMD level (the generic level takes the im2col path), with
 * a partial block of images, a bias that puts outputs on both sides of 0, and
 * a NaN in x (the outputs it reaches are NaN plain, +0 through the ReLU, as
 * the engine's RELU gives them; the direct kernels apply it in registers as
 * they unpack, and a plane's last pixels in a scalar tail). */
TEST(conv_fwd_relu_epilogue_is_relu_of_the_plain_forward) {
    k_conv_shape shapes[] = {SHAPE(19, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(21, 32, 26, 26, 64, 3, 3, 1, 1, 0, 0),
                             SHAPE(5, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1), SHAPE(19, 1, 13, 11, 6, 3, 3, 1, 1, 1, 0)};
    unsigned seed = 5;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        float *x = rand_buf(xs, &seed), *w = rand_buf((size_t)s.Co * s.Ci * s.kh * s.kw, &seed),
              *b = rand_buf((size_t)s.Co, &seed), *scr = nan_buf(k_conv2d_scratch(&s));
        x[xs / 2] = NAN;
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            float *plain = nan_buf(ys), *fused = nan_buf(ys);
            k_conv2d_fwd(&s, plain, x, w, b, scr);
            k_conv2d_fwd_act(&s, fused, x, w, b, 1, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
            size_t bad = ys, zeros = 0;
            for (size_t j = 0; j < ys && bad == ys; j++) {
                float want = plain[j] > 0.0f ? plain[j] : 0.0f;
                if (memcmp(&want, &fused[j], sizeof want)) bad = j;
                zeros += want == 0.0f;
            }
            CHECK_MSG(bad == ys, "shape %zu, simd %d: element %zu is %g, relu of the plain forward %g", i, lvl, bad,
                      bad < ys ? fused[bad] : 0.0, bad < ys ? plain[bad] : 0.0);
            CHECK(zeros > 0 && zeros < ys);
            size_t nans = 0;
            for (size_t j = 0; j < ys; j++) nans += plain[j] != plain[j];
            CHECK(nans > 0);
            free(plain), free(fused);
        }
        k_simd_force(-1);
        free(x), free(w), free(b), free(scr);
    }
}

/* The rows method's forward (conv_rows.c) gives the direct kernel's bits:
 * the same taps in the same order from +0, then the bias, then the ReLU,
 * with and without padding and a prologue, on wide_cnn's conv1, a 5x5 and
 * an odd padded shape whose rows are not a multiple of 16 pixels, with NaN,
 * -0 and a negative scale in play. Its weight gradient sums in another
 * order: check_shape holds it to the reference's tolerance. */
TEST(conv_rows_forward_gives_the_direct_kernels_bits) {
    if (k_simd_detect() < K_SIMD_AVX512) test_skip("the rows method is AVX-512 only");
    k_conv_shape shapes[] = {SHAPE(19, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0), SHAPE(7, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0),
                             SHAPE(5, 1, 13, 11, 6, 3, 3, 1, 1, 1, 2)};
    unsigned seed = 17;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        CHECK(k_conv_rows_fits(&s));
        size_t xs = (size_t)s.N * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        float *x = rand_buf(xs, &seed), *w = rand_buf((size_t)s.Co * s.kh * s.kw, &seed),
              *b = rand_buf((size_t)s.Co, &seed), *scr = nan_buf(k_conv2d_scratch(&s));
        float scale = -1.5f, shift = 0.25f;
        x[xs / 2] = NAN, x[7] = -0.0f;
        for (int variant = 0; variant < 4; variant++) {
            int relu = variant & 1;
            k_conv_prologue pro = variant & 2 ? (k_conv_prologue){&scale, &shift, relu} : K_CONV_NO_PROLOGUE;
            float *direct = nan_buf(ys), *rows = nan_buf(ys);
            k_conv_direct_fwd_act(&s, direct, x, w, b, relu, scr, K_CONV_PACK_PER_CALL, pro);
            k_conv_rows_fwd_act(&s, rows, x, w, b, relu, scr, pro);
            CHECK_MSG(!memcmp(direct, rows, ys * sizeof *rows), "shape %zu relu %d prologue %d: the bits differ", i, relu,
                      variant >> 1);
            free(direct), free(rows);
        }
        free(x), free(w), free(b), free(scr);
    }
}

/* the 2x2, stride-2 max pool of conv s's output */
static k_pool_shape pool2_of(const k_conv_shape *s) {
    k_pool_shape ps = {.N = s->N, .C = s->Co, .H = s->Ho, .W = s->Wo, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    CHECK_EQ(k_pool_shape_infer(&ps), 0);
    return ps;
}

/* k_conv2d_fwd_pool2 (the conv -> 2x2/2 max pool epilogue) gives the bits of
 * k_conv2d_fwd_act followed by k_maxpool2d_fwd, values and indices, at every
 * SIMD level (the generic level pools one image at a time through scratch),
 * with and without ReLU, odd conv outputs (a row and column no window
 * reaches), a partial block of images, and NaN in the input. */
TEST(conv_fwd_pool2_epilogue_equals_conv_then_maxpool) {
    k_conv_shape shapes[] = {SHAPE(19, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(21, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(5, 3, 10, 9, 4, 3, 3, 1, 1, 1, 0), SHAPE(19, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0),
                             SHAPE(5, 1, 10, 9, 5, 3, 3, 1, 1, 1, 0)};
    unsigned seed = 9;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        size_t ps_n = (size_t)ps.N * ps.C * ps.Ho * ps.Wo;
        float *x = rand_buf(xs, &seed), *w = rand_buf((size_t)s.Co * s.Ci * s.kh * s.kw, &seed),
              *b = rand_buf((size_t)s.Co, &seed), *scr = nan_buf(k_conv2d_pool2_scratch(&s));
        x[xs / 3] = NAN;
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++)
            for (int relu = 0; relu < 2; relu++) {
                k_simd_force(lvl);
                float *y = nan_buf(ys), *want = nan_buf(ps_n), *got = nan_buf(ps_n);
                uint8_t *wa = malloc(ps_n * sizeof *wa), *ga = malloc(ps_n * sizeof *ga);
                k_conv2d_fwd_act(&s, y, x, w, b, relu, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
                k_maxpool2d_fwd(&ps, want, wa, y);
                k_conv2d_fwd_pool2(&s, got, ga, x, w, b, relu, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
                CHECK_MSG(!memcmp(want, got, ps_n * sizeof *got), "shape %zu simd %d relu %d: values differ", i, lvl, relu);
                CHECK_MSG(!memcmp(wa, ga, ps_n * sizeof *ga), "shape %zu simd %d relu %d: indices differ", i, lvl, relu);
                free(y), free(want), free(got), free(wa), free(ga);
            }
        k_simd_force(-1);
        free(x), free(w), free(b), free(scr);
    }
}

/* The backward passes with dy given as a 2x2/2 max pool's gradient and argmax
 * (k_conv2d_*_unpool2, the engine's pass_conv_unpool.c) give the bits of
 * k_maxpool2d_bwd then the plain pass, at every SIMD level: backward-data on
 * both direct paths (seed conv2 one pixel at a time, wide conv2 over rows)
 * and image by image where im2col runs (fewer than 8 input channels, or no
 * AVX2), the weight gradient in micro-batch parts, a partial block of
 * images, conv outputs of odd height and width (a row and a column no
 * window reaches), and -0 in the gradient. */
TEST(conv_backward_unpool2_equals_pool_backward_then_the_pass) {
    k_conv_sparse_data_force(0); /* the dense paths' bits; the sparse backward-data: its own test below */
    k_conv_shape shapes[] = {SHAPE(37, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(21, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(19, 32, 14, 14, 16, 3, 3, 1, 1, 0, 0), SHAPE(5, 3, 11, 9, 4, 3, 3, 1, 1, 0, 0),
                             SHAPE(18, 9, 9, 10, 12, 3, 3, 1, 1, 1, 1), SHAPE(21, 1, 28, 28, 32, 3, 3, 1, 1, 0, 0),
                             SHAPE(5, 1, 11, 9, 3, 3, 3, 1, 1, 0, 1)};
    unsigned seed = 13;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, gi = (size_t)ps.C * ps.Ho * ps.Wo;
        size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        float *x = rand_buf(xi * s.N, &seed), *w = rand_buf(ws, &seed), *y = rand_buf(yi * s.N, &seed);
        float *g = rand_buf(gi * s.N, &seed), *vals = nan_buf(gi * s.N), *dy = nan_buf(yi * s.N);
        uint8_t *idx = malloc(gi * s.N * sizeof *idx);
        g[3] = -0.0f;
        k_maxpool2d_fwd(&ps, vals, idx, y); /* real indices: one cell of each window */
        k_maxpool2d_bwd(&ps, dy, g, idx);
        k_unpool2 up = {.g = g, .argmax = idx};
        float *scr = nan_buf(k_conv2d_unpool2_scratch(&s)), *acc = nan_buf(k_conv2d_bwd_weight_acc_floats(&s));
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            float *want = nan_buf(xi * s.N), *got = nan_buf(xi * s.N);
            k_conv2d_bwd_data(&s, want, dy, w, scr);
            k_conv2d_bwd_data_unpool2(&s, got, up, w, scr);
            CHECK_MSG(!memcmp(want, got, xi * s.N * sizeof *got), "shape %zu simd %d (%s): backward-data differs", i,
                      lvl, k_conv_method_name(k_conv_choose(&s, K_CONV_BWD_DATA)));
            free(want), free(got);
            float *whole = nan_buf(ws), *parts = nan_buf(ws);
            k_conv2d_bwd_weight(&s, whole, NULL, x, dy, scr);
            for (int n0 = 0; n0 < s.N; n0 += 16) {
                k_conv_shape part = s;
                part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                k_unpool2 pu = {.g = g + n0 * gi, .argmax = idx + n0 * gi};
                k_conv2d_bwd_weight_unpool2_part(&part, parts, x + n0 * xi, pu, scr, acc, n0 == 0, n0 + part.N == s.N, K_CONV_NO_PROLOGUE);
            }
            CHECK_MSG(!memcmp(whole, parts, ws * sizeof(float)), "shape %zu simd %d (%s): the weight gradient differs",
                      i, lvl, k_conv_method_name(k_conv_choose_unpool2(&s, K_CONV_BWD_WEIGHT)));
            free(whole), free(parts);
        }
        k_simd_force(-1);
        free(x), free(w), free(y), free(g), free(vals), free(dy), free(idx), free(scr), free(acc);
    }
    k_conv_sparse_data_force(-1);
}

/* The direct method's max pool epilogue and unpooling (conv_direct_simd.h:
 * pool2_body, unpool_scatter), run at every SIMD width with the method
 * forced, so the 4-lane flavour is held too (the fixed rules give im2col
 * there): the pooled values and indices are the bits of the direct forward
 * then k_maxpool2d_fwd_ref, and the passes fed the pool's gradient and
 * argmax give the bits of the same passes fed k_maxpool2d_bwd_ref's dy; with
 * a partial block of images, odd conv outputs (a row and a column no window
 * reaches), NaN in the input (both pools) and -0 in the gradient. */
TEST(conv_direct_pool_and_unpool_match_the_pool_twins_at_every_width) {
    k_conv_shape shapes[] = {SHAPE(19, 1, 28, 28, 10, 5, 5, 1, 1, 0, 0), SHAPE(21, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(5, 3, 11, 9, 4, 3, 3, 1, 1, 0, 1)};
    unsigned seed = 17;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        size_t pn = (size_t)ps.N * ps.C * ps.Ho * ps.Wo, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        size_t scr_n = k_conv2d_pool2_scratch(&s) > k_conv2d_unpool2_scratch(&s) ? k_conv2d_pool2_scratch(&s)
                                                                                   : k_conv2d_unpool2_scratch(&s);
        float *x = rand_buf(xs, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
        float *g = rand_buf(pn, &seed), *scr = nan_buf(scr_n), *acc = nan_buf(k_conv2d_bwd_weight_acc_floats(&s));
        x[xs / 3] = NAN;
        g[3] = -0.0f;
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            CHECK_EQ(k_simd_force(lvl), lvl);
            for (int relu = 0; relu < 2; relu++) {
                float *y = nan_buf(ys), *want = nan_buf(pn), *got = nan_buf(pn), *dy = nan_buf(ys);
                uint8_t *wa = malloc(pn), *ga = malloc(pn);
                k_conv2d_fwd_act_m(K_CONV_DIRECT, &s, y, x, w, b, relu, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
                k_maxpool2d_fwd_ref(&ps, want, wa, y);
                k_conv2d_fwd_pool2_m(K_CONV_DIRECT, &s, got, ga, x, w, b, relu, scr, K_CONV_PACK_PER_CALL,
                                     K_CONV_NO_PROLOGUE);
                CHECK_MSG(!memcmp(want, got, pn * sizeof *got), "shape %zu simd %d relu %d: pooled values differ", i, lvl, relu);
                CHECK_MSG(!memcmp(wa, ga, pn), "shape %zu simd %d relu %d: pooled indices differ", i, lvl, relu);
                /* the backward passes through this pool's argmax (NaN windows included) */
                k_maxpool2d_bwd_ref(&ps, dy, g, ga);
                k_unpool2 up = {.g = g, .argmax = ga};
                float *dxw = nan_buf(xs), *dxg = nan_buf(xs), *dww = nan_buf(ws), *dwg = nan_buf(ws);
                k_conv2d_bwd_data_masked_m(K_CONV_DIRECT, &s, dxw, dy, (k_unpool2){0}, w, NULL, scr, K_CONV_PACK_PER_CALL);
                k_conv2d_bwd_data_masked_m(K_CONV_DIRECT, &s, dxg, NULL, up, w, NULL, scr, K_CONV_PACK_PER_CALL);
                CHECK_MSG(!memcmp(dxw, dxg, xs * sizeof *dxg), "shape %zu simd %d relu %d: backward-data differs", i, lvl, relu);
                k_conv2d_bwd_weight_part_m(K_CONV_DIRECT, &s, dww, x, dy, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
                k_conv2d_bwd_weight_unpool2_part_m(K_CONV_DIRECT, &s, dwg, x, up, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
                CHECK_MSG(!memcmp(dww, dwg, ws * sizeof *dwg), "shape %zu simd %d relu %d: the weight gradient differs", i, lvl, relu);
                free(y), free(want), free(got), free(dy), free(wa), free(ga), free(dxw), free(dxg), free(dww), free(dwg);
            }
        }
        k_simd_force(-1);
        free(x), free(w), free(b), free(g), free(scr), free(acc);
    }
}

/* The weight gradient under a max pool that visits only the kept pixels
 * (conv_sparse.c), forced on wherever it can run, gives the bits of the
 * direct kernel's dense pass (forced off) at each width, 8 lanes (AVX2: the
 * kernel rows in slices of rows and vectors) and 16: in 16-image parts with a
 * partial last block, through batch norm's prologue (with a ReLU, a negative scale,
 * NaN and -0 in x) or not, with a channel count that fills part of a vector
 * (10, 20: masked stores), padding, stride 2, an odd conv output (a row and
 * a column no window reaches), 1x1 and 7x7 kernels; and -0 in g. The cost
 * model's own choice is held to it by the tests above (wide_cnn's conv2). */
TEST(conv_sparse_weight_gradient_gives_the_dense_passs_bits) {
    if (k_simd_detect() < K_SIMD_AVX2) test_skip("no AVX2: the sparse weight gradient never runs");
    k_conv_shape shapes[] = {SHAPE(37, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), SHAPE(21, 32, 14, 14, 16, 3, 3, 1, 1, 0, 0),
                             SHAPE(18, 20, 9, 10, 12, 3, 3, 1, 1, 1, 1),  SHAPE(17, 16, 11, 13, 8, 3, 3, 2, 2, 1, 0),
                             SHAPE(19, 3, 11, 9, 4, 3, 3, 1, 1, 0, 1),    SHAPE(16, 8, 14, 14, 6, 7, 7, 1, 1, 3, 3),
                             SHAPE(20, 40, 7, 8, 5, 1, 1, 1, 1, 0, 0)};
    unsigned seed = 29;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        size_t scr_n = 0, acc_n = 0; /* the most any width asks for */
        for (int lvl = K_SIMD_AVX2; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            k_conv_sparse_force(1);
            CHECK_MSG(k_conv_choose_unpool2(&s, K_CONV_BWD_WEIGHT) == K_CONV_SPARSE, "shape %zu simd %d: the sparse pass cannot run", i, lvl);
            if (k_conv2d_unpool2_scratch(&s) > scr_n) scr_n = k_conv2d_unpool2_scratch(&s);
            if (k_conv2d_bwd_weight_acc_floats(&s) > acc_n) acc_n = k_conv2d_bwd_weight_acc_floats(&s);
        }
        k_simd_force(-1);
        k_pool_shape ps = pool2_of(&s);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, gi = (size_t)ps.C * ps.Ho * ps.Wo;
        size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        float *x = rand_buf(xi * s.N, &seed), *y = rand_buf(yi * s.N, &seed), *g = rand_buf(gi * s.N, &seed);
        float *scale = rand_buf((size_t)s.Ci, &seed), *shift = rand_buf((size_t)s.Ci, &seed), *vals = nan_buf(gi * s.N);
        uint8_t *idx = malloc(gi * s.N * sizeof *idx);
        k_maxpool2d_fwd(&ps, vals, idx, y);
        g[1] = -0.0f, scale[0] = -1.25f;
        float *scr = nan_buf(scr_n), *acc = nan_buf(acc_n);
        for (int with = 0; with < 3; with++) { /* no prologue; batch norm's apply; and a ReLU */
            k_conv_prologue pro = with ? (k_conv_prologue){scale, shift, with == 2} : K_CONV_NO_PROLOGUE;
            /* NaN only under the ReLU, which makes it +0: a NaN the dense pass
             * multiplies by a +0 of dy is the one documented difference */
            if (with) x[3] = with == 2 ? NAN : -0.0f, x[xi + 5] = -0.0f;
            /* at each width (8 lanes, 16): that width's dense bits */
            float *dw[2] = {nan_buf(ws), nan_buf(ws)};
            for (int lvl = K_SIMD_AVX2; lvl <= k_simd_detect(); lvl++) {
                k_simd_force(lvl);
                for (int sparse = 0; sparse < 2; sparse++) {
                    k_conv_sparse_force(sparse);
                    for (int n0 = 0; n0 < s.N; n0 += 16) {
                        k_conv_shape part = s;
                        part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                        k_unpool2 pu = {.g = g + n0 * gi, .argmax = idx + n0 * gi};
                        k_conv2d_bwd_weight_unpool2_part(&part, dw[sparse], x + n0 * xi, pu, scr, acc, n0 == 0,
                                                         n0 + part.N == s.N, pro);
                    }
                }
                CHECK_MSG(!memcmp(dw[0], dw[1], ws * sizeof(float)),
                          "shape %zu prologue %d simd %d: the sparse pass differs (dw[0] %.9g against %.9g)", i, with,
                          lvl, dw[1][0], dw[0][0]);
            }
            k_simd_force(-1);
            free(dw[0]), free(dw[1]);
            x[3] = 0.5f, x[xi + 5] = 0.25f;
        }
        k_conv_sparse_force(-1);
        free(x), free(y), free(g), free(scale), free(shift), free(vals), free(idx), free(scr), free(acc);
    }
}

/* Backward-data under a max pool from the kept pixels alone
 * (conv_sparse_data.c), forced on wherever it can run, against the reference
 * (the pool's backward, then k_conv2d_bwd_data_ref, then the mask): within
 * the rounding of a sum of Co*kh*kw products, as it sums them in another
 * order. Then its own invariants, bit for bit: a batch split 16 + the rest,
 * the second call on weights packed by the first (k_conv_packed, into a
 * buffer that is not 64-byte aligned; the weights it is given then NaN),
 * gives the bits of one call, and so do the cells of each window summed one
 * at a time instead of side by side in pairs, and the other vector width (8
 * lanes, AVX2, the kernel rows in slices; 16). Shapes: the seed CNN's
 * conv2, channel counts filling part of a vector or more than one (9, 20, 32,
 * 40), padding, stride 2, an odd conv output, 1x1; with and without the ReLU
 * mask (NaN, -0 and +0 in it); +0 and -0 in g (skipped), and a g of 0 over
 * a whole window's channels. */
static int close_to(float got, double want, double bound) { return fabs((double)got - want) <= bound; }

TEST(conv_sparse_backward_data_matches_the_reference) {
    if (k_simd_detect() < K_SIMD_AVX2) test_skip("no AVX2: the sparse backward-data never runs");
    k_conv_shape shapes[] = {SHAPE(37, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), SHAPE(21, 32, 14, 14, 16, 3, 3, 1, 1, 0, 0),
                             SHAPE(18, 20, 9, 10, 12, 3, 3, 1, 1, 1, 1),  SHAPE(17, 16, 11, 13, 8, 3, 3, 2, 2, 1, 0),
                             SHAPE(19, 9, 11, 9, 4, 3, 3, 1, 1, 0, 1),    SHAPE(20, 40, 7, 8, 5, 1, 1, 1, 1, 0, 0)};
    unsigned seed = 31;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_conv_sparse_data_force(1);
        for (int lvl = K_SIMD_AVX2; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            CHECK_MSG(k_conv_choose_unpool2(&s, K_CONV_BWD_DATA) == K_CONV_SPARSE, "shape %zu simd %d: the sparse pass cannot run", i, lvl);
        }
        k_simd_force(-1);
        k_pool_shape ps = pool2_of(&s);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, gi = (size_t)ps.C * ps.Ho * ps.Wo;
        size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw, xs = xi * s.N;
        float *widths[2] = {NULL, NULL}; /* each mask's dx at the first width, for the others */
        float *w = rand_buf(ws, &seed), *y = rand_buf(yi * s.N, &seed), *g = rand_buf(gi * s.N, &seed);
        float *mask = rand_buf(xs, &seed), *vals = nan_buf(gi * s.N), *dy = nan_buf(yi * s.N);
        float *aw = nan_buf(ws), *ady = nan_buf(yi * s.N), *want = nan_buf(xs), *bound = nan_buf(xs);
        uint8_t *idx = malloc(gi * s.N * sizeof *idx);
        mask[0] = NAN, mask[1] = -0.0f, mask[2] = 0.0f;
        g[1] = -0.0f, g[2] = 0.0f;
        for (int c = 0; c < ps.C; c++) g[gi + (size_t)c * ps.Ho * ps.Wo] = 0.0f; /* image 1, window 0: no channel */
        k_maxpool2d_fwd(&ps, vals, idx, y);
        k_maxpool2d_bwd(&ps, dy, g, idx);
        k_conv2d_bwd_data_ref(&s, want, dy, w);
        for (size_t j = 0; j < ws; j++) aw[j] = fabsf(w[j]);
        for (size_t j = 0; j < yi * s.N; j++) ady[j] = fabsf(dy[j]);
        k_conv2d_bwd_data_ref(&s, bound, ady, aw); /* the sum of |products| at each dx */
        double eps = (double)s.Co * s.kh * s.kw * FLT_EPSILON;
        float *scr = nan_buf(k_conv2d_unpool2_scratch(&s)), *scr2 = nan_buf(k_conv2d_unpool2_scratch(&s));
        size_t np = k_conv2d_bwd_data_unpool2_packed_floats(&s);
        CHECK_EQ(np, k_conv_sparse_data_packed_floats(&s));
        float *pkbuf = nan_buf(np + 1), *pk = pkbuf + 1, *nanw = nan_buf(ws); /* a caller's buffer, not 64-byte aligned */
        k_unpool2 up = {.g = g, .argmax = idx};
        for (int lvl = K_SIMD_AVX2; lvl <= k_simd_detect(); lvl++)
        for (int masked = 0; masked < 2; masked++) {
            k_simd_force(lvl);
            const float *m = masked ? mask : NULL;
            float *got = nan_buf(xs), *parts = nan_buf(xs);
            k_conv2d_bwd_data_masked(&s, got, NULL, up, w, m, scr, K_CONV_PACK_PER_CALL);
            if (!widths[masked]) { /* both widths sum each dx in the same order: the same bits */
                widths[masked] = nan_buf(xs);
                memcpy(widths[masked], got, xs * sizeof *got);
            } else
                CHECK_MSG(!memcmp(widths[masked], got, xs * sizeof *got), "shape %zu mask %d simd %d: the widths differ",
                          i, masked, lvl);
            int bad = 0;
            for (size_t j = 0; j < xs && !bad; j++) {
                double t = masked && !(mask[j] > 0.0f) ? 0.0 : want[j];
                if (!close_to(got[j], t, eps * bound[j]) || (masked && !(mask[j] > 0.0f) && got[j] != 0.0f)) {
                    CHECK_MSG(0, "shape %zu mask %d: dx[%zu] = %.9g, the reference %.9g (bound %.3g)", i, masked, j,
                              got[j], t, eps * bound[j]);
                    bad = 1;
                }
            }
            float *single = nan_buf(xs); /* cells one at a time, not side by side in pairs: the same bits */
            k_conv_sparse_data_pairs(0);
            k_conv2d_bwd_data_masked(&s, single, NULL, up, w, m, scr, K_CONV_PACK_PER_CALL);
            k_conv_sparse_data_pairs(1);
            CHECK_MSG(!memcmp(got, single, xs * sizeof *got), "shape %zu mask %d: pairs of cells differ from single cells",
                      i, masked);
            free(single);
            k_conv_shape head = s, tail = s;
            head.N = 16, tail.N = s.N - 16;
            k_conv2d_bwd_data_masked(&head, parts, NULL, up, w, m, scr, (k_conv_packed){pk, 1});
            k_unpool2 rest = {.g = g + 16 * gi, .argmax = idx + 16 * gi};
            k_conv2d_bwd_data_masked(&tail, parts + 16 * xi, NULL, rest, nanw, m ? m + 16 * xi : NULL, scr2,
                                     (k_conv_packed){pk, 0});
            CHECK_MSG(!memcmp(got, parts, xs * sizeof *got), "shape %zu mask %d: 16 + %d images differ from one call",
                      i, masked, tail.N);
            free(got), free(parts);
        }
        k_simd_force(-1);
        free(widths[0]), free(widths[1]);
        k_conv_sparse_data_force(-1);
        free(w), free(y), free(g), free(mask), free(vals), free(dy), free(aw), free(ady), free(want), free(bound);
        free(idx), free(scr), free(scr2), free(pkbuf), free(nanw);
    }
}

/* A backward-data and a weight-gradient pass over the same pool gradient
 * share the scattered dy (k_unpool2.share): the pair gives the bits of the
 * two passes alone, on the row path (wide_cnn's conv2 geometry) and the
 * one-pixel path (the seed CNN's conv2), with one block and with a partial
 * last block, at every SIMD level where both take the direct kernels. That
 * the weight gradient really takes the last block from the share: that
 * block's g is changed in place between the calls (same pointer), and the
 * dw is still that of the first g; the share is then spent, so a second
 * weight-gradient call reads the new g. */
TEST(conv_unpool2_pair_shares_the_scattered_block_with_the_bits_of_two_passes) {
    k_conv_shape shapes[] = {SHAPE(16, 8, 26, 26, 16, 3, 3, 1, 1, 0, 0), SHAPE(16, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0),
                             SHAPE(21, 8, 14, 14, 12, 3, 3, 1, 1, 0, 0)};
    unsigned seed = 29;
    int shared = 0;
    k_conv_sparse_data_force(0); /* the share is the dense passes' */
    k_conv_sparse_force(0);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        size_t gs = (size_t)ps.N * ps.C * ps.Ho * ps.Wo, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        float *x = rand_buf(xs, &seed), *w = rand_buf(ws, &seed), *y = rand_buf(ys, &seed), *mask = rand_buf(xs, &seed);
        float *g = rand_buf(gs, &seed), *g2 = rand_buf(gs, &seed), *g1 = nan_buf(gs), *vals = nan_buf(gs);
        uint8_t *idx = malloc(gs * sizeof *idx);
        memcpy(g1, g, gs * sizeof *g);
        k_maxpool2d_fwd(&ps, vals, idx, y);
        float *scr = nan_buf(k_conv2d_unpool2_scratch(&s)), *acc = nan_buf(k_conv2d_bwd_weight_acc_floats(&s));
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            size_t nshare = k_conv2d_unpool2_share_floats(&s);
            if (!nshare) continue; /* not both direct here, or a channel tile that does not divide Co */
            shared++;
            memcpy(g, g1, gs * sizeof *g);
            k_unpool2 alone = {.g = g, .argmax = idx};
            float *want_dx = nan_buf(xs), *want_dw = nan_buf(ws), *new_dw = nan_buf(ws);
            k_conv2d_bwd_data_masked(&s, want_dx, NULL, alone, w, mask, scr, K_CONV_PACK_PER_CALL);
            k_conv2d_bwd_weight_unpool2_part(&s, want_dw, x, alone, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
            memcpy(g, g2, gs * sizeof *g);
            k_conv2d_bwd_weight_unpool2_part(&s, new_dw, x, alone, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
            memcpy(g, g1, gs * sizeof *g);

            float *share = nan_buf(nshare), *dx = nan_buf(xs), *dw = nan_buf(ws), *dw2 = nan_buf(ws);
            k_unpool2 up = {.g = g, .argmax = idx, .share = share};
            k_conv2d_bwd_data_masked(&s, dx, NULL, up, w, mask, scr, K_CONV_PACK_PER_CALL);
            CHECK_MSG(!memcmp(want_dx, dx, xs * sizeof *dx), "shape %zu simd %d: dx differs with a share", i, lvl);
            /* the last block of images comes from the share: change it in g, keep the rest */
            int lanes = lvl == K_SIMD_AVX512 ? 16 : lvl == K_SIMD_AVX2 ? 8 : 4, last = (s.N - 1) / lanes * lanes;
            size_t gi = gs / (size_t)s.N;
            memcpy(g + last * gi, g2 + last * gi, (size_t)(s.N - last) * gi * sizeof *g);
            k_conv2d_bwd_weight_unpool2_part(&s, dw, x, up, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
            CHECK_MSG(!memcmp(want_dw, dw, ws * sizeof *dw), "shape %zu simd %d: dw differs with a share", i, lvl);
            memcpy(g, g2, gs * sizeof *g);
            k_conv2d_bwd_weight_unpool2_part(&s, dw2, x, up, scr, acc, 1, 1, K_CONV_NO_PROLOGUE);
            CHECK_MSG(!memcmp(new_dw, dw2, ws * sizeof *dw2), "shape %zu simd %d: a spent share was used again", i, lvl);
            free(want_dx), free(want_dw), free(new_dw), free(share), free(dx), free(dw), free(dw2);
        }
        k_simd_force(-1);
        free(x), free(w), free(y), free(mask), free(g), free(g2), free(g1), free(vals), free(idx), free(scr), free(acc);
    }
    k_conv_sparse_data_force(-1);
    k_conv_sparse_force(-1);
    CHECK_MSG(k_simd_detect() < K_SIMD_AVX2 || shared >= 3, "the shapes shared at %d SIMD levels", shared);
}

/* Batch norm's apply (and a ReLU) made by the convolution as it packs x
 * (k_conv_prologue, the engine's pass_conv_prologue.c) gives the bits of the
 * elementwise ops (x * scale, then + shift, then x > 0 ? x : 0, each rounded:
 * ops.def's MUL, ADD, RELU) followed by the plain pass: forward with and
 * without the ReLU epilogue, forward + pool, the weight gradient in
 * micro-batch parts, plain and with a pooled dy, at every SIMD level (the
 * generic level runs im2col image by image through the prologue's image),
 * with padding (the border stays 0, as the convolution pads what batch norm
 * made), a partial block of images, a negative scale, and NaN and -0 in x. */
static void bn_apply(const k_conv_shape *s, float *xa, const float *x, const float *scale, const float *shift, int relu) {
    size_t hw = (size_t)s->H * s->W;
    for (int n = 0; n < s->N; n++)
        for (int c = 0; c < s->Ci; c++)
            for (size_t i = 0; i < hw; i++) {
                size_t j = ((size_t)n * s->Ci + c) * hw + i;
                float t = x[j] * scale[c];
                t = t + shift[c];
                xa[j] = relu ? (t > 0.0f ? t : 0.0f) : t;
            }
}

TEST(conv_batchnorm_prologue_equals_the_elementwise_ops_then_the_pass) {
    k_conv_shape shapes[] = {SHAPE(21, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), SHAPE(18, 9, 9, 10, 12, 3, 3, 1, 1, 1, 1),
                             SHAPE(19, 32, 14, 14, 16, 3, 3, 1, 1, 0, 0), SHAPE(5, 3, 10, 9, 4, 3, 3, 1, 1, 1, 0),
                             SHAPE(18, 1, 9, 10, 12, 3, 3, 1, 1, 1, 1)};
    unsigned seed = 21;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xi = (size_t)s.Ci * s.H * s.W, yi = (size_t)s.Co * s.Ho * s.Wo, gi = (size_t)ps.C * ps.Ho * ps.Wo;
        size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw, sn = k_conv2d_unpool2_scratch(&s);
        if (k_conv2d_pool2_scratch(&s) > sn) sn = k_conv2d_pool2_scratch(&s);
        float *x = rand_buf(xi * s.N, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
        float *scale = rand_buf((size_t)s.Ci, &seed), *shift = rand_buf((size_t)s.Ci, &seed);
        float *dy = rand_buf(yi * s.N, &seed), *g = rand_buf(gi * s.N, &seed), *xa = nan_buf(xi * s.N);
        float *scr = nan_buf(sn), *acc = nan_buf(k_conv2d_bwd_weight_acc_floats(&s));
        uint8_t *idx = malloc(gi * s.N * sizeof *idx), *wa = malloc(gi * s.N * sizeof *wa), *ga = malloc(gi * s.N * sizeof *ga);
        scale[0] = -1.5f;
        x[5] = NAN, x[xi + 7] = -0.0f;
        { /* real pool indices: one cell of each window */
            float *vals = nan_buf(gi * s.N);
            k_maxpool2d_fwd(&ps, vals, idx, dy);
            free(vals);
        }
        for (int relu = 0; relu < 2; relu++) {
            k_conv_prologue pro = {scale, shift, relu};
            bn_apply(&s, xa, x, scale, shift, relu);
            for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
                k_simd_force(lvl);
                const char *m = k_conv_method_name(k_conv_choose(&s, K_CONV_FWD));
                for (int act = 0; act < 2; act++) {
                    float *want = nan_buf(yi * s.N), *got = nan_buf(yi * s.N);
                    k_conv2d_fwd_act(&s, want, xa, w, b, act, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
                    k_conv2d_fwd_act(&s, got, x, w, b, act, scr, K_CONV_PACK_PER_CALL, pro);
                    CHECK_MSG(!memcmp(want, got, yi * s.N * sizeof *got), "shape %zu simd %d (%s) relu %d act %d: forward",
                              i, lvl, m, relu, act);
                    free(want), free(got);
                }
                float *wv = nan_buf(gi * s.N), *gv = nan_buf(gi * s.N);
                k_conv2d_fwd_pool2(&s, wv, wa, xa, w, b, 1, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
                k_conv2d_fwd_pool2(&s, gv, ga, x, w, b, 1, scr, K_CONV_PACK_PER_CALL, pro);
                CHECK_MSG(!memcmp(wv, gv, gi * s.N * sizeof *gv) && !memcmp(wa, ga, gi * s.N * sizeof *ga),
                          "shape %zu simd %d (%s) relu %d: forward + pool", i, lvl, m, relu);
                free(wv), free(gv);
                m = k_conv_method_name(k_conv_choose(&s, K_CONV_BWD_WEIGHT));
                for (int pooled = 0; pooled < 2; pooled++) {
                    float *want = nan_buf(ws), *got = nan_buf(ws);
                    for (int with = 0; with < 2; with++)
                        for (int n0 = 0; n0 < s.N; n0 += 16) {
                            k_conv_shape part = s;
                            part.N = s.N - n0 < 16 ? s.N - n0 : 16;
                            const float *xp = (with ? x : xa) + n0 * xi;
                            k_conv_prologue pp = with ? pro : K_CONV_NO_PROLOGUE;
                            float *dw = with ? got : want;
                            int first = n0 == 0, last = n0 + part.N == s.N;
                            if (pooled)
                                k_conv2d_bwd_weight_unpool2_part(&part, dw, xp, (k_unpool2){.g = g + n0 * gi, .argmax = idx + n0 * gi},
                                                                 scr, acc, first, last, pp);
                            else
                                k_conv2d_bwd_weight_part(&part, dw, xp, dy + n0 * yi, scr, acc, first, last, pp);
                        }
                    CHECK_MSG(!memcmp(want, got, ws * sizeof *got), "shape %zu simd %d (%s) relu %d pooled %d: weight gradient",
                              i, lvl, m, relu, pooled);
                    free(want), free(got);
                }
            }
        }
        k_simd_force(-1);
        free(x), free(w), free(b), free(scale), free(shift), free(dy), free(g), free(xa), free(scr), free(acc);
        free(idx), free(wa), free(ga);
    }
}

/* Backward-data with the ReLU's backward in its epilogue (k_conv2d_bwd_data_masked,
 * the engine's pass_conv_epilogue.c) gives the bits of the plain pass then
 * mask > 0 ? dx : 0, with dy plain or as a pool's gradient and argmax, at every
 * SIMD level (both direct paths, and im2col for fewer than 8 input channels),
 * a partial block of images, and NaN, -0 and +0 in the mask. */
TEST(conv_backward_data_relu_mask_epilogue_equals_the_pass_then_the_mask) {
    k_conv_shape shapes[] = {SHAPE(21, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0), SHAPE(19, 32, 14, 14, 16, 3, 3, 1, 1, 0, 0),
                             SHAPE(5, 3, 11, 9, 4, 3, 3, 1, 1, 0, 0)};
    unsigned seed = 17;
    k_conv_sparse_data_force(0); /* the dense paths; the sparse one's mask: its own test */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_pool_shape ps = pool2_of(&s);
        size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
        size_t gs = (size_t)ps.N * ps.C * ps.Ho * ps.Wo;
        float *w = rand_buf((size_t)s.Co * s.Ci * s.kh * s.kw, &seed), *y = rand_buf(ys, &seed);
        float *g = rand_buf(gs, &seed), *mask = rand_buf(xs, &seed), *vals = nan_buf(gs), *dy = nan_buf(ys);
        uint8_t *idx = malloc(gs * sizeof *idx);
        mask[0] = NAN, mask[1] = -0.0f, mask[2] = 0.0f;
        k_maxpool2d_fwd(&ps, vals, idx, y);
        k_maxpool2d_bwd(&ps, dy, g, idx);
        float *scr = nan_buf(k_conv2d_unpool2_scratch(&s));
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++)
            for (int pooled = 0; pooled < 2; pooled++) {
                k_simd_force(lvl);
                float *want = nan_buf(xs), *got = nan_buf(xs);
                k_conv2d_bwd_data(&s, want, dy, w, scr);
                for (size_t j = 0; j < xs; j++) want[j] = mask[j] > 0.0f ? want[j] : 0.0f;
                k_unpool2 up = {.g = pooled ? g : NULL, .argmax = pooled ? idx : NULL};
                k_conv2d_bwd_data_masked(&s, got, pooled ? NULL : dy, up, w, mask, scr, K_CONV_PACK_PER_CALL);
                CHECK_MSG(!memcmp(want, got, xs * sizeof *got), "shape %zu simd %d (%s), dy %s: differs", i, lvl,
                          k_conv_method_name(k_conv_choose(&s, K_CONV_BWD_DATA)), pooled ? "unpooled" : "plain");
                free(want), free(got);
            }
        k_simd_force(-1);
        free(w), free(y), free(g), free(mask), free(vals), free(dy), free(idx), free(scr);
    }
    k_conv_sparse_data_force(-1);
}

/* Weights packed once for a step's micro-batch tiles (k_conv_packed): a call
 * on the first 16 images packs them into buf, a call on the rest uses them
 * as they are, and together they give the bits of one call over the whole
 * batch, packing per call. The second call gets weights of NaN: it must not
 * read them. Forward with and without the pool epilogue, backward-data
 * through the row path (wide_cnn's conv2 geometry, a 3x3 pad-1 layer) and
 * the one-pixel path (the seed CNN's conv2), at every SIMD level. */
TEST(conv_weights_packed_once_for_a_steps_tiles_give_the_bits_of_one_call) {
    k_conv_shape shapes[] = {SHAPE(37, 8, 26, 26, 10, 3, 3, 1, 1, 0, 0), SHAPE(35, 12, 9, 9, 13, 3, 3, 1, 1, 1, 1),
                             SHAPE(33, 10, 12, 12, 20, 5, 5, 1, 1, 0, 0)};
    unsigned seed = 41;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        k_conv_shape s = shapes[i];
        CHECK_EQ(k_conv_shape_infer(&s), 0);
        k_conv_shape head = s, tail = s;
        head.N = 16, tail.N = s.N - 16;
        size_t ix = (size_t)s.Ci * s.H * s.W, iy = (size_t)s.Co * s.Ho * s.Wo, ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
        size_t ip = (size_t)s.Co * (s.Ho / 2) * (s.Wo / 2);
        float *x = rand_buf(ix * s.N, &seed), *w = rand_buf(ws, &seed), *b = rand_buf((size_t)s.Co, &seed);
        float *dy = rand_buf(iy * s.N, &seed), *nanw = nan_buf(ws), *scr = nan_buf(k_conv2d_pool2_scratch(&s));
        size_t scr_floats = k_conv2d_pool2_scratch(&s);
        float *scr2 = nan_buf(scr_floats);
        for (int lvl = 0; lvl <= k_simd_detect(); lvl++) {
            k_simd_force(lvl);
            size_t nf = k_conv2d_fwd_packed_floats(&s), nd = k_conv2d_bwd_data_packed_floats(&s);
            CHECK(lvl == K_SIMD_GENERIC ? nf == 0 : nf > 0);
            float *fbuf = nan_buf(nf ? nf : 1), *dbuf = nan_buf(nd ? nd : 1);
            /* forward, then forward + pool */
            float *want = nan_buf(iy * s.N), *got = nan_buf(iy * s.N);
            k_conv2d_fwd_act(&s, want, x, w, b, 1, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
            k_conv2d_fwd_act(&head, got, x, w, b, 1, scr, (k_conv_packed){nf ? fbuf : NULL, 1}, K_CONV_NO_PROLOGUE);
            k_conv2d_fwd_act(&tail, got + 16 * iy, x + 16 * ix, nf ? nanw : w, b, 1, scr2, (k_conv_packed){nf ? fbuf : NULL, 0}, K_CONV_NO_PROLOGUE);
            CHECK_MSG(!memcmp(want, got, sizeof(float) * iy * s.N), "fwd, shape %zu, simd %d", i, lvl);
            float *pv = nan_buf(ip * s.N), *gv = nan_buf(ip * s.N);
            uint8_t *pa = malloc(ip * s.N), *ga = malloc(ip * s.N);
            k_conv2d_fwd_pool2(&s, pv, pa, x, w, b, 0, scr, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
            k_conv2d_fwd_pool2(&head, gv, ga, x, w, b, 0, scr, (k_conv_packed){nf ? fbuf : NULL, 1}, K_CONV_NO_PROLOGUE);
            k_conv2d_fwd_pool2(&tail, gv + 16 * ip, ga + 16 * ip, x + 16 * ix, nf ? nanw : w, b, 0, scr2,
                               (k_conv_packed){nf ? fbuf : NULL, 0}, K_CONV_NO_PROLOGUE);
            CHECK_MSG(!memcmp(pv, gv, sizeof(float) * ip * s.N) && !memcmp(pa, ga, ip * s.N),
                      "fwd + pool, shape %zu, simd %d", i, lvl);
            /* backward-data */
            float *wdx = nan_buf(ix * s.N), *gdx = nan_buf(ix * s.N);
            k_conv2d_bwd_data_masked(&s, wdx, dy, (k_unpool2){0}, w, NULL, scr, K_CONV_PACK_PER_CALL);
            k_conv2d_bwd_data_masked(&head, gdx, dy, (k_unpool2){0}, w, NULL, scr, (k_conv_packed){nd ? dbuf : NULL, 1});
            k_conv2d_bwd_data_masked(&tail, gdx + 16 * ix, dy + 16 * iy, (k_unpool2){0}, nd ? nanw : w, NULL, scr2,
                                     (k_conv_packed){nd ? dbuf : NULL, 0});
            CHECK_MSG(!memcmp(wdx, gdx, sizeof(float) * ix * s.N), "bwd_data, shape %zu, simd %d", i, lvl);
            free(fbuf), free(dbuf), free(want), free(got), free(pv), free(gv), free(pa), free(ga), free(wdx), free(gdx);
            for (size_t j = 0; j < scr_floats; j++) scr2[j] = NAN; /* the next level starts from a foreign scratch too */
        }
        k_simd_force(-1);
        free(x), free(w), free(b), free(dy), free(nanw), free(scr), free(scr2);
    }
}
