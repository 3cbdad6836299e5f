/* test_mpi.c — multi-host runs of the real binary under mpirun on loopback:
 * 2 ranks x 1 worker reproduce 1 host x 2 workers bit for bit (and a resume
 * across that change of layout too), 2 ranks x 2 workers learn real MNIST
 * digits, a worker killed with SIGKILL or stopped (hung) ends the whole job (rank 0
 * writing results.json with worker_failed and the failed rank's host first), SIGTERM to
 * mpirun checkpoints, and ranks with different datasets stop before training.
 *
 * Skipped (visibly) unless the binary under test was built with `make MPI=1`
 * and mpirun is on PATH: `make test-mpi` builds and runs them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synth_idx.h"
#include "test.h"

/* Skip unless the binary has MPI and mpirun exists. */
static void need_mpi(void) {
    char out[512], cmd[700];
    snprintf(cmd, sizeof cmd, "%s --version", test_bin());
    if (test_run(cmd, out, sizeof out) != 0 || !strstr(out, "Open MPI"))
        test_skip("the binary under test has no MPI (make test-mpi builds one with MPI=1)");
    if (test_run("command -v mpirun", out, sizeof out) != 0) test_skip("no mpirun on PATH (apt-get install openmpi-bin)");
}

/* mpirun on loopback as the README shows it: root allowed, more processes
 * than cores allowed, no binding (a rank's forked workers need every core). */
#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --bind-to none"

/* A small synthetic run: learns in a few steps, no download. */
static const char *small_config(void) {
    return test_write_file("small.yaml",
                           "dataset: synthetic\n"
                           "synthetic_train_size: 2048\n"
                           "synthetic_test_size: 500\n"
                           "batch_size: 64\n"
                           "learning_rate: 0.05\n"
                           "momentum: 0.5\n"
                           "log_steps: 5\n"
                           "model: models/fashion_cnn.yaml\n");
}

static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static char g_out[65536];

/* Run cmd (stdout+stderr into g_out); returns its exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return test_run(cmd, g_out, sizeof g_out);
}

TEST(mpi_two_ranks_by_one_worker_match_one_host_by_two) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    int rc = run("%s --config %s --set num_epochs=2 --set num_cores=2 --set output_dir=%s/one 2>&1", bin, cfg, t);
    CHECK_MSG(rc == 0, "1 host x 2 workers: exit %d: %s", rc, g_out);
    rc = run(MPIRUN " -np 2 %s --config %s --set num_epochs=2 --set num_cores=1 --set output_dir=%s/two 2>&1", bin, cfg, t);
    CHECK_MSG(rc == 0, "2 ranks x 1 worker: exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "2 cores (2 hosts)");
    CHECK_STR_CONTAINS(g_out, "[xla:1]"); /* the second host's worker is global ordinal 1 */
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/one/checkpoint-epoch002.safetensors", t);
    snprintf(b, sizeof b, "%s/two/checkpoint-epoch002.safetensors", t);
    CHECK_MSG(same_file(a, b), "%s and %s differ", a, b);
    /* host 1 wrote nothing of its own: one run directory, host 0's */
    snprintf(a, sizeof a, "%s/two-2", t);
    struct stat st;
    CHECK(stat(a, &st) != 0);
}

TEST(mpi_resume_across_a_change_of_layout) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    /* the reference: 1 host x 2 workers, 2 epochs without a break */
    int rc = run("%s --config %s --set num_epochs=2 --set num_cores=2 --set output_dir=%s/ref 2>&1", bin, cfg, t);
    CHECK_MSG(rc == 0, "reference: exit %d: %s", rc, g_out);
    /* epoch 1 on 1 host x 2 workers, epoch 2 on 2 hosts x 1 worker */
    rc = run("%s --config %s --set num_epochs=1 --set num_cores=2 --set output_dir=%s/run 2>&1", bin, cfg, t);
    CHECK_MSG(rc == 0, "first epoch: exit %d: %s", rc, g_out);
    rc = run(MPIRUN " -np 2 %s --config %s --set num_epochs=2 --set num_cores=1 --set output_dir=%s/run --resume latest 2>&1",
             bin, cfg, t);
    CHECK_MSG(rc == 0, "resumed on 2 ranks: exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "resuming from");
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/ref/checkpoint-epoch002.safetensors", t);
    snprintf(b, sizeof b, "%s/run/checkpoint-epoch002.safetensors", t);
    CHECK_MSG(same_file(a, b), "%s and %s differ", a, b);
}

TEST(mpi_two_ranks_by_two_workers_learn_digits) {
    need_mpi();
    const char *t = test_tmpdir(), *bin = test_bin();
    struct stat st;
    int real = stat("../shared/data/mnist-t10k/t10k-images-idx3-ubyte.gz", &st) == 0;
    /* real MNIST digits when ../shared has them (train [0,8000), test
     * [8000,10000)), else the synthetic set; four processes on two cores */
    const char *cfg = real ? "configs/real_t10k.yaml" : "configs/smoke.yaml";
    const char *target = real ? "97" : "95";
    /* the synthetic set over 4 replicas is 7 steps an epoch: the smoke config's 3 epochs reach about 88%, 5 about 98% */
    const char *epochs = real ? "10" : "5";
    int rc = run(MPIRUN " -np 2 %s --config %s --set num_cores=2 --set num_epochs=%s --set target_accuracy=%s --set output_dir=%s/r 2>&1",
                 bin, cfg, epochs, target, t);
    CHECK_MSG(rc == 0, "2 ranks x 2 workers on %s: exit %d: %s", cfg, rc, g_out);
    CHECK_STR_CONTAINS(g_out, "4 cores (2 hosts)");
    CHECK_STR_CONTAINS(g_out, "[xla:3] Accuracy=");
    CHECK_STR_CONTAINS(g_out, "over 4 replicas");
    printf("    %s: %s\n", cfg, strstr(g_out, "\"best_accuracy\"") ? strstr(g_out, "\"best_accuracy\"") : "?");
}

/* Start 2 ranks (with `sets`) on a long run, wait for its first epoch, send
 * `sig` to rank 1's first worker, and time mpirun's end from there: checks
 * that it ends non-zero within 15 s with no xlatrain process left; g_out
 * then holds "rc=N", "ms=N" and the job's output. A watchdog ends a job
 * that would not. */
static void hit_rank1_worker(const char *sig, const char *sets) {
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    int rc = run(MPIRUN " -np 2 %s --config %s --set num_epochs=300 %s --set output_dir=%s/j > %s/log 2>&1 & mp=$!;"
                 " for i in $(seq 1 300); do grep -q '\"type\":\"epoch\"' %s/j/metrics.jsonl 2>/dev/null && break; sleep 0.1; done;"
                 " r1=$(pgrep -P $mp | sed -n 2p); w=$(pgrep -P \"$r1\" | head -n 1);"
                 " [ -n \"$w\" ] || { echo no worker found; kill $mp; exit 90; };"
                 " s=$(date +%%s%%N); kill -%s $w; (sleep 60; kill $mp 2>/dev/null) >/dev/null 2>&1 & wd=$!; wait $mp; echo rc=$?; e=$(date +%%s%%N); kill $wd;"
                 " sleep 0.5; echo \"ms=$(( (e - s) / 1000000 ))\"; echo \"left=$(pgrep -f '^[^ ]*xlatrain .*output_dir=%s/j' | wc -l)\"; cat %s/log",
                 bin, cfg, sets, t, t, t, sig, t, t);
    CHECK_MSG(rc == 0, "harness: exit %d: %s", rc, g_out);
    const char *ms = strstr(g_out, "ms=");
    CHECK_MSG(ms && atol(ms + 3) < 15000, "mpirun did not end within 15 s of SIG%s: %s", sig, g_out);
    printf("    mpirun ended %ld ms after SIG%s\n", ms ? atol(ms + 3) : -1L, sig);
    CHECK(!strstr(g_out, "rc=0"));
    CHECK_STR_CONTAINS(g_out, "left=0");
    CHECK_STR_CONTAINS(g_out, "MPI rank 1 ("); /* the host that saw it says so before its MPI_Abort */
}

/* After hit_rank1_worker: rank 0, which holds the run directory, heard
 * rank 1's failure and wrote results.json before it ended the job: status
 * worker_failed, exit 4, a message naming rank 1, its host and `what`. */
static void check_rank0_summary(const char *what) {
    char host[64] = "?", want[128];
    gethostname(host, sizeof host - 1);
    CHECK_STR_CONTAINS(g_out, "rc=4");
    const char *res = test_slurp("%s/j/results.json", test_tmpdir());
    CHECK_STR_CONTAINS(res, "\"status\":\"worker_failed\",\"exit_code\":4,");
    snprintf(want, sizeof want, "MPI rank 1 (%s): %s", host, what);
    CHECK_STR_CONTAINS(res, want);
    CHECK_STR_CONTAINS(res, "--resume latest");
}

TEST(mpi_killed_worker_ends_the_job_without_orphans) {
    need_mpi();
    /* rank 1's first worker is global ordinal 2 */
    hit_rank1_worker("KILL", "--set num_cores=2");
    CHECK_STR_CONTAINS(g_out, "worker xla:2 was killed by signal 9 (SIGKILL)");
    check_rank0_summary("worker xla:2 was killed by signal 9 (SIGKILL)");
}

TEST(mpi_hung_worker_ends_the_job) {
    need_mpi();
    /* SIGSTOP (often while the worker waits for the other host's answer,
     * which must not hide it): its parent names it after worker_timeout */
    hit_rank1_worker("STOP", "--set num_cores=1 --set worker_timeout=3");
    CHECK_STR_CONTAINS(g_out, "worker xla:1 hung: no progress for 3 s");
    check_rank0_summary("worker xla:1 hung: no progress for 3 s");
}

TEST(mpi_sigterm_to_mpirun_checkpoints_on_every_host) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    /* On SIGTERM, mpirun (Open MPI 4.1) sends the ranks SIGCONT, waits
     * odls_base_sigkill_timeout (1 s by default; 10 here, time to finish the
     * step and checkpoint), sends SIGTERM, waits as long again, then SIGKILLs.
     * While it waits it forwards no output, so a rank writing to mpirun's
     * pty fills it and waits for room before the SIGTERM reaches it; once it
     * does, the rank drops what the pty cannot take and checkpoints (log.c).
     * The ranks write to mpirun here, as a user's job does. The run must
     * outlast the 10 s before the SIGTERM arrives (200 epochs of this config
     * took about that long, and the signal sometimes came after the last). */
    int rc = run("OMPI_MCA_odls_base_sigkill_timeout=10 " MPIRUN " -np 2 %s --config %s --set num_epochs=5000 --set log_steps=1 --set num_cores=1 --set output_dir=%s/s > %s/log 2>&1 & mp=$!;"
                 " for i in $(seq 1 300); do grep -q '\"type\":\"epoch\",\"epoch\":20,' %s/s/metrics.jsonl 2>/dev/null && break; sleep 0.1; done;"
                 " kill -TERM $mp; wait $mp; echo rc=$?; sleep 0.5; echo \"left=$(pgrep -f '^[^ ]*xlatrain .*output_dir=%s/s' | wc -l)\";"
                 " cat %s/s/results.json",
                 bin, cfg, t, t, t, t, t);
    CHECK_MSG(rc == 0, "harness: exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "left=0");
    /* host 0 wrote its summary (mpirun may drop the ranks' last lines once it is terminating) */
    CHECK_STR_CONTAINS(g_out, "\"status\":\"interrupted\"");
    CHECK_STR_CONTAINS(g_out, "checkpoint written to");
    /* and it goes on from there on another layout, through the next epoch:
     * the stop may have come at the end of an epoch (checkpoint-epoch036),
     * and a resume with nothing left to train reports the recorded exit, 130 */
    const char *at = strstr(g_out, "checkpoint-epoch");
    int epoch = at ? atoi(at + 16) : 0;
    CHECK_MSG(epoch > 0, "no checkpoint-epochNNN named: %s", g_out);
    rc = run("%s --config %s --set num_epochs=%d --set num_cores=2 --set output_dir=%s/s --resume latest 2>&1", bin, cfg, epoch + 1, t);
    CHECK_MSG(rc == 0, "resume after SIGTERM: exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "resuming from");
}

TEST(mpi_ranks_with_different_data_stop_before_training) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    /* MPMD: the same config, each rank its own datadir (a path the ranks
     * may differ in), rank 1's with other pixels */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/a", t);
    test_write_idx_set(dir, 256, 64, 0);
    snprintf(dir, sizeof dir, "%s/b", t);
    test_write_idx_set(dir, 256, 64, 1);
    const char *data = "--set dataset=mnist --set batch_size=32";
    int rc = run(MPIRUN " -np 1 %s --config %s %s --set datadir=%s/a --set output_dir=%s/d : -np 1 %s --config %s %s --set datadir=%s/b --set output_dir=%s/d 2>&1",
                 bin, cfg, data, t, t, bin, cfg, data, t, t);
    CHECK_MSG(rc == 3, "exit %d, want 3: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "MPI rank 1");
    CHECK_STR_CONTAINS(g_out, "has another dataset than rank 0");
    CHECK_STR_CONTAINS(g_out, "same sizes but another checksum");
    CHECK(!strstr(g_out, "Loss="));
    char p[600];
    snprintf(p, sizeof p, "%s/d/checkpoint-epoch001.safetensors", t);
    struct stat st;
    CHECK(stat(p, &st) != 0);
}

/* Ranks started with another learning_rate and momentum would train
 * silently on another trajectory: refused at start-up, naming the keys. */
TEST(mpi_ranks_with_different_trajectory_keys_stop_at_start) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    int rc = run(MPIRUN " -np 1 %s --config %s --set output_dir=%s/d : -np 1 %s --config %s --set learning_rate=0.1 --set momentum=0.9 --set output_dir=%s/d 2>&1",
                 bin, cfg, t, bin, cfg, t);
    CHECK_MSG(rc == 2, "exit %d, want 2: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "MPI rank 1 (");
    CHECK_STR_CONTAINS(g_out, "was started with another trajectory than rank 0");
    CHECK_STR_CONTAINS(g_out, "learning_rate: 0.05 -> 0.1");
    CHECK_STR_CONTAINS(g_out, "momentum: 0.5 -> 0.9");
    CHECK(!strstr(g_out, "Loss="));
    struct stat st;
    char p[600];
    snprintf(p, sizeof p, "%s/d", t);
    CHECK_MSG(stat(p, &st) != 0, "the refused job claimed %s", p);
}

/* A seed mismatch is named as such, not blamed on the data it generates. */
TEST(mpi_ranks_with_different_seeds_say_seed_differs) {
    need_mpi();
    const char *cfg = small_config(), *t = test_tmpdir(), *bin = test_bin();
    int rc = run(MPIRUN " -np 1 %s --config %s --set output_dir=%s/d : -np 1 %s --config %s --set seed=2 --set output_dir=%s/d 2>&1",
                 bin, cfg, t, bin, cfg, t);
    CHECK_MSG(rc == 2, "exit %d, want 2: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "seed differs; 1 key differs (seed: 1 -> 2");
    CHECK(!strstr(g_out, "dataset"));
}
