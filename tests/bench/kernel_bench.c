/* kernel_bench.c — times the kernels on the models' shapes (batch 128, one core).
 *
 * A standalone program, not part of the test runner (`make bench` builds it as
 * build/release/bench/kernel_bench; without -DXT_KERNEL_BENCH the file compiles
 * to nothing). By hand, from the repository root:
 *   cc -std=c11 -D_GNU_SOURCE -DXT_KERNEL_BENCH -O3 -march=x86-64-v2 -Isrc $(pkg-config --cflags openblas) src/kernels/[a-z]*.c tests/bench/kernel_bench.c -o /tmp/kernel_bench $(pkg-config --libs openblas) -lm && OPENBLAS_NUM_THREADS=1 /tmp/kernel_bench [filter]
 * filter: only rows whose name contains it ("seed conv2", "maxpool"). METHODS=avx512,k_conv2d
 * in the environment: only the conv methods whose names contain one of its words.
 * Times are the thread's CPU time (best of 5), so other jobs on a shared machine
 * disturb them less than wall time would.
 *
 * Is: single-core cblas_sgemm peak, then for every conv shape of the seed CNN
 * and wide_cnn each method (im2col+GEMM per image / grouped, direct SIMD per
 * flavour, and whatever k_conv2d_* picks) on fwd, bwd_data and bwd_weight in
 * GFLOP/s; pooling, batch norm, log-softmax and dropout in microseconds. tests/bench/HISTORY.md
 * records the figures this printed and the choices they led to.
 * Is not: a test (no pass/fail) or the end-to-end benchmark against PyTorch.
 */
#ifdef XT_KERNEL_BENCH
#include "kernels/bf16.h"
#include "kernels/conv.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_im2col.h"
#include "kernels/conv_sparse.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *g_filter;  /* argv[1]: only rows whose name contains it */
static const char *g_methods; /* $METHODS: only conv methods named in it, e.g. "avx512,k_conv2d" */

/* CPU time of this thread, not wall time: on a machine shared with other jobs
 * it leaves out the time we were not running (cache disturbance remains). */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static float *falloc(size_t n) {
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "kernel_bench: out of memory\n");
        exit(1);
    }
    return p;
}

static void fill(float *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static int wanted(const char *name) {
    return !g_filter || strstr(name, g_filter);
}

/* Does `name` contain one of the comma-separated words of $METHODS (or is it unset)? */
static int method_wanted(const char *name) {
    if (!g_methods || !*g_methods) return 1;
    const char *p = g_methods;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char word[64];
        if (len > 0 && len < sizeof word) {
            memcpy(word, p, len);
            word[len] = 0;
            if (strstr(name, word)) return 1;
        }
        p += len + (e ? 1 : 0);
    }
    return 0;
}

/* Best-of-5 seconds per call of fn(ctx), each sample running ~target seconds. */
typedef void (*bench_fn)(void *ctx);
static double time_it(bench_fn fn, void *ctx, double target) {
    fn(ctx); /* warm caches, page in buffers */
    double t0 = now_s();
    fn(ctx);
    double one = now_s() - t0;
    int reps = one > 0 ? (int)(target / one) : 1000;
    if (reps < 1) reps = 1;
    if (reps > 10000) reps = 10000;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        t0 = now_s();
        for (int i = 0; i < reps; i++) fn(ctx);
        double t = (now_s() - t0) / reps;
        if (t < best) best = t;
    }
    return best;
}

/* ---- GEMM peak ---------------------------------------------------------------- */

typedef struct {
    int n;
    float *a, *b, *c;
} gemm_ctx;

static void run_gemm(void *p) {
    gemm_ctx *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f,
                g->c, g->n);
}

static void bench_gemm(void) {
    int sizes[] = {256, 512, 1024};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "sgemm %d^3", sizes[i]);
        if (!wanted(name)) continue;
        gemm_ctx g = {sizes[i], falloc((size_t)sizes[i] * sizes[i]), falloc((size_t)sizes[i] * sizes[i]),
                      falloc((size_t)sizes[i] * sizes[i])};
        fill(g.a, (size_t)g.n * g.n, 1);
        fill(g.b, (size_t)g.n * g.n, 2);
        double t = time_it(run_gemm, &g, 0.2);
        /* OPENBLAS_CORETYPE overrides OpenBLAS's own choice of kernels: say so, or a
         * forced AVX2 set on an AVX-512 CPU reads as the CPU's GEMM speed */
        const char *forced = getenv("OPENBLAS_CORETYPE");
        printf("%-34s %10.1f us %8.1f GFLOP/s (OpenBLAS %s kernels%s%s)\n", name, t * 1e6, 2.0 * g.n * g.n * g.n / t * 1e-9,
               openblas_get_corename(), forced && *forced ? ", forced by OPENBLAS_CORETYPE=" : "", forced ? forced : "");
        free(g.a), free(g.b), free(g.c);
    }
}

/* ---- convolutions --------------------------------------------------------------- */

enum { M_IM2COL1, M_IM2COL4, M_IM2COL16, M_DIRECT512, M_DIRECT2, M_DIRECTGEN, M_CHOSEN, M_COUNT };
static const char *method_names[M_COUNT] = {"im2col g=1",    "im2col g=4",  "im2col g=16", "direct avx512",
                                            "direct avx2",   "direct gen",  "k_conv2d"};

typedef struct {
    const k_conv_shape *s;
    int method, pass;
    float *x, *w, *b, *y, *dx, *dw, *db, *dy, *scratch;
} conv_ctx;

static void run_conv(void *p) {
    conv_ctx *c = p;
    const k_conv_shape *s = c->s;
    int g = c->method == M_IM2COL1 ? 1 : c->method == M_IM2COL4 ? 4 : 16;
    switch (c->method) {
    case M_IM2COL1:
    case M_IM2COL4:
    case M_IM2COL16:
        if (c->pass == K_CONV_FWD) k_conv_im2col_fwd(s, g, c->y, c->x, c->w, c->b, c->scratch);
        if (c->pass == K_CONV_BWD_DATA) k_conv_im2col_bwd_data(s, g, c->dx, c->dy, c->w, c->scratch);
        if (c->pass == K_CONV_BWD_WEIGHT) k_conv_im2col_bwd_weight(s, g, c->dw, c->db, c->x, c->dy, c->scratch);
        break;
    case M_DIRECT512:
    case M_DIRECT2:
    case M_DIRECTGEN:
        if (c->pass == K_CONV_FWD) k_conv_direct_fwd(s, c->y, c->x, c->w, c->b, c->scratch);
        if (c->pass == K_CONV_BWD_DATA) k_conv_direct_bwd_data(s, c->dx, c->dy, c->w, c->scratch);
        if (c->pass == K_CONV_BWD_WEIGHT) k_conv_direct_bwd_weight(s, c->dw, c->db, c->x, c->dy, c->scratch);
        break;
    default:
        if (c->pass == K_CONV_FWD) k_conv2d_fwd(s, c->y, c->x, c->w, c->b, c->scratch);
        if (c->pass == K_CONV_BWD_DATA) k_conv2d_bwd_data(s, c->dx, c->dy, c->w, c->scratch);
        if (c->pass == K_CONV_BWD_WEIGHT) k_conv2d_bwd_weight(s, c->dw, c->db, c->x, c->dy, c->scratch);
        break;
    }
}

/* The weight gradient with dy given as a 2x2/2 max pool's gradient and
 * argmax (as the engine runs it under a pool): the dense pass and the one
 * that visits only the kept pixels (conv_sparse.c), where it can run, and
 * which one conv.c's cost model takes. GFLOP/s on the dense count, and for
 * the sparse pass on what it executes (a quarter of it). y: the conv output
 * the pool reads. */
typedef struct {
    const k_conv_shape *s;
    const float *x;
    k_unpool2 up;
    const float *w;
    float *dw, *dx, *scratch, *acc;
} unpool_ctx;
static void run_bww_unpool2(void *p) {
    unpool_ctx *c = p;
    k_conv2d_bwd_weight_unpool2_part(c->s, c->dw, c->x, c->up, c->scratch, c->acc, 1, 1, K_CONV_NO_PROLOGUE);
}
static void run_bwd_unpool2(void *p) {
    unpool_ctx *c = p;
    k_conv2d_bwd_data_unpool2(c->s, c->dx, c->up, c->w, c->scratch);
}
static void bench_bww_unpool2(const k_conv_shape *s, const float *x, const float *w, const float *y, float *dw) {
    if (s->Ho < 2 || s->Wo < 2) return;
    k_pool_shape ps = k_conv_pool2_shape(s, s->N);
    size_t gs = (size_t)ps.N * ps.C * ps.Ho * ps.Wo;
    float *g = falloc(gs), *vals = falloc(gs);
    uint8_t *idx = malloc(gs * sizeof *idx);
    if (!idx) exit(1);
    fill(g, gs, 5);
    k_maxpool2d_fwd(&ps, vals, idx, y);
    k_conv_sparse_force(1);
    size_t scr = k_conv2d_unpool2_scratch(s), accn = k_conv2d_bwd_weight_acc_floats(s); /* the larger of the two */
    unpool_ctx c = {.s = s, .x = x, .w = w, .up = {g, idx, NULL}, .dw = dw, .scratch = falloc(scr), .acc = falloc(accn)};
    double flops = 2.0 * s->N * s->Co * s->Ho * s->Wo * (double)s->Ci * s->kh * s->kw;
    printf("  bwd_weight under a 2x2 max pool (dy as its gradient and argmax):\n   ");
    for (int sparse = 0; sparse < 2; sparse++) {
        k_conv_sparse_force(sparse);
        if (sparse && k_conv_choose_unpool2(s, K_CONV_BWD_WEIGHT) != K_CONV_SPARSE) {
            printf(" sparse: n/a |");
            continue;
        }
        double t = time_it(run_bww_unpool2, &c, 0.05);
        if (sparse)
            printf(" sparse %.0f us %.1f (executed %.1f) |", t * 1e6, flops / t * 1e-9,
                   2.0 * k_conv_sparse_executed_macs(s) / t * 1e-9);
        else
            printf(" dense %.0f us %.1f |", t * 1e6, flops / t * 1e-9);
        fflush(stdout);
    }
    k_conv_sparse_force(-1);
    printf("  -> %s\n", k_conv_method_name(k_conv_choose_unpool2(s, K_CONV_BWD_WEIGHT)));
    /* backward-data: g with the zeros a ReLU after the pool leaves (about
     * half), which the sparse pass skips */
    if (s->Ci >= 8) {
        for (size_t i = 0; i < gs; i += 2) g[i] = 0.0f;
        c.dx = falloc((size_t)s->N * s->Ci * s->H * s->W);
        printf("  bwd_data under a 2x2 max pool (half the gradient 0, as after a ReLU):\n   ");
        for (int sparse = 0; sparse < 2; sparse++) {
            k_conv_sparse_data_force(sparse);
            if (sparse && k_conv_choose_unpool2(s, K_CONV_BWD_DATA) != K_CONV_SPARSE) {
                printf(" sparse: n/a |");
                continue;
            }
            double t = time_it(run_bwd_unpool2, &c, 0.05);
            printf(" %s %.0f us %.1f |", sparse ? "sparse" : "dense", t * 1e6, flops / t * 1e-9);
            fflush(stdout);
        }
        k_conv_sparse_data_force(-1);
        printf("  -> %s\n", k_conv_method_name(k_conv_choose_unpool2(s, K_CONV_BWD_DATA)));
        free(c.dx);
    }
    free(g), free(vals), free(idx), free(c.scratch), free(c.acc);
}

static void bench_conv(const char *label, k_conv_shape s) {
    if (k_conv_shape_infer(&s)) return;
    size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
    size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
    double flops = 2.0 * s.N * s.Co * s.Ho * s.Wo * (double)s.Ci * s.kh * s.kw;
    conv_ctx c = {.s = &s, .x = falloc(xs), .w = falloc(ws), .b = falloc((size_t)s.Co), .y = falloc(ys),
                  .dx = falloc(xs), .dw = falloc(ws), .db = falloc((size_t)s.Co), .dy = falloc(ys)};
    fill(c.x, xs, 1), fill(c.w, ws, 2), fill(c.b, (size_t)s.Co, 3), fill(c.dy, ys, 4);
    size_t scr = k_conv2d_scratch(&s);
    size_t m = k_conv_direct_scratch(&s);
    if (m > scr) scr = m;
    int groups[] = {1, 4, 16};
    for (int g = 0; g < 3; g++)
        if ((m = k_conv_im2col_scratch(&s, groups[g])) > scr) scr = m;
    c.scratch = falloc(scr);
    memset(c.scratch, 0, scr * sizeof(float));
    static const char *pass_names[3] = {"fwd", "bwd_data", "bwd_weight"};
    printf("\n%s: N=%d Ci=%d %dx%d -> Co=%d %dx%d (k%dx%d s%d p%d), %.1f MFLOP per pass, scratch %.0f KB\n", label,
           s.N, s.Ci, s.H, s.W, s.Co, s.Ho, s.Wo, s.kh, s.kw, s.sh, s.ph, flops * 1e-6, scr * 4.0 / 1024);
    for (int pass = 0; pass < 3; pass++) {
        printf("  %s:\n   ", pass_names[pass]);
        for (int meth = 0; meth < M_COUNT; meth++) {
            if (!method_wanted(method_names[meth])) continue;
            int lvl = meth == M_DIRECT512 ? K_SIMD_AVX512 : meth == M_DIRECT2 ? K_SIMD_AVX2 : K_SIMD_GENERIC;
            if (meth >= M_DIRECT512 && meth <= M_DIRECTGEN) {
                if (k_simd_force(lvl) != lvl) {
                    printf(" %s: n/a |", method_names[meth]);
                    k_simd_force(-1);
                    continue;
                }
            }
            c.method = meth;
            c.pass = pass;
            double t = time_it(run_conv, &c, 0.05);
            k_simd_force(-1);
            printf(" %s %.0f us %.1f |", method_names[meth], t * 1e6, flops / t * 1e-9);
            fflush(stdout);
        }
        printf("  -> %s\n", k_conv_method_name(k_conv_choose(&s, pass)));
    }
    bench_bww_unpool2(&s, c.x, c.w, c.dy, c.dw);
    free(c.x), free(c.w), free(c.b), free(c.y), free(c.dx), free(c.dw), free(c.db), free(c.dy), free(c.scratch);
}

/* ---- bf16 (issue #18): every path of the bf16 GEMM and convolutions ------------- */

typedef struct {
    const k_conv_shape *s;
    int pass, gemm_n;
    k_bf16 *x, *w, *dy, *a, *b;
    float *y, *dx, *dw, *c;
    void *scratch;
} bf16_ctx;

static k_bf16 *balloc(size_t n, unsigned seed) {
    float *f = falloc(n);
    fill(f, n, seed);
    k_bf16 *p = aligned_alloc(64, ((n ? n : 1) * sizeof(k_bf16) + 63) & ~(size_t)63);
    if (!p) exit(1);
    k_bf16_cast(n, p, f);
    free(f);
    return p;
}

static void run_conv_bf16(void *p) {
    bf16_ctx *c = p;
    if (c->pass == K_CONV_FWD) k_conv2d_fwd_bf16(c->s, c->y, c->x, c->w, NULL, c->scratch);
    if (c->pass == K_CONV_BWD_DATA) k_conv2d_bwd_data_bf16(c->s, c->dx, c->dy, c->w, c->scratch);
    if (c->pass == K_CONV_BWD_WEIGHT) k_conv2d_bwd_weight_bf16(c->s, c->dw, c->x, c->dy, c->scratch);
}

/* the fp32 k_conv2d_* (the method conv.c picks) on fp32 operands, one pass */
static double time_fp32_conv(const k_conv_shape *s, int pass) {
    size_t xs = (size_t)s->N * s->Ci * s->H * s->W, ys = (size_t)s->N * s->Co * s->Ho * s->Wo;
    size_t ws = (size_t)s->Co * s->Ci * s->kh * s->kw;
    conv_ctx c = {.s = s, .method = M_COUNT - 1, .pass = pass, .x = falloc(xs), .w = falloc(ws), .b = NULL,
                  .y = falloc(ys), .dx = falloc(xs), .dw = falloc(ws), .db = NULL, .dy = falloc(ys),
                  .scratch = falloc(k_conv2d_scratch(s))};
    fill(c.x, xs, 1), fill(c.w, ws, 2), fill(c.dy, ys, 4);
    double t = time_it(run_conv, &c, 0.05);
    free(c.x), free(c.w), free(c.y), free(c.dx), free(c.dw), free(c.dy), free(c.scratch);
    return t;
}

/* each bf16 path this CPU has (reference, im2col + GEMM, direct), each pass,
 * beside what the fp32 k_conv2d_* gets on fp32 operands */
static void bench_conv_bf16(const char *label, k_conv_shape s) {
    if (k_conv_shape_infer(&s)) return;
    size_t xs = (size_t)s.N * s.Ci * s.H * s.W, ys = (size_t)s.N * s.Co * s.Ho * s.Wo;
    size_t ws = (size_t)s.Co * s.Ci * s.kh * s.kw;
    double flops = 2.0 * s.N * s.Co * s.Ho * s.Wo * (double)s.Ci * s.kh * s.kw;
    bf16_ctx c = {.s = &s, .x = balloc(xs, 1), .w = balloc(ws, 2), .dy = balloc(ys, 4), .y = falloc(ys),
                  .dx = falloc(xs), .dw = falloc(ws)};
    size_t scr = k_conv2d_bf16_scratch(&s);
    c.scratch = aligned_alloc(64, (scr + 63) & ~(size_t)63);
    memset(c.scratch, 0, scr);
    static const char *pass_names[3] = {"fwd", "bwd_data", "bwd_weight"};
    printf("\n%s, bf16 operands: %.1f MFLOP per pass, scratch %.0f KB\n", label, flops * 1e-6, scr / 1024.0);
    for (int pass = 0; pass < 3; pass++) {
        printf("  %s:\n   ", pass_names[pass]);
        double t32 = time_fp32_conv(&s, pass);
        printf(" fp32 %.0f us %.1f |", t32 * 1e6, flops / t32 * 1e-9);
        for (int path = 0; path < k_bf16_npaths(); path++) {
            k_bf16_force(path);
            c.pass = pass;
            double t = time_it(run_conv_bf16, &c, 0.05);
            printf(" bf16 %s %.0f us %.1f |", k_bf16_path_name(path), t * 1e6, flops / t * 1e-9);
            fflush(stdout);
        }
        k_bf16_force(-1);
        printf("  -> %s\n", k_bf16_path_name(k_conv_bf16_choose(&s, pass)));
    }
    free(c.x), free(c.w), free(c.dy), free(c.y), free(c.dx), free(c.dw), free(c.scratch);
}

static void run_gemm_bf16(void *p) {
    bf16_ctx *c = p;
    k_gemm_bf16(0, 0, c->gemm_n, c->gemm_n, c->gemm_n, c->a, c->gemm_n, c->b, c->gemm_n, 0, c->c, c->gemm_n, c->scratch);
}

static void bench_gemm_bf16(void) {
    int sizes[] = {256, 512, 1024};
    for (int i = 0; i < 3; i++) {
        char name[64];
        int n = sizes[i];
        snprintf(name, sizeof name, "bf16 gemm %d^3", n);
        if (!wanted(name)) continue;
        bf16_ctx c = {.gemm_n = n, .a = balloc((size_t)n * n, 1), .b = balloc((size_t)n * n, 2), .c = falloc((size_t)n * n)};
        c.scratch = aligned_alloc(64, (k_gemm_bf16_scratch(n, n, n) + 63) & ~(size_t)63);
        printf("%-34s", name);
        for (int path = 0; path <= k_bf16_detect(); path++) { /* DIRECT is a conv method: same GEMM */
            k_bf16_force(path);
            double t = time_it(run_gemm_bf16, &c, 0.2);
            printf(" %s %.1f us %.1f GFLOP/s |", k_bf16_path_name(path), t * 1e6, 2.0 * n * n * n / t * 1e-9);
        }
        k_bf16_force(-1);
        printf("\n");
        free(c.a), free(c.b), free(c.c), free(c.scratch);
    }
}

/* ---- pooling, batch norm, log-softmax ------------------------------------------ */

typedef struct {
    k_pool_shape s;
    float *x, *y, *dx, *dy;
    uint8_t *arg;
    int op;
} pool_ctx;

static void run_pool(void *p) {
    pool_ctx *c = p;
    if (c->op == 0) k_maxpool2d_fwd(&c->s, c->y, c->arg, c->x);
    if (c->op == 1) k_maxpool2d_bwd(&c->s, c->dx, c->dy, c->arg);
    if (c->op == 2) k_maxpool2d_fwd_ref(&c->s, c->y, c->arg, c->x);
}

static void bench_pool(const char *label, k_pool_shape s) {
    if (!wanted(label) || k_pool_shape_infer(&s)) return;
    size_t xs = (size_t)s.N * s.C * s.H * s.W, ys = (size_t)s.N * s.C * s.Ho * s.Wo;
    pool_ctx c = {.s = s, .x = falloc(xs), .y = falloc(ys), .dx = falloc(xs), .dy = falloc(ys)};
    c.arg = malloc(ys);
    fill(c.x, xs, 5), fill(c.dy, ys, 6);
    k_maxpool2d_fwd(&c.s, c.y, c.arg, c.x);
    const char *ops[3] = {"fwd", "bwd", "fwd_ref"};
    printf("%-34s", label);
    for (c.op = 0; c.op < 3; c.op++) printf(" %s %.1f us |", ops[c.op], time_it(run_pool, &c, 0.05) * 1e6);
    printf("  (%.1f MB in)\n", xs * 4e-6);
    free(c.x), free(c.y), free(c.dx), free(c.dy), free(c.arg);
}

typedef struct {
    int N, C, HW, op;
    float *x, *y, *dx, *dy, *mean, *var, *gamma, *beta, *dg, *dbt;
} bn_ctx;

static void run_bn(void *p) {
    bn_ctx *c = p;
    if (c->op == 0) k_bn_stats(c->N, c->C, c->HW, c->mean, c->var, c->x);
    if (c->op == 1) k_bn_stats_ref(c->N, c->C, c->HW, c->mean, c->var, c->x);
}

static void bench_bn(const char *label, int N, int C, int HW) {
    if (!wanted(label)) return;
    size_t n = (size_t)N * C * HW;
    bn_ctx c = {N, C, HW, 0, falloc(n), falloc(n), falloc(n), falloc(n), falloc((size_t)C), falloc((size_t)C),
                falloc((size_t)C), falloc((size_t)C), falloc((size_t)C), falloc((size_t)C)};
    fill(c.x, n, 7), fill(c.dy, n, 8), fill(c.gamma, (size_t)C, 9), fill(c.beta, (size_t)C, 10);
    k_bn_stats(N, C, HW, c.mean, c.var, c.x);
    const char *ops[2] = {"stats", "stats_ref"};
    printf("%-34s", label);
    for (c.op = 0; c.op < 2; c.op++) printf(" %s %.1f us |", ops[c.op], time_it(run_bn, &c, 0.05) * 1e6);
    printf("  (%.1f MB)\n", n * 4e-6);
    free(c.x), free(c.y), free(c.dx), free(c.dy), free(c.mean), free(c.var), free(c.gamma), free(c.beta);
    free(c.dg), free(c.dbt);
}

typedef struct {
    int rows, cols, op;
    float *x, *y, *dx, *dy;
} sm_ctx;

static void run_sm(void *p) {
    sm_ctx *c = p;
    if (c->op == 0) k_log_softmax_fwd(c->rows, c->cols, c->y, c->x);
    if (c->op == 1) k_log_softmax_bwd(c->rows, c->cols, c->dx, c->dy, c->y);
}

static void bench_softmax(void) {
    if (!wanted("log_softmax")) return;
    sm_ctx c = {128, 10, 0, falloc(1280), falloc(1280), falloc(1280), falloc(1280)};
    fill(c.x, 1280, 11), fill(c.dy, 1280, 12);
    printf("%-34s", "log_softmax 128x10");
    for (c.op = 0; c.op < 2; c.op++) printf(" %s %.2f us |", c.op ? "bwd" : "fwd", time_it(run_sm, &c, 0.02) * 1e6);
    printf("\n");
    free(c.x), free(c.y), free(c.dx), free(c.dy);
}

typedef struct {
    size_t n;
    float *x, *y;
    int single;
} drop_ctx;

static void run_drop(void *p) {
    drop_ctx *c = p;
    if (c->single) /* what a caller without k_dropout would write */
        for (size_t i = 0; i < c->n; i++) c->y[i] = k_rng_uniform(7, 99, i) < 0.25f ? 0.0f : c->x[i] * (4.0f / 3.0f);
    else
        k_dropout(c->n, c->y, c->x, 0.25f, 7, 99, 0);
}

static void bench_dropout(void) {
    if (!wanted("dropout")) return;
    drop_ctx c = {128 * 9216, falloc(128 * 9216), falloc(128 * 9216), 0};
    fill(c.x, c.n, 13);
    printf("%-34s", "dropout 128x9216 (wide_cnn)");
    for (c.single = 0; c.single < 2; c.single++)
        printf(" %s %.0f us |", c.single ? "k_rng_uniform loop" : "k_dropout", time_it(run_drop, &c, 0.05) * 1e6);
    printf("\n");
    free(c.x), free(c.y);
}

/* ---- k_sgemm (the engine's MATMUL) against OpenBLAS on the models' shapes ---- */

typedef struct {
    int ta, tb, M, N, K, own; /* own: 0 OpenBLAS, 1 k_sgemm, 2 k_gemm_bf16 on the bf16 copies */
    float *a, *b, *c;
    void *scratch;
    k_bf16 *a16, *b16;
} sgemm_ctx;

static void run_sgemm(void *p) {
    sgemm_ctx *g = p;
    int lda = g->ta ? g->M : g->K, ldb = g->tb ? g->K : g->N;
    if (g->own == 2)
        k_gemm_bf16(g->ta, g->tb, g->M, g->N, g->K, g->a16, lda, g->b16, ldb, 0, g->c, g->N, g->scratch);
    else if (g->own)
        k_sgemm(g->ta, g->tb, g->M, g->N, g->K, g->a, lda, g->b, ldb, g->c, g->N, g->scratch);
    else
        k_gemm(g->ta, g->tb, g->M, g->N, g->K, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c, g->N);
}

static void bench_sgemm_shapes(void) {
    struct { const char *label; int ta, tb, M, N, K; } sh[] = {
        {"square 1024^3", 0, 0, 1024, 1024, 1024},
        {"wide fc1 fwd x.W^T", 0, 1, 128, 128, 9216},
        {"wide fc1 dx dy.W", 0, 0, 128, 9216, 128},
        {"wide fc1 dW dy^T.x", 1, 0, 128, 9216, 128},
        {"seed fc1 fwd x.W^T", 0, 1, 128, 50, 320},
        {"seed fc1 dx dy.W", 0, 0, 128, 320, 50},
        {"seed fc1 dW dy^T.x", 1, 0, 50, 320, 128},
    };
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        char name[80];
        snprintf(name, sizeof name, "matmul %s", sh[i].label);
        if (!wanted(name)) continue;
        sgemm_ctx g = {sh[i].ta, sh[i].tb, sh[i].M, sh[i].N, sh[i].K, 0, falloc((size_t)sh[i].M * sh[i].K),
                       falloc((size_t)sh[i].K * sh[i].N), falloc((size_t)sh[i].M * sh[i].N), NULL, NULL, NULL};
        g.scratch = malloc(k_sgemm_scratch_bytes(g.M, g.N, g.K));
        fill(g.a, (size_t)g.M * g.K, 1);
        fill(g.b, (size_t)g.K * g.N, 2);
        double flop = 2.0 * g.M * g.N * g.K, t_blas = time_it(run_sgemm, &g, 0.1);
        g.own = 1;
        double t_own = time_it(run_sgemm, &g, 0.1);
        printf("%-34s OpenBLAS (%s) %7.1f GFLOP/s | k_sgemm %-12s %7.1f GFLOP/s | %.2fx", name, openblas_get_corename(),
               flop / t_blas * 1e-9, k_sgemm_path_name(g.M, g.N, g.K), flop / t_own * 1e-9, t_blas / t_own);
        /* the same product under bf16 (issue #18): operands rounded, the path the engine's MATMUL takes */
        free(g.scratch);
        g.scratch = aligned_alloc(64, (k_gemm_bf16_scratch(g.M, g.N, g.K) + 63) & ~(size_t)63);
        g.a16 = balloc((size_t)g.M * g.K, 1);
        g.b16 = balloc((size_t)g.K * g.N, 2);
        g.own = 2;
        double t_bf16 = time_it(run_sgemm, &g, 0.1);
        printf(" | bf16 %s %7.1f GFLOP/s\n", k_bf16_path_name(k_bf16_path()), flop / t_bf16 * 1e-9);
        free(g.a), free(g.b), free(g.c), free(g.scratch), free(g.a16), free(g.b16);
    }
}

int main(int argc, char **argv) {
    g_filter = argc > 1 ? argv[1] : NULL;
    g_methods = getenv("METHODS");
    const char *threads = getenv("OPENBLAS_NUM_THREADS");
    if (!threads || strcmp(threads, "1") != 0)
        fprintf(stderr, "kernel_bench: warning: OPENBLAS_NUM_THREADS is not 1; GEMM figures are not one core's\n");
    static const char *lvl[] = {"generic", "avx2", "avx512"};
    printf("SIMD level: %s\n", lvl[k_simd_detect()]);
    bench_gemm();
    bench_sgemm_shapes();
    printf("bf16 path: %s (the best this CPU has)\n", k_bf16_path_name(k_bf16_detect()));
    bench_gemm_bf16();
    struct {
        const char *label;
        k_conv_shape s;
    } convs[] = {
        {"seed conv1", {.N = 128, .Ci = 1, .H = 28, .W = 28, .Co = 10, .kh = 5, .kw = 5, .sh = 1, .sw = 1}},
        {"seed conv2", {.N = 128, .Ci = 10, .H = 12, .W = 12, .Co = 20, .kh = 5, .kw = 5, .sh = 1, .sw = 1}},
        {"wide conv1", {.N = 128, .Ci = 1, .H = 28, .W = 28, .Co = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1}},
        {"wide conv2", {.N = 128, .Ci = 32, .H = 26, .W = 26, .Co = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1}},
        /* ResNet-20 (models/resnet20.yaml): a stage's 3x3 convs, the stride-2 3x3 that opens the
         * next stage, and its 1x1 stride-2 projection shortcut */
        {"r20 stem 3x3 3->16 32x32", {.N = 128, .Ci = 3, .H = 32, .W = 32, .Co = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r20 3x3 16->16 32x32", {.N = 128, .Ci = 16, .H = 32, .W = 32, .Co = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r20 3x3 16->32 s2 32x32", {.N = 128, .Ci = 16, .H = 32, .W = 32, .Co = 32, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}},
        {"r20 1x1 16->32 s2 32x32", {.N = 128, .Ci = 16, .H = 32, .W = 32, .Co = 32, .kh = 1, .kw = 1, .sh = 2, .sw = 2}},
        {"r20 3x3 32->32 16x16", {.N = 128, .Ci = 32, .H = 16, .W = 16, .Co = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r20 3x3 64->64 8x8", {.N = 128, .Ci = 64, .H = 8, .W = 8, .Co = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r20 3x3 32->64 s2 16x16", {.N = 128, .Ci = 32, .H = 16, .W = 16, .Co = 64, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}},
        {"r20 1x1 32->64 s2 16x16", {.N = 128, .Ci = 32, .H = 16, .W = 16, .Co = 64, .kh = 1, .kw = 1, .sh = 2, .sw = 2}},
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
        if (wanted(convs[i].label)) bench_conv(convs[i].label, convs[i].s);
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "bf16 %s", convs[i].label);
        if (wanted(name)) bench_conv_bf16(name, convs[i].s);
    }
    /* the other models' convolutions, bf16 only (the fp32 methods' tables are in tests/bench/HISTORY.md) */
    struct {
        const char *label;
        k_conv_shape s;
    } more[] = {
        {"lenet5 conv1 1->6 k5 p2 28x28", {.N = 128, .Ci = 1, .H = 28, .W = 28, .Co = 6, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2}},
        {"lenet5 conv2 6->16 k5 14x14", {.N = 128, .Ci = 6, .H = 14, .W = 14, .Co = 16, .kh = 5, .kw = 5, .sh = 1, .sw = 1}},
        {"cifar conv2 16->32 p1 16x16", {.N = 128, .Ci = 16, .H = 16, .W = 16, .Co = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r8 stem 1->16 p1 28x28", {.N = 128, .Ci = 1, .H = 28, .W = 28, .Co = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r18 3x3 64->64 32x32", {.N = 128, .Ci = 64, .H = 32, .W = 32, .Co = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r18 3x3 256->256 8x8", {.N = 128, .Ci = 256, .H = 8, .W = 8, .Co = 256, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}},
        {"r18 1x1 64->128 s2 32x32", {.N = 128, .Ci = 64, .H = 32, .W = 32, .Co = 128, .kh = 1, .kw = 1, .sh = 2, .sw = 2}},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "bf16 %s", more[i].label);
        if (wanted(name)) bench_conv_bf16(name, more[i].s);
    }
    printf("\n");
    bench_pool("maxpool seed1 128x10x24x24 k2", (k_pool_shape){128, 10, 24, 24, 2, 2, 2, 2, 0, 0, 0, 0});
    bench_pool("maxpool seed2 128x20x8x8 k2", (k_pool_shape){128, 20, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0});
    bench_pool("maxpool wide 128x64x24x24 k2", (k_pool_shape){128, 64, 24, 24, 2, 2, 2, 2, 0, 0, 0, 0});
    bench_bn("bn seed1 128x10x(12x12)", 128, 10, 144);
    bench_bn("bn seed2 128x20x(4x4)", 128, 20, 16);
    bench_softmax();
    bench_dropout();
    return 0;
}
#else
typedef int xt_kernel_bench_disabled; /* see the build line above */
#endif
