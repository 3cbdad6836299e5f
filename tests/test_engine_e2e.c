/* test_engine_e2e.c — the engine's correctness end to end, through the real
 * binary ("Engine correctness", items 5 and 6 of the test plan):
 *
 *   - every optimizer (Adam, AdamW, SGD with Nesterov) trains the seed model:
 *     exit 0, a finite loss well below chance, results.json, its state in the
 *     checkpoint, and still exactly two compiled graphs;
 *   - models with more than 64 parameter tensors (41 linear layers with
 *     biases: 82) train on 1 and on 2 cores, with every tensor in the
 *     checkpoint, and 2 cores give the same weights as 1 core with the same
 *     global batch (so the all-reduce averaged every gradient, none dropped or
 *     read from a wrong pointer);
 *   - a 200-layer spec (200 parameter tensors) trains;
 *   - the compile count, read from the metrics_debug report, is exactly what
 *     the shapes require for a constant, a step and a cosine + warm-up
 *     schedule, so a learning rate baked into the graph (a recompile per
 *     epoch or per step) fails.
 *
 * Runs are tiny (512 synthetic images, batch 64) so each takes well under a
 * second in the release build and a few seconds under `make asan`, where
 * test_bin() is the sanitized binary. */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "test.h"

/* 512 / 64 = 8 training steps per epoch (drop_last), 256 / 128 = 2 evaluation batches. */
#define TRAIN_N 512
#define BATCH 64
#define TEST_N 256
#define TEST_BATCH 128
#define BASE                                                                                           \
    "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=256 "        \
    "--set batch_size=64 --set test_batch_size=128 --set log_steps=0 --set target_accuracy=0 "          \
    "--set progress=false"

static char g_out[1 << 18];

/* Run `xlatrain ARGS` (stdout and stderr together into g_out); its exit code. */
static int xl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int xl(const char *fmt, ...) {
    char args[4096], cmd[8192];
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", test_bin(), args);
    return test_run(cmd, g_out, sizeof g_out);
}

/* <tmpdir>/<sub>/<file> */
static const char *path_in(const char *sub, const char *file) {
    static char p[4][700];
    static int next;
    char *s = p[next++ % 4];
    snprintf(s, 700, "%s/%s/%s", test_tmpdir(), sub, file);
    return s;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The number after "key": in a JSON text; NAN when absent or not a number. */
static double json_num(const char *json, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = json ? strstr(json, k) : NULL;
    if (!p) return NAN;
    char *end;
    double v = strtod(p + strlen(k), &end);
    return end == p + strlen(k) ? NAN : v;
}

/* What every finished run must have: exit 0, results.json with status ok and
 * a finite final loss; returns that loss (NAN after a failed check). */
static double check_finished(int rc, const char *sub) {
    CHECK_MSG(rc == 0, "exit %d: %.3000s", rc, g_out);
    if (rc) return NAN;
    const char *res = slurp(path_in(sub, "results.json"));
    CHECK_MSG(res != NULL, "no results.json in %s", sub);
    if (!res) return NAN;
    CHECK_STR_CONTAINS(res, "\"status\":\"ok\"");
    double loss = json_num(res, "final_loss");
    CHECK_MSG(isfinite(loss), "final_loss is not finite: %s", res);
    /* results.json is also the last stdout line */
    CHECK_STR_CONTAINS(g_out, res);
    return loss;
}

/* Counts of a checkpoint's tensors: model state (no "optim." prefix) and the
 * optimizer state whose name starts with `optim_prefix` (NULL: none). */
static int ckpt_counts(const char *path, int *model, int *optim, const char *optim_prefix, const char *meta_key,
                       char *meta, size_t meta_cap) {
    xt_st_file f;
    xt_err e = {0};
    *model = *optim = 0;
    if (xt_st_read(path, &f, &e)) {
        test_fail_at(__FILE__, __LINE__, "%s", e.msg);
        return -1;
    }
    for (int i = 0; i < f.ntensors; i++) {
        const char *n = f.tensors[i].name;
        if (strncmp(n, "optim.", 6)) (*model)++;
        else if (optim_prefix && !strncmp(n, optim_prefix, strlen(optim_prefix))) (*optim)++;
    }
    if (meta_key && meta) {
        const char *v = xt_st_meta_get(&f, meta_key);
        snprintf(meta, meta_cap, "%s", v ? v : "");
    }
    xt_st_close(&f);
    return 0;
}

/* ---- the metrics report ------------------------------------------------------ */

/* Every "Counter: NAME\n  Value: N" in the output, in order (one report per
 * worker per epoch); returns how many, values in v[]. */
static int counter_values(const char *out, const char *name, long long *v, int cap) {
    char k[96];
    snprintf(k, sizeof k, "Counter: %s\n  Value: ", name);
    int n = 0;
    for (const char *p = strstr(out, k); p; p = strstr(p + 1, k))
        if (n < cap) v[n++] = strtoll(p + strlen(k), NULL, 10);
    return n;
}

/* The learning rates of metrics.jsonl's epoch lines; returns how many. */
static int epoch_lrs(const char *sub, double *lr, int cap) {
    const char *m = slurp(path_in(sub, "metrics.jsonl"));
    int n = 0;
    for (const char *p = m ? strstr(m, "\"type\":\"epoch\"") : NULL; p && n < cap; p = strstr(p + 1, "\"type\":\"epoch\""))
        lr[n++] = json_num(p, "lr");
    return n;
}

/* ---- test models -------------------------------------------------------------- */

/* An MLP spec: flatten, then nlinear linear layers (biases on, `width` wide,
 * the last 10) with a ReLU between each pair, then log_softmax when
 * `log_softmax`. Layers: 1 + nlinear + (nlinear - 1) + log_softmax;
 * parameter tensors: 2 * nlinear. Written into the test's directory. */
static const char *mlp_spec(const char *file, int nlinear, int width, int log_softmax) {
    static char text[1 << 16];
    size_t o = 0;
    o += (size_t)snprintf(text + o, sizeof text - o, "# %d linear layers, %d parameter tensors\ninput: [1, 28, 28]\nlayers:\n  - flatten\n",
                          nlinear, 2 * nlinear);
    for (int i = 1; i < nlinear; i++) o += (size_t)snprintf(text + o, sizeof text - o, "  - linear: {out: %d}\n  - relu\n", width);
    o += (size_t)snprintf(text + o, sizeof text - o, "  - linear: {out: 10}\n");
    if (log_softmax) snprintf(text + o, sizeof text - o, "  - log_softmax\n");
    return test_write_file(file, text);
}

/* ---- optimizers ---------------------------------------------------------------- */

static void check_compiles(int world, int epochs, int steps, int eval_batches, int graphs); /* below */

/* The seed model (12 parameter tensors + 4 BN buffers) for two epochs of 8
 * steps: finite loss well below chance (ln 10 = 2.303; ~1.4-1.7 is typical),
 * accuracy well above 10%, the optimizer's state for every parameter in the
 * checkpoint, and two compiled graphs (the step's scalars — lr, Adam's bias
 * corrections — are store slots, not constants). */
static void check_optimizer_run(const char *opts, const char *state1, const char *state2) {
    int rc = xl(BASE " --set num_epochs=2 --set metrics_debug=true %s --set output_dir=%s/r", opts, test_tmpdir());
    double loss = check_finished(rc, "r");
    if (rc) return;
    CHECK_MSG(loss < 2.1, "final_loss %g: the model did not learn", loss);
    double acc = json_num(slurp(path_in("r", "results.json")), "best_accuracy");
    CHECK_MSG(acc > 25.0, "best_accuracy %g: the model did not learn", acc);
    int model, n1, n2;
    char steps[64];
    const char *ck = path_in("r", "checkpoint-epoch002.safetensors");
    if (ckpt_counts(ck, &model, &n1, state1, "xlatrain.optimizer_steps", steps, sizeof steps)) return;
    CHECK_EQ(model, 18); /* 12 parameters + bn1, bn2: running_mean, running_var, num_batches_tracked */
    CHECK_EQ(n1, 12);
    CHECK_MSG(!strcmp(steps, "16"), "optimizer_steps '%s', expected 16", steps);
    if (state2) {
        ckpt_counts(ck, &model, &n2, state2, NULL, NULL, 0);
        CHECK_EQ(n2, 12);
    }
    check_compiles(1, 2, TRAIN_N / BATCH, TEST_N / TEST_BATCH, 2);
}

TEST(engine_e2e_adam_trains_the_seed_model) {
    check_optimizer_run("--set optimizer.name=adam --set learning_rate=0.001", "optim.exp_avg.", "optim.exp_avg_sq.");
}

TEST(engine_e2e_adamw_trains_the_seed_model) {
    check_optimizer_run("--set optimizer.name=adamw --set learning_rate=0.001 --set optimizer.weight_decay=0.01",
                        "optim.exp_avg.", "optim.exp_avg_sq.");
}

TEST(engine_e2e_sgd_nesterov_trains_the_seed_model) {
    check_optimizer_run("--set optimizer.name=sgd --set optimizer.nesterov=true --set momentum=0.9 --set learning_rate=0.01",
                        "optim.momentum_buffer.", NULL);
}

/* ---- more than 64 parameter tensors ------------------------------------------------ */

/* Largest |a - b| over the F32 tensors of two checkpoints (every tensor of a
 * must be in b with the same shape; -1 when not), and the largest |a|. */
static double max_abs_diff(const char *a, const char *b, double *max_abs, int *ntensors) {
    xt_st_file fa, fb;
    xt_err e = {0};
    *max_abs = 0;
    *ntensors = 0;
    if (xt_st_read(a, &fa, &e)) { test_fail_at(__FILE__, __LINE__, "%s", e.msg); return -1; }
    if (xt_st_read(b, &fb, &e)) { test_fail_at(__FILE__, __LINE__, "%s", e.msg); xt_st_close(&fa); return -1; }
    double d = 0;
    for (int i = 0; i < fa.ntensors && d >= 0; i++) {
        const xt_st_tensor *x = &fa.tensors[i], *y = xt_st_find(&fb, x->name);
        if (x->dtype != XT_ST_F32) continue;
        if (!y || y->dtype != XT_ST_F32 || y->nbytes != x->nbytes) {
            test_fail_at(__FILE__, __LINE__, "tensor %s missing or of another shape in %s", x->name, b);
            d = -1;
            break;
        }
        (*ntensors)++;
        const float *p = x->data, *q = y->data;
        for (size_t k = 0; k < x->nbytes / 4; k++) {
            double dd = fabs((double)p[k] - (double)q[k]);
            if (!(dd <= d)) d = isnan(dd) ? INFINITY : dd;
            if (fabs((double)p[k]) > *max_abs) *max_abs = fabs((double)p[k]);
        }
    }
    xt_st_close(&fa);
    xt_st_close(&fb);
    return d;
}

/* One epoch of `model` on `cores` cores into <tmpdir>/<sub>; checks the run
 * finished and the checkpoint holds 2 * nlinear parameters and as many
 * momentum buffers. */
static void run_deep(const char *model, int nlinear, int cores, int batch, const char *sub) {
    int rc = xl(BASE " --set num_epochs=1 --set model=%s --set num_cores=%d --set batch_size=%d "
                "--set scale_lr_by_world_size=false --set output_dir=%s/%s",
                model, cores, batch, test_tmpdir(), sub);
    check_finished(rc, sub);
    if (rc) return;
    int nmodel, nmom;
    if (ckpt_counts(path_in(sub, "checkpoint-epoch001.safetensors"), &nmodel, &nmom, "optim.momentum_buffer.", NULL, NULL, 0))
        return;
    CHECK_EQ(nmodel, 2 * nlinear);
    CHECK_EQ(nmom, 2 * nlinear);
}

/* 41 linear layers = 82 parameter tensors (more than 64: the all-reduce node
 * has 82 operands). 1 core, batch 128, and 2 cores, batch 64 each, see the
 * same 128 samples per step (DistributedSampler: worker r takes
 * perm[r::2], so a 2-core step is perm[0:128] split in two), and the
 * all-reduce averages the two replicas' mean gradients: with
 * scale_lr_by_world_size off the weights after 4 steps must agree up to
 * float rounding. A gradient that the all-reduce dropped or read from a wrong
 * pointer makes them differ (or crashes). No BN or dropout in the model:
 * those are per replica. */
TEST(engine_e2e_more_than_64_parameter_tensors_train_on_1_and_2_cores) {
    const char *model = mlp_spec("deep41.yaml", 41, 16, 1);
    run_deep(model, 41, 1, 2 * BATCH, "c1");
    run_deep(model, 41, 2, BATCH, "c2");
    double max_abs;
    int n;
    double d = max_abs_diff(path_in("c1", "checkpoint-epoch001.safetensors"), path_in("c2", "checkpoint-epoch001.safetensors"),
                            &max_abs, &n);
    CHECK_EQ(n, 2 * 41 * 2); /* parameters + momentum buffers */
    CHECK_MSG(d >= 0 && d <= 1e-5 * (1 + max_abs), "1 core and 2 cores differ by %g (largest weight %g)", d, max_abs);
}

/* Just over the 64 of a fixed-size array: 33 linear layers = 66 tensors. */
TEST(engine_e2e_66_parameter_tensors_on_2_cores_match_1_core) {
    const char *model = mlp_spec("deep33.yaml", 33, 16, 1);
    run_deep(model, 33, 1, 2 * BATCH, "c1");
    run_deep(model, 33, 2, BATCH, "c2");
    double max_abs;
    int n;
    double d = max_abs_diff(path_in("c1", "checkpoint-epoch001.safetensors"), path_in("c2", "checkpoint-epoch001.safetensors"),
                            &max_abs, &n);
    CHECK_EQ(n, 2 * 33 * 2);
    CHECK_MSG(d >= 0 && d <= 1e-5 * (1 + max_abs), "1 core and 2 cores differ by %g (largest weight %g)", d, max_abs);
}

/* 200 layers: flatten, 100 linear layers with 99 ReLUs between them, ending
 * in logits (no log_softmax: the run adds it) — 200 parameter tensors. */
TEST(engine_e2e_200_layer_spec_trains) {
    const char *model = mlp_spec("deep200.yaml", 100, 16, 0);
    int rc = xl("--config configs/smoke.yaml --set model=%s --dry-run", model);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "fc100");
    CHECK_STR_CONTAINS(g_out, "relu99");
    run_deep(model, 100, 1, BATCH, "r");
}

/* ---- compile counts ---------------------------------------------------------------- */

/* Why a run compiles exactly the graphs it does. A graph is compiled once per
 * distinct structure — its ops, shapes, attributes (constants included) and
 * the store slots it reads — and looked up in the cache on every other
 * barrier. Per worker process:
 *
 *   1. the training step (forward + backward + all-reduce + optimizer
 *      update): one graph for every batch of batch_size images. drop_last
 *      (the default) drops the final partial batch, so there is one shape;
 *      with drop_last: false a partial last batch is a second graph;
 *   2. evaluation (forward + argmax): one graph for test batches of
 *      test_batch_size; the test loader never drops, so a partial last test
 *      batch is one more graph.
 *
 * Nothing else: the learning rate (and Adam's bias corrections) live in
 * store slots that the graph reads, so a schedule that changes them per
 * epoch or per step reuses the compiled step, and the eval graph compiled in
 * epoch 1 is reused in every later epoch. So after every epoch the count is
 * the same small number (2 for the sizes below), and every other barrier is a
 * cache hit: CachedCompile = epochs x (steps + eval batches) - graphs.
 * A rate baked into the graph as a constant would compile a new training
 * graph whenever the rate changes: every epoch with a step schedule (2, 3, 4
 * after epochs 1, 2, 3), every step during a warm-up.
 *
 * The report (metrics_debug: true) is printed by every worker after every
 * epoch's evaluation, cumulative; reports of epoch k all precede epoch k+1's
 * (the epoch's mesh-reduce comes after the report). */
static void check_compiles(int world, int epochs, int steps, int eval_batches, int graphs) {
    long long un[64], ca[64];
    int n = counter_values(g_out, "UncachedCompile", un, 64), m = counter_values(g_out, "CachedCompile", ca, 64);
    CHECK_MSG(n == world * epochs, "%d UncachedCompile counters, expected %d (one per worker per epoch)", n, world * epochs);
    CHECK_EQ(m, n);
    for (int i = 0; i < n && i < 64 && i < m; i++) {
        int epoch = i / world + 1;
        CHECK_MSG(un[i] == graphs, "report %d (epoch %d): UncachedCompile %lld, expected %d", i + 1, epoch, un[i], graphs);
        long long want = (long long)epoch * (steps + eval_batches) - graphs;
        CHECK_MSG(ca[i] == want, "report %d (epoch %d): CachedCompile %lld, expected %lld", i + 1, epoch, ca[i], want);
    }
}

/* The rates of every step line of metrics.jsonl; returns how many distinct. */
static int distinct_step_lrs(const char *sub) {
    const char *m = slurp(path_in(sub, "metrics.jsonl"));
    double seen[256];
    int n = 0;
    for (const char *p = m ? strstr(m, "\"type\":\"step\"") : NULL; p; p = strstr(p + 1, "\"type\":\"step\"")) {
        double lr = json_num(p, "lr");
        int k = 0;
        while (k < n && seen[k] != lr) k++;
        if (k == n && n < 256) seen[n++] = lr;
    }
    return n;
}

TEST(engine_e2e_compile_count_constant_schedule) {
    int rc = xl(BASE " --set num_epochs=3 --set metrics_debug=true --set output_dir=%s/r", test_tmpdir());
    check_finished(rc, "r");
    check_compiles(1, 3, TRAIN_N / BATCH, TEST_N / TEST_BATCH, 2);
}

TEST(engine_e2e_compile_count_step_schedule) {
    int rc = xl(BASE " --set num_epochs=3 --set metrics_debug=true --set schedule.name=step --set schedule.step_size=1 "
                "--set schedule.gamma=0.5 --set output_dir=%s/r", test_tmpdir());
    check_finished(rc, "r");
    double lr[8];
    int n = epoch_lrs("r", lr, 8);
    CHECK_EQ(n, 3); /* the rate really changed every epoch: 0.05, 0.025, 0.0125 */
    if (n == 3) {
        CHECK_NEAR(lr[0], 0.05, 1e-9);
        CHECK_NEAR(lr[1], 0.025, 1e-9);
        CHECK_NEAR(lr[2], 0.0125, 1e-9);
    }
    check_compiles(1, 3, TRAIN_N / BATCH, TEST_N / TEST_BATCH, 2);
}

/* Cosine with one warm-up epoch, 448 training images (7 steps of 64): the
 * rate changes at every one of epoch 1's 7 steps (0.05 x k/7), then every
 * epoch (0.05 x (1 + cos(pi e/3))/2: 0.0375, 0.0125 — values no warm-up step
 * has, so a rate baked into the graph would compile 7 + 2 training graphs).
 * On 1 core and on 2 (3 steps and 1 eval batch per worker per epoch). */
TEST(engine_e2e_compile_count_cosine_warmup_schedule) {
    int rc = xl(BASE " --set num_epochs=3 --set synthetic_train_size=448 --set log_steps=1 --set metrics_debug=true "
                "--set schedule.name=cosine --set schedule.warmup_epochs=1 --set output_dir=%s/r", test_tmpdir());
    check_finished(rc, "r");
    int d = distinct_step_lrs("r");
    CHECK_MSG(d == 7 + 2, "%d distinct learning rates in metrics.jsonl, expected 9", d);
    double lr[8];
    int n = epoch_lrs("r", lr, 8);
    CHECK_EQ(n, 3);
    if (n == 3) {
        CHECK_NEAR(lr[0], 0.05, 1e-9);
        CHECK_NEAR(lr[1], 0.0375, 1e-9);
        CHECK_NEAR(lr[2], 0.0125, 1e-9);
    }
    check_compiles(1, 3, 448 / BATCH, TEST_N / TEST_BATCH, 2);

    rc = xl(BASE " --set num_epochs=3 --set synthetic_train_size=448 --set num_cores=2 --set metrics_debug=true "
            "--set schedule.name=cosine --set schedule.warmup_epochs=1 --set output_dir=%s/r2", test_tmpdir());
    check_finished(rc, "r2");
    check_compiles(2, 3, 448 / 2 / BATCH, TEST_N / 2 / TEST_BATCH, 2);
}

/* The count follows the training shapes: drop_last: false with 520
 * training images adds the partial batch of 8 (a third graph, compiled once,
 * in epoch 1). 300 test images end in a partial test batch of 44, which is
 * padded to the evaluation shape and masked (eval.c): no graph of its own. */
TEST(engine_e2e_compile_count_partial_training_batch_adds_a_graph_a_partial_test_batch_none) {
    int rc = xl(BASE " --set num_epochs=2 --set metrics_debug=true --set drop_last=false --set synthetic_train_size=520 "
                "--set synthetic_test_size=300 --set output_dir=%s/r", test_tmpdir());
    check_finished(rc, "r");
    check_compiles(1, 2, 520 / BATCH + 1, 300 / TEST_BATCH + 1, 3);
}
