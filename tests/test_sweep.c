/* test_sweep.c — the sweep and CI uses, driven through the real binary as
 * a script drives it. --sweep: the product's run directories and summary
 * files, a diverging run that does not stop the others and sets the exit
 * code, --sweep-resume after the sweep was killed mid-run, the values
 * checked before the first run. Smoke mode: --fast-dev-run writes every
 * output (and fast), max_time ends with time_limit and exit 0, max_steps,
 * limit_train_batches and limit_test_batches bound the work exactly, at 1
 * and 2 workers. Small synthetic sets keep each run under a second. */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <unistd.h>

#include "config/config.h"
#include "run/log.h"
#include "run/monitor.h"
#include "test.h"

#define TINY "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=200 --set log_steps=0 --set num_epochs=1 --set target_accuracy=0"

static char g_out[1 << 16];

/* A shell command from fmt, "$XL" standing for the binary; its exit code. */
#define run(...) test_xl(g_out, sizeof g_out, __VA_ARGS__)

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
    /* the sweep's directory is a run's: a second sweep into it is refused, named as a sweep */
    CHECK_EQ(run("$XL " TINY " --set output_dir=%s/s --sweep seed=1,2 2>&1", d), 2);
    CHECK_STR_CONTAINS(g_out, "holds a sweep (summary.csv)");
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
    CHECK_STR_CONTAINS(g_out, "1 of 3 runs failed: run 2 (");
    CHECK_STR_CONTAINS(g_out, "exit code 4 (diverged)");
}

/* Several failing runs: the exit code is the first's, and the last line
 * says how many failed and which. */
TEST(sweep_with_two_failing_runs_names_both_and_exits_with_the_first_code) {
    const char *d = test_tmpdir();
    int rc = run("$XL " TINY " --set output_dir=%s/s --set target_accuracy=99.9 --sweep learning_rate=1e6,0.1 2>%s/err", d, d);
    CHECK_EQ(rc, 4);
    CHECK_EQ(run("cat %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "1,1e6,diverged,4,");
    CHECK_STR_CONTAINS(g_out, "2,0.1,below_target,6,");
    CHECK_EQ(run("tail -1 %s/err", d), 0);
    CHECK_STR_CONTAINS(g_out, "sweep: 2 of 2 runs failed (runs 1, 2); the first, run 1 (");
    CHECK_STR_CONTAINS(g_out, "exit code 4 (diverged)");
}

TEST(sweep_resume_after_a_kill_runs_only_the_missing_ones) {
    const char *d = test_tmpdir();
    int n = test_train_size(6000);
    /* three runs of a few seconds; the sweep is killed during the second */
    run("$XL " TINY " --set synthetic_train_size=%d --set num_epochs=3 --set output_dir=%s/s "
        "--sweep seed=1,2,3 > %s/out 2> %s/err & echo $! > %s/pid; "
        /* once run 2 has finished an epoch it is training, with its signal handlers in place */
        "for i in $(seq 1200); do [ -e %s/s/2-seed=2/checkpoint-epoch001.safetensors ] && break; sleep 0.05; done; "
        "kill -TERM $(cat %s/pid); wait",
        n, d, d, d, d, d, d);
    CHECK_EQ(count("tail -n +2 %s/s/summary.csv | wc -l", d), 2);
    CHECK_EQ(run("cat %s/s/summary.csv", d), 0);
    CHECK_STR_CONTAINS(g_out, "1,1,ok,0,");
    CHECK_STR_CONTAINS(g_out, ",interrupted,130,");
    CHECK(!strstr(g_out, "\n3,"));
    int rc = run("$XL " TINY " --set synthetic_train_size=%d --set num_epochs=3 --set output_dir=%s/s "
                 "--sweep seed=1,2,3 --sweep-resume 2>%s/err2", n, d, d);
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

/* A sweep killed outright (kill -9) cannot pass a signal on; its running
 * run still learns of it (PR_SET_PDEATHSIG), checkpoints and ends as
 * interrupted instead of training on unseen; --sweep-resume continues it. */
TEST(sweep_killed_with_sigkill_leaves_no_run_training) {
    const char *d = test_tmpdir();
    int n = test_train_size(6000);
    run("$XL " TINY " --set synthetic_train_size=%d --set num_epochs=3 --set output_dir=%s/s "
        "--sweep seed=1,2 > %s/out 2> %s/err & echo $! > %s/pid; "
        "for i in $(seq 1200); do [ -e %s/s/1-seed=1/checkpoint-epoch001.safetensors ] && break; sleep 0.05; done; "
        "kill -KILL $(cat %s/pid); wait; "
        "for i in $(seq 200); do grep -q '\"status\"' %s/s/1-seed=1/results.json 2>/dev/null && break; sleep 0.05; done",
        n, d, d, d, d, d, d, d);
    CHECK_EQ(run("grep -o '\"status\":\"[a-z_]*\"' %s/s/1-seed=1/results.json", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"interrupted\"");
    CHECK_EQ(run("$XL " TINY " --set synthetic_train_size=%d --set num_epochs=3 --set output_dir=%s/s "
                 "--sweep seed=1,2 --sweep-resume 2>&1 >/dev/null | grep -c 'sweep run 1/2 (resumed)'", n, d), 0);
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

/* ---- smoke mode ------------------------------------------------------------ */

static void fast_dev_run_at(int cores) {
    const char *d = test_tmpdir();
    double t0 = xt_wall_s();
    int rc = run("$XL --config configs/smoke.yaml --fast-dev-run --set num_cores=%d --set output_dir=%s/f 2>&1", cores, d);
    double took = xt_wall_s() - t0;
    CHECK_EQ(rc, 0);
    if (!test_sanitized()) CHECK_MSG(took < 3.0, "--fast-dev-run took %.2f s", took);
    CHECK_STR_CONTAINS(g_out, "\"smoke\":true");
    CHECK_STR_CONTAINS(g_out, "\"global_step\":1,");
    CHECK_EQ(run("cd %s/f && ls checkpoint-epoch001.safetensors predictions.png curves.png metrics.jsonl results.json config.yaml", d), 0);
    CHECK_EQ(run("grep -c '\"smoke\":true' %s/f/results.json", d), 0);
    CHECK_EQ(run("grep -c '\"type\":\"epoch\"' %s/f/metrics.jsonl", d), 0);
    CHECK_STR_CONTAINS(g_out, "1\n");
    /* the checkpoint it wrote is one --eval-only reads */
    CHECK_EQ(run("$XL --config configs/smoke.yaml --fast-dev-run --set num_cores=%d --set output_dir=%s/f --eval-only 2>&1", cores, d), 0);
}

TEST(smoke_fast_dev_run_writes_every_output_1_worker) { fast_dev_run_at(1); }
TEST(smoke_fast_dev_run_writes_every_output_2_workers) { fast_dev_run_at(2); }

TEST(smoke_max_time_stops_with_time_limit_and_exit_0) {
    const char *d = test_tmpdir();
    double t0 = xt_wall_s();
    int rc = run("$XL --config configs/smoke.yaml --set synthetic_train_size=20000 --set num_epochs=500 --set log_steps=0 "
                 "--set max_time=2 --set target_accuracy=0 --set output_dir=%s/m 2>/dev/null | tail -1", d);
    double took = xt_wall_s() - t0;
    CHECK_EQ(rc, 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"time_limit\",\"exit_code\":0");
    CHECK_MSG(took < 30, "max_time 2 took %.1f s", took);
    CHECK_EQ(run("ls %s/m | grep -c checkpoint-epoch", d), 0); /* it checkpointed where it stopped */
    CHECK_EQ(run("grep -c '\"status\":\"time_limit\"' %s/m/results.json", d), 0);
}

TEST(smoke_max_steps_and_batch_limits_bound_the_work) {
    const char *d = test_tmpdir();
    /* 4000 / 128 = 31 batches an epoch; 5 per epoch for 3 epochs = 15 steps, then max_steps 12 */
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set target_accuracy=0 --set log_steps=0 --set limit_train_batches=5 "
                 "--set output_dir=%s/a 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"global_step\":15,");
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set target_accuracy=0 --set log_steps=0 --set limit_train_batches=5 "
                 "--set max_steps=12 --set num_cores=2 --set output_dir=%s/b 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"global_step\":12,");
    CHECK_STR_CONTAINS(g_out, "stopped at max_steps (12)");
    /* resumed, it has nothing left to train */
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set target_accuracy=0 --set log_steps=0 --set limit_train_batches=5 "
                 "--set max_steps=12 --set num_cores=2 --set output_dir=%s/b --resume latest 2>&1", d), 0);
    CHECK_STR_CONTAINS(g_out, "already trained max_steps (12 steps)");
    CHECK_STR_CONTAINS(g_out, "\"global_step\":12,");
    /* one test batch of 100 images on each of 2 workers: 200 of the 1000 evaluated */
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set target_accuracy=0 --set num_epochs=1 --set test_batch_size=100 "
                 "--set limit_test_batches=1 --set num_cores=2 --set output_dir=%s/c 2>/dev/null | grep 'global accuracy'", d), 0);
    CHECK_STR_CONTAINS(g_out, "/200 over 2 replicas)");
}

/* ---- the recompilation guard ------------------------------------------------- */

TEST(ci_max_compiles_1_fails_on_a_cosine_warmup_run_naming_its_graphs) {
    const char *d = test_tmpdir();
    const char *cosine = "--set 'schedule={name: cosine, warmup_epochs: 1}' --set num_epochs=2 --set target_accuracy=0";
    int rc = run("$XL --config configs/smoke.yaml %s --max-compiles 1 --set output_dir=%s/a 2>&1 >/dev/null", cosine, d);
    CHECK_EQ(rc, 7);
    CHECK_STR_CONTAINS(g_out, "more than 1 graphs compiled (--max-compiles 1): 1 'training step'");
    CHECK_STR_CONTAINS(g_out, "then 2 'evaluation'");
    CHECK_EQ(run("grep -c '\"status\":\"compile_limit\",\"exit_code\":7' %s/a/results.json", d), 0);
    /* the schedule itself never recompiles: 2 graphs are enough, at 2 workers too */
    CHECK_EQ(run("$XL --config configs/smoke.yaml %s --max-compiles 2 --set num_cores=2 --set output_dir=%s/b >/dev/null 2>&1", cosine, d), 0);
    /* a partial last batch is a third graph, and the message says what changed */
    rc = run("$XL --config configs/smoke.yaml --set drop_last=false --set num_epochs=1 --set target_accuracy=0 --max-compiles 2 "
             "--set output_dir=%s/c 2>&1 >/dev/null", d);
    CHECK_EQ(rc, 7);
    CHECK_STR_CONTAINS(g_out, "2 'training step' (");
    CHECK_STR_CONTAINS(g_out, "has shape [32] instead of [128]");
}

/* ---- early stopping and checkpoint keeping ---------------------------------- */

/* learning_rate 1e-7 learns nothing: the accuracy is flat, so patience 2
 * stops after epoch 3 (epoch 1 is the best, 2 and 3 do not improve). */
#define PLATEAU "--config configs/smoke.yaml --set learning_rate=1e-7 --set target_accuracy=0 --set log_steps=0 " \
                "--set early_stopping.patience=2 --set num_epochs=10"

TEST(early_stopping_stops_a_plateau_at_the_same_epoch_when_resumed) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL " PLATEAU " --set synthetic_train_size=1000 --set output_dir=%s/a 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"early_stopped\",\"exit_code\":0");
    CHECK_STR_CONTAINS(g_out, "\"epochs\":3,");
    /* stopped after epoch 2 (num_epochs is free to change), then resumed: the
     * patience counter came back from the checkpoint, so it stops after 3 too */
    CHECK_EQ(run("$XL " PLATEAU " --set synthetic_train_size=1000 --set num_epochs=2 --set output_dir=%s/b >/dev/null 2>&1", d), 0);
    CHECK_EQ(run("$XL " PLATEAU " --set synthetic_train_size=1000 --set output_dir=%s/b --resume latest 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"early_stopped\",\"exit_code\":0");
    CHECK_STR_CONTAINS(g_out, "\"epochs\":3,");
    /* interrupted mid-run (SIGTERM: a background job of sh ignores SIGINT), then resumed */
    int n = test_train_size(16000);
    run("$XL " PLATEAU " --set synthetic_train_size=%d --set output_dir=%s/c > %s/log 2>&1 & echo $! > %s/pid; "
        "for i in $(seq 600); do grep -q 'Finished training epoch 2' %s/log 2>/dev/null && break; sleep 0.02; done; "
        "kill -TERM $(cat %s/pid); wait", n, d, d, d, d, d);
    CHECK_EQ(run("grep -c '\"status\":\"interrupted\"' %s/c/results.json", d), 0);
    CHECK_EQ(run("$XL " PLATEAU " --set synthetic_train_size=%d --set output_dir=%s/c --resume latest 2>/dev/null | tail -1", n, d), 0);
    CHECK_STR_CONTAINS(g_out, "\"status\":\"early_stopped\",\"exit_code\":0");
    CHECK_STR_CONTAINS(g_out, "\"epochs\":3,");
    /* and a third start trains nothing */
    CHECK_EQ(run("$XL " PLATEAU " --set synthetic_train_size=%d --set output_dir=%s/c --resume latest 2>&1 >/dev/null", n, d), 0);
    CHECK_STR_CONTAINS(g_out, "was stopped early");
}

TEST(early_stopping_monitor_is_checked_when_the_config_loads) {
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set early_stopping.monitor=test_acuracy --dry-run 2>&1 >/dev/null"), 2);
    CHECK_STR_CONTAINS(g_out, "did you mean 'test_accuracy'?");
}

TEST(checkpoint_keep_last_2_leaves_2_periodic_checkpoints_and_the_best) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set num_epochs=5 --set target_accuracy=0 --set log_steps=0 "
                 "--set synthetic_train_size=2000 --set checkpoint.keep_last=2 --set checkpoint.keep_best=true "
                 "--set early_stopping.monitor=test_loss --set output_dir=%s/a 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"best\":{\"monitor\":\"test_loss\",\"value\":");
    CHECK_STR_CONTAINS(g_out, "/a/best.safetensors\"}");
    CHECK_EQ(run("ls %s/a | grep safetensors | tr '\\n' ' '", d), 0);
    CHECK(!strcmp(g_out, "best.safetensors checkpoint-epoch004.safetensors checkpoint-epoch005.safetensors "));
    /* best.safetensors is a whole checkpoint: --eval-only reads it */
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set output_dir=%s/a --eval-only --resume %s/a/best.safetensors 2>&1 >/dev/null", d, d), 0);
}

/* The rule itself: a NaN is never best, min_delta must be exceeded, and
 * test_loss improves downwards. */
TEST(early_stopping_nan_is_never_best) {
    static xt_config c;
    static xt_run r;
    xt_config_defaults(&c);
    c.patience = 2;
    c.min_delta = 0.5;
    r.c = &c;
    r.mon_best = NAN;
    CHECK_EQ(xt_monitor_update(&r, NAN, NAN, 1), 0);     /* NaN first: not best, patience runs */
    CHECK(isnan(r.mon_best));
    CHECK_EQ(r.mon_wait, 1);
    CHECK_EQ(xt_monitor_update(&r, 90, NAN, 2), 1);      /* the first finite value is */
    CHECK_EQ(r.mon_best_epoch, 2);
    CHECK_EQ(xt_monitor_update(&r, 90.4, NAN, 3), 0);    /* not by more than min_delta */
    CHECK_EQ(xt_monitor_update(&r, INFINITY, NAN, 4), 0);
    CHECK_NEAR(r.mon_best, 90, 0);
    CHECK(xt_monitor_should_stop(&r));
    c.monitor = XT_MON_TEST_LOSS;                        /* mode auto: lower is better */
    r.mon_best = NAN;
    r.mon_wait = 0;
    CHECK_EQ(xt_monitor_update(&r, 0, 0.9, 1), 1);
    CHECK_EQ(xt_monitor_update(&r, 0, 0.5, 2), 0);       /* 0.4 lower: not more than 0.5 */
    CHECK_EQ(xt_monitor_update(&r, 0, 0.3, 3), 1);
    CHECK_EQ(xt_monitor_update(&r, 0, NAN, 4), 0);
    CHECK_NEAR(r.mon_best, 0.3, 0);
}

/* ---- evaluation reports ------------------------------------------------------ */

/* A JSON file's tree (jansson), NULL when missing or not JSON. */
static json_t *load_json(const char *path) {
    json_error_t je;
    return json_load_file(path, 0, &je);
}

static void confusion_matches_accuracy(int cores) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set num_epochs=1 --set target_accuracy=0 --set log_steps=0 --set num_cores=%d "
                 "--set output_dir=%s/a >/dev/null 2>&1", cores, d), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/a/confusion.json", d);
    json_t *doc = load_json(path);
    const json_t *m = json_object_get(doc, "matrix");
    CHECK(json_is_array(m) && json_array_size(m) == 10);
    long long total = 0, diag = 0;
    for (size_t t = 0; t < json_array_size(m); t++) {
        const json_t *row = json_array_get(m, t);
        for (size_t p = 0; p < json_array_size(row); p++) {
            long long v = json_integer_value(json_array_get(row, p));
            total += v;
            if (p == t) diag += v;
        }
    }
    CHECK_EQ(total, 1000); /* synthetic_test_size of configs/smoke.yaml */
    snprintf(path, sizeof path, "%s/a/results.json", d);
    json_t *res = load_json(path);
    const json_t *acc = json_object_get(res, "final_accuracy"), *pc = json_object_get(res, "per_class");
    CHECK(json_is_number(acc));
    CHECK_NEAR(100.0 * (double)diag / (double)total, acc ? json_number_value(acc) : -1, 1e-9);
    CHECK(json_is_array(pc) && json_array_size(pc) == 10);
    const json_t *c0 = json_array_get(pc, 0);
    CHECK(json_object_get(c0, "precision") && json_object_get(c0, "recall") && json_object_get(c0, "accuracy"));
    json_decref(doc);
    json_decref(res);
    CHECK_EQ(run("head -c 8 %s/a/confusion.png | od -An -c | tr -d ' \\n'", d), 0);
    CHECK_STR_CONTAINS(g_out, "PNG");
}

TEST(report_confusion_matrix_sums_to_the_test_set_and_matches_accuracy_1_worker) { confusion_matches_accuracy(1); }
TEST(report_confusion_matrix_sums_to_the_test_set_and_matches_accuracy_2_workers) { confusion_matches_accuracy(2); }

TEST(report_eval_only_writes_its_own_confusion_and_leaves_the_runs) {
    const char *d = test_tmpdir();
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set num_epochs=1 --set target_accuracy=0 --set output_dir=%s/a >/dev/null 2>&1", d), 0);
    CHECK_EQ(run("cd %s/a && md5sum confusion.json confusion.png > ../before", d), 0);
    CHECK_EQ(run("$XL --config configs/smoke.yaml --set output_dir=%s/a --eval-only 2>/dev/null | tail -1", d), 0);
    CHECK_STR_CONTAINS(g_out, "\"per_class\":[{\"class\":\"0\",\"support\":100,");
    CHECK_EQ(run("cd %s/a && md5sum -c ../before && ls eval-confusion.json eval-confusion.png", d), 0);
}
