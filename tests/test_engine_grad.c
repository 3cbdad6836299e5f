/* test_engine_grad.c — numeric gradient checks for every differentiable op.
 *
 * For each case: loss = sum(f(inputs) * R) with a fixed random R. The
 * engine's symbolic gradient (float32, through trace -> compile -> execute)
 * is compared with central finite differences of a float64 reference
 * implementation of f written here, independently of the engine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph.h"
#include "nn/functional.h"
#include "test.h"

typedef struct gcase gcase;
struct gcase {
    const char *name;
    int nin;
    int rank[3];
    int32_t shape[3][4];
    int positive[3];     /* inputs must stay > 0.2 (log, sqrt, div) */
    int iattr[6];
    xt_t (*build)(xt_graph *g, const gcase *c, const xt_t *in);
    /* float64 forward; out has the output's numel */
    void (*ref)(const gcase *c, double *const *in, double *out);
    int out_rank;
    int32_t out_shape[4];
};

static int64_t numel(int rank, const int32_t *s) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= s[i];
    return n;
}

/* ---- float64 references ---- */
/* broadcast index: the element of input shape (r, s) seen by output multi-index */
static int64_t bidx(int orank, const int32_t *os, int64_t flat, int r, const int32_t *s) {
    int idx[4];
    for (int d = orank - 1; d >= 0; d--) { idx[d] = (int)(flat % os[d]); flat /= os[d]; }
    int64_t off = 0;
    for (int d = 0; d < r; d++) {
        int od = orank - r + d;
        off = off * s[d] + (s[d] == 1 ? 0 : idx[od]);
    }
    return off;
}
static double ew1(int op, double a) {
    switch (op) {
    case XT_OP_NEG: return -a;
    case XT_OP_RELU: return a > 0 ? a : 0;
    case XT_OP_EXP: return exp(a);
    case XT_OP_LOG: return log(a);
    case XT_OP_SQRT: return sqrt(a);
    case XT_OP_RSQRT: return 1 / sqrt(a);
    case XT_OP_SQUARE: return a * a;
    }
    return NAN;
}
static double ew2(int op, double a, double b) {
    switch (op) {
    case XT_OP_ADD: return a + b;
    case XT_OP_SUB: return a - b;
    case XT_OP_MUL: return a * b;
    case XT_OP_DIV: return a / b;
    }
    return NAN;
}
static void ref_ew(const gcase *c, double *const *in, double *out) {
    int64_t n = numel(c->out_rank, c->out_shape);
    for (int64_t i = 0; i < n; i++) {
        double a = in[0][bidx(c->out_rank, c->out_shape, i, c->rank[0], c->shape[0])];
        if (c->nin == 1) out[i] = ew1(c->iattr[0], a);
        else out[i] = ew2(c->iattr[0], a, in[1][bidx(c->out_rank, c->out_shape, i, c->rank[1], c->shape[1])]);
    }
}
static xt_t build_ew(xt_graph *g, const gcase *c, const xt_t *in) { return xt_ew(g, (xt_op)c->iattr[0], in[0], c->nin > 1 ? in[1] : XT_NONE); }

static void ref_sum_to(const gcase *c, double *const *in, double *out) {
    memset(out, 0, (size_t)numel(c->out_rank, c->out_shape) * sizeof *out);
    int64_t n = numel(c->rank[0], c->shape[0]);
    for (int64_t i = 0; i < n; i++) out[bidx(c->rank[0], c->shape[0], i, c->out_rank, c->out_shape)] += in[0][i];
}
static xt_t build_sum_to(xt_graph *g, const gcase *c, const xt_t *in) { return xt_sum_to(g, in[0], c->out_rank, c->out_shape); }

static void ref_matmul(const gcase *c, double *const *in, double *out) {
    int tA = c->iattr[0], tB = c->iattr[1], M = c->out_shape[0], N = c->out_shape[1];
    int K = tA ? c->shape[0][0] : c->shape[0][1];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                double a = tA ? in[0][k * M + i] : in[0][i * K + k];
                double b = tB ? in[1][j * K + k] : in[1][k * N + j];
                s += a * b;
            }
            out[i * N + j] = s;
        }
}
static xt_t build_matmul(xt_graph *g, const gcase *c, const xt_t *in) { return xt_matmul(g, in[0], in[1], c->iattr[0], c->iattr[1]); }

static void ref_conv(const gcase *c, double *const *in, double *out) {
    const int32_t *xs = c->shape[0], *ws = c->shape[1], *ys = c->out_shape;
    int sh = c->iattr[0], sw = c->iattr[1], ph = c->iattr[2], pw = c->iattr[3];
    for (int n = 0; n < ys[0]; n++)
        for (int o = 0; o < ys[1]; o++)
            for (int i = 0; i < ys[2]; i++)
                for (int j = 0; j < ys[3]; j++) {
                    double s = c->nin > 2 ? in[2][o] : 0;
                    for (int ci = 0; ci < xs[1]; ci++)
                        for (int a = 0; a < ws[2]; a++)
                            for (int b = 0; b < ws[3]; b++) {
                                int h = i * sh - ph + a, w = j * sw - pw + b;
                                if (h < 0 || w < 0 || h >= xs[2] || w >= xs[3]) continue;
                                s += in[0][((n * xs[1] + ci) * xs[2] + h) * xs[3] + w] * in[1][((o * ws[1] + ci) * ws[2] + a) * ws[3] + b];
                            }
                    out[((n * ys[1] + o) * ys[2] + i) * ys[3] + j] = s;
                }
}
static xt_t build_conv(xt_graph *g, const gcase *c, const xt_t *in) {
    return xt_conv2d(g, in[0], in[1], c->nin > 2 ? in[2] : XT_NONE, c->iattr[0], c->iattr[1], c->iattr[2], c->iattr[3]);
}

/* Residual blocks: x feeds the body and the shortcut, so its gradient is
 * the sum of what both send back (autodiff adds them; the memory planner must
 * keep x until the shortcut has read it).
 *   identity (iattr[0] = 0):  y = relu(conv(relu(conv(x, w1, pad 1)), w2, pad 1) + x)
 *   projection (iattr[0] = 1): y = relu(conv(x, w1, stride 2, pad 1) + conv(x, ws 1x1, stride 2)) */
static void ref_conv_into(const int32_t *xs, const int32_t *ws, int st, int pad, const int32_t *ys, const double *x,
                          const double *w, double *y) {
    gcase t = {.nin = 2, .iattr = {st, st, pad, pad}};
    memcpy(t.shape[0], xs, sizeof t.shape[0]);
    memcpy(t.shape[1], ws, sizeof t.shape[1]);
    memcpy(t.out_shape, ys, sizeof t.out_shape);
    ref_conv(&t, (double *const[]){(double *)x, (double *)w}, y);
}
static void ref_block(const gcase *c, double *const *in, double *out) {
    const int32_t *xs = c->shape[0], *ys = c->out_shape;
    int64_t n = numel(4, ys);
    double *h = malloc((size_t)n * sizeof *h), *sc = malloc((size_t)n * sizeof *sc);
    if (!c->iattr[0]) {
        ref_conv_into(xs, c->shape[1], 1, 1, ys, in[0], in[1], h);
        for (int64_t k = 0; k < n; k++) h[k] = h[k] > 0 ? h[k] : 0;
        ref_conv_into(ys, c->shape[2], 1, 1, ys, h, in[2], out);
        memcpy(sc, in[0], (size_t)n * sizeof *sc);
    } else {
        ref_conv_into(xs, c->shape[1], 2, 1, ys, in[0], in[1], out);
        ref_conv_into(xs, c->shape[2], 2, 0, ys, in[0], in[2], sc);
    }
    for (int64_t k = 0; k < n; k++) out[k] = out[k] + sc[k] > 0 ? out[k] + sc[k] : 0;
    free(h);
    free(sc);
}
static xt_t build_block(xt_graph *g, const gcase *c, const xt_t *in) {
    xt_t body, sc;
    if (!c->iattr[0]) {
        body = xt_conv2d(g, xt_relu(g, xt_conv2d(g, in[0], in[1], XT_NONE, 1, 1, 1, 1)), in[2], XT_NONE, 1, 1, 1, 1);
        sc = in[0];
    } else {
        body = xt_conv2d(g, in[0], in[1], XT_NONE, 2, 2, 1, 1);
        sc = xt_conv2d(g, in[0], in[2], XT_NONE, 2, 2, 0, 0);
    }
    return xt_relu(g, xt_add(g, body, sc));
}

static void ref_pool(const gcase *c, double *const *in, double *out) {
    const int32_t *xs = c->shape[0], *ys = c->out_shape;
    int kh = c->iattr[0], kw = c->iattr[1], sh = c->iattr[2], sw = c->iattr[3], ph = c->iattr[4], pw = c->iattr[5];
    int is_max = strcmp(c->name, "avgpool") != 0;
    for (int p = 0; p < ys[0] * ys[1]; p++)
        for (int i = 0; i < ys[2]; i++)
            for (int j = 0; j < ys[3]; j++) {
                double m = is_max ? -INFINITY : 0;
                for (int a = 0; a < kh; a++)
                    for (int b = 0; b < kw; b++) {
                        int h = i * sh - ph + a, w = j * sw - pw + b;
                        if (h < 0 || w < 0 || h >= xs[2] || w >= xs[3]) continue;
                        double v = in[0][(p * xs[2] + h) * xs[3] + w];
                        if (is_max) m = v > m ? v : m;
                        else m += v;
                    }
                out[(p * ys[2] + i) * ys[3] + j] = is_max ? m : m / (kh * kw);
            }
}
static xt_t build_maxpool(xt_graph *g, const gcase *c, const xt_t *in) {
    const int *a = c->iattr;
    return xt_max_pool2d(g, in[0], a[0], a[1], a[2], a[3], a[4], a[5]);
}
static xt_t build_avgpool(xt_graph *g, const gcase *c, const xt_t *in) {
    const int *a = c->iattr;
    return xt_avg_pool2d(g, in[0], a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void ref_bn_stats(const gcase *c, double *const *in, double *out) {
    const int32_t *s = c->shape[0];
    int N = s[0], C = s[1], HW = s[2] * s[3];
    for (int ch = 0; ch < C; ch++) {
        double sum = 0, sq = 0;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < HW; k++) sum += in[0][(n * C + ch) * HW + k];
        double mean = sum / (N * HW);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < HW; k++) {
                double d = in[0][(n * C + ch) * HW + k] - mean;
                sq += d * d;
            }
        out[ch] = mean;
        out[C + ch] = sq / (N * HW);
    }
}
static xt_t build_bn_stats(xt_graph *g, const gcase *c, const xt_t *in) { return xt_bn_stats(g, in[0]); }

/* batch-norm training forward, composed exactly as the nn layer does it */
static void ref_bn_relu(const gcase *c, double *const *in, double *out) {
    const int32_t *s = c->shape[0];
    int N = s[0], C = s[1], HW = s[2] * s[3];
    double st[64];
    ref_bn_stats(c, in, st);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int k = 0; k < HW; k++) {
                int64_t i = (n * C + ch) * HW + k;
                double y = (in[0][i] - st[ch]) / sqrt(st[C + ch] + 1e-5) * in[1][ch] + in[2][ch];
                out[i] = y > 0 ? y : 0;
            }
}
static xt_t build_bn_relu(xt_graph *g, const gcase *c, const xt_t *in) {
    return xt_relu(g, xt_f_batch_norm_train(g, in[0], xt_bn_stats(g, in[0]), in[1], in[2], 1e-5f));
}

static void ref_log_softmax(const gcase *c, double *const *in, double *out) {
    int R = c->shape[0][0], K = c->shape[0][1];
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int k = 0; k < K; k++) m = fmax(m, in[0][r * K + k]);
        for (int k = 0; k < K; k++) s += exp(in[0][r * K + k] - m);
        for (int k = 0; k < K; k++) out[r * K + k] = in[0][r * K + k] - m - log(s);
    }
}
static xt_t build_log_softmax(xt_graph *g, const gcase *c, const xt_t *in) { return xt_log_softmax(g, in[0]); }

static const int32_t g_targets[6] = {3, 0, 4, 4, 1, 2};
static void ref_nll(const gcase *c, double *const *in, double *out) {
    double lp[64];
    ref_log_softmax(c, in, lp);
    int R = c->shape[0][0], K = c->shape[0][1];
    double s = 0;
    for (int r = 0; r < R; r++) s -= lp[r * K + g_targets[r]];
    out[0] = s / R;
}
static int g_target_slot, g_step_slot;
static xt_t build_nll(xt_graph *g, const gcase *c, const xt_t *in) {
    return xt_nll_loss(g, xt_log_softmax(g, in[0]), xt_leaf(g, g_target_slot));
}

static void ref_dropout(const gcase *c, double *const *in, double *out);
static xt_t build_dropout(xt_graph *g, const gcase *c, const xt_t *in) {
    return xt_dropout(g, in[0], xt_leaf(g, g_step_slot), 0.3f, 7, 1234);
}

#include "kernels/kernels.h"
static void ref_dropout(const gcase *c, double *const *in, double *out) {
    int64_t n = numel(c->rank[0], c->shape[0]);
    uint64_t counter = (uint64_t)5 << 16 | 7; /* step 5, stream 7 */
    for (int64_t i = 0; i < n; i++) out[i] = k_rng_uniform(1234, counter, (uint64_t)i) < 0.3f ? 0 : in[0][i] / 0.7;
}

/* ---- the driver ---- */
static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* One case at a precision: the worst |engine - numeric| / max(1, |numeric|)
 * over every input element; each one above tol fails the test. */
static double run_case(const gcase *c, int precision, double tol) {
    xt_store st;
    xt_store_init(&st);
    int slot[3], rslot;
    char nm[16];
    for (int i = 0; i < c->nin; i++) {
        snprintf(nm, sizeof nm, "in%d", i);
        slot[i] = xt_store_add(&st, nm, XT_SLOT_PARAM, XT_F32, c->rank[i], c->shape[i]);
    }
    rslot = xt_store_add(&st, "R", XT_SLOT_BUFFER, XT_F32, c->out_rank, c->out_shape);
    g_target_slot = xt_store_add(&st, "target", XT_SLOT_BUFFER, XT_I32, 1, (int32_t[]){6});
    g_step_slot = xt_store_add(&st, "step", XT_SLOT_BUFFER, XT_I32, 0, NULL);
    xt_err e = {0};
    CHECK(xt_store_finalize(&st, &e) == 0);
    memcpy(st.slots[g_target_slot].data, g_targets, sizeof g_targets);
    *(int32_t *)st.slots[g_step_slot].data = 5;
    uint64_t seed = 42;
    double *x64[3];
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel(c->rank[i], c->shape[i]);
        x64[i] = malloc((size_t)n * sizeof(double));
        for (int64_t k = 0; k < n; k++) {
            double v = c->positive[i] ? 0.5 + urand(&seed) : urand(&seed) * 2 - 1;
            xt_store_f32(&st, slot[i])[k] = (float)v;
            x64[i][k] = (float)v; /* the reference sees the same float32 values */
        }
    }
    int64_t nout = numel(c->out_rank, c->out_shape);
    double *r64 = malloc((size_t)nout * sizeof(double)), *o64 = malloc((size_t)nout * sizeof(double));
    for (int64_t k = 0; k < nout; k++) r64[k] = xt_store_f32(&st, rslot)[k] = (float)(urand(&seed) * 2 - 1);

    /* analytic: engine */
    xt_engine_opts eo = {.fuse = 1, .precision = precision};
    xt_engine *en = xt_engine_new(&st, &eo);
    xt_graph *g = xt_engine_graph(en);
    xt_t in[3], grads[3];
    for (int i = 0; i < c->nin; i++) in[i] = xt_leaf(g, slot[i]);
    xt_t y = c->build(g, c, in);
    xt_t loss = xt_sum_all(g, xt_mul(g, y, xt_leaf(g, rslot)));
    CHECK(xt_backward(g, loss, in, c->nin, grads) == 0);
    float *gbuf[3];
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel(c->rank[i], c->shape[i]);
        gbuf[i] = malloc((size_t)n * sizeof(float));
        CHECK_MSG(grads[i] != XT_NONE, "%s: no gradient for input %d", c->name, i);
        if (grads[i] != XT_NONE) xt_fetch(g, grads[i], gbuf[i], (size_t)n * 4);
    }
    CHECK_MSG(xt_mark_step(en, &e) == 0, "%s: %s", c->name, e.msg);

    /* numeric: central differences of the float64 reference */
    double worst = 0;
    for (int i = 0; i < c->nin; i++) {
        int64_t n = numel(c->rank[i], c->shape[i]);
        for (int64_t k = 0; k < n; k++) {
            double save = x64[i][k], h = 1e-6, lp = 0, lm = 0;
            x64[i][k] = save + h;
            c->ref(c, x64, o64);
            for (int64_t q = 0; q < nout; q++) lp += o64[q] * r64[q];
            x64[i][k] = save - h;
            c->ref(c, x64, o64);
            for (int64_t q = 0; q < nout; q++) lm += o64[q] * r64[q];
            x64[i][k] = save;
            double num = (lp - lm) / (2 * h), ana = gbuf[i][k];
            double err = fabs(num - ana) / fmax(1.0, fabs(num));
            if (err > worst) worst = err;
            if (err > tol) {
                CHECK_MSG(0, "%s (%s): d/d in%d[%lld]: engine %.7g vs numeric %.7g", c->name, xt_precision_name(precision), i,
                          (long long)k, ana, num);
                k = n; /* one report per input is enough */
            }
        }
    }
    for (int i = 0; i < c->nin; i++) {
        free(x64[i]);
        free(gbuf[i]);
    }
    free(r64);
    free(o64);
    xt_engine_free(en);
    xt_store_free(&st);
    return worst;
}

#define S4(a, b, c_, d) {a, b, c_, d}
#define EW1_CASE(nm, opid, pos) \
    {nm, 1, {4}, {S4(2, 3, 4, 5)}, {pos}, {opid}, build_ew, ref_ew, 4, S4(2, 3, 4, 5)}

static const gcase g_cases[] = {
    EW1_CASE("neg", XT_OP_NEG, 0), EW1_CASE("relu", XT_OP_RELU, 0), EW1_CASE("exp", XT_OP_EXP, 0),
    EW1_CASE("log", XT_OP_LOG, 1), EW1_CASE("sqrt", XT_OP_SQRT, 1), EW1_CASE("rsqrt", XT_OP_RSQRT, 1),
    EW1_CASE("square", XT_OP_SQUARE, 0),
    {"add_bcast_channel", 2, {4, 4}, {S4(2, 3, 4, 5), S4(1, 3, 1, 1)}, {0}, {XT_OP_ADD}, build_ew, ref_ew, 4, S4(2, 3, 4, 5)},
    {"sub_bcast_row", 2, {4, 1}, {S4(2, 3, 4, 5), S4(5, 0, 0, 0)}, {0}, {XT_OP_SUB}, build_ew, ref_ew, 4, S4(2, 3, 4, 5)},
    {"mul_bcast_both", 2, {3, 2}, {S4(3, 1, 5, 0), S4(4, 1, 0, 0)}, {0}, {XT_OP_MUL}, build_ew, ref_ew, 3, S4(3, 4, 5, 0)},
    {"div", 2, {2, 2}, {S4(4, 6, 0, 0), S4(4, 6, 0, 0)}, {0, 1}, {XT_OP_DIV}, build_ew, ref_ew, 2, S4(4, 6, 0, 0)},
    {"sum_to_channel", 1, {4}, {S4(2, 3, 4, 5)}, {0}, {0}, build_sum_to, ref_sum_to, 4, S4(1, 3, 1, 1)},
    {"sum_to_scalar", 1, {3}, {S4(2, 3, 4, 0)}, {0}, {0}, build_sum_to, ref_sum_to, 0, S4(0, 0, 0, 0)},
    {"matmul_nn", 2, {2, 2}, {S4(3, 4, 0, 0), S4(4, 5, 0, 0)}, {0}, {0, 0}, build_matmul, ref_matmul, 2, S4(3, 5, 0, 0)},
    {"matmul_nt", 2, {2, 2}, {S4(3, 4, 0, 0), S4(5, 4, 0, 0)}, {0}, {0, 1}, build_matmul, ref_matmul, 2, S4(3, 5, 0, 0)},
    {"matmul_tn", 2, {2, 2}, {S4(4, 3, 0, 0), S4(4, 5, 0, 0)}, {0}, {1, 0}, build_matmul, ref_matmul, 2, S4(3, 5, 0, 0)},
    {"matmul_tt", 2, {2, 2}, {S4(4, 3, 0, 0), S4(5, 4, 0, 0)}, {0}, {1, 1}, build_matmul, ref_matmul, 2, S4(3, 5, 0, 0)},
    {"conv2d_bias", 3, {4, 4, 1}, {S4(2, 2, 6, 6), S4(3, 2, 3, 3), S4(3, 0, 0, 0)}, {0}, {1, 1, 0, 0}, build_conv, ref_conv, 4, S4(2, 3, 4, 4)},
    {"conv2d_stride2_pad1", 2, {4, 4}, {S4(2, 3, 7, 7), S4(4, 3, 3, 3)}, {0}, {2, 2, 1, 1}, build_conv, ref_conv, 4, S4(2, 4, 4, 4)},
    {"conv2d_seed_conv1", 3, {4, 4, 1}, {S4(2, 1, 12, 12), S4(3, 1, 5, 5), S4(3, 0, 0, 0)}, {0}, {1, 1, 0, 0}, build_conv, ref_conv, 4, S4(2, 3, 8, 8)},
    {"maxpool2", 1, {4}, {S4(2, 3, 6, 6)}, {0}, {2, 2, 2, 2, 0, 0}, build_maxpool, ref_pool, 4, S4(2, 3, 3, 3)},
    {"maxpool3_s2_p1", 1, {4}, {S4(1, 2, 7, 7)}, {0}, {3, 3, 2, 2, 1, 1}, build_maxpool, ref_pool, 4, S4(1, 2, 4, 4)},
    {"avgpool", 1, {4}, {S4(2, 2, 6, 6)}, {0}, {2, 2, 2, 2, 0, 0}, build_avgpool, ref_pool, 4, S4(2, 2, 3, 3)},
    {"bn_stats", 1, {4}, {S4(3, 2, 3, 3)}, {0}, {0}, build_bn_stats, ref_bn_stats, 2, S4(2, 2, 0, 0)},
    {"bn_train_relu", 3, {4, 1, 1}, {S4(3, 2, 3, 3), S4(2, 0, 0, 0), S4(2, 0, 0, 0)}, {0, 1, 0}, {0}, build_bn_relu, ref_bn_relu, 4, S4(3, 2, 3, 3)},
    {"log_softmax", 1, {2}, {S4(4, 7, 0, 0)}, {0}, {0}, build_log_softmax, ref_log_softmax, 2, S4(4, 7, 0, 0)},
    {"nll_of_log_softmax", 1, {2}, {S4(6, 5, 0, 0)}, {0}, {0}, build_nll, ref_nll, 0, S4(0, 0, 0, 0)},
    {"dropout", 1, {3}, {S4(3, 4, 5, 0)}, {0}, {0}, build_dropout, ref_dropout, 3, S4(3, 4, 5, 0)},
    {"residual_identity", 3, {4, 4, 4}, {S4(2, 3, 5, 5), S4(3, 3, 3, 3), S4(3, 3, 3, 3)}, {0}, {0}, build_block, ref_block, 4, S4(2, 3, 5, 5)},
    {"residual_projection_s2", 3, {4, 4, 4}, {S4(2, 2, 6, 6), S4(3, 2, 3, 3), S4(3, 2, 1, 1)}, {0}, {1}, build_block, ref_block, 4, S4(2, 3, 3, 3)},
};

TEST(engine_gradcheck_all_ops) {
    for (size_t i = 0; i < sizeof g_cases / sizeof *g_cases; i++) run_case(&g_cases[i], XT_PREC_FP32, 2e-3);
}

/* Under bf16 (pass_precision.c) the matrix products and convolutions, and
 * every case built on them, see their operands rounded to bf16: at most
 * u_bf16 = 2^-9 relative per operand, and a gradient term crosses up to three
 * roundings (a forward operand, dy, the other operand), about 3 * 2^-9
 * relative per term before terms of both signs cancel. The tolerance is
 * bf16-sized: 8 bf16 units (8 * 2^-8) of max(1, |gradient|), where fp32's
 * 2e-3 above is the finite differences' own error. The data are seeded, so
 * the figures are reproducible (worst: conv2d_seed_conv1, 0.021, sums of 128
 * terms). The fp32 bound must fail somewhere: bf16 really ran. */
TEST(engine_gradcheck_under_bf16) {
    static const char *const names[] = {"matmul_nn", "matmul_nt", "matmul_tn", "matmul_tt", "conv2d_bias", "conv2d_stride2_pad1",
                                        "conv2d_seed_conv1", "residual_identity", "residual_projection_s2"};
    double tol = 8 * ldexp(1.0, -8), worst = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        for (size_t i = 0; i < sizeof g_cases / sizeof *g_cases; i++)
            if (!strcmp(g_cases[i].name, names[k])) {
                double w = run_case(&g_cases[i], XT_PREC_BF16, tol);
                if (w > worst) worst = w;
                fprintf(stderr, "    %s: worst %.3g\n", names[k], w);
            }
    CHECK_MSG(worst > 2e-3, "the worst bf16 gradient error %.3g is within the fp32 tolerance: were the operands rounded?", worst);
}
