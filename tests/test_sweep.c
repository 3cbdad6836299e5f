/* test_sweep.c — --sweep driven through the real binary as a user drives
 * it: the product's run directories and summary files, a diverging run
 * that does not stop the others and sets the exit code, --sweep-resume
 * after the sweep was killed mid-run, and the values checked before the
 * first run. Small synthetic sets keep each run under a second. */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TINY "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=200 --set log_steps=0 --set num_epochs=1 --set target_accuracy=0"

static char g_out[1 << 16];

/* A shell command from fmt, "$XL" standing for the binary; its exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char cmd[8192], full[8192 + PATH_MAX + 16], bin[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    if (!realpath(test_bin(), bin)) snprintf(bin, sizeof bin, "%s", test_bin());
    snprintf(full, sizeof full, "XL=%s; %s", bin, cmd);
    return test_run(full, g_out, sizeof g_out);
}

/* The number printed by a shell command (e.g. a wc -l). */
static long count(const char *fmt, const char *dir) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, dir);
    if (run("%s", cmd)) return -1;
    return strtol(g_out, NULL, 10);
}

TEST(sweep_2x2_leaves_4_run_dirs_and_4_summary_rows) {
    const char *d = test_tmpdir();
    int rc = run("$XL " TINY " --set output_dir=%s/s --sweep learning_rate=0.05,0.1 --sweep batch_size=64,128 2>/dev/null", d);
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "best run: #");
    CHECK_STR_CONTAINS(g_out, "learning_rate  batch_size  status");
    CHECK_EQ(count("ls -d %s/s/*-learning_rate=* | wc -l", d), 4);
    CHECK_EQ(count("test -f %s/s/4-learning_rate=0.1,batch_size=128/results.json && echo 1", d), 1);
    CHECK_EQ(count("tail -n +2 %s/s/summary.csv | wc -l", d), 4);
    CHECK_EQ(count("wc -l < %s/s/summary.jsonl", d), 4);
    CHECK_EQ(run("head -1 %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "index,learning_rate,batch_size,status,exit_code,final_accuracy,best_accuracy,final_loss,samples_per_sec");
    CHECK_EQ(run("sed -n 3p %s/s/summary.csv", d), 0); /* the second run: lr 0.05, batch 128 */
    CHECK_STR_CONTAINS(g_out, "2,0.05,128,ok,0,");
    CHECK_EQ(run("grep -c '\"batch_size\":128' %s/s/2-learning_rate=0.05,batch_size=128/results.json", d), 0);
    /* the sweep's directory is a run's: a second sweep into it is refused */
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep seed=1,2 2>&1", d), 2);
    CHECK_STR_CONTAINS(g_out, "already holds a run");
}

TEST(sweep_a_diverging_run_does_not_stop_the_others_and_sets_the_exit_code) {
    const char *d = test_tmpdir();
    int rc = run("$XL " TINY " --set output_dir=%s/s --sweep learning_rate=0.1,1e6,0.05 2>%s/err", d, d);
    CHECK_EQ(rc, 4);
    CHECK_EQ(count("tail -n +2 %s/s/summary.csv | wc -l", d), 3);
    CHECK_EQ(run("cat %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "1,0.1,ok,0,");
    CHECK_STR_CONTAINS(g_out, "2,1e6,diverged,4,");
    CHECK_STR_CONTAINS(g_out, "3,0.05,ok,0,");
    CHECK_EQ(run("tail -1 %s/err", d), 0);
    CHECK_STR_CONTAINS(g_out, "run 2 (");
    CHECK_STR_CONTAINS(g_out, "exit code 4 (diverged)");
}

TEST(sweep_resume_after_a_kill_runs_only_the_missing_ones) {
    const char *d = test_tmpdir();
    /* three runs of a few seconds; the sweep is killed during the second */
    run("$XL " TINY " --set synthetic_train_size=6000 --set num_epochs=3 --set output_dir=%s/s "
        "--sweep seed=1,2,3 > %s/out 2> %s/err & echo $! > %s/pid; "
        "for i in $(seq 600); do [ $(wc -l < %s/s/summary.csv 2>/dev/null || echo 0) -ge 2 ] && break; sleep 0.05; done; "
        "sleep 0.3; kill -TERM $(cat %s/pid); wait",
        d, d, d, d, d, d);
    CHECK_EQ(count("tail -n +2 %s/s/summary.csv | wc -l", d), 2);
    CHECK_EQ(run("cat %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "1,1,ok,0,");
    CHECK_STR_CONTAINS(g_out, ",interrupted,130,");
    CHECK(!strstr(g_out, "\n3,"));
    int rc = run("$XL " TINY " --set synthetic_train_size=6000 --set num_epochs=3 --set output_dir=%s/s "
                 "--sweep seed=1,2,3 --sweep-resume 2>%s/err2", d, d);
    CHECK_EQ(rc, 0);
    CHECK_EQ(run("cat %s/err2", d), 0);
    CHECK_STR_CONTAINS(g_out, "sweep run 1/3: ");
    CHECK_STR_CONTAINS(g_out, "already ended ok; skipped");
    CHECK_STR_CONTAINS(g_out, "sweep run 2/3 (resumed)");
    CHECK_STR_CONTAINS(g_out, "sweep run 3/3: ");
    CHECK_EQ(run("cat %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "1,1,ok,0,");
    CHECK_STR_CONTAINS(g_out, ",true,");   /* run 1 skipped */
    CHECK_STR_CONTAINS(g_out, "\n2,2,ok,0,");
    CHECK_STR_CONTAINS(g_out, "\n3,3,ok,0,");
    /* run 1 trained once: one results.json written, never a second run in its directory */
    CHECK_EQ(count("grep -c '\"type\":\"epoch\"' %s/s/1-seed=1/metrics.jsonl", d), 3);
}

TEST(sweep_values_are_checked_before_the_first_run) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep learnin_rate=0.1,0.2 2>&1", d), 2);
    CHECK_STR_CONTAINS(g_out, "--sweep learnin_rate=0.1: unknown key 'learnin_rate'; did you mean 'learning_rate'?");
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep learning_rate=0.1,abc 2>&1", d), 2);
    CHECK_STR_CONTAINS(g_out, "--sweep learning_rate=abc: learning_rate: expected a number");
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep seed=1 --sweep seed=2 2>&1", d), 2);
    CHECK_STR_CONTAINS(g_out, "swept twice");
    CHECK_EQ(run("test -e %s/s && echo exists || echo absent", d), 0);
    CHECK_STR_CONTAINS(g_out, "absent");
}

TEST(sweep_over_seeds_prints_mean_and_std) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep learning_rate=0.05,0.1 --sweep seed=1,2,3 2>/dev/null", d), 0);
    CHECK_STR_CONTAINS(g_out, "over seeds (mean");
    CHECK_STR_CONTAINS(g_out, "learning_rate  n  final_acc");
    CHECK_STR_CONTAINS(g_out, "0.05           3  ");
    CHECK_STR_CONTAINS(g_out, " ± ");
}
