/* test_resnet_run.c — a residual network through the xlatrain binary, as a
 * user runs it: models/resnet8_mnist.yaml trains on the synthetic digits
 * (the train step compiled once, the block structure in --dry-run's
 * summary), its checkpoint exports to a .pt that Debian's PyTorch loads into
 * the same network with load_state_dict(strict=True) (tests/golden/
 * resnet_util.py) and predicts every image as xlatrain --predict does. */
#include <stdlib.h>
#include <string.h>

#include "synth_idx.h"
#include "test.h"

static char g_out[1 << 17];

#define CFG                                                                                      \
    "dataset: synthetic\nsynthetic_train_size: 512\nsynthetic_test_size: 256\nnum_epochs: 2\n"   \
    "batch_size: 64\nlearning_rate: 0.05\nmomentum: 0.9\nlog_steps: 0\ntarget_accuracy: 0\n"     \
    "normalize: {mean: 0.1307, std: 0.3081}\nmodel: resnet8_mnist\nmetrics_debug: true\n"

TEST(resnet8_dry_run_shows_the_blocks) {
    const char *cfg = test_write_file("r8.yaml", CFG);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --config %s --dry-run 2>&1 >/dev/null", test_bin(), cfg);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "Model: ");
    CHECK_STR_CONTAINS(g_out, "\n  0             block(+shortcut, relu)  [64, 7, 7]     57,728\n");
    CHECK_STR_CONTAINS(g_out, "\n    shortcut.1  batchnorm2d             [64, 7, 7]        128\n");
    CHECK_STR_CONTAINS(g_out, "Total params: 77,754\n");
}

TEST(resnet8_trains_compiles_once_and_loads_in_pytorch) {
    const char *cfg = test_write_file("r8.yaml", CFG), *d = test_tmpdir();
    char cmd[4096], idx[1024];
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run", test_bin(), cfg, d);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "training failed (%d): %s", rc, g_out);
    /* after each epoch: one training-step graph and one evaluation graph, ever */
    CHECK_STR_CONTAINS(g_out, "Counter: UncachedCompile\n  Value: 2\n");
    CHECK(strstr(g_out, "Counter: UncachedCompile\n  Value: 3") == NULL);
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/w.pt", test_bin(), d, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    /* 9 conv weights (stem, 2 per block, 2 shortcuts) + linear weight and bias + 9 BN x (weight, bias,
     * running_mean, running_var, num_batches_tracked) */
    CHECK_STR_CONTAINS(g_out, "exported 56 tensors");
    snprintf(idx, sizeof idx, "%s/img.idx", d);
    test_write_synth_idx(idx, 200);
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run --predict %s --output %s/p.csv", test_bin(), cfg, d,
             idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    if (test_run("/usr/bin/python3 -c 'import torch' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-torch is not installed: torch.load of the export not checked (.ci/run installs it)");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/golden/check_export.py --model resnet8_mnist %s/w.pt %s %s/p.csv",
             d, idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "PyTorch disagrees: %s", g_out);
    CHECK_STR_CONTAINS(g_out, "RESULT n=200 rows=200 agree=200");
}
