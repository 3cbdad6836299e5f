/* train_bench.c — training and inference throughput of a model through the
 * real trainer's step (xt_run_train_step: trace, hash, cache lookup,
 * execute, all-reduce, fused SGD update), on fixed synthetic N(0,1) batches
 * as PyTorch's reference benchmark (../shared/bench/torch_ref.py) does: the
 * steps cycle over --batches distinct batches (8, as it does), so a step
 * reads images the step before did not, as in training, where each step's
 * batch is new. (With one batch, batch 128's 0.4 MB of images stayed in the
 * core's L2 from step to step, which no real run sees, while batch 1024's
 * 3.2 MB did not; --batches 1 still measures that way, as the bench did
 * before it began to cycle 8 batches: tests/bench/HISTORY.md.) Each batch
 * sits in a buffer from the loader's own allocator (data/batch_pixels.h),
 * where the trainer's batches sit.
 *
 *   train_bench MODEL.yaml [--procs N] [--batch 128] [--steps 300]
 *               [--infer-batch 1000] [--infer-steps 20] [--precision fp32|bf16]
 *               [--kernels K] [--allreduce copy|in-place] [--batches 8]
 *
 * Prints one line "RESULT key=value ..." (tests/bench/run.sh tabulates it):
 * train_sps (all processes), infer_sps (all processes), rss_mb (max per
 * process), the step split (trace_ms: trace + hash + cache lookup, from the
 * engine's TraceHashLookupTime; host_ms: the rest outside execution, e.g.
 * binding the batch; exec_ms; then, from a separate untimed pass of
 * max(K, PROFILED_STEPS_MIN) steps with every kernel timed, conv_ms ..
 * other_ms per kernel class, which need not sum to step_ms), ir_nodes,
 * kernels, fused, arena_kb, intermediates_kb,
 * input_kb (one batch's inputs, which the step reads beside its arena), and
 * fwd_macs (one sample's forward multiply-adds, from the spec: the FLOP
 * count run.sh holds against the FMA limit), graphs (distinct graphs the
 * engine compiled over the 5 warm-up steps: 1 when the train step compiles once),
 * precision, bf16_path (the path the bf16 kernels take on this CPU),
 * kernel_choice (XLATRAIN_KERNEL_CHOICE=fixed|measured, measured unset, as
 * the trainer) and kept_fp32 (bf16: convolutions and products measured
 * faster in fp32, kept so),
 * convert_ms (the bf16 casts' share of the step), tile_rows and
 * tile_rows_max (samples per micro-batch tile, fewest and most), and
 * sample_macs / sample_macs_executed: one training sample's multiply-adds in
 * the step's convolutions and GEMMs, counted dense and as the kernels on this
 * CPU execute them (fewer where a pass skips a max pool's zeros), and isa
 * (the SIMD level the kernels ran at: XLATRAIN_ISA caps it, avx2.sh).
 * --kernels K: before the RESULT line, worker 0 prints the engine's
 * per-kernel profile of the training step over max(K, PROFILED_STEPS_MIN)
 * profiled steps (after the compile): every kernel's microseconds per step, share,
 * and GFLOP/s for convolutions and GEMMs (engine/kernel_report.c).
 * Built by `make bench` (build/release/bench/train_bench).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "data/batch_pixels.h"
#include "data/loader.h"
#include "distributed/allreduce.h"
#include "distributed/spawn.h"
#include "engine/metrics.h"
#include "kernels/bf16.h"
#include "kernels/simd.h"
#include "run/run.h"
#include "run/eval.h"
#include "run/step.h"

typedef struct bench {
    xt_run *r;
    int batch, steps, infer_batch, infer_steps;
    int precision;   /* xt_precision */
    int kernels;     /* --kernels K: profile K steps and print the per-kernel table (rank 0); 0 = off */
    int ar_copy;     /* --allreduce copy: the mean copied back into the row (not read in place, as xlatrain does) */
    int batches;     /* --batches K: the training steps cycle over K distinct batches */
} bench;

enum { V_TRAIN_S, V_TRACE, V_HOST, V_EXEC, V_CONV, V_GEMM, V_POOL, V_NORM, V_EW, V_RED, V_AR, V_OTHER, V_CONVERT, V_INFER_SPS, V_RSS, V_N };
static const char *kClasses[] = {"Kernel.conv", "Kernel.gemm", "Kernel.pool", "Kernel.norm", "Kernel.elementwise", "Kernel.reduce", "Kernel.allreduce", "Kernel.other", "Kernel.convert"};
#define NCLASSES (int)(sizeof kClasses / sizeof *kClasses)
/* steps in the profiled pass that gives the class split, unless --kernels asks for more */
#define PROFILED_STEPS_MIN 20

static uint64_t lcg(uint64_t *s) { return *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; }
static float gauss(uint64_t *s) {
    double u = ((lcg(s) >> 11) + 1.0) / 9007199254740993.0, v = (lcg(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u)) * cos(2 * M_PI * v));
}

/* the training batches' buffers and the array that holds them; NULL-safe */
static void free_batches(xt_batch *train, int batches) {
    for (int k = 0; train && k < batches; k++) free(train[k].x);
    free(train);
}
/* the batch the next training step reads: the steps cycle over the table */
static const xt_batch *next_batch(const xt_batch *train, int batches, int *next) { return &train[(*next)++ % batches]; }

typedef struct { int rank; xt_dist *dist; } ctxpack;

static int allreduce_cb(void *ctx, float *buf, size_t n, xt_err *e) {
    ctxpack *cp = ctx;
    return xt_allreduce(cp->dist, cp->rank, buf, n, e);
}
static int allreduce_row_cb(void *ctx, size_t n, xt_err *e) {
    ctxpack *cp = ctx;
    return xt_allreduce_row(cp->dist, cp->rank, n, e) ? 0 : e->code;
}

/* Worker 0's kernel choices for every worker, as the trainer's loop.c does. */
static int choice_agree_cb(void *ctx, double *v, int n, xt_err *e) {
    ctxpack *cp = ctx;
    for (int off = 0, k; off < n; off += k) {
        k = n - off < XT_MESH_MAX ? n - off : XT_MESH_MAX;
        if (xt_mesh_reduce_sum(cp->dist, cp->rank, v + off, k, e)) return e->code;
    }
    return 0;
}

/* XLATRAIN_KERNEL_CHOICE=fixed|measured, measured unset (the trainer's default). */
static int kernel_choice_measured(void) {
    const char *v = getenv("XLATRAIN_KERNEL_CHOICE");
    return !v || strcmp(v, "fixed");
}

static int worker(int rank, void *arg) {
    bench *b = arg;
    xt_run *r = b->r;
    xt_err e = {0};
    openblas_set_num_threads(1);
    ctxpack cp = {rank, r->dist};
    xt_engine_opts eo = {.fuse = 1, .profile = 0, .precision = b->precision, .kernel_choice = kernel_choice_measured(),
                         .choice_leader = rank == 0};
    if (r->dist) {
        eo.choice_agree = choice_agree_cb;
        eo.choice_ctx = &cp;
        eo.allreduce = allreduce_cb;
        eo.allreduce_ctx = &cp;
        eo.collective_buf = xt_dist_grad_row(r->dist, rank);
        eo.collective_floats = xt_dist_grad_cap(r->dist);
        if (!b->ar_copy) {
            eo.allreduce_row = allreduce_row_cb;
            eo.collective_result = xt_allreduce_result(r->dist, rank);
        }
    }
    xt_engine *en = xt_engine_new(&r->store, &eo);
    const int *in = r->c->spec.input;
    int64_t px = (int64_t)in[0] * in[1] * in[2];
    /* Each training batch in its own buffer from the loader's allocator
     * (data/batch_pixels.h), as the trainer's loader holds them: where a buffer
     * starts changes how fast conv1 reads it. Until 2026-12-02 one malloc
     * block held them all, 16 bytes past a line, so every 64-byte load of an
     * image straddled two lines, which the loader's buffers never do. */
    xt_batch *train = calloc((size_t)b->batches, sizeof *train);
    int32_t *y = malloc((size_t)b->batch * b->batches * sizeof *y);
    int ok = train && y;
    for (int k = 0; ok && k < b->batches; k++) {
        train[k] = (xt_batch){.n = b->batch, .x = xt_batch_pixels_alloc((size_t)b->batch * px), .y = y + (size_t)k * b->batch};
        ok = train[k].x != NULL;
    }
    if (!ok) {
        fprintf(stderr, "train_bench: out of memory for %d batches of %d synthetic images\n", b->batches, b->batch);
        free_batches(train, b->batches);
        free(y);
        return 1;
    }
    uint64_t s = 1234 + (uint64_t)rank;
    for (int k = 0; k < b->batches; k++)
        for (int64_t i = 0; i < b->batch * px; i++) train[k].x[i] = gauss(&s);
    for (int64_t i = 0; i < (int64_t)b->batch * b->batches; i++) y[i] = (int32_t)(lcg(&s) >> 33) % r->c->spec.num_classes;
    int next = 0; /* training steps so far: step i reads train[i % batches] */
    float loss;
    double v[V_N] = {0};
    int rc = 0;
    for (int i = 0; i < 5 && !rc; i++) /* warm-up + compile */
        rc = xt_run_train_step(r, en, next_batch(train, b->batches, &next), 0.01, &loss, &e);
    xt_exec_stats st;
    xt_engine_last_stats(en, &st);
    xt_metrics_reset();
    /* untimed profile pass for the kernel split, then the timed pass without it */
    xt_engine_free(en);
    eo.profile = 1;
    en = xt_engine_new(&r->store, &eo);
    /* the class split comes from this pass, not the timed one: 5 steps (10 ms of
     * the seed CNN) let one stall of the host put a class above the whole step */
    int profiled = b->kernels > PROFILED_STEPS_MIN ? b->kernels : PROFILED_STEPS_MIN;
    for (int i = 0; i <= profiled && !rc; i++) {
        if (i == 1) { /* drop the compile */
            xt_metrics_reset();
            xt_engine_kernel_profile_reset(en);
        }
        rc = xt_run_train_step(r, en, next_batch(train, b->batches, &next), 0.01, &loss, &e);
    }
    for (int k = 0; k < NCLASSES; k++) {
        int64_t cnt;
        double tot = xt_metric_total(kClasses[k], &cnt);
        v[V_CONV + k] = tot / profiled / 1e6;
    }
    if (b->kernels && rank == 0 && !rc) {
        xt_engine_kernel_report(en, stdout);
        fflush(stdout);
    }
    xt_engine_free(en);
    eo.profile = 0;
    en = xt_engine_new(&r->store, &eo);
    for (int i = 0; i < 3 && !rc; i++)
        rc = xt_run_train_step(r, en, next_batch(train, b->batches, &next), 0.01, &loss, &e);
    xt_metrics_reset();
    if (r->dist && !rc) rc = xt_dist_barrier(r->dist, rank, &e);
    uint64_t t0 = xt_now_ns();
    for (int i = 0; i < b->steps && !rc; i++)
        rc = xt_run_train_step(r, en, next_batch(train, b->batches, &next), 0.01, &loss, &e);
    double secs = (double)(xt_now_ns() - t0) / 1e9;
    int64_t cnt;
    double exec = xt_metric_total("ExecuteTime", &cnt), thl = xt_metric_total("TraceHashLookupTime", NULL);
    v[V_TRAIN_S] = secs;
    v[V_EXEC] = exec / (cnt ? cnt : 1) / 1e6;
    v[V_TRACE] = thl / (cnt ? cnt : 1) / 1e6; /* trace + hash + lookup, as the engine measures it */
    v[V_HOST] = secs * 1e3 / b->steps - v[V_EXEC] - v[V_TRACE];
    /* inference: its own batch of infer_batch images, as the trainer's
     * evaluation loader holds one (the training buffers go first, so peak
     * RSS holds one set, not both); images from the same N(0,1) stream,
     * labels cycled from the training ones */
    float *x = NULL;
    int32_t *iy = NULL;
    if (!rc && b->infer_steps > 0) {
        free_batches(train, b->batches);
        train = NULL;
        x = xt_batch_pixels_alloc((size_t)b->infer_batch * px);
        iy = malloc((size_t)b->infer_batch * sizeof *iy);
        if (!x || !iy) rc = xt_fail(&e, XT_ERUNTIME, "out of memory for %d inference images", b->infer_batch);
    }
    if (!rc && b->infer_steps > 0) {
        for (int64_t i = 0; i < (int64_t)b->infer_batch * px; i++) x[i] = gauss(&s);
        for (int64_t i = 0; i < b->infer_batch; i++) iy[i] = y[i % ((int64_t)b->batch * b->batches)];
        xt_batch ib = {.n = b->infer_batch, .x = x, .y = iy};
        float *pred = malloc((size_t)b->infer_batch * 4);
        uint64_t i0 = 0;
        for (int i = 0; i < b->infer_steps + 2 && !rc; i++) {
            if (i == 2) {
                if (r->dist) rc = xt_dist_barrier(r->dist, rank, &e);
                i0 = xt_now_ns();
            }
            /* in chunks of at most XT_EVAL_CHUNK_MAX images, as the trainer's evaluation (run/eval.c) */
            for (int off = 0; off < b->infer_batch && !rc; off += XT_EVAL_CHUNK_MAX) {
                xt_batch part = ib;
                part.n = b->infer_batch - off < XT_EVAL_CHUNK_MAX ? b->infer_batch - off : XT_EVAL_CHUNK_MAX;
                part.x = x + (size_t)off * px;
                part.y = iy + off;
                xt_graph *g = xt_engine_graph(en);
                xt_run_bind_batch(r, &part);
                xt_fetch(g, xt_argmax(g, xt_run_trace_logp(r, g, XT_EVAL)), pred + off, (size_t)part.n * 4);
                rc = xt_mark_step(en, &e);
            }
        }
        v[V_INFER_SPS] = (double)b->infer_steps * b->infer_batch / ((double)(xt_now_ns() - i0) / 1e9);
        free(pred);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    v[V_RSS] = (double)ru.ru_maxrss / 1024.0;
    double sum[V_N];
    memcpy(sum, v, sizeof sum);
    if (r->dist && !rc) rc = xt_mesh_reduce_sum(r->dist, rank, sum, V_N, &e); /* RSS reported as the mean */
    if (rank == 0 && !rc) {
        int n = r->world;
        double step_s = sum[V_TRAIN_S] / n;
        printf("RESULT model=%s procs=%d batch=%d steps=%d train_sps=%.1f infer_sps=%.1f rss_mb=%.1f step_ms=%.3f trace_ms=%.4f host_ms=%.4f exec_ms=%.3f"
               " conv_ms=%.3f gemm_ms=%.3f pool_ms=%.3f norm_ms=%.3f ew_ms=%.3f reduce_ms=%.3f allreduce_ms=%.3f other_ms=%.3f"
               " ir_nodes=%d kernels=%d fused=%d arena_kb=%.1f intermediates_kb=%.1f input_kb=%.1f loss=%.4f fwd_macs=%lld graphs=%d"
               " precision=%s bf16_path=%s convert_ms=%.3f tile_runs=%d tiled_kernels=%d tile_rows=%d tile_rows_max=%d"
               " sample_macs=%.0f sample_macs_executed=%.0f kernel_choice=%s kept_fp32=%d isa=%s\n",
               r->c->spec.source, n, b->batch, b->steps, (double)b->batch * b->steps * n / step_s, sum[V_INFER_SPS],
               sum[V_RSS] / n, step_s * 1e3 / b->steps, sum[V_TRACE] / n, sum[V_HOST] / n, sum[V_EXEC] / n,
               sum[V_CONV] / n, sum[V_GEMM] / n, sum[V_POOL] / n, sum[V_NORM] / n, sum[V_EW] / n, sum[V_RED] / n,
               sum[V_AR] / n, sum[V_OTHER] / n, st.ir_nodes, st.kernels, st.fused_kernels, st.arena_bytes / 1024.0,
               st.intermediate_bytes / 1024.0, (double)b->batch * (double)px * sizeof(float) / 1024.0, loss, xt_spec_forward_macs(&r->c->spec), st.distinct_graphs,
               xt_precision_name(b->precision), k_bf16_path_name(k_bf16_path()), sum[V_CONVERT] / n, st.tile_runs,
               st.tiled_kernels, st.tile_rows, st.tile_rows_max, st.macs / b->batch, st.macs_executed / b->batch,
               kernel_choice_measured() ? "measured" : "fixed", st.kept_fp32, k_simd_name(k_simd_level()));
        fflush(stdout);
    }
    if (rc) fprintf(stderr, "train_bench: xla:%d: %s\n", rank, e.msg);
    xt_engine_free(en);
    free_batches(train, b->batches);
    free(x);
    free(iy);
    free(y);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: train_bench MODEL.yaml [--procs N] [--batch B] [--steps K] [--infer-batch B] [--infer-steps K] "
                        "[--precision fp32|bf16] [--kernels K] [--allreduce copy|in-place] [--batches K]\n");
        return 2;
    }
    const char *isa = NULL; /* the cap avx2.sh sets: a misspelt one would measure the CPU's best level */
    if (k_isa_env_check(&isa)) {
        fprintf(stderr, "train_bench: XLATRAIN_ISA=%s: expected avx512, avx2, generic or auto\n", isa);
        return 2;
    }
    static xt_config c;
    xt_config_defaults(&c);
    bench b = {.batch = 128, .steps = 300, .infer_batch = 1000, .infer_steps = 20, .batches = 8};
    int procs = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--procs")) procs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) b.batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) b.steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--infer-batch")) b.infer_batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--infer-steps")) b.infer_steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--precision")) b.precision = !strcmp(argv[i + 1], "bf16") ? XT_PREC_BF16 : XT_PREC_FP32;
        else if (!strcmp(argv[i], "--kernels")) b.kernels = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--allreduce")) b.ar_copy = !strcmp(argv[i + 1], "copy");
        else if (!strcmp(argv[i], "--batches")) b.batches = atoi(argv[i + 1]);
    }
    if (b.batches < 1 || b.batch < 1) {
        fprintf(stderr, "train_bench: --batch and --batches take an integer >= 1\n");
        return 2;
    }
    xt_err e = {0};
    if (xt_spec_load(&c.spec, argv[1], &e)) {
        fprintf(stderr, "train_bench: %s\n", e.msg);
        return 2;
    }
    c.batch_size = b.batch;
    c.learning_rate = 0.01;
    c.momentum = 0.5;
    static xt_cli cli;
    static xt_run r;
    r.c = &c;
    r.cli = &cli;
    r.world = procs;
    if (xt_run_setup_model(&r, &e)) {
        fprintf(stderr, "train_bench: %s\n", e.msg);
        return 4;
    }
    b.r = &r;
    int rc;
    if (procs > 1) {
        if (xt_dist_create(&r.dist, procs, xt_run_grad_floats(&r), &e)) {
            fprintf(stderr, "train_bench: %s\n", e.msg);
            return 4;
        }
        xt_spawn_opts so = {.timeout_s = 120};
        rc = xt_spawn(r.dist, procs, worker, &b, &so, &e);
        if (rc) fprintf(stderr, "train_bench: %s\n", e.msg);
        xt_dist_destroy(r.dist);
    } else {
        rc = worker(0, &b);
    }
    xt_model_free(&r.model);
    xt_store_free(&r.store);
    xt_spec_free(&c.spec);
    return rc;
}
