/* test_folder_mnist.c — issue #58's "done means" on real digits: the MNIST
 * test set of ../shared/data/mnist-t10k written out as class folders (PNG,
 * then JPEG quality 95), split as configs/real_t10k.yaml splits the IDX
 * files, must decode to the IDX bytes (PNG) and train, with that config's
 * settings and `dataset: folder`, to the IDX run's accuracy: within 0.3
 * points for PNG, 1 point for JPEG.
 *
 * Not here: the folder dataset's own unit tests (test_data_folder.c) or its
 * command-line behaviour on small made-up images (test_folder_cli.c). Skips,
 * saying why, when the shared data is absent, as in a fresh clone.
 */
#include <limits.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config/config.h"
#include "data/folder_dataset.h"
#include "data/idx.h"
#include "image_files.h"
#include "test.h"

#define CONFIG "configs/real_t10k.yaml"

static char g_out[1 << 16];

/* The shared IDX file, or NULL when it is not there. Only the config's own
 * ../shared (no XLATRAIN_SHARED): the IDX run reads the files it names. */
static const char *t10k_file(const char *name) {
    static char path[2][1100];
    static int next;
    char *p = path[next++ % 2];
    snprintf(p, 1100, "../shared/data/mnist-t10k/%s", name);
    return access(p, R_OK) == 0 ? p : NULL;
}

typedef struct {
    xt_idx img, lab;
    long train[2], test[2];  /* real_t10k.yaml's train_subset and test_subset */
} t10k;

static void t10k_load(t10k *t) {
    const char *ip = t10k_file("t10k-images-idx3-ubyte.gz"), *lp = t10k_file("t10k-labels-idx1-ubyte.gz");
    if (!ip || !lp) test_skip("no ../shared/data/mnist-t10k (a fresh clone has none): the real-MNIST folder test is skipped");
    xt_err e = {0};
    CHECK_MSG(xt_idx_read_images(ip, 28, 28, &t->img, &e) == 0, "%s", e.msg);
    CHECK_MSG(xt_idx_read_labels(lp, 10, &t->lab, &e) == 0, "%s", e.msg);
    CHECK_EQ(t->img.n, 10000);
    xt_config c;
    CHECK_MSG(xt_config_load(&c, CONFIG, NULL, 0, &e) == 0, "%s", e.msg);
    t->train[0] = c.train_subset[0], t->train[1] = c.train_subset[1];
    t->test[0] = c.test_subset[0], t->test[1] = c.test_subset[1];
    xt_config_free(&c);
    /* the split the issue names; if the config changes, this test follows it */
    CHECK_EQ(t->train[1] - t->train[0], 8000);
    CHECK_EQ(t->test[1] - t->test[0], 2000);
}

static void t10k_free(t10k *t) {
    xt_idx_free(&t->img);
    xt_idx_free(&t->lab);
}

/* <tmp>/<fmt>/<split>/<label>/<index>.<fmt> for images [from, to): the
 * zero-padded IDX index as the name keeps the IDX order within a class
 * (classes and files are taken in name order). */
static void write_split(const t10k *t, const char *fmt, const char *split, long from, long to) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), fmt);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", test_tmpdir(), fmt, split);
    CHECK_EQ(mkdir(path, 0755), 0);
    for (int k = 0; k < 10; k++) {
        snprintf(path, sizeof path, "%s/%s/%s/%d", test_tmpdir(), fmt, split, k);
        CHECK_EQ(mkdir(path, 0755), 0);
    }
    int png = !strcmp(fmt, "png");
    for (long i = from; i < to; i++) {
        const uint8_t *px = t->img.data + (size_t)i * 784;
        snprintf(path, sizeof path, "%s/%s/%s/%d/%05ld.%s", test_tmpdir(), fmt, split, t->lab.data[i], i, fmt);
        int rc = png ? timg_png_raw(path, 28, 28, PNG_COLOR_TYPE_GRAY, 8, px, 28, NULL, 0, NULL, 0)
                     : timg_jpeg(path, px, 28, 28, 1, 95);
        CHECK_MSG(rc == 0, "writing %s", path);
    }
}

static void write_folders(const t10k *t, const char *fmt) {
    write_split(t, fmt, "train", t->train[0], t->train[1]);
    write_split(t, fmt, "test", t->test[0], t->test[1]);
}

/* The folder dataset's split (scan, decode, cache) holds exactly the IDX
 * images and labels [from, to), in class order and IDX order within a class. */
static void check_split_is_the_idx(const t10k *t, const char *dir, int test_split, long from, long to) {
    char cache[PATH_MAX];
    snprintf(cache, sizeof cache, "%s/cache", test_tmpdir());
    long all[2] = {0, -1};
    char names[64][32];
    xt_folder_opts o = {.train_dir = dir, .test_dir = dir, .channels = 1, .rows = 28, .cols = 28, .cache_dir = cache,
                        .max_image_pixels = 89478485LL, .threads = 2, .subset = all};
    xt_folder_split_data d = {.class_names = names};
    xt_err e = {0};
    CHECK_MSG(xt_folder_split_open(&d, &o, test_split, &e) == 0, "%s", e.msg);
    CHECK_EQ(d.n, to - from);
    CHECK_EQ(d.num_classes, 10);
    long j = 0, differ = 0;
    for (int k = 0; k < 10; k++)
        for (long i = from; i < to; i++) {
            if (t->lab.data[i] != k) continue;
            if (j >= d.n) break;
            differ += d.labels[j] != k || memcmp(d.images + (size_t)j * 784, t->img.data + (size_t)i * 784, 784) != 0;
            j++;
        }
    CHECK_EQ(j, d.n);
    CHECK_MSG(differ == 0, "%ld of %ld decoded images or labels differ from the IDX bytes", differ, (long)d.n);
    xt_folder_split_close(&d);
}

/* Train with real_t10k.yaml; `data` replaces its data keys. Returns
 * results.json's final_accuracy (and checks the run said ok). */
static double train(const char *name, const char *data) {
    /* under the sanitizers a step is 10-40x slower: fewer epochs for both runs
     * of a comparison keep it a comparison */
    const char *epochs = test_sanitized() ? " --set num_epochs=3" : "";
    int rc = test_xl(g_out, sizeof g_out, "$XL --config " CONFIG " %s%s --set output_dir=%s/%s --set log_steps=0 2>&1",
                     data, epochs, test_tmpdir(), name);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", name, rc, g_out);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/results.json", test_tmpdir(), name);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    CHECK_MSG(j != NULL, "%s: %s", path, err.text);
    double acc = j ? json_number_value(json_object_get(j, "final_accuracy")) : -1;
    if (j) CHECK_STR_EQ(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);
    printf("    %s: final accuracy %.2f%%\n", name, acc);
    return acc;
}

static double train_folder(const char *name, const char *fmt) {
    char data[1024];
    /* everything else (model, epochs, batch, optimizer, seed, cores) is the config's */
    snprintf(data, sizeof data,
             "--set dataset=folder --set train_dir=%s/%s/train --set test_dir=%s/%s/test --set datadir= "
             "--set train_images= --set train_labels= --set test_images= --set test_labels= "
             "--set train_subset=[0,-1] --set test_subset=[0,-1] --set cache_dir=%s/cache",
             test_tmpdir(), fmt, test_tmpdir(), fmt, test_tmpdir());
    return train(name, data);
}

TEST(folder_mnist_png_and_jpeg_folders_train_as_the_idx_files) {
    t10k t;
    t10k_load(&t);
    write_folders(&t, "png");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/png/train", test_tmpdir());
    check_split_is_the_idx(&t, dir, 0, t.train[0], t.train[1]);
    snprintf(dir, sizeof dir, "%s/png/test", test_tmpdir());
    check_split_is_the_idx(&t, dir, 1, t.test[0], t.test[1]);

    double idx = train("idx", "");
    double png = train_folder("png", "png");
    CHECK_NEAR(png, idx, 0.3);
    write_folders(&t, "jpg");
    double jpg = train_folder("jpg", "jpg");
    CHECK_NEAR(jpg, idx, 1.0);
    t10k_free(&t);
}
