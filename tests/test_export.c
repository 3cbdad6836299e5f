/* test_export.c — xlatrain --export: the weights alone, in safetensors and
 * in PyTorch's own format, checked against the checkpoint and, when Debian's
 * PyTorch is installed, loaded by torch.load + load_state_dict(strict=True)
 * with the same predictions as xlatrain --predict on every image. */
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "synth_idx.h"
#include "test.h"

static char g_out[1 << 16];

#define CFG                                                                                      \
    "dataset: synthetic\nsynthetic_train_size: 1024\nsynthetic_test_size: 256\nnum_epochs: 1\n"  \
    "batch_size: 64\nlearning_rate: 0.05\nmomentum: 0.5\nlog_steps: 0\ntarget_accuracy: 0\n"     \
    "normalize: {mean: 0.1307, std: 0.3081}\nmodel: models/fashion_cnn.yaml\n"

/* Train one epoch of the seed CNN into <tmp>/run; returns the config path. */
static const char *train_run(void) {
    const char *cfg = test_write_file("export.yaml", CFG);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run", test_bin(), cfg, test_tmpdir());
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "training failed (%d): %s", rc, g_out);
    return cfg;
}

TEST(export_writes_the_state_dict_alone_as_safetensors) {
    train_run();
    const char *d = test_tmpdir();
    char cmd[2048], path[1024];
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/w.safetensors", test_bin(), d, d);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "exported 18 tensors");
    xt_err e = {0};
    xt_st_file w, ck;
    snprintf(path, sizeof path, "%s/w.safetensors", d);
    CHECK_MSG(xt_st_read(path, &w, &e) == 0, "%s", e.msg);
    snprintf(path, sizeof path, "%s/run/checkpoint-epoch001.safetensors", d);
    CHECK_MSG(xt_st_read(path, &ck, &e) == 0, "%s", e.msg);
    /* the seed CNN's state_dict: 4 layers x (weight, bias) + 2 BN x (weight, bias, mean, var, count) */
    CHECK_EQ(w.ntensors, 18);
    for (int i = 0; i < w.ntensors; i++) {
        const xt_st_tensor *t = &w.tensors[i], *c = xt_st_find(&ck, t->name);
        CHECK_MSG(strncmp(t->name, "optim.", 6) != 0, "optimizer state %s exported", t->name);
        CHECK_MSG(c && c->nbytes == t->nbytes && !memcmp(c->data, t->data, t->nbytes), "%s differs from the checkpoint", t->name);
    }
    CHECK(xt_st_find(&w, "bn1.num_batches_tracked") != NULL);
    xt_st_close(&w);
    xt_st_close(&ck);
}

TEST(export_needs_output_and_no_config) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --export x.safetensors", test_bin());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 2);
    CHECK_STR_CONTAINS(g_out, "--export needs --output");
    snprintf(cmd, sizeof cmd, "%s --export x.safetensors --output w.pt --config c.yaml", test_bin());
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 2);
    snprintf(cmd, sizeof cmd, "%s --export %s/missing.safetensors --output %s/w.pt", test_bin(), test_tmpdir(), test_tmpdir());
    CHECK(test_run(cmd, g_out, sizeof g_out) != 0);
    CHECK_STR_CONTAINS(g_out, "missing.safetensors");
}

TEST(export_pt_loads_in_pytorch_with_the_same_predictions) {
    const char *cfg = train_run();
    const char *d = test_tmpdir();
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/w.pt", test_bin(), d, d);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    /* the archive torch.save writes: data.pkl, one record per tensor, version */
    snprintf(cmd, sizeof cmd, "head -c 4 %s/w.pt | od -An -c", d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "P   K 003 004");
    char idx[1024];
    snprintf(idx, sizeof idx, "%s/img.idx", d);
    test_write_synth_idx(idx, 300);
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run --predict %s --output %s/p.csv", test_bin(), cfg, d, idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    if (test_run("/usr/bin/python3 -c 'import torch' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-torch is not installed: torch.load of the export not checked (.ci/run installs it)");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/golden/check_export.py %s/w.pt %s %s/p.csv", d, idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "PyTorch disagrees: %s", g_out);
    CHECK_STR_CONTAINS(g_out, "RESULT n=300 rows=300 agree=300");
}
