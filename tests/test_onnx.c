/* test_onnx.c — xlatrain --export ... --output model.onnx: the seed CNN,
 * wide_cnn, lenet5 and resnet8_mnist, each trained briefly, exported and
 * checked by an independent reader and runtime (tests/onnx/check_onnx.py:
 * Debian's python3-onnx checker and shape inference, then onnxruntime-node
 * run by node), which must agree with xlatrain --predict on every image's
 * class and within 1e-4 on its log-probabilities. The images are the real
 * MNIST test set's first 300 when ../shared/data/mnist-t10k is there, else
 * synthetic digits. Skips, with the reason, only where python3-onnx, node
 * or onnxruntime-node is missing (.ci/run installs all three). */
#include <string.h>
#include <zlib.h>

#include "synth_idx.h"
#include "test.h"

static char g_out[1 << 16];

#define REAL_IMAGES "../shared/data/mnist-t10k/t10k-images-idx3-ubyte.gz"
#define ORT_DIR "build/onnxrt/node_modules"
#define NIMAGES 300

/* The first n images of the real MNIST test set as an IDX file; 0 when the
 * file is not there (or short). */
static int write_real_idx(const char *path, int n) {
    gzFile in = gzopen(REAL_IMAGES, "rb");
    if (!in) return 0;
    static unsigned char buf[16 + NIMAGES * 784];
    size_t want = 16 + (size_t)n * 784;
    int got = gzread(in, buf, (unsigned)want);
    gzclose(in);
    if (got != (int)want || buf[2] != 8 || buf[3] != 3) return 0;
    buf[4] = (unsigned char)(n >> 24), buf[5] = (unsigned char)(n >> 16), buf[6] = (unsigned char)(n >> 8), buf[7] = (unsigned char)n;
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return 0;
    CHECK(fwrite(buf, 1, want, f) == want);
    fclose(f);
    return 1;
}

/* Train `model` for an epoch, predict NIMAGES images, export it to ONNX
 * and to safetensors, and have check_onnx.py compare. */
static void round_trip(const char *model) {
    const char *d = test_tmpdir();
    char cfgtext[1024], cmd[4096], idx[1024];
    snprintf(cfgtext, sizeof cfgtext,
             "dataset: synthetic\nsynthetic_train_size: %d\nsynthetic_test_size: 64\nnum_epochs: 1\nnum_cores: 1\n"
             "batch_size: 32\nlearning_rate: 0.02\nmomentum: 0.5\nlog_steps: 0\ntarget_accuracy: 0\nlogdir: \"\"\n"
             "model: models/%s.yaml\n", test_sanitized() ? 64 : 256, model);
    const char *cfg = test_write_file("onnx.yaml", cfgtext);
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run", test_bin(), cfg, d);
    int rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "training %s failed (%d): %s", model, rc, g_out);
    snprintf(idx, sizeof idx, "%s/images-idx3-ubyte", d);
    int real = write_real_idx(idx, NIMAGES);
    if (!real) test_write_synth_idx(idx, NIMAGES);
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run --predict %s --output %s/p.csv", test_bin(), cfg, d, idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/model.onnx && %s --export %s/run --output %s/w.safetensors",
             test_bin(), d, d, test_bin(), d, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s", g_out);
    CHECK_STR_CONTAINS(g_out, "ONNX opset 17");
    if (test_run("/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-onnx is not installed: the ONNX file is not checked (.ci/run installs it)");
    if (test_run("node --version >/dev/null 2>&1", NULL, 0) != 0)
        test_skip("node is not installed: the ONNX file is not run in onnxruntime (.ci/run installs nodejs)");
    if (test_run("test -f " ORT_DIR "/onnxruntime-node/package.json", NULL, 0) != 0)
        test_skip("onnxruntime-node is not installed in build/onnxrt (npm install --ignore-scripts --prefix build/onnxrt "
                  "onnxruntime-node; .ci/run does)");
    snprintf(cmd, sizeof cmd, "ORT_DIR=" ORT_DIR " /usr/bin/python3 tests/onnx/check_onnx.py %s/model.onnx %s/w.safetensors %s %s/p.csv",
             d, d, idx, d);
    rc = test_run(cmd, g_out, sizeof g_out);
    CHECK_MSG(rc == 0, "%s (%s images): %s", model, real ? "real MNIST" : "synthetic", g_out);
    char want[64];
    snprintf(want, sizeof want, "RESULT n=%d rows=%d agree=%d ", NIMAGES, NIMAGES, NIMAGES);
    CHECK_STR_CONTAINS(g_out, want);
    fprintf(stderr, "    %s, %s images: %s", model, real ? "real MNIST" : "synthetic", g_out);
}

TEST(onnx_seed_cnn_runs_in_onnxruntime_as_predict) { round_trip("fashion_cnn"); }
TEST(onnx_wide_cnn_runs_in_onnxruntime_as_predict) { round_trip("wide_cnn"); }
TEST(onnx_lenet5_runs_in_onnxruntime_as_predict) { round_trip("lenet5"); }
TEST(onnx_resnet8_runs_in_onnxruntime_as_predict) { round_trip("resnet8_mnist"); }

TEST(onnx_format_option) {
    const char *d = test_tmpdir();
    char cmd[2048];
    const char *cfg = test_write_file("f.yaml", "dataset: synthetic\nsynthetic_train_size: 64\nsynthetic_test_size: 32\n"
                                                "num_epochs: 1\nnum_cores: 1\nbatch_size: 32\nlog_steps: 0\nlogdir: \"\"\n"
                                                "model: models/fashion_cnn.yaml\n");
    snprintf(cmd, sizeof cmd, "%s --config %s --set output_dir=%s/run", test_bin(), cfg, d);
    CHECK_MSG(test_run(cmd, g_out, sizeof g_out) == 0, "%s", g_out);
    /* --format onnx whatever the name; the ModelProto opens with ir_version (field 1) = 8 */
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/m.bin --format onnx && head -c 2 %s/m.bin | od -An -tx1", test_bin(), d, d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "08 08");
    /* --format pt over a .onnx name: PyTorch's zip */
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/w.onnx --format pt && head -c 2 %s/w.onnx", test_bin(), d, d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    CHECK_STR_CONTAINS(g_out, "PK");
    snprintf(cmd, sizeof cmd, "%s --export %s/run --output %s/m.onnx --format tflite", test_bin(), d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 2);
    CHECK_STR_CONTAINS(g_out, "expected onnx, pt or safetensors");
    snprintf(cmd, sizeof cmd, "%s --config %s --format onnx", test_bin(), cfg);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 2);
    CHECK_STR_CONTAINS(g_out, "--format goes with --export");
    /* a file that is no checkpoint: an error, and no model.onnx left behind */
    snprintf(cmd, sizeof cmd, "%s --export %s --output %s/x.onnx; test ! -e %s/x.onnx", test_bin(), cfg, d, d);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
}
