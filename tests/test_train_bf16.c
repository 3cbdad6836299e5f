/* test_train_bf16.c — bf16 mixed precision through the real binary: chosen by
 * the precision key or XLA_USE_BF16=1 (the config wins, and the log says
 * so), named on the log's first line and in results.json, trains to the same
 * bar as fp32, and its checkpoints (always fp32) resume under the other
 * precision. Not here: kernels or engine (test_kernels_bf16.c,
 * test_engine_bf16.c). */
#include <stdarg.h>
#include <string.h>

#include "io/safetensors.h"
#include "test.h"

#define SMALL "--config configs/smoke.yaml --set synthetic_train_size=1024 --set synthetic_test_size=256 --set log_steps=4 " \
              "--set target_accuracy=0"

static char g_out[1 << 16];

/* env is prefixed to the command ("XLA_USE_BF16=1" or ""). */
static int xl(const char *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int xl(const char *env, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "env -u XLA_USE_BF16 %s %s %s", env, test_bin(), args);
    return test_run(cmd, g_out, sizeof g_out);
}

TEST(train_bf16_chosen_by_config_or_xla_use_bf16_and_reported) {
    const char *d = test_tmpdir();
    /* the whole smoke config: its target_accuracy (95%, fp32's bar in test_train.c) must be met */
    int rc = xl("XLA_USE_BF16=1", "--config configs/smoke.yaml --set output_dir=%s/env", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "batch 128 per core, precision bf16 (XLA_USE_BF16=1), output in");
    CHECK_STR_CONTAINS(g_out, "\"precision\":\"bf16\"");

    rc = xl("XLA_USE_BF16=1", SMALL " --set precision=fp32 --set num_epochs=1 --set output_dir=%s/set", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "precision fp32 (--set, XLA_USE_BF16 ignored)");
    CHECK_STR_CONTAINS(g_out, "\"precision\":\"fp32\"");

    const char *cfg = test_write_file("bf16.yaml", "dataset: synthetic\nmodel: models/mlp.yaml\nprecision: bf16\nnum_epochs: 1\n"
                                                   "num_cores: 1\nsynthetic_train_size: 256\nsynthetic_test_size: 64\n");
    rc = xl("XLA_USE_BF16=0", "--config %s --set output_dir=%s/file", cfg, d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "precision bf16 (config, XLA_USE_BF16 ignored)");

    rc = xl("", SMALL " --set num_epochs=1 --set output_dir=%s/default", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "precision fp32 (default)");
    CHECK_STR_CONTAINS(g_out, "\"precision\":\"fp32\"");
}

TEST(train_bf16_bad_values_are_usage_errors) {
    const char *d = test_tmpdir();
    CHECK_EQ(xl("XLA_USE_BF16=yes", SMALL " --set output_dir=%s/a", d), 2);
    CHECK_STR_CONTAINS(g_out, "XLA_USE_BF16=yes: expected 1 (bf16) or 0 (fp32)");
    CHECK_EQ(xl("", SMALL " --set precision=fp16 --set output_dir=%s/b", d), 2);
    CHECK_STR_CONTAINS(g_out, "precision");
    CHECK_STR_CONTAINS(g_out, "bf16");
    /* the kernels' path override: ref and auto, nothing silently ignored */
    CHECK_EQ(xl("XLATRAIN_BF16_PATH=direct", SMALL " --set precision=bf16 --set output_dir=%s/c", d), 2);
    CHECK_STR_CONTAINS(g_out, "XLATRAIN_BF16_PATH=direct: expected ref (the portable bf16 kernels) or auto");
    int rc = xl("XLATRAIN_BF16_PATH=ref", SMALL " --set precision=bf16 --set num_epochs=1 --set output_dir=%s/d", d);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
}

/* the names, dtypes and shapes of two checkpoints' tensors agree */
static int same_layout(const char *const path[2]) {
    xt_st_file f[2];
    int opened = 0, ok = 1;
    for (; opened < 2 && ok; opened++) {
        xt_err e = {0};
        if (xt_st_read(path[opened], &f[opened], &e)) {
            fprintf(stderr, "    %s\n", e.msg);
            ok = 0;
            break;
        }
    }
    ok = ok && f[0].ntensors == f[1].ntensors && f[0].ntensors > 0;
    for (int i = 0; ok && i < f[0].ntensors; i++) {
        const xt_st_tensor *t = xt_st_find(&f[1], f[0].tensors[i].name);
        ok = t && t->dtype == f[0].tensors[i].dtype && t->nbytes == f[0].tensors[i].nbytes;
    }
    while (opened-- > 0) xt_st_close(&f[opened]);
    return ok;
}

/* A checkpoint is fp32 whatever the precision: one written under bf16
 * resumes under fp32 and vice versa (a change of trajectory, so
 * --allow-config-change, recorded in results.json). */
TEST(train_bf16_checkpoints_resume_under_the_other_precision) {
    const char *d = test_tmpdir();
    const char *from[2] = {"bf16", "fp32"}, *to[2] = {"fp32", "bf16"};
    for (int k = 0; k < 2; k++) {
        int rc = xl("", SMALL " --set num_epochs=1 --set precision=%s --set output_dir=%s/%s", from[k], d, from[k]);
        CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    }
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/bf16/checkpoint-epoch001.safetensors", d);
    snprintf(b, sizeof b, "%s/fp32/checkpoint-epoch001.safetensors", d);
    CHECK(same_layout((const char *const[2]){a, b}));
    for (int k = 0; k < 2; k++) {
        int rc = xl("", SMALL " --set num_epochs=2 --set precision=%s --set output_dir=%s/%s --resume latest "
                    "--allow-config-change", to[k], d, from[k]);
        CHECK_MSG(rc == 0, "%s -> %s: exit %d: %s", from[k], to[k], rc, g_out);
        CHECK_STR_CONTAINS(g_out, "Finished training epoch 2");
        char want[64];
        snprintf(want, sizeof want, "\"precision\":\"%s\"", to[k]);
        CHECK_STR_CONTAINS(g_out, want);
        CHECK_STR_CONTAINS(g_out, "\"config_changed_on_resume\":true");
    }
}
