/* test_dist_train.c — data parallelism through the real training step:
 * replicas stay bit-identical, N workers x batch B equal one worker x batch
 * N*B, and a worker killed mid-epoch stops the run cleanly. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/loader.h"
#include "distributed/allreduce.h"
#include "distributed/spawn.h"
#include "test.h"
#include "run/run.h"
#include "run/step.h"

/* conv -> relu -> pool -> flatten -> linear: no BN (per-replica batch
 * statistics legitimately differ, as in PyTorch/XLA without SyncBN) and no
 * dropout (masks are keyed by the index within a replica's batch) */
static const char *kSpec =
    "input: [1, 28, 28]\n"
    "layers:\n"
    "  - conv2d: {name: conv1, out: 4, kernel: 5}\n"
    "  - relu\n"
    "  - maxpool2d: {kernel: 4}\n"
    "  - flatten\n"
    "  - linear: {name: fc1, out: 10}\n"
    "  - log_softmax\n";

typedef struct job {
    xt_run r;
    xt_config c;
    xt_cli cli;
    int per_rank_batch, steps;
    float *x;      /* (N*B, 1, 28, 28): the global batch */
    int32_t *y;
    float *out;    /* shared: world rows of the parameter block */
    int distinct;  /* 1: each rank trains its own slice; 0: all ranks see the same slice 0 */
} job;

static int ctx_rank_allreduce(void *ctx, float *buf, size_t n, xt_err *e);
typedef struct { job *j; int rank; } wctx;
static int ctx_rank_allreduce(void *ctx, float *buf, size_t n, xt_err *e) {
    wctx *w = ctx;
    return xt_allreduce(w->j->r.dist, w->rank, buf, n, e);
}

static int ctx_rank_allreduce_row(void *ctx, size_t n, xt_err *e) {
    wctx *w = ctx;
    return xt_allreduce_row(w->j->r.dist, w->rank, n, e) ? 0 : e->code;
}

/* 1: the step reads the mean where the collective leaves it (xlatrain's
 * way, the default here); 0: the mean copied back into each row first */
static int g_mean_in_place = 1;

static int worker(int rank, void *arg) {
    job *j = arg;
    xt_run *r = &j->r;
    wctx w = {j, rank};
    xt_engine_opts eo = {.fuse = 1};
    if (r->dist) {
        eo.allreduce = ctx_rank_allreduce;
        eo.allreduce_ctx = &w;
        eo.collective_buf = xt_dist_grad_row(r->dist, rank);
        eo.collective_floats = xt_dist_grad_cap(r->dist);
        if (g_mean_in_place) {
            eo.allreduce_row = ctx_rank_allreduce_row;
            eo.collective_result = xt_allreduce_result(r->dist, rank);
        }
    }
    xt_engine *en = xt_engine_new(&r->store, &eo);
    int B = j->per_rank_batch, off = j->distinct ? rank * B : 0;
    xt_batch b = {.n = B, .x = j->x + (size_t)off * 784, .y = j->y + off};
    xt_err e = {0};
    float loss;
    int rc = 0;
    for (int s = 0; s < j->steps && !rc; s++) rc = xt_run_train_step(r, en, &b, 0.05, &loss, &e);
    memcpy(j->out + (size_t)rank * r->store.block_floats, r->store.block, r->store.block_floats * sizeof(float));
    xt_engine_free(en);
    if (rc) fprintf(stderr, "    xla:%d: %s\n", rank, e.msg);
    return rc;
}

/* Train `steps` steps with `world` workers of batch B each; returns the
 * shared rows (caller munmaps) and the block size. */
static float *train(int world, int B, int steps, const float *x, const int32_t *y, size_t *floats) {
    static job j;
    memset(&j, 0, sizeof j);
    xt_config_defaults(&j.c);
    xt_err e = {0};
    const char *path = test_write_file("model.yaml", kSpec);
    CHECK(xt_spec_load(&j.c.spec, path, &e) == 0);
    j.c.batch_size = B;
    j.c.momentum = 0.5;
    j.r.c = &j.c;
    j.r.cli = &j.cli;
    j.r.world = world;
    CHECK(xt_run_setup_model(&j.r, &e) == 0);
    j.per_rank_batch = B;
    j.steps = steps;
    j.x = (float *)x;
    j.y = (int32_t *)y;
    j.distinct = 1;
    *floats = j.r.store.block_floats;
    j.out = mmap(NULL, (size_t)world * *floats * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (world > 1) {
        CHECK(xt_dist_create(&j.r.dist, world, xt_run_grad_floats(&j.r), &e) == 0);
        xt_spawn_opts so = {.timeout_s = 60};
        CHECK_MSG(xt_spawn(j.r.dist, world, worker, &j, &so, &e) == 0, "%s", e.msg);
        xt_dist_destroy(j.r.dist);
    } else {
        CHECK(worker(0, &j) == 0);
    }
    xt_model_free(&j.r.model);
    xt_store_free(&j.r.store);
    xt_spec_free(&j.c.spec);
    return j.out;
}

static void make_batch(int n, float *x, int32_t *y) {
    uint64_t s = 99;
    for (int i = 0; i < n * 784; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    for (int i = 0; i < n; i++) y[i] = (i * 7 + 3) % 10;
}

TEST(dist_replicas_stay_identical_after_k_steps) {
    static float x[4 * 16 * 784];
    static int32_t y[4 * 16];
    make_batch(64, x, y);
    size_t nf;
    float *rows = train(4, 16, 5, x, y, &nf);
    for (int r = 1; r < 4; r++)
        CHECK_MSG(!memcmp(rows, rows + (size_t)r * nf, nf * sizeof(float)), "replica xla:%d differs from xla:0", r);
    munmap(rows, 4 * nf * sizeof(float));
}

/* The update reading the mean in the shared block gives the bits of the
 * mean copied back into each worker's row first, on every replica. */
TEST(dist_mean_read_in_place_gives_the_copied_means_bits) {
    static float x[2 * 16 * 784];
    static int32_t y[2 * 16];
    make_batch(32, x, y);
    size_t nc, ni;
    g_mean_in_place = 0;
    float *copied = train(2, 16, 5, x, y, &nc);
    g_mean_in_place = 1;
    float *in_place = train(2, 16, 5, x, y, &ni);
    CHECK_EQ(nc, ni);
    CHECK_MSG(!memcmp(copied, in_place, 2 * nc * sizeof(float)), "the weights differ");
    CHECK_MSG(!memcmp(copied, copied + nc, nc * sizeof(float)) && !memcmp(in_place, in_place + nc, nc * sizeof(float)),
              "the replicas differ");
    munmap(copied, 2 * nc * sizeof(float));
    munmap(in_place, 2 * ni * sizeof(float));
}

TEST(dist_n_workers_equal_one_worker_with_n_times_the_batch) {
    static float x[4 * 16 * 784];
    static int32_t y[4 * 16];
    make_batch(64, x, y);
    for (int n = 1; n <= 4; n *= 2) {
        size_t nf1, nfn;
        float *one = train(1, 16 * n, 3, x, y, &nf1);
        float *many = train(n, 16, 3, x, y, &nfn);
        CHECK_EQ(nf1, nfn);
        double worst = 0;
        for (size_t i = 0; i < nf1; i++) worst = fmax(worst, fabs(one[i] - many[i]) / fmax(1e-3, fabs(one[i])));
        CHECK_MSG(worst < 1e-4, "N=%d: weights differ by %.3g relative", n, worst);
        munmap(one, nf1 * sizeof(float));
        munmap(many, (size_t)n * nfn * sizeof(float));
    }
}

TEST(dist_killed_worker_stops_the_run_cleanly) {
    const char *d = test_tmpdir();
    char cmd[4096], out[1 << 15];
    /* /proc and shell arithmetic only: a minimal machine has no pgrep or bc */
    snprintf(cmd, sizeof cmd,
             "ls /dev/shm | sort > %s/shm.before; "
             "%s --config configs/smoke.yaml --set num_cores=2 --set synthetic_train_size=%d --set synthetic_test_size=256 "
             "--set log_steps=1 --set output_dir=%s/r > %s/log 2>&1 & pid=$!; "
             "for i in $(seq 400); do grep -q 'xla:1](3) Loss' %s/log 2>/dev/null && break; sleep 0.05; done; "
             "kids=$(cat /proc/$pid/task/*/children); for k in $kids; do victim=$k; done; "
             "t0=$(date +%%s%%N); kill -9 $victim; wait $pid; rc=$?; t1=$(date +%%s%%N); "
             "echo \"exit=$rc\"; echo \"ms=$(( (t1 - t0) / 1000000 ))\"; "
             "left=0; for k in $kids; do kill -0 $k 2>/dev/null && left=$((left + 1)); done; echo \"left=$left kids=$kids\"; "
             "ls /dev/shm | sort > %s/shm.after; echo \"shm=$(comm -13 %s/shm.before %s/shm.after | wc -l)\"; tail -n 3 %s/log; "
             "cat %s/r/results.json",
             d, test_bin(), test_train_size(60000), d, d, d, d, d, d, d, d);
    test_run(cmd, out, sizeof out);
    CHECK_STR_CONTAINS(out, "exit=4");
    CHECK_STR_CONTAINS(out, "\"status\":\"worker_failed\",\"exit_code\":4"); /* the summary survives the worker */
    CHECK_STR_CONTAINS(out, "was killed by signal 9");
    CHECK_STR_CONTAINS(out, "left=0");
    CHECK_STR_CONTAINS(out, "shm=0");
    const char *s = strstr(out, "ms=");
    CHECK(s != NULL);
    if (s) CHECK_MSG(atoi(s + 3) < 10000, "took %d ms to stop", atoi(s + 3));
}

TEST(dist_sigterm_stops_all_workers_after_the_master_checkpoints) {
    const char *d = test_tmpdir();
    char cmd[4096], out[1 << 15];
    snprintf(cmd, sizeof cmd,
             "%s --config configs/smoke.yaml --set num_cores=2 --set synthetic_train_size=%d --set synthetic_test_size=256 "
             "--set log_steps=1 --set output_dir=%s/r > %s/log 2>&1 & pid=$!; "
             "for i in $(seq 400); do grep -q 'xla:1](3) Loss' %s/log 2>/dev/null && break; sleep 0.05; done; "
             "kids=$(cat /proc/$pid/task/*/children); kill -TERM $pid; wait $pid; echo \"exit=$?\"; "
             "left=0; for k in $kids; do kill -0 $k 2>/dev/null && left=$((left + 1)); done; echo \"left=$left\"; "
             "ls %s/r; cat %s/log",
             test_bin(), test_train_size(60000), d, d, d, d, d);
    test_run(cmd, out, sizeof out);
    CHECK_STR_CONTAINS(out, "exit=130");
    CHECK_STR_CONTAINS(out, "left=0");
    CHECK_STR_CONTAINS(out, "checkpoint-epoch001-step"); /* mid-epoch: named by its step, not as a finished epoch */
    CHECK(strstr(out, "checkpoint-epoch001.safetensors") == NULL);
    CHECK_STR_CONTAINS(out, "checkpoint written to");
    /* and the run continues from there, for a few steps (max_steps is where a run stops, not how it goes:
     * run_safety_mid_epoch_interrupt_and_resume_match_two_cores resumes such a checkpoint to the end) */
    const char *at = strstr(out, "checkpoint-epoch001-step");
    long long until = (at ? atoll(at + strlen("checkpoint-epoch001-step")) : 0) + 4;
    snprintf(cmd, sizeof cmd, "%s --config configs/smoke.yaml --set num_cores=2 --set synthetic_train_size=%d --set synthetic_test_size=256 "
             "--set num_epochs=1 --set log_steps=0 --set target_accuracy=0 --set output_dir=%s/r --set max_steps=%lld --resume latest; echo \"exit=$?\"",
             test_bin(), test_train_size(60000), d, until);
    test_run(cmd, out, sizeof out);
    CHECK_STR_CONTAINS(out, "resuming from");
    char want[64];
    snprintf(want, sizeof want, "stopped at max_steps (%lld)", until); /* 4 steps trained on from the checkpoint's */
    CHECK_STR_CONTAINS(out, want);
    CHECK_STR_CONTAINS(out, "exit=0");
}

/* Every worker runs worker 0's kernel choices. With synthetic times that
 * differ per worker (XLATRAIN_CHOICE_TEST_SKEW=1: worker 0 prefers each
 * node's last candidate, the others its first), 1 host x 2 workers ends with
 * the checkpoint of a run where every worker prefers the last (=last):
 * worker 1 took worker 0's choices, not its own. The fixed rules' run ends
 * elsewhere, so the choices do change the bits and the test can fail. Each
 * run has its own choice cache, so each times (synthetically). */
TEST(dist_workers_run_worker_0s_kernel_choices) {
    const char *d = test_tmpdir();
    char cmd[4096], out[1 << 15];
    const char *runs[3][2] = {{"a", "XLATRAIN_CHOICE_TEST_SKEW=1"}, {"b", "XLATRAIN_CHOICE_TEST_SKEW=last"},
                              {"c", "XLATRAIN_KERNEL_CHOICE=fixed"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s XLATRAIN_CACHE_DIR=%s/cache-%s %s --config configs/smoke.yaml --set num_cores=2 --set synthetic_train_size=%d "
                 "--set synthetic_test_size=256 --set num_epochs=1 --set target_accuracy=0 --set log_steps=0 "
                 "--set output_dir=%s/%s 2>&1; echo \"exit=$?\"",
                 runs[i][1], d, runs[i][0], test_bin(), test_train_size(2048), d, runs[i][0]);
        test_run(cmd, out, sizeof out);
        CHECK_STR_CONTAINS(out, "exit=0");
        if (i < 2) CHECK_STR_CONTAINS(out, "candidates timed");
    }
    snprintf(cmd, sizeof cmd,
             "cmp -s %s/a/checkpoint-epoch001.safetensors %s/b/checkpoint-epoch001.safetensors && echo same-ab; "
             "cmp -s %s/a/checkpoint-epoch001.safetensors %s/c/checkpoint-epoch001.safetensors && echo same-ac; "
             "grep -o '\"kernel_choice\":\"[a-z]*\"' %s/a/results.json",
             d, d, d, d, d);
    test_run(cmd, out, sizeof out);
    CHECK_STR_CONTAINS(out, "same-ab");
    CHECK_MSG(strstr(out, "same-ac") == NULL, "the skewed choices gave the fixed rules' bits: %s", out);
    CHECK_STR_CONTAINS(out, "\"kernel_choice\":\"measured\"");
}
