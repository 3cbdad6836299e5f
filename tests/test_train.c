/* test_train.c — the run end to end, through the real binary as a user or a
 * sweep script drives it: accuracy bar, outputs, exit codes, checkpoints
 * (bit-identical resume, SIGINT, refusal of corrupt or foreign files),
 * prediction CSV, and two data-parallel workers. Small synthetic sets keep
 * each run to a second or two. */
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "test.h"

#define SMALL "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=256 --set log_steps=4"

static int xl(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xl(char *out, size_t cap, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", test_bin(), args);
    return test_run(cmd, out, cap);
}

static char g_out[1 << 16];

/* Every F32/I64 tensor of two checkpoints is bytewise equal. */
static int same_tensors(const char *a, const char *b) {
    xt_st_file fa, fb;
    xt_err e = {0};
    if (xt_st_read(a, &fa, &e)) { fprintf(stderr, "    %s\n", e.msg); return 0; }
    if (xt_st_read(b, &fb, &e)) { fprintf(stderr, "    %s\n", e.msg); xt_st_close(&fa); return 0; }
    int ok = fa.ntensors == fb.ntensors && fa.ntensors > 0;
    for (int i = 0; ok && i < fa.ntensors; i++) {
        const xt_st_tensor *t = xt_st_find(&fb, fa.tensors[i].name);
        ok = t && t->nbytes == fa.tensors[i].nbytes && !memcmp(t->data, fa.tensors[i].data, t->nbytes);
        if (!ok) fprintf(stderr, "    tensor %s differs\n", fa.tensors[i].name);
    }
    xt_st_close(&fa);
    xt_st_close(&fb);
    return ok;
}

TEST(train_smoke_reaches_accuracy_bar_and_writes_outputs) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, "--config configs/smoke.yaml --set output_dir=%s/run", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "[xla:0](10) Loss=");
    CHECK_STR_CONTAINS(g_out, "Finished training epoch 3");
    CHECK_STR_CONTAINS(g_out, "[xla:0] Accuracy=");
    char cmd[1024];
    /* the last stdout line is results.json, and status ok */
    snprintf(cmd, sizeof cmd, "%s --config configs/smoke.yaml --set output_dir=%s/run2 2>/dev/null > %s/out && tail -n 1 %s/out | cmp - %s/run2/results.json && grep -c '\"type\":\"epoch\"' %s/run2/metrics.jsonl && ls %s/run2",
             test_bin(), d, d, d, d, d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "3\n");
    CHECK_STR_CONTAINS(g_out, "predictions.png");
    CHECK_STR_CONTAINS(g_out, "curves.png");
    CHECK_STR_CONTAINS(g_out, "checkpoint-epoch003.safetensors");
    snprintf(cmd, sizeof cmd, "grep -o '\"best_accuracy\":[0-9.]*' %s/run/results.json", d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    double best = strtod(strchr(g_out, ':') + 1, NULL);
    CHECK_MSG(best >= 95.0, "best accuracy %.2f < 95 on the synthetic set", best);
}

TEST(train_below_target_exits_6_after_writing_outputs) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=1 --set target_accuracy=99.9 --set output_dir=%s/r", d);
    CHECK_EQ(rc, 6);
    CHECK_STR_CONTAINS(g_out, "below target_accuracy");
    char p[600];
    snprintf(p, sizeof p, "%s/r/results.json", d);
    CHECK(access(p, R_OK) == 0);
}

TEST(train_nan_loss_exits_4_naming_the_step) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set model=models/mlp.yaml --set learning_rate=1e30 --set output_dir=%s/r", d);
    CHECK_EQ(rc, 4);
    CHECK_STR_CONTAINS(g_out, "loss is ");
    CHECK_STR_CONTAINS(g_out, " step ");
}

TEST(train_resume_is_bit_identical) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=3 --set target_accuracy=0 --set output_dir=%s/full", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=1 --set target_accuracy=0 --set output_dir=%s/part", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=3 --set target_accuracy=0 --set output_dir=%s/part --resume latest", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "Finished training epoch 2");
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/full/checkpoint-epoch003.safetensors", d);
    snprintf(b, sizeof b, "%s/part/checkpoint-epoch003.safetensors", d);
    CHECK(same_tensors(a, b));
}

/* SIGTERM takes the same path as SIGINT; a shell starts background jobs with
 * SIGINT ignored, and xlatrain keeps an ignored SIGINT ignored (nohup). */
TEST(train_sigterm_checkpoints_exits_130_and_resumes_identically) {
    const char *d = test_tmpdir();
    char cmd[2048], big[512];
    snprintf(big, sizeof big, "--config configs/smoke.yaml --set synthetic_train_size=%d --set synthetic_test_size=256 "
             "--set log_steps=1 --set num_epochs=2 --set target_accuracy=0", test_train_size(20000));
    int rc = xl(g_out, sizeof g_out, "%s --set output_dir=%s/full", big, d);
    CHECK_MSG(rc == 0, "%s", g_out);
    /* start, wait for the first training lines, interrupt */
    snprintf(cmd, sizeof cmd, "%s %s --set output_dir=%s/part > %s/log 2>&1 & pid=$!; "
             "for i in $(seq 200); do grep -q '(5) Loss' %s/log 2>/dev/null && break; sleep 0.05; done; "
             "kill -TERM $pid; wait $pid; echo \"exit=$?\"; cat %s/log",
             test_bin(), big, d, d, d, d);
    test_run(cmd, g_out, sizeof g_out);
    CHECK_STR_CONTAINS(g_out, "exit=130");
    CHECK_STR_CONTAINS(g_out, "checkpoint written to");
    /* said once (on stderr; results.json's message is the same text), not also on stdout */
    int said = 0;
    for (const char *q = g_out; (q = strstr(q, "\nxlatrain: interrupted")); q++) said++;
    CHECK_EQ(said, 1);
    rc = xl(g_out, sizeof g_out, "%s --set output_dir=%s/part --resume latest", big, d);
    CHECK_MSG(rc == 0, "%s", g_out);
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/full/checkpoint-epoch002.safetensors", d);
    snprintf(b, sizeof b, "%s/part/checkpoint-epoch002.safetensors", d);
    CHECK(same_tensors(a, b));
}

TEST(train_refuses_corrupt_truncated_and_foreign_checkpoints) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=1 --set target_accuracy=0 --set output_dir=%s/r", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    char cmd[2048];
    /* flip one byte near the end (tensor data) */
    snprintf(cmd, sizeof cmd, "cp %s/r/checkpoint-epoch001.safetensors %s/bad.safetensors && "
             "printf '\\125' | dd of=%s/bad.safetensors bs=1 seek=$(( $(stat -c %%s %s/bad.safetensors) - 9 )) conv=notrunc 2>/dev/null",
             d, d, d, d);
    CHECK_EQ(test_run(cmd, NULL, 0), 0);
    rc = xl(g_out, sizeof g_out, SMALL " --set output_dir=%s/r2 --resume %s/bad.safetensors", d, d);
    CHECK_EQ(rc, 4);
    CHECK_STR_CONTAINS(g_out, "checksum");
    snprintf(cmd, sizeof cmd, "head -c 5000 %s/r/checkpoint-epoch001.safetensors > %s/trunc.safetensors", d, d);
    CHECK_EQ(test_run(cmd, NULL, 0), 0);
    rc = xl(g_out, sizeof g_out, SMALL " --set output_dir=%s/r3 --resume %s/trunc.safetensors", d, d);
    CHECK_EQ(rc, 4);
    CHECK_STR_CONTAINS(g_out, "trunc.safetensors");
    rc = xl(g_out, sizeof g_out, SMALL " --set model=models/lenet5.yaml --set output_dir=%s/r4 --resume %s/r/checkpoint-epoch001.safetensors", d, d);
    CHECK_EQ(rc, 4);
    CHECK_STR_CONTAINS(g_out, "another model");
}

TEST(train_predict_csv_and_eval_only) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=1 --set target_accuracy=0 --set output_dir=%s/r", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    rc = xl(g_out, sizeof g_out, SMALL " --set target_accuracy=0 --set output_dir=%s/r --resume latest --eval-only", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "Accuracy=");
    CHECK(strstr(g_out, "Finished training") == NULL);
    /* an IDX images file with 3 blank images */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "printf '\\000\\000\\010\\003\\000\\000\\000\\003\\000\\000\\000\\034\\000\\000\\000\\034' > %s/img && "
             "head -c 2352 /dev/zero >> %s/img", d, d);
    CHECK_EQ(test_run(cmd, NULL, 0), 0);
    rc = xl(g_out, sizeof g_out, SMALL " --set output_dir=%s/r --resume latest --predict %s/img --output %s/p.csv", d, d, d);
    CHECK_MSG(rc == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "cat %s/p.csv", d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK(!strncmp(g_out, "index,predicted,p0,", 19));
    CHECK_STR_CONTAINS(g_out, "\n2,");
    rc = xl(g_out, sizeof g_out, SMALL " --set output_dir=%s/empty --predict %s/img", d, d);
    CHECK_EQ(rc, 2); /* --resume defaults to latest, and there is no checkpoint */
    CHECK_STR_CONTAINS(g_out, "no checkpoint");
}

TEST(train_two_workers_data_parallel) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_cores=2 --set num_epochs=2 --set target_accuracy=0 --set output_dir=%s/r", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "[xla:1](4) Loss=");
    CHECK_STR_CONTAINS(g_out, "[xla:0](4) Loss=");
    CHECK_STR_CONTAINS(g_out, "global accuracy=");
    CHECK_STR_CONTAINS(g_out, "\"num_cores\":2");
}

TEST(train_metrics_debug_prints_the_torch_xla_report) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_epochs=1 --set target_accuracy=0 --set metrics_debug=true --set output_dir=%s/r", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "Metric: CompileTime\n  TotalSamples: ");
    CHECK_STR_CONTAINS(g_out, "Metric: ExecuteTime");
    CHECK_STR_CONTAINS(g_out, "Percentiles: 1%=");
    CHECK_STR_CONTAINS(g_out, "Counter: CachedCompile\n  Value: ");
    CHECK_STR_CONTAINS(g_out, "Counter: UncachedCompile");
    /* with two workers the summary is still the last stdout line */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s " SMALL " --set num_cores=2 --set num_epochs=1 --set target_accuracy=0 --set metrics_debug=true "
             "--set output_dir=%s/r2 2>/dev/null > %s/out2; tail -n 1 %s/out2 | cmp - %s/r2/results.json && echo same", test_bin(), d, d, d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "same");
}

/* num_cores changes the trajectory, so the resume needs --allow-config-change
 * (test_run_safety.c checks the refusal without it). */
TEST(train_resume_with_a_different_num_cores) {
    const char *d = test_tmpdir();
    int rc = xl(g_out, sizeof g_out, SMALL " --set num_cores=1 --set num_epochs=1 --set target_accuracy=0 --set output_dir=%s/r", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    rc = xl(g_out, sizeof g_out, SMALL " --set num_cores=2 --set num_epochs=2 --set target_accuracy=0 --set output_dir=%s/r --resume latest --allow-config-change", d);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "num_cores: 1 -> 2");
    CHECK_STR_CONTAINS(g_out, "\"config_changed_on_resume\":true");
    CHECK_STR_CONTAINS(g_out, "resuming from");
    CHECK_STR_CONTAINS(g_out, "[xla:1](4) Loss=");
    CHECK_STR_CONTAINS(g_out, "Finished training epoch 2");
    CHECK(strstr(g_out, "Finished training epoch 1") == NULL);
    CHECK_STR_CONTAINS(g_out, "\"epochs\":2");
}

/* test_batch_size up to the key's maximum evaluates the shard in one batch
 * (no hidden cap): the same accuracy as batches of 1000, and the grid shows
 * the first samples of that one batch, not of a 4096-sample tail. Above the
 * maximum the config is rejected at its file:line:col. */
TEST(train_test_batch_size_above_4096) {
    const char *d = test_tmpdir();
    const char *args = "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=5000 "
                       "--set num_epochs=1 --set target_accuracy=0 --set log_steps=0";
    static char acc[3][64];
    const int tbs[3] = {1000, 4096, 65536};
    for (int i = 0; i < 3; i++) {
        int rc = xl(g_out, sizeof g_out, "%s --set test_batch_size=%d --set output_dir=%s/r%d", args, tbs[i], d, tbs[i]);
        CHECK_MSG(rc == 0, "test_batch_size=%d: exit %d: %s", tbs[i], rc, g_out);
        const char *a = strstr(g_out, "[xla:0] Accuracy=");
        CHECK_MSG(a != NULL, "no accuracy line: %s", g_out);
        if (a) snprintf(acc[i], sizeof acc[i], "%.*s", (int)strcspn(a, "\n"), a);
    }
    CHECK_MSG(!strcmp(acc[0], acc[2]) && !strcmp(acc[1], acc[2]), "'%s' / '%s' / '%s'", acc[0], acc[1], acc[2]);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s %s/r4096/predictions.png %s/r65536/predictions.png", d, d);
    CHECK_MSG(test_run(cmd, NULL, 0) != 0, "the grid of test_batch_size=65536 shows a 4096-sample tail: a cap is back");
    const char *cfg = test_write_file("big.yaml", "dataset: synthetic\ntest_batch_size: 65537\n");
    int rc = xl(g_out, sizeof g_out, "--config %s --dry-run", cfg);
    CHECK_EQ(rc, 2);
    CHECK_STR_CONTAINS(g_out, "big.yaml:2:18: test_batch_size: '65537' is out of range");
}
