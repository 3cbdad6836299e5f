/* test_kernels_onednn.c — the oneDNN candidates (kernels/onednn.h) against
 * the reference kernels: every convolution pass and the matrix product, fp32
 * and bf16, on the engine's own layouts and on oneDNN's blocked ones.
 *
 * The references (conv_ref.c, and a plain loop for the matrix product)
 * accumulate in double. Whatever order a correct kernel sums n products in,
 * |fast - exact| <= gamma_n * sum|a_k b_k|, gamma_n = n u / (1 - n u),
 * u = 2^-24 (Higham, 3.1); bf16 operands are exact in fp32 and their products
 * too, and bf16 hardware flushes denormals (at most 2^-126 a term). The bound
 * is checked element by element with sum|a_k b_k| from the reference run on
 * |a| and |b|. Operands are bf16-representable for the bf16 rows, so both
 * sides read the same values. Outputs start as NaN, scratch is exactly the
 * advertised size (ASan sees overruns).
 */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/block_layout.h"
#include "kernels/impl.h"
#include "kernels/kernels.h"
#include "kernels/onednn.h"
#include "kernels/simd.h"

static const k_conv_shape shapes[] = {
    {.N = 4, .Ci = 16, .H = 12, .W = 12, .Co = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1},
    {.N = 3, .Ci = 16, .H = 11, .W = 9, .Co = 24, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1},
    {.N = 2, .Ci = 32, .H = 8, .W = 8, .Co = 64, .kh = 1, .kw = 1, .sh = 2, .sw = 2, .ph = 0, .pw = 0},
    {.N = 5, .Ci = 1, .H = 14, .W = 14, .Co = 10, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 0, .pw = 0},
    {.N = 2, .Ci = 3, .H = 10, .W = 10, .Co = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1},
};
enum { NSHAPES = sizeof shapes / sizeof *shapes };
static const int rows[] = {K_IMPL_ONEDNN_F32, K_IMPL_ONEDNN_F32_ANY, K_IMPL_ONEDNN_BF16, K_IMPL_ONEDNN_BF16_ANY};

static unsigned rng = 12345;
/* values in [-1, 1), bf16-representable when bf is set */
static void fill(float *a, size_t n, int bf) {
    for (size_t i = 0; i < n; i++) {
        rng = rng * 1664525u + 1013904223u;
        float v = (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
        a[i] = bf ? k_bf16_to_f32(k_bf16_from_f32(v)) : v;
    }
}
static k_bf16 *to_bf16(const float *a, size_t n) {
    k_bf16 *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) b[i] = k_bf16_from_f32(a[i]);
    return b;
}
static float *absv(const float *a, size_t n) {
    float *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) b[i] = fabsf(a[i]);
    return b;
}
static float *nans(size_t n) {
    float *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = NAN;
    return y;
}

/* every element within the bound; returns how many are not */
static int outside_bound(const float *got, const float *ref, const float *mag, size_t n, int terms) {
    double u = ldexp(1.0, -24), g = (terms + 2) * u / (1 - (terms + 2) * u);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = 2.0 * g * mag[i] + terms * ldexp(1.0, -126);
        if (!(fabs((double)got[i] - ref[i]) <= tol)) {
            if (bad < 3) fprintf(stderr, "  [%zu] got %.9g want %.9g (tol %.3g)\n", i, got[i], ref[i], tol);
            bad++;
        }
    }
    return bad;
}

typedef struct operands {
    size_t nx, nw, ny;
    float *x, *w, *y, *b;      /* fp32 values (bf16-representable for bf16 rows) */
    k_bf16 *xb, *wb, *yb;
} operands;

static operands make_operands(const k_conv_shape *s, int bf) {
    operands o;
    o.nx = (size_t)s->N * s->Ci * s->H * s->W, o.nw = (size_t)s->Co * s->Ci * s->kh * s->kw;
    o.ny = (size_t)s->N * s->Co * s->Ho * s->Wo;
    o.x = malloc(o.nx * 4), o.w = malloc(o.nw * 4), o.y = malloc(o.ny * 4), o.b = malloc((size_t)s->Co * 4);
    fill(o.x, o.nx, bf), fill(o.w, o.nw, bf), fill(o.y, o.ny, bf), fill(o.b, (size_t)s->Co, 0);
    o.xb = to_bf16(o.x, o.nx), o.wb = to_bf16(o.w, o.nw), o.yb = to_bf16(o.y, o.ny);
    return o;
}
static void free_operands(operands *o) {
    free(o->x), free(o->w), free(o->y), free(o->b), free(o->xb), free(o->wb), free(o->yb);
}

/* One pass of one row on one shape against the reference; returns the bad elements. */
/* Below AVX-512 (XLATRAIN_ISA, make test-isa; oneDNN is capped with the own
 * kernels) oneDNN has only its reference code for some passes (bf16 below
 * avx512_core, some fp32 passes at SSE4.1), which the rows refuse: there a
 * row may be invalid, and whatever is valid must still match. */
static int capped(void) { return k_simd_level() < K_SIMD_AVX512; }

/* x through a batch-norm prologue as the engine fuses it: relu?(x * scale[c] + shift[c]) */
static void prologue_ref(const k_conv_shape *s, float *x, const float *scale, const float *shift, int relu) {
    size_t HW = (size_t)s->H * s->W;
    for (size_t i = 0; i < (size_t)s->N * s->Ci * HW; i++) {
        int c = (int)(i / HW % (size_t)s->Ci);
        float t = x[i] * scale[c];
        t = t + shift[c];
        x[i] = relu && t < 0 ? 0 : t;
    }
}

/* pro: 0, or 1/2 for a prologue without / with its ReLU (fp32 forward and weight gradient) */
static int check_pass_pro(int impl, int kind, const k_conv_shape *s0, int relu, int parts, int pro) {
    k_conv_shape s = *s0;
    k_conv_shape_infer(&s);
    int bf = k_impls[impl].bf16;
    k_op_desc d = {.kind = kind, .bf16 = bf, .s = s, .relu = relu};
    if (!k_impls[impl].valid(&d)) {
        fprintf(stderr, "  %s not valid for kind %d%s\n", k_impls[impl].name, kind, capped() ? " (capped ISA)" : "");
        return !capped();
    }
    d.prologue = pro;
    operands o = make_operands(&s, bf);
    float *scale = malloc((size_t)s.Ci * 4), *shift = malloc((size_t)s.Ci * 4), *xraw = NULL;
    fill(scale, (size_t)s.Ci, 0), fill(shift, (size_t)s.Ci, 0);
    if (pro) { /* the references read x through the prologue; the kernel reads the raw x and the pair */
        xraw = malloc(o.nx * 4);
        memcpy(xraw, o.x, o.nx * 4);
        prologue_ref(&s, o.x, scale, shift, pro == 2);
    }
    size_t nout = kind == K_OP_CONV_FWD ? o.ny : kind == K_OP_CONV_BWD_DATA ? o.nx : o.nw;
    float *ref = calloc(nout, 4), *mag = calloc(nout, 4), *got = nans(nout), *db = calloc((size_t)s.Co, 4);
    float *ax = absv(o.x, o.nx), *aw = absv(o.w, o.nw), *ay = absv(o.y, o.ny), *ab = absv(o.b, (size_t)s.Co);
    int terms;
    if (kind == K_OP_CONV_FWD) {
        k_conv2d_fwd_ref(&s, ref, o.x, o.w, o.b);
        k_conv2d_fwd_ref(&s, mag, ax, aw, ab);
        if (relu)
            for (size_t i = 0; i < nout; i++) ref[i] = ref[i] > 0 ? ref[i] : 0;
        terms = s.Ci * s.kh * s.kw + 1;
    } else if (kind == K_OP_CONV_BWD_DATA) {
        k_conv2d_bwd_data_ref(&s, ref, o.y, o.w);
        k_conv2d_bwd_data_ref(&s, mag, ay, aw);
        if (relu) /* the mask: x's sign, here the reference's own input */
            for (size_t i = 0; i < nout; i++) ref[i] = o.x[i] > 0 ? ref[i] : 0;
        terms = s.Co * s.kh * s.kw;
    } else {
        k_conv2d_bwd_weight_ref(&s, ref, db, o.x, o.y);
        k_conv2d_bwd_weight_ref(&s, mag, db, ax, ay);
        terms = s.N * s.Ho * s.Wo;
    }
    int nparts = parts ? s.N : 1;
    /* the tile state as the engine sizes it: a row may keep the sum in its own (padded) layout */
    k_op_desc dtile = d;
    dtile.s.N = s.N / nparts;
    size_t state_floats = parts ? k_impls[impl].state(impl, &dtile) / sizeof(float) : 0;
    float *acc = parts ? nans(state_floats > o.nw ? state_floats : o.nw) : NULL;
    for (int p = 0; p < nparts; p++) {
        k_op_desc dp = d;
        dp.s.N = s.N / nparts;
        size_t sx = (size_t)dp.s.N * s.Ci * s.H * s.W * p, sy = (size_t)dp.s.N * s.Co * s.Ho * s.Wo * p;
        size_t bytes = k_impls[impl].scratch(impl, &dp);
        void *scratch = malloc(bytes ? bytes : 1);
        k_op_args a = {.scratch = scratch, .acc = acc, .first = p == 0, .last = p == nparts - 1};
        if (kind == K_OP_CONV_FWD) {
            a.out = got, a.bias = o.b;
            a.x = bf ? (const void *)o.xb : o.x, a.w = bf ? (const void *)o.wb : o.w;
        } else if (kind == K_OP_CONV_BWD_DATA) {
            a.out = got, a.relu_mask = relu ? o.x : NULL;
            a.dy = bf ? (const void *)o.yb : o.y, a.w = bf ? (const void *)o.wb : o.w;
        } else {
            a.out = got;
            a.x = bf ? (const void *)(o.xb + sx) : o.x + sx, a.dy = bf ? (const void *)(o.yb + sy) : o.y + sy;
        }
        if (pro) a.x = xraw + sx, a.pro = (k_conv_prologue){scale, shift, pro == 2};
        k_impls[impl].run(impl, &dp, &a);
        free(scratch);
    }
    int bad = outside_bound(got, ref, mag, nout, terms);
    if (bad)
        fprintf(stderr, "  %s kind %d N%d %dx%dx%d->%d k%d s%d: %d outside\n", k_impls[impl].name, kind, s.N, s.Ci,
                s.H, s.W, s.Co, s.kh, s.sh, bad);
    free(ref), free(mag), free(got), free(db), free(ax), free(aw), free(ay), free(ab), free(acc);
    free(scale), free(shift), free(xraw);
    free_operands(&o);
    return bad;
}

static int check_pass(int impl, int kind, const k_conv_shape *s, int relu, int parts) {
    return check_pass_pro(impl, kind, s, relu, parts, 0);
}

static int have_onednn(void) { return k_onednn_available(); }


TEST(kernels_onednn_every_conv_pass_matches_the_reference_on_every_row) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    int runs = 0;
    for (int r = 0; r < 4; r++) {
        int impl = rows[r];
        for (int i = 0; i < NSHAPES; i++) {
            k_conv_shape s = shapes[i];
            k_conv_shape_infer(&s);
            static const int kinds[] = {K_OP_CONV_FWD, K_OP_CONV_BWD_DATA, K_OP_CONV_BWD_WEIGHT};
            for (int k = 0; k < 3; k++) {
                k_op_desc d = {.kind = kinds[k], .bf16 = k_impls[impl].bf16, .s = s};
                /* a blocked row is valid only where oneDNN's layout differs from the plain one */
                if (!k_impls[impl].valid(&d)) {
                    CHECK_MSG(impl == K_IMPL_ONEDNN_F32_ANY || impl == K_IMPL_ONEDNN_BF16_ANY || capped(),
                              "%s invalid on shape %d kind %d", k_impls[impl].name, i, kinds[k]);
                    continue;
                }
                CHECK_EQ(check_pass(impl, kinds[k], &s, 0, 0), 0);
                runs++;
            }
        }
    }
    /* the plain rows run everything: 2 rows x 5 shapes x 3 passes at least (fp32's 15 at the AVX2 cap) */
    CHECK_MSG(runs >= (!capped() ? 30 : k_simd_level() == K_SIMD_AVX2 ? 15 : 0), "%d passes ran", runs);
}

TEST(kernels_onednn_relu_epilogue_mask_and_weight_gradient_in_parts) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    for (int r = 0; r < 4; r++) {
        k_conv_shape s = shapes[0];
        k_conv_shape_infer(&s);
        k_op_desc d = {.kind = K_OP_CONV_FWD, .bf16 = k_impls[rows[r]].bf16, .s = s};
        if (!k_impls[rows[r]].valid(&d)) continue;
        CHECK_EQ(check_pass(rows[r], K_OP_CONV_FWD, &s, 1, 0), 0);
        CHECK_EQ(check_pass(rows[r], K_OP_CONV_BWD_DATA, &s, 1, 0), 0);
        CHECK_EQ(check_pass(rows[r], K_OP_CONV_BWD_WEIGHT, &s, 0, 1), 0); /* one sample per part, summed in order */
    }
}

/* C = op(A) op(B) against a double loop, every transpose, dense and padded leading dimensions */
static int check_matmul(int impl, int tA, int tB, int pad) {
    int M = 33, N = 20, K = 47, bf = k_impls[impl].bf16;
    int lda = (tA ? M : K) + pad, ldb = (tB ? K : N) + pad;
    size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb;
    float *A = malloc(na * 4), *B = malloc(nb * 4), *C = nans((size_t)M * N), *R = calloc((size_t)M * N, 4),
          *G = calloc((size_t)M * N, 4);
    fill(A, na, bf), fill(B, nb, bf);
    k_bf16 *Ab = to_bf16(A, na), *Bb = to_bf16(B, nb);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < K; k++) {
                double a = tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b, m += fabs(a * b);
            }
            R[(size_t)i * N + j] = (float)s, G[(size_t)i * N + j] = (float)m;
        }
    k_op_desc d = {.kind = K_OP_MATMUL, .bf16 = bf, .M = M, .N = N, .K = K, .tA = tA, .tB = tB};
    int bad = !capped(); /* not valid: a failure unless capped */
    if (k_impls[impl].valid(&d)) {
        void *scratch = malloc(k_impls[impl].scratch(impl, &d) + 4096); /* a padded call prepares its own */
        k_impls[impl].run(impl, &d, &(k_op_args){.out = C, .x = bf ? (void *)Ab : A, .w = bf ? (void *)Bb : B,
                                                 .lda = lda, .ldb = ldb, .scratch = scratch});
        bad = outside_bound(C, R, G, (size_t)M * N, K);
        free(scratch);
    }
    free(A), free(B), free(C), free(R), free(G), free(Ab), free(Bb);
    return bad;
}

TEST(kernels_onednn_matmul_every_transpose_and_leading_dimension) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    for (int bf = 0; bf < 2; bf++)
        for (int t = 0; t < 4; t++)
            for (int pad = 0; pad <= 3; pad += 3)
                CHECK_EQ(check_matmul(bf ? K_IMPL_ONEDNN_BF16 : K_IMPL_ONEDNN_F32, t & 1, t >> 1, pad), 0);
    /* blocked rows are convolutions only: the engine's matrices are read in place */
    k_op_desc d = {.kind = K_OP_MATMUL, .M = 8, .N = 8, .K = 8};
    CHECK(!k_impls[K_IMPL_ONEDNN_F32_ANY].valid(&d));
}

TEST(kernels_onednn_rows_say_what_runs_and_refuse_what_they_cannot_fuse) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s};
    char buf[200];
    k_impl_describe(K_IMPL_ONEDNN_F32, &d, buf, sizeof buf);
    CHECK_STR_CONTAINS(buf, "onednn-fp32 [");
    CHECK(strstr(buf, "ref") == NULL); /* never oneDNN's reference code */
    k_impl_describe(K_IMPL_F32_DIRECT, &d, buf, sizeof buf);
    CHECK_STR_EQ(buf, "fp32-direct");
    CHECK(strlen(k_onednn_version()) >= 5);
    /* pooled epilogues and unpooled gradients stay with the own kernels */
    k_op_desc pool = d, unpool = d;
    pool.kind = K_OP_CONV_FWD_POOL2, unpool.kind = K_OP_CONV_BWD_WEIGHT_UNPOOL2;
    for (int r = 0; r < 4; r++) {
        CHECK(!k_impls[rows[r]].valid(&pool));
        CHECK(!k_impls[rows[r]].valid(&unpool));
    }
    /* a row reads operands of its own precision only */
    k_op_desc b = d;
    b.bf16 = 1;
    CHECK(!k_impls[K_IMPL_ONEDNN_F32].valid(&b));
    CHECK(!k_impls[K_IMPL_ONEDNN_BF16].valid(&d));
    /* the ISA a node runs on comes from what oneDNN generated */
    const char *isa = k_impl_node_isa(K_IMPL_ONEDNN_F32, &d);
    CHECK(!strcmp(isa, "AVX-512") || !strcmp(isa, "AVX2") || !strcmp(isa, "SSE4.1") || !strcmp(isa, "x86-64"));
}

/* A blocked row says which operands it reorders on every call and, once it
 * has run, the share of its time the reorders took (the kernel report's
 * "reorders src,dst 21%"); the own rows reorder nothing outside their loops. */
TEST(kernels_onednn_blocked_rows_name_their_reorders_and_their_share) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s};
    char buf[64];
    CHECK(!k_impl_reorders(K_IMPL_F32_DIRECT, &d, buf, sizeof buf));
    CHECK_STR_EQ(buf, "");
    if (!k_impls[K_IMPL_ONEDNN_F32_ANY].valid(&d)) test_skip("oneDNN's blocked layouts are the plain ones for this shape here");
    CHECK(k_impl_reorders(K_IMPL_ONEDNN_F32_ANY, &d, buf, sizeof buf));
    CHECK_STR_CONTAINS(buf, "src"); /* the NCHW activations go into oneDNN's blocked layout */
    operands o = make_operands(&s, 0);
    size_t need = k_impls[K_IMPL_ONEDNN_F32_ANY].scratch(K_IMPL_ONEDNN_F32_ANY, &d);
    float *y = nans(o.ny);
    void *scratch = malloc(need);
    k_impls[K_IMPL_ONEDNN_F32_ANY].run(K_IMPL_ONEDNN_F32_ANY, &d,
                                       &(k_op_args){.out = y, .x = o.x, .w = o.w, .bias = o.b, .scratch = scratch, .scratch_cap = need});
    CHECK(k_impl_reorders(K_IMPL_ONEDNN_F32_ANY, &d, buf, sizeof buf));
    int share = -1;
    const char *sp = strchr(buf, ' ');
    CHECK_MSG(sp && sscanf(sp, " %d%%", &share) == 1 && share >= 0 && share <= 100, "%s", buf);
    free(y), free(scratch);
    free_operands(&o);
}

/* Tiled, a forward or backward-data call keeps the weights it reordered on
 * the step's first tile in the node's state and reuses them for the other
 * tiles (once per step, as the bf16 casts): the later tiles give the same
 * bits as the whole batch even when the weights' buffer is garbage by then. */
TEST(kernels_onednn_tiles_reorder_the_weights_once_per_step) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    int tested = 0;
    for (int r = 0; r < 4; r++)
        for (int kind = K_OP_CONV_FWD; kind <= K_OP_CONV_BWD_DATA; kind += K_OP_CONV_BWD_DATA - K_OP_CONV_FWD) {
            int impl = rows[r], bf = k_impls[impl].bf16;
            k_conv_shape s = shapes[0];
            k_conv_shape_infer(&s);
            k_op_desc whole = {.kind = kind, .s = s, .bf16 = bf}, tile = whole;
            tile.s.N = 1;
            if (!k_impls[impl].valid(&whole) || !k_impls[impl].valid(&tile)) continue;
            size_t state = k_impls[impl].state(impl, &tile);
            char ro[64];
            int reorders_w = k_impl_reorders(impl, &tile, ro, sizeof ro) && strstr(ro, "wei");
            CHECK_MSG(!reorders_w || state > 0, "%s reorders its weights but keeps no state", k_impls[impl].name);
            if (!state) continue;
            operands o = make_operands(&s, bf);
            size_t nout = kind == K_OP_CONV_FWD ? o.ny : o.nx, per = nout / (size_t)s.N;
            float *want = nans(nout), *got = nans(nout), *keep = malloc(state);
            size_t sb = k_impls[impl].scratch(impl, &whole), st = k_impls[impl].scratch(impl, &tile);
            void *scratch = malloc(sb > st ? sb : st);
            const void *w = bf ? (const void *)o.wb : o.w;
            size_t wbytes = o.nw * (bf ? 2 : 4);
            void *w_copy = malloc(wbytes);
            memcpy(w_copy, w, wbytes);
            k_op_args a = {.out = want, .w = w_copy, .bias = o.b, .scratch = scratch,
                           .x = bf ? (const void *)o.xb : o.x, .dy = bf ? (const void *)o.yb : o.y};
            k_impls[impl].run(impl, &whole, &a);
            for (int n = 0; n < s.N; n++) {
                k_op_args t = a;
                t.out = got + per * n;
                t.x = bf ? (const void *)(o.xb + (size_t)n * o.nx / s.N) : o.x + (size_t)n * o.nx / s.N;
                t.dy = bf ? (const void *)(o.yb + (size_t)n * o.ny / s.N) : o.y + (size_t)n * o.ny / s.N;
                t.pk = (k_conv_packed){keep, n == 0};
                k_impls[impl].run(impl, &tile, &t);
                if (n == 0) memset(w_copy, 0xff, wbytes); /* NaNs: only the kept copy may be read now */
            }
            CHECK_MSG(!memcmp(want, got, nout * sizeof(float)), "%s kind %d: tiles differ from the whole batch",
                      k_impls[impl].name, kind);
            tested++;
            free(want), free(got), free(keep), free(scratch), free(w_copy);
            free_operands(&o);
        }
    if (!tested) test_skip("no oneDNN row reorders its weights for this shape here");
}

/* A caller whose scratch is smaller than a call needs (a tile's primitive
 * wanting more than the whole batch's was planned for) is not overrun: the
 * call uses a buffer of its own and gives the same bits. */
TEST(kernels_onednn_a_short_scratch_is_never_overrun) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s};
    int impl = K_IMPL_ONEDNN_F32_ANY;
    if (!k_impls[impl].valid(&d)) impl = K_IMPL_ONEDNN_F32;
    operands o = make_operands(&s, 0);
    size_t need = k_impls[impl].scratch(impl, &d);
    float *y1 = nans(o.ny), *y2 = nans(o.ny);
    void *big = malloc(need), *small = malloc(64);
    k_impls[impl].run(impl, &d, &(k_op_args){.out = y1, .x = o.x, .w = o.w, .bias = o.b, .scratch = big, .scratch_cap = need});
    k_impls[impl].run(impl, &d, &(k_op_args){.out = y2, .x = o.x, .w = o.w, .bias = o.b, .scratch = small, .scratch_cap = 64});
    CHECK(need > 64);
    CHECK(!memcmp(y1, y2, o.ny * sizeof(float))); /* ASan: the 64 bytes were not written past */
    free(y1), free(y2), free(big), free(small);
    free_operands(&o);
}

/* A batch-norm prologue (fp32) is made into the scratch, then the call: the
 * forward and the weight gradient, whole and in parts, with and without its ReLU */
TEST(kernels_onednn_batch_norm_prologue_forward_and_weight_gradient) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < NSHAPES; i += 2) {
            k_conv_shape s = shapes[i];
            k_conv_shape_infer(&s);
            k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s, .prologue = 2};
            if (!k_impls[rows[r]].valid(&d)) {
                CHECK_MSG(rows[r] == K_IMPL_ONEDNN_F32_ANY || capped(), "%s refuses a prologue", k_impls[rows[r]].name);
                continue;
            }
            for (int pro = 1; pro <= 2; pro++) {
                CHECK_EQ(check_pass_pro(rows[r], K_OP_CONV_FWD, &s, pro == 2, 0, pro), 0);
                CHECK_EQ(check_pass_pro(rows[r], K_OP_CONV_BWD_WEIGHT, &s, 0, pro == 1, pro), 0);
            }
        }
    /* bf16 operands never carry one, nor does backward-data */
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    CHECK(!k_impls[K_IMPL_ONEDNN_BF16].valid(&(k_op_desc){.kind = K_OP_CONV_FWD, .bf16 = 1, .s = s, .prologue = 1}));
    CHECK(!k_impls[K_IMPL_ONEDNN_F32].valid(&(k_op_desc){.kind = K_OP_CONV_BWD_DATA, .s = s, .prologue = 1}));
}

/* One call of a row with scratch of the size it asks for. */
static void run_row(int impl, const k_op_desc *d, k_op_args a) {
    size_t need = k_impls[impl].scratch(impl, d);
    a.scratch = malloc(need ? need : 1), a.scratch_cap = need;
    k_impls[impl].run(impl, d, &a);
    free(a.scratch);
}

/* A blocked row writes a batch-norm prologue straight into its blocked src
 * and reads a backward-data result out of its blocked dsrc through the ReLU's
 * mask (block_layout.h), instead of a oneDNN reorder beside a pass of its
 * own: the same bits as the row given the prologue's output (the mask
 * applied after), and the kernel report no longer names those reorders.
 * Shapes whose planes are whole vectors (the transposes) and not (the scalar
 * loops); make test-isa runs it at 8 lanes, where oneDNN picks nChw8c. */
TEST(kernels_onednn_a_prologue_and_a_mask_change_layouts_on_the_way_bit_for_bit) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    int impl = K_IMPL_ONEDNN_F32_ANY, fused = 0, tested = 0;
    for (int i = 0; i < 3; i++) { /* the shapes with 16 or 32 input channels */
        k_conv_shape s = shapes[i];
        k_conv_shape_infer(&s);
        static const int kinds[] = {K_OP_CONV_FWD, K_OP_CONV_BWD_DATA, K_OP_CONV_BWD_WEIGHT};
        for (int ki = 0; ki < 3; ki++) {
            int kind = kinds[ki];
            k_op_desc plain = {.kind = kind, .s = s}, with = plain;
            if (kind == K_OP_CONV_BWD_DATA) with.relu = 1;
            else with.prologue = 2;
            if (!k_impls[impl].valid(&plain) || !k_impls[impl].valid(&with)) continue;
            operands o = make_operands(&s, 0);
            float *scale = malloc((size_t)s.Ci * 4), *shift = malloc((size_t)s.Ci * 4), *xp = malloc(o.nx * 4);
            fill(scale, (size_t)s.Ci, 0), fill(shift, (size_t)s.Ci, 0);
            memcpy(xp, o.x, o.nx * 4);
            prologue_ref(&s, xp, scale, shift, 1);
            size_t nout = kind == K_OP_CONV_FWD ? o.ny : kind == K_OP_CONV_BWD_DATA ? o.nx : o.nw;
            float *want = nans(nout), *got = nans(nout);
            k_op_args a = {.out = want, .w = o.w, .bias = o.b, .x = xp, .dy = o.y};
            run_row(impl, &plain, a);
            if (kind == K_OP_CONV_BWD_DATA) k_relu_bwd_inplace(want, o.x, nout); /* the mask: x's sign */
            a.out = got;
            if (kind == K_OP_CONV_BWD_DATA) a.relu_mask = o.x;
            else a.x = o.x, a.pro = (k_conv_prologue){scale, shift, 1};
            run_row(impl, &with, a);
            CHECK_MSG(!memcmp(want, got, nout * 4), "kind %d shape %d: the fused layout change gave other bits", kind, i);
            tested++;
            char r_plain[64], r_with[64];
            const char *name = kind == K_OP_CONV_BWD_DATA ? "dsrc" : "src";
            k_impl_reorders(impl, &plain, r_plain, sizeof r_plain);
            k_impl_reorders(impl, &with, r_with, sizeof r_with);
            if (strstr(r_plain, name) && !strstr(r_with, name)) fused++;
            free(scale), free(shift), free(xp), free(want), free(got);
            free_operands(&o);
        }
    }
    if (!tested) test_skip("oneDNN's blocked layouts are the plain ones for these shapes here");
    /* oneDNN's AVX2 and AVX-512 convolutions want nChw8c / nChw16c for these shapes */
    if (k_simd_level() >= K_SIMD_AVX2) CHECK_MSG(fused > 0, "no prologue or mask took the place of a reorder");
}

/* A backward pass handed dy in the blocked layout it wants (the engine's
 * layout pass, k_impl_ddst_block) reads it without a reorder and gives the
 * bits it gives for dy in NCHW; the own rows refuse such a dy. */
TEST(kernels_onednn_a_blocked_dy_is_read_without_a_reorder_bit_for_bit) {
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    int impl = K_IMPL_ONEDNN_F32_ANY, tested = 0;
    static const int kinds[] = {K_OP_CONV_BWD_DATA, K_OP_CONV_BWD_WEIGHT};
    for (int i = 0; i < 3; i++)
        for (int ki = 0; ki < 2; ki++) {
            k_conv_shape s = shapes[i];
            k_conv_shape_infer(&s);
            k_op_desc plain = {.kind = kinds[ki], .s = s}, blocked = plain;
            if (!k_impls[impl].valid(&plain)) continue;
            int B = k_impl_ddst_block(impl, &plain);
            CHECK_EQ(k_impl_ddst_block(K_IMPL_F32_DIRECT, &plain), 0);
            if (!B) continue;
            CHECK(B == 8 || B == 16);
            blocked.ddst_block = B;
            CHECK(k_impls[impl].valid(&blocked));
            CHECK(!k_impls[K_IMPL_F32_DIRECT].valid(&blocked));
            char ro[64];
            k_impl_reorders(impl, &plain, ro, sizeof ro);
            CHECK_STR_CONTAINS(ro, "ddst");
            k_impl_reorders(impl, &blocked, ro, sizeof ro);
            CHECK_MSG(!strstr(ro, "ddst"), "a blocked dy is still reordered: %s", ro);
            operands o = make_operands(&s, 0);
            float *yb = malloc(o.ny * 4);
            k_block_prologue(s.N, s.Co, s.Ho * s.Wo, B, NULL, o.y, yb);
            size_t nout = kinds[ki] == K_OP_CONV_BWD_DATA ? o.nx : o.nw;
            float *want = nans(nout), *got = nans(nout);
            run_row(impl, &plain, (k_op_args){.out = want, .w = o.w, .x = o.x, .dy = o.y});
            run_row(impl, &blocked, (k_op_args){.out = got, .w = o.w, .x = o.x, .dy = yb});
            CHECK_MSG(!memcmp(want, got, nout * 4), "kind %d shape %d: a blocked dy gave other bits", kinds[ki], i);
            tested++;
            free(yb), free(want), free(got);
            free_operands(&o);
        }
    if (k_simd_level() >= K_SIMD_AVX2) CHECK_MSG(tested > 0, "no backward pass wants dy blocked here");
    else if (!tested) test_skip("no backward pass wants dy blocked here");
}

/* ONEDNN_MAX_CPU_ISA caps what oneDNN generates (each test is its own
 * process, so the variable is read before oneDNN's first use): the AMX-less,
 * AVX-512-less path of a laptop or CI runner, on any CPU that has AVX2. */
TEST(kernels_onednn_capped_at_avx2_still_matches_and_says_so) {
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    if (k_simd_level() < K_SIMD_AVX2) test_skip("the kernels are capped below AVX2 here (XLATRAIN_ISA), so is oneDNN");
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s};
    const char *impl = k_onednn_impl(K_ONEDNN_F32_ANY, &d);
    fprintf(stderr, "  capped: %s\n", impl);
    CHECK(strstr(impl, "avx512") == NULL && strstr(impl, "amx") == NULL);
    CHECK_STR_CONTAINS(impl, "avx2");
    CHECK_EQ(check_pass(K_IMPL_ONEDNN_F32_ANY, K_OP_CONV_FWD, &s, 1, 0), 0);
    CHECK_EQ(check_pass(K_IMPL_ONEDNN_F32_ANY, K_OP_CONV_BWD_WEIGHT, &s, 0, 1), 0);
    CHECK_EQ(check_matmul(K_IMPL_ONEDNN_F32, 1, 0, 0), 0);
}

/* Through the binary: the log says oneDNN's version and counts the nodes per
 * precision and ISA; results.json records the version beside the choices. */
TEST(kernels_onednn_a_run_names_the_library_and_counts_nodes_per_isa) {
    static char out[1 << 16];
    const char *d = test_tmpdir();
    int rc = test_xl(out, sizeof out,
                     "XLATRAIN_CACHE_DIR=%s/cache $XL --config configs/smoke.yaml --set target_accuracy=0 "
                     "--set synthetic_train_size=512 --set synthetic_test_size=256 --set num_epochs=1 "
                     "--set precision=bf16 --set output_dir=%s/a 2>&1",
                     d, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    char want[96];
    snprintf(want, sizeof want, "candidates include oneDNN %s", k_onednn_version());
    CHECK_STR_CONTAINS(out, want);
    CHECK_STR_CONTAINS(out, "nodes run bf16: ");
    CHECK_STR_CONTAINS(out, "; fp32: ");
    CHECK(strstr(out, " on AVX-512") || strstr(out, " on AVX2") || strstr(out, " on AVX512-BF16") ||
          strstr(out, " on AMX-BF16") || strstr(out, " on SSE4.1") || strstr(out, " on x86-64"));
    snprintf(want, sizeof want, "\"onednn\":\"%s\"", k_onednn_version());
    CHECK_STR_CONTAINS(test_slurp("%s/a/results.json", d), want);
}

/* The project's ISA cap (XLATRAIN_ISA, the key isa) caps oneDNN too, set
 * before oneDNN's first use as main.c sets it: an AVX2-capped run times the
 * oneDNN code an AVX2 machine would run, not this CPU's AVX-512 code. */
TEST(kernels_onednn_follows_the_kernels_isa_cap) {
    if (k_simd_hardware() < K_SIMD_AVX2) test_skip("this CPU has no AVX2");
    unsetenv("ONEDNN_MAX_CPU_ISA");
    k_isa_set_cap(K_SIMD_AVX2, "test");
    if (!have_onednn()) test_skip("oneDNN cannot make a CPU engine here");
    k_conv_shape s = shapes[0];
    k_conv_shape_infer(&s);
    k_op_desc d = {.kind = K_OP_CONV_FWD, .s = s};
    const char *impl = k_onednn_impl(K_ONEDNN_F32_ANY, &d);
    CHECK_MSG(strstr(impl, "avx2") && !strstr(impl, "avx512") && !strstr(impl, "amx"), "capped at AVX2 but got '%s'", impl);
    CHECK_STR_EQ(k_impl_node_isa(K_IMPL_ONEDNN_F32_ANY, &d), "AVX2");
    d.bf16 = 1; /* no bf16 below avx512_core but oneDNN's reference code, which is refused */
    CHECK(!k_impls[K_IMPL_ONEDNN_BF16].valid(&d));
}
