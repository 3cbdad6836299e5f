/* test_folder_cli.c — `dataset: folder` through the binary, as a user runs
 * it: a folder of PNG and JPEG files the test writes, trained on two
 * forked workers to a target accuracy, with class names in results.json,
 * the measured normalization in config.yaml and the checkpoint, a reused
 * cache on the second run, and the broken-file paths (exit 3 naming the
 * file; on_bad_image: skip with the count in results.json). */
#include <dirent.h>
#include <limits.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_files.h"
#include "test.h"

static char out[1 << 16];

static int run(const char *args) {
    char cmd[8192], bin[PATH_MAX];
    if (access(test_bin(), X_OK) != 0 || !realpath(test_bin(), bin)) test_skip("the xlatrain binary is not built (make builds it first)");
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", test_tmpdir(), bin, args); /* in the scratch dir: relative paths as a user writes them */
    return test_run(cmd, out, sizeof out);
}

static const char *at(const char *rel) {
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), rel);
    return p;
}

/* Class "bright" has a light square on dark, "dark" a dark square on light;
 * position and size vary, so it is learnable but not one pixel's job. Every
 * third file is a JPEG, every fifth 12x12 (resized to 8x8). */
static void write_split(const char *root, int per_class, unsigned seed) {
    mkdir(at(root), 0755);
    for (int k = 0; k < 2; k++) {
        char dir[128], rel[160];
        snprintf(dir, sizeof dir, "%s/%s", root, k ? "dark" : "bright");
        mkdir(at(dir), 0755);
        for (int i = 0; i < per_class; i++) {
            unsigned r = seed * 7919u + (unsigned)(k * 1000 + i) * 2654435761u;
            int side = i % 5 == 4 ? 12 : 8, s0 = (int)(r % 3), len = side / 2 + (int)((r >> 8) % 2);
            uint8_t px[12 * 12];
            for (int y = 0; y < side; y++)
                for (int x = 0; x < side; x++) {
                    int in = y >= s0 && y < s0 + len && x >= s0 && x < s0 + len;
                    px[y * side + x] = (uint8_t)((in ^ k) ? 200 + (r >> 12) % 40 : 20 + (r >> 16) % 40);
                }
            snprintf(rel, sizeof rel, "%s/%03d.%s", dir, i, i % 3 ? "png" : "jpg");
            if (i % 3) CHECK_EQ(timg_png_raw(at(rel), side, side, PNG_COLOR_TYPE_GRAY, 8, px, (size_t)side, NULL, 0, NULL, 0), 0);
            else CHECK_EQ(timg_jpeg(at(rel), px, side, side, 1, 95), 0);
        }
    }
}

static void write_config(const char *name, const char *extra) {
    char text[2048];
    snprintf(text, sizeof text,
             "dataset: folder\ntrain_dir: train\ntest_dir: test\nresize: [8, 8]\nnum_epochs: 4\nnum_cores: 2\n"
             "num_workers: 2\nbatch_size: 8\nlearning_rate: 0.05\nmomentum: 0.9\nlog_steps: 0\nseed: 3\n%s"
             "model:\n  input: [1, 8, 8]\n  layers: [flatten, {linear: {out: 16}}, relu, {linear: {out: 2}}, log_softmax]\n",
             extra);
    test_write_file(name, text);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) n += de->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

TEST(folder_cli_trains_on_two_workers_and_reuses_the_cache) {
    write_split("train", 60, 1);
    write_split("test", 20, 2);
    write_config("f.yaml", "target_accuracy: 90\n");
    int rc = run("--config f.yaml --set output_dir=runs/a");
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    CHECK_STR_CONTAINS(out, "decoding train_dir of train into the image cache: 120/120");
    CHECK_STR_CONTAINS(out, "decoding test_dir of test into the image cache: 40/40");
    CHECK_STR_CONTAINS(out, "(120 train / 40 test samples), 2 cores");
    CHECK_EQ(count_entries(at("runs/folder-cache")), 2); /* beside the output */
    size_t n;
    char *res = (char *)timg_read(at("runs/a/results.json"), &n);
    CHECK(res != NULL);
    res = realloc(res, n + 1), res[n] = 0;
    CHECK_STR_CONTAINS(res, "\"folder\":{\"classes\":[\"bright\",\"dark\"],\"train_images\":120,\"test_images\":40,\"skipped_images\":0");
    CHECK_STR_CONTAINS(res, "{\"class\":\"bright\"");
    CHECK_STR_CONTAINS(res, "\"normalize_measured\":true");
    free(res);
    char *cfg = (char *)timg_read(at("runs/a/config.yaml"), &n);
    cfg = realloc(cfg, n + 1), cfg[n] = 0;
    CHECK_STR_CONTAINS(cfg, "# normalize auto, measured on the training split (120 images): mean [0.");
    free(cfg);
    /* the checkpoint carries the numbers too */
    char *ck = (char *)timg_read(at("runs/a/checkpoint-epoch004.safetensors"), &n);
    CHECK(ck != NULL && memmem(ck, n, "xlatrain.normalize.mean", 23) != NULL);
    free(ck);
    /* the second run maps the cache: no decoding line; it crops at random
     * (the cache holds the images, not the crops) and says so in results.json */
    rc = run("--config f.yaml --set output_dir=runs/b --set num_epochs=1 --set target_accuracy=0 "
             "--set random_resized_crop.scale=[0.5,1] --set random_flip=true");
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    CHECK(strstr(out, "decoding") == NULL);
    CHECK_EQ(count_entries(at("runs/folder-cache")), 2);
    res = (char *)timg_read(at("runs/b/results.json"), &n);
    CHECK(res != NULL);
    res = realloc(res, n + 1), res[n] = 0;
    CHECK_STR_CONTAINS(res, "\"random_flip\":true,\"random_resized_crop\":{\"scale\":[0.5,1],\"ratio\":[0.75,1.33333");
    free(res);
    cfg = (char *)timg_read(at("runs/b/config.yaml"), &n);
    cfg = realloc(cfg, n + 1), cfg[n] = 0;
    CHECK_STR_CONTAINS(cfg, "random_resized_crop:\n  scale: [0.5, 1]\n");
    free(cfg);
}

TEST(folder_cli_bad_files_stop_or_are_skipped_and_counted) {
    write_split("train", 10, 1);
    write_split("test", 4, 2);
    CHECK_EQ(timg_write(at("train/dark/readme.txt"), "not an image\n", 13), 0);
    size_t n;
    uint8_t *png = timg_read(at("train/bright/001.png"), &n);
    CHECK_EQ(timg_write(at("train/bright/cut.png"), png, n / 2), 0);
    free(png);
    write_config("f.yaml", "");
    CHECK_EQ(run("--config f.yaml --set output_dir=runs/a --set num_epochs=1"), 3);
    CHECK_STR_CONTAINS(out, "xlatrain: ");
    CHECK_STR_CONTAINS(out, "train/bright/cut.png: corrupt PNG");
    CHECK_STR_CONTAINS(out, "set on_bad_image: skip");
    int rc = run("--config f.yaml --set output_dir=runs/b --set num_epochs=1 --set on_bad_image=skip");
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    CHECK_STR_CONTAINS(out, "warning: ");
    CHECK_STR_CONTAINS(out, "train/dark/readme.txt: not a PNG or JPEG image");
    char *res = (char *)timg_read(at("runs/b/results.json"), &n);
    res = realloc(res, n + 1), res[n] = 0;
    CHECK_STR_CONTAINS(res, "\"train_images\":20,\"test_images\":8,\"skipped_images\":2");
    free(res);
    /* a model with the wrong number of outputs: told the class count */
    CHECK_EQ(timg_write(at("train/dark/readme.txt"), "", 0) + unlink(at("train/dark/readme.txt")) + unlink(at("train/bright/cut.png")), 0);
    test_write_file("g.yaml", "dataset: folder\ntrain_dir: train\nval_fraction: 0.25\nnum_cores: 1\nmodel:\n  input: [1, 8, 8]\n"
                              "  layers: [flatten, {linear: {out: 3}}, log_softmax]\nresize: [8, 8]\n");
    CHECK_EQ(run("--config g.yaml --set output_dir=runs/c"), 2);
    CHECK_STR_CONTAINS(out, "the model outputs 3 scores but train has 2 class folders; give the last linear layer out: 2");
    /* without resize, a 12x12 file is named with both sizes */
    test_write_file("h.yaml", "dataset: folder\ntrain_dir: train\nval_fraction: 0.25\nnum_cores: 1\nmodel:\n  input: [1, 8, 8]\n"
                              "  layers: [flatten, {linear: {out: 2}}, log_softmax]\n");
    CHECK_EQ(run("--config h.yaml --set output_dir=runs/d"), 3);
    /* (which 12x12 file is named depends on which decoding thread meets one first) */
    CHECK_STR_CONTAINS(out, ": 12x12 pixels (h x w) but the model's input is 8x8; set resize: [8, 8]");
}

TEST(folder_cli_config_errors) {
    test_write_file("a.yaml", "dataset: folder\nmodel:\n  input: [1, 8, 8]\n  layers: [flatten, {linear: {out: 2}}, log_softmax]\n");
    CHECK_EQ(run("--config a.yaml --dry-run"), 2);
    CHECK_STR_CONTAINS(out, "dataset: folder needs train_dir");
    CHECK_EQ(run("--config a.yaml --set train_dir=x --dry-run"), 2);
    CHECK_STR_CONTAINS(out, "set test_dir (the same class subfolders), or val_fraction");
    CHECK_EQ(run("--config a.yaml --set train_dir=x --set val_fraction=0.2 --set resize=[9,8] --dry-run"), 2);
    CHECK_STR_CONTAINS(out, "resize is [9, 8] but the model's input is 8 x 8; set resize: [8, 8]");
    CHECK_EQ(run("--config a.yaml --set train_dir=x --set val_fraction=0.2 --set on_bad_image=ignore --dry-run"), 2);
    CHECK_STR_CONTAINS(out, "expected one of error, skip");
    /* random_resized_crop's values: each a clear exit 2 naming the key */
    static const char *const bad_crop[][2] = {
        {"random_resized_crop.scale=[0.9,0.3]", "random_resized_crop.scale is [0.9, 0.3] but a must not exceed b; give the smaller share first"},
        {"random_resized_crop.scale=[0,1]", "random_resized_crop.scale: '0' is out of range; it must be in (0, 1]"},
        {"random_resized_crop.ratio=[1.5,0.5]", "random_resized_crop.ratio is [1.5, 0.5] but r0 must not exceed r1"},
        {"random_resized_crop.scale=[0.5,1] --set random_crop_padding=2", "random_crop_padding 2 and random_resized_crop both crop each training image"},
    };
    for (size_t i = 0; i < sizeof bad_crop / sizeof bad_crop[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "--config a.yaml --set train_dir=x --set val_fraction=0.2 --set %s --dry-run", bad_crop[i][0]);
        CHECK_EQ(run(args), 2);
        CHECK_STR_CONTAINS(out, bad_crop[i][1]);
    }
    CHECK_EQ(run("--config a.yaml --set train_dir=x --set val_fraction=0.2 --dry-run"), 0);
    CHECK_STR_CONTAINS(out, "resize: [0, 0]\n");
    CHECK_STR_CONTAINS(out, "max_image_pixels: 89478485\n");
    CHECK_EQ(run("--config a.yaml --set train_dir=nowhere --set val_fraction=0.2 --set output_dir=runs/x"), 3);
    CHECK_STR_CONTAINS(out, "nowhere: No such file or directory (the value of train_dir)");
}
