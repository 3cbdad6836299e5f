/* test_data_idx.c — the IDX reader and dataset loading: good files raw and
 * gzipped, every kind of broken file (each must fail with XT_EDATA and a
 * message naming the file and the problem), file lookup, explicit paths,
 * subsets, and the real MNIST test set when ../shared/data/mnist-t10k exists.
 */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/dataset.h"
#include "data/idx.h"
#include "test.h"

/* ---- building IDX files ---------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* <tmpdir>/<name>, in one of 8 rotating buffers. */
static const char *tmp(const char *name) {
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* Write bytes to <tmpdir>/<name>, gzip-compressed when the name ends in .gz. */
static const char *write_blob(const char *name, const void *data, size_t n) {
    const char *path = tmp(name);
    size_t len = strlen(name);
    if (len > 3 && !strcmp(name + len - 3, ".gz")) {
        gzFile f = gzopen(path, "wb6");
        CHECK(f != NULL);
        const uint8_t *p = data;
        while (n) { /* gzwrite takes an unsigned length */
            unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            CHECK(gzwrite(f, p, chunk) == (int)chunk);
            p += chunk, n -= chunk;
        }
        CHECK(gzclose(f) == Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        CHECK(fwrite(data, 1, n, f) == n);
        fclose(f);
    }
    return path;
}

/* An images file: header for `n` images of rows x cols, then `present` pixel
 * bytes (pixel i = i * 7 % 251) and `extra` trailing bytes. */
static const char *write_images(const char *name, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                                size_t present, size_t extra) {
    size_t hdr = 16, total = hdr + present + extra;
    uint8_t *b = malloc(total);
    put32(b, magic), put32(b + 4, n), put32(b + 8, rows), put32(b + 12, cols);
    for (size_t i = 0; i < present + extra; i++) b[hdr + i] = (uint8_t)(i * 7 % 251);
    const char *p = write_blob(name, b, total);
    free(b);
    return p;
}

static const char *good_images(const char *name, uint32_t n) {
    return write_images(name, XT_IDX_MAGIC_IMAGES, n, 28, 28, (size_t)n * 784, 0);
}

/* A labels file: n labels (label i = i % 10), `present` of them written, or
 * `bad_at` >= 0 holding the value `bad`. */
static const char *write_labels(const char *name, uint32_t magic, uint32_t n, size_t present, size_t extra,
                                long bad_at, int bad) {
    size_t total = 8 + present + extra;
    uint8_t *b = malloc(total);
    put32(b, magic), put32(b + 4, n);
    for (size_t i = 0; i < present + extra; i++) b[8 + i] = (uint8_t)(i % 10);
    if (bad_at >= 0) b[8 + bad_at] = (uint8_t)bad;
    const char *p = write_blob(name, b, total);
    free(b);
    return p;
}

static const char *good_labels(const char *name, uint32_t n) {
    return write_labels(name, XT_IDX_MAGIC_LABELS, n, n, 0, -1, 0);
}

/* Expect reading `path` as images (or labels) to fail with XT_EDATA and a
 * message that starts with the path and contains `what`. */
static void expect_images_error(const char *path, const char *what) {
    xt_idx x;
    xt_err e = {0};
    CHECK_EQ(xt_idx_read_images(path, 28, 28, &x, &e), XT_EDATA);
    CHECK_EQ(e.code, XT_EDATA);
    CHECK(x.data == NULL);
    CHECK_MSG(strncmp(e.msg, path, strlen(path)) == 0, "message does not start with %s: %s", path, e.msg);
    CHECK_STR_CONTAINS(e.msg, what);
    CHECK(strchr(e.msg, '\n') == NULL);
}

static void expect_labels_error(const char *path, const char *what) {
    xt_idx x;
    xt_err e = {0};
    CHECK_EQ(xt_idx_read_labels(path, 10, &x, &e), XT_EDATA);
    CHECK(x.data == NULL);
    CHECK_MSG(strncmp(e.msg, path, strlen(path)) == 0, "message does not start with %s: %s", path, e.msg);
    CHECK_STR_CONTAINS(e.msg, what);
}

/* ---- good files ------------------------------------------------------------- */

TEST(idx_reads_raw_and_gzip_alike) {
    const char *raw = good_images("a-images", 5), *gz = good_images("a-images.gz", 5);
    const char *lraw = good_labels("a-labels", 5), *lgz = good_labels("a-labels.gz", 5);
    xt_idx a, b, la, lb;
    xt_err e = {0};
    CHECK_EQ(xt_idx_read_images(raw, 28, 28, &a, &e), 0);
    CHECK_EQ(xt_idx_read_images(gz, 28, 28, &b, &e), 0);
    CHECK_EQ(a.n, 5);
    CHECK_EQ(a.rows, 28);
    CHECK_EQ(a.cols, 28);
    CHECK_EQ(b.n, 5);
    CHECK(memcmp(a.data, b.data, 5 * 784) == 0);
    CHECK_EQ(a.data[100], 100 * 7 % 251);
    CHECK_EQ(xt_idx_read_labels(lraw, 10, &la, &e), 0);
    CHECK_EQ(xt_idx_read_labels(lgz, 10, &lb, &e), 0);
    CHECK_EQ(la.n, 5);
    CHECK_EQ(la.rows, 0);
    CHECK(memcmp(la.data, lb.data, 5) == 0);
    CHECK_EQ(lb.data[3], 3);
    xt_idx_free(&a), xt_idx_free(&b), xt_idx_free(&la), xt_idx_free(&lb);
    CHECK(a.data == NULL);
}

TEST(idx_any_image_size_when_not_demanded) {
    const char *p = write_images("small-images", XT_IDX_MAGIC_IMAGES, 3, 4, 5, 60, 0);
    xt_idx x;
    xt_err e = {0};
    CHECK_EQ(xt_idx_read_images(p, 0, 0, &x, &e), 0);
    CHECK_EQ(x.rows, 4);
    CHECK_EQ(x.cols, 5);
    xt_idx_free(&x);
    expect_images_error(p, "images are 4x5, expected 28x28");
}

/* ---- broken files: each as raw and as gzip ---------------------------------- */

TEST(idx_rejects_bad_magic) {
    expect_images_error(write_images("m-images", 0x12345678, 2, 28, 28, 2 * 784, 0), "bad magic 0x12345678");
    expect_images_error(write_images("m-images.gz", 0x00000d03, 2, 28, 28, 2 * 784, 0), "bad magic 0x00000d03");
    expect_labels_error(write_labels("m-labels.gz", 0x01000801, 2, 2, 0, -1, 0), "bad magic");
    /* text saved under an IDX name, e.g. an HTML error page from a proxy */
    const char *html = "<html>404 Not Found</html>";
    const char *p = write_blob("html-images", html, strlen(html));
    expect_images_error(p, "not an MNIST-format file");
}

TEST(idx_rejects_wrong_dimension_count) {
    expect_images_error(write_images("d-images", 0x00000802, 2, 28, 28, 2 * 784, 0), "declares 2 dimensions");
    expect_images_error(write_images("d-images.gz", 0x00000804, 2, 28, 28, 2 * 784, 0), "expected 3 for images");
    /* the two files swapped */
    expect_images_error(good_labels("swapped-images.gz", 4), "looks like a labels file");
    expect_labels_error(good_images("swapped-labels.gz", 1), "looks like an images file");
}

TEST(idx_rejects_bad_sizes) {
    expect_images_error(write_images("s-images", XT_IDX_MAGIC_IMAGES, 2, 32, 32, 2 * 1024, 0),
                        "images are 32x32, expected 28x28");
    expect_images_error(write_images("z-images.gz", XT_IDX_MAGIC_IMAGES, 0, 28, 28, 0, 0), "header says 0 images");
    expect_images_error(write_blob("empty-images", "", 0), "empty file");
    expect_images_error(write_blob("short-images.gz", "\0\0\x08\x03\0\0", 6), "truncated header");
}

TEST(idx_truncated_images_say_how_much_is_missing) {
    /* the example from the issue, as a gzip file */
    const char *p = write_images("t10k-images-idx3-ubyte.gz", XT_IDX_MAGIC_IMAGES, 10000, 28, 28, 5000000, 0);
    expect_images_error(p,
                        "truncated: header says 10,000 images of 28x28 (7,840,000 bytes) but only 5,000,000 present");
    p = write_images("t-images", XT_IDX_MAGIC_IMAGES, 3, 28, 28, 2 * 784 + 5, 0);
    expect_images_error(p, "truncated: header says 3 images of 28x28 (2,352 bytes) but only 1,573 present");
}

TEST(idx_truncated_labels) {
    expect_labels_error(write_labels("t-labels", XT_IDX_MAGIC_LABELS, 100, 60, 0, -1, 0),
                        "truncated: header says 100 labels (100 bytes) but only 60 present");
    expect_labels_error(write_labels("t-labels.gz", XT_IDX_MAGIC_LABELS, 10000, 9000, 0, -1, 0),
                        "header says 10,000 labels (10,000 bytes) but only 9,000 present");
}

TEST(idx_rejects_trailing_bytes) {
    expect_images_error(write_images("x-images", XT_IDX_MAGIC_IMAGES, 2, 28, 28, 2 * 784, 16),
                        "16 trailing bytes after the 2 images of 28x28");
    expect_images_error(write_images("x-images.gz", XT_IDX_MAGIC_IMAGES, 2, 28, 28, 2 * 784, 70000),
                        "70,000 trailing bytes");
    expect_labels_error(write_labels("x-labels.gz", XT_IDX_MAGIC_LABELS, 5, 5, 1, -1, 0), "1 trailing bytes");
}

TEST(idx_rejects_out_of_range_label) {
    expect_labels_error(write_labels("r-labels", XT_IDX_MAGIC_LABELS, 20, 20, 0, 7, 10),
                        "label 10 at index 7 is out of range 0..9");
    expect_labels_error(write_labels("r-labels.gz", XT_IDX_MAGIC_LABELS, 2000, 2000, 0, 1234, 255),
                        "label 255 at index 1,234");
}

/* Read a whole file into memory. */
static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    CHECK(fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

TEST(idx_rejects_corrupt_gzip) {
    /* pixels with some entropy so the deflate stream is long enough to damage */
    const char *good = good_images("c-images.gz", 40);
    size_t n;
    uint8_t *b = slurp(good, &n);
    CHECK(n > 200);
    for (size_t i = n / 3; i < n / 3 + 24; i++) b[i] ^= 0x5a;
    expect_images_error(write_blob("c2-images", b, n), "corrupt gzip data (zlib:");
    free(b);

    /* a damaged CRC in the gzip trailer: all the data arrives, then zlib objects */
    b = slurp(good, &n);
    b[n - 6] ^= 0xff;
    expect_images_error(write_blob("crc-images", b, n), "corrupt gzip data");
    free(b);
}

TEST(idx_truncated_gzip_stream) {
    const char *good = good_images("g-images.gz", 40);
    size_t n;
    uint8_t *b = slurp(good, &n);
    /* cut the compressed file in half: a download that stopped */
    expect_images_error(write_blob("half-images", b, n / 2), "(the gzip stream is cut short)");
    expect_images_error(write_blob("half2-images", b, n / 2), "truncated: header says 40 images");
    /* only the 8-byte trailer missing: data complete, stream not */
    expect_images_error(write_blob("notrailer-images", b, n - 8), "checksum trailer is missing");
    free(b);
}

TEST(idx_names_gz_that_is_not_gzip) {
    const char *p = write_blob("plain-images", "GIF89a......", 12);
    char renamed[600];
    snprintf(renamed, sizeof renamed, "%s.gz", p);
    CHECK(rename(p, renamed) == 0);
    expect_images_error(renamed, "named .gz but not gzip-compressed");
}

TEST(idx_missing_file_is_eio) {
    xt_idx x;
    xt_err e = {0};
    const char *p = tmp("nope-images.gz");
    CHECK_EQ(xt_idx_read_images(p, 28, 28, &x, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, p);
    CHECK_STR_CONTAINS(e.msg, "No such file");
}

/* ---- datasets from directories ---------------------------------------------- */

/* A directory <tmpdir>/<sub> with the four standard files: 50 train, 30 test. */
static const char *make_dir(const char *sub, int gz) {
    const char *dir = tmp(sub);
    mkdir(dir, 0777);
    char name[256];
    const char *ext = gz ? ".gz" : "";
    snprintf(name, sizeof name, "%s/%s%s", sub, XT_IDX_TRAIN_IMAGES, ext), good_images(name, 50);
    snprintf(name, sizeof name, "%s/%s%s", sub, XT_IDX_TRAIN_LABELS, ext), good_labels(name, 50);
    snprintf(name, sizeof name, "%s/%s%s", sub, XT_IDX_TEST_IMAGES, ext), good_images(name, 30);
    snprintf(name, sizeof name, "%s/%s%s", sub, XT_IDX_TEST_LABELS, ext), good_labels(name, 30);
    return dir;
}

TEST(dataset_opens_both_splits_raw_or_gz) {
    for (int gz = 0; gz < 2; gz++) {
        const char *dir = make_dir(gz ? "gz" : "raw", gz);
        xt_data_opts o;
        xt_data_opts_defaults(&o);
        o.datadir = dir;
        xt_dataset tr, te;
        xt_err e = {0};
        CHECK_EQ(xt_dataset_open(&tr, &o, XT_SPLIT_TRAIN, &e), 0);
        CHECK_EQ(xt_dataset_open(&te, &o, XT_SPLIT_TEST, &e), 0);
        CHECK_EQ(tr.n, 50);
        CHECK_EQ(te.n, 30);
        CHECK_EQ(tr.rows * tr.cols, 784);
        CHECK_EQ(tr.num_classes, 10);
        CHECK_EQ(tr.labels[13], 3);
        CHECK_EQ(tr.first, 0);
        CHECK_NEAR(tr.mean[0], 0.1307, 1e-9);
        CHECK_NEAR(tr.std[0], 0.3081, 1e-9);
        CHECK_STR_CONTAINS(tr.images_path, gz ? "train-images-idx3-ubyte.gz" : "train-images-idx3-ubyte");
        CHECK_STR_CONTAINS(te.labels_path, "t10k-labels-idx1-ubyte");
        xt_dataset_free(&tr), xt_dataset_free(&te);
        CHECK(tr.images == NULL);
    }
}

TEST(dataset_norm_defaults_and_override) {
    double m[XT_DATA_MAX_CHANNELS], s[XT_DATA_MAX_CHANNELS];
    xt_data_norm_defaults(XT_DATA_FASHION_MNIST, m, s);
    CHECK_NEAR(m[0], 0.2860, 1e-12);
    CHECK_NEAR(s[0], 0.3530, 1e-12);
    const char *dir = make_dir("norm", 1);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_FASHION_MNIST;
    o.datadir = dir;
    o.norm_mean = 0.5;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e), 0);
    CHECK_NEAR(d.mean[0], 0.5, 1e-12);
    CHECK_NEAR(d.std[0], 0.3530, 1e-12);
    xt_dataset_free(&d);
    CHECK(!strcmp(xt_data_kind_name(XT_DATA_FASHION_MNIST), "fashion_mnist"));
}

TEST(dataset_missing_files_say_what_to_do) {
    const char *dir = tmp("empty-dir");
    mkdir(dir, 0777);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, dir);
    CHECK_STR_CONTAINS(e.msg, "train-images-idx3-ubyte(.gz) not found");
    CHECK_STR_CONTAINS(e.msg, "`make data`");
    CHECK_STR_CONTAINS(e.msg, "xlatrain --download");
    CHECK_STR_CONTAINS(e.msg, "dataset: synthetic");
    CHECK(d.images == NULL);

    /* FashionMNIST points at its own make target */
    o.kind = XT_DATA_FASHION_MNIST;
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "t10k-images-idx3-ubyte(.gz) not found");
    CHECK_STR_CONTAINS(e.msg, "make data DATASET=fashion_mnist");

    /* images present, labels missing */
    char name[256];
    snprintf(name, sizeof name, "empty-dir/%s.gz", XT_IDX_TEST_IMAGES);
    good_images(name, 3);
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "t10k-labels-idx1-ubyte(.gz) not found");

    /* no datadir at all */
    o.datadir = "";
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "datadir is not set");
    CHECK_STR_CONTAINS(e.msg, "dataset: synthetic");
}

TEST(dataset_count_mismatch_names_both_files) {
    const char *dir = tmp("mismatch");
    mkdir(dir, 0777);
    /* the example: 10,000 images with 9,999 labels */
    const char *im = write_images("mismatch/t10k-images-idx3-ubyte.gz", XT_IDX_MAGIC_IMAGES, 10000, 28, 28, 7840000, 0);
    const char *lb = good_labels("mismatch/t10k-labels-idx1-ubyte.gz", 9999);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, lb);
    CHECK_STR_CONTAINS(e.msg, "t10k-labels-idx1-ubyte.gz: 9,999 labels for 10,000 images");
    CHECK_STR_CONTAINS(e.msg, im);
}

TEST(dataset_propagates_file_errors) {
    const char *dir = make_dir("broken", 1);
    write_labels("broken/train-labels-idx1-ubyte.gz", XT_IDX_MAGIC_LABELS, 50, 50, 0, 49, 12);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "broken/train-labels-idx1-ubyte.gz: label 12 at index 49");
    CHECK(d.images == NULL && d.labels == NULL);
}

TEST(dataset_raw_name_wins_over_gz) {
    const char *dir = make_dir("both", 1);
    good_images("both/t10k-images-idx3-ubyte", 7);
    good_labels("both/t10k-labels-idx1-ubyte", 7);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e), 0);
    CHECK_EQ(d.n, 7);
    xt_dataset_free(&d);
}

TEST(dataset_explicit_paths_and_subsets_split_one_file) {
    /* both splits from the t10k pair, as the accuracy reference does: train
     * on [0, 24), test on [24, end) */
    const char *dir = make_dir("explicit", 1);
    char im[600], lb[600];
    snprintf(im, sizeof im, "%s/%s.gz", dir, XT_IDX_TEST_IMAGES);
    snprintf(lb, sizeof lb, "%s/%s.gz", dir, XT_IDX_TEST_LABELS);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = "/nonexistent"; /* explicit paths win */
    o.train_images = o.test_images = im;
    o.train_labels = o.test_labels = lb;
    o.train_subset[0] = 0, o.train_subset[1] = 24;
    o.test_subset[0] = 24, o.test_subset[1] = -1;
    xt_dataset tr, te, all;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&tr, &o, XT_SPLIT_TRAIN, &e), 0);
    CHECK_EQ(xt_dataset_open(&te, &o, XT_SPLIT_TEST, &e), 0);
    CHECK_EQ(tr.n, 24);
    CHECK_EQ(te.n, 6);
    CHECK_EQ(te.first, 24);
    o.test_subset[0] = 0;
    CHECK_EQ(xt_dataset_open(&all, &o, XT_SPLIT_TEST, &e), 0);
    CHECK_EQ(all.n, 30);
    CHECK(memcmp(tr.images, all.images, 24 * 784) == 0);
    CHECK(memcmp(te.images, all.images + 24 * 784, 6 * 784) == 0);
    CHECK(memcmp(te.labels, all.labels + 24, 6) == 0);
    CHECK_EQ(te.labels[0], 4);
    xt_dataset_free(&tr), xt_dataset_free(&te), xt_dataset_free(&all);

    /* an explicit path that does not exist names the key */
    o.train_labels = tmp("missing-labels.gz");
    CHECK_EQ(xt_dataset_open(&tr, &o, XT_SPLIT_TRAIN, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "missing-labels.gz: no such file (the value of train_labels)");
}

TEST(dataset_rejects_subsets_outside_the_data) {
    const char *dir = make_dir("sub", 0);
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    long bad[][2] = {{0, 51}, {-1, 10}, {10, 10}, {20, 5}, {50, -1}};
    for (int i = 0; i < 5; i++) {
        o.train_subset[0] = bad[i][0], o.train_subset[1] = bad[i][1];
        CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), XT_EUSAGE);
        CHECK_STR_CONTAINS(e.msg, "train_subset [");
        CHECK_STR_CONTAINS(e.msg, "has 50 samples");
        CHECK(d.images == NULL);
    }
    o.train_subset[0] = 49, o.train_subset[1] = 50;
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), 0);
    CHECK_EQ(d.n, 1);
    CHECK_EQ(d.labels[0], 9);
    xt_dataset_free(&d);
}

/* ---- the real MNIST test set ------------------------------------------------ */

static const char *shared_t10k(void) {
    static char dir[1024];
    const char *env = getenv("XLATRAIN_SHARED");
    if (env && *env)
        snprintf(dir, sizeof dir, "%s/data/mnist-t10k", env);
    else
        snprintf(dir, sizeof dir, "../shared/data/mnist-t10k");
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/t10k-images-idx3-ubyte.gz", dir);
    return access(probe, R_OK) == 0 ? dir : NULL;
}

TEST(dataset_real_mnist_t10k) {
    const char *dir = shared_t10k();
    if (!dir) test_skip("no ../shared/data/mnist-t10k: real-data check skipped");
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.datadir = dir;
    xt_dataset d;
    xt_err e = {0};
    CHECK_MSG(xt_dataset_open(&d, &o, XT_SPLIT_TEST, &e) == 0, "%s", e.msg);
    CHECK_EQ(d.n, 10000);
    CHECK_EQ(d.rows, 28);
    CHECK_EQ(d.cols, 28);
    long hist[10] = {0};
    for (long i = 0; i < d.n; i++) hist[d.labels[i]]++;
    const long want[10] = {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009};
    for (int c = 0; c < 10; c++) CHECK_EQ(hist[c], want[c]);
    /* the first test image is a 7; MNIST's pixel mean is about 0.1325 on t10k */
    CHECK_EQ(d.labels[0], 7);
    double sum = 0;
    for (long i = 0; i < d.n * 784; i++) sum += d.images[i];
    CHECK_NEAR(sum / (d.n * 784.0) / 255.0, 0.1325, 0.002);
    xt_dataset_free(&d);
}
