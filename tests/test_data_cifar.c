/* test_data_cifar.c — the CIFAR-10 reader on files written here in the
 * official binary format (a directory, the files directly in datadir, a
 * tar.gz built with tar(1)), every broken case, the synthetic CIFAR-shaped
 * set, the crop + flip augmentation on 3 channels, the download's checksum
 * path, and runs of the real binary on both sets. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/cifar.h"
#include "data/dataset.h"
#include "data/download.h"
#include "data/loader.h"
#include "data/md5.h"
#include "data/synthetic.h"
#include "data/synthetic_cifar.h"
#include "data/transform.h"
#include "test.h"

#define TRAIN_PER_FILE 3
#define TEST_RECORDS 4

/* The pixel byte p of record i of batch file f: distinct across files. */
static uint8_t pix(int f, int i, int p) { return (uint8_t)(i * 7 + p * 13 + f * 31); }
static uint8_t lab(int f, int i) { return (uint8_t)((f * 3 + i) % 10); }

static const char *path_in(const char *dir, const char *name) {
    static char bufs[8][1200];
    static int next;
    char *p = bufs[next++ % 8], d[1100]; /* dir may be an earlier result: copy it first */
    snprintf(d, sizeof d, "%s", dir);
    snprintf(p, 1200, "%s/%s", d, name);
    return p;
}

/* A copy in longer-lived storage, for paths a test keeps using (path_in's slots rotate). */
static const char *keep(const char *p) {
    static char bufs[32][1200];
    static int next;
    char *k = bufs[next++ % 32];
    snprintf(k, 1200, "%s", p);
    return k;
}

static const char *mkdir_in(const char *parent, const char *name) {
    const char *p = keep(path_in(parent, name));
    mkdir(p, 0777);
    return p;
}

static void write_bytes(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* Batch file f (0..4 train, 5 test) of n records. */
static void write_batch(const char *path, int f, int n) {
    static uint8_t buf[16 * XT_CIFAR_RECORD];
    for (int i = 0; i < n; i++) {
        uint8_t *r = buf + (size_t)i * XT_CIFAR_RECORD;
        r[0] = lab(f, i);
        for (int p = 0; p < XT_CIFAR_PIXELS; p++) r[1 + p] = pix(f, i, p);
    }
    write_bytes(path, buf, (size_t)n * XT_CIFAR_RECORD);
}

/* The official layout: dir/cifar-10-batches-bin/{data_batch_1..5, test_batch}.bin + batches.meta.txt. */
static const char *write_set(const char *name, const char *meta) {
    const char *root = mkdir_in(test_tmpdir(), name), *d = mkdir_in(root, XT_CIFAR_DIR);
    char f[32];
    for (int k = 0; k < 5; k++) {
        snprintf(f, sizeof f, "data_batch_%d.bin", k + 1);
        write_batch(path_in(d, f), k, TRAIN_PER_FILE);
    }
    write_batch(path_in(d, "test_batch.bin"), 5, TEST_RECORDS);
    if (meta) write_bytes(path_in(d, XT_CIFAR_META), meta, strlen(meta));
    return root;
}

/* tar.gz of root's cifar-10-batches-bin, members listed in `order` (a shell word list). */
static const char *tar_set(const char *root, const char *out_name, const char *order) {
    const char *out = keep(path_in(test_tmpdir(), out_name));
    char cmd[3000], msg[2000];
    snprintf(cmd, sizeof cmd, "tar -C '%s' -czf '%s' %s", root, out, order);
    CHECK_MSG(test_run(cmd, msg, sizeof msg) == 0, "%s: %s", cmd, msg);
    return out;
}

static const char *ALL_MEMBERS = "cifar-10-batches-bin";
static const char *REVERSED =
    "cifar-10-batches-bin/test_batch.bin cifar-10-batches-bin/batches.meta.txt cifar-10-batches-bin/data_batch_5.bin "
    "cifar-10-batches-bin/data_batch_4.bin cifar-10-batches-bin/data_batch_3.bin cifar-10-batches-bin/data_batch_2.bin "
    "cifar-10-batches-bin/data_batch_1.bin";

static const char *META = "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";

static int open_split(const char *datadir, const char *explicit_path, int split, xt_dataset *d, xt_err *e) {
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_CIFAR10;
    o.datadir = datadir;
    if (split == XT_SPLIT_TRAIN) o.train_images = explicit_path;
    else o.test_images = explicit_path;
    return xt_dataset_open(d, &o, split, e);
}

/* Every sample where the writer put it, in batch order. */
static void check_contents(const xt_dataset *tr, const xt_dataset *te) {
    CHECK_EQ(tr->n, 5 * TRAIN_PER_FILE);
    CHECK_EQ(te->n, TEST_RECORDS);
    CHECK(tr->channels == 3 && tr->rows == 32 && tr->cols == 32);
    for (int64_t s = 0; s < tr->n; s++) {
        int f = (int)(s / TRAIN_PER_FILE), i = (int)(s % TRAIN_PER_FILE);
        CHECK_EQ(tr->labels[s], lab(f, i));
        for (int p = 0; p < XT_CIFAR_PIXELS; p += 511) CHECK_EQ(tr->images[s * XT_CIFAR_PIXELS + p], pix(f, i, p));
    }
    for (int i = 0; i < TEST_RECORDS; i++) CHECK_EQ(te->labels[i], lab(5, i));
    CHECK_NEAR(tr->mean[0], 0.4914, 1e-12);
    CHECK_NEAR(tr->std[2], 0.2616, 1e-12);
}

TEST(cifar_reads_the_extracted_directory_and_the_files_directly) {
    const char *root = write_set("extracted", "plane\ncar\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck");
    xt_dataset tr, te;
    xt_err e = {0};
    CHECK_MSG(open_split(root, NULL, XT_SPLIT_TRAIN, &tr, &e) == 0, "%s", e.msg);
    CHECK_MSG(open_split(root, NULL, XT_SPLIT_TEST, &te, &e) == 0, "%s", e.msg);
    check_contents(&tr, &te);
    CHECK(!strcmp(te.class_names[0], "plane") && !strcmp(te.class_names[9], "truck")); /* from batches.meta.txt */
    xt_dataset_free(&tr), xt_dataset_free(&te);
    /* datadir = the batches directory itself, without batches.meta.txt: the published names */
    const char *inner = path_in(root, XT_CIFAR_DIR);
    unlink(path_in(inner, XT_CIFAR_META));
    CHECK_MSG(open_split(inner, NULL, XT_SPLIT_TEST, &te, &e) == 0, "%s", e.msg);
    CHECK(!strcmp(te.class_names[0], "airplane") && !strcmp(te.class_names[1], "automobile"));
    xt_dataset_free(&te);
    /* an explicit .bin file and a subset */
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_CIFAR10;
    o.test_images = path_in(inner, "test_batch.bin");
    o.test_subset[0] = 1, o.test_subset[1] = 3;
    CHECK_MSG(xt_dataset_open(&te, &o, XT_SPLIT_TEST, &e) == 0, "%s", e.msg);
    CHECK_EQ(te.n, 2);
    CHECK_EQ(te.first, 1);
    CHECK_EQ(te.labels[0], lab(5, 1));
    CHECK_EQ(te.images[7], pix(5, 1, 7));
    xt_dataset_free(&te);
}

TEST(cifar_reads_the_tar_gz_in_batch_order_whatever_the_member_order) {
    const char *root = write_set("forarchive", META);
    const char *tgz = tar_set(root, XT_CIFAR_ARCHIVE, REVERSED);
    const char *dd = mkdir_in(test_tmpdir(), "dd");
    CHECK_EQ(link(tgz, path_in(dd, XT_CIFAR_ARCHIVE)), 0);
    xt_dataset tr, te;
    xt_err e = {0};
    CHECK_MSG(open_split(dd, NULL, XT_SPLIT_TRAIN, &tr, &e) == 0, "%s", e.msg);
    CHECK_MSG(open_split(dd, NULL, XT_SPLIT_TEST, &te, &e) == 0, "%s", e.msg);
    check_contents(&tr, &te);
    CHECK(!strcmp(tr.images_path, path_in(dd, XT_CIFAR_ARCHIVE)));
    CHECK(!strcmp(te.class_names[3], "cat"));
    xt_dataset_free(&tr), xt_dataset_free(&te);
}

/* One broken file in an otherwise good extracted set: exit code 3, one line naming it. */
static void expect_broken(const char *name, int file, const void *bytes, size_t n, const char *want1, const char *want2) {
    const char *root = write_set(name, META), *d = path_in(root, XT_CIFAR_DIR);
    char f[32];
    if (file < 5) snprintf(f, sizeof f, "data_batch_%d.bin", file + 1);
    else snprintf(f, sizeof f, "%s", file == 5 ? "test_batch.bin" : XT_CIFAR_META);
    if (bytes) write_bytes(path_in(d, f), bytes, n);
    else unlink(path_in(d, f));
    xt_dataset ds;
    xt_err e = {0};
    CHECK_EQ(open_split(root, NULL, file == 5 ? XT_SPLIT_TEST : XT_SPLIT_TRAIN, &ds, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, f);
    CHECK_STR_CONTAINS(e.msg, want1);
    if (want2) CHECK_STR_CONTAINS(e.msg, want2);
    CHECK(!strchr(e.msg, '\n'));
    CHECK(ds.images == NULL);
}

TEST(cifar_broken_files_get_one_line_naming_file_and_place) {
    static uint8_t rec[3 * XT_CIFAR_RECORD + 1];
    memset(rec, 1, sizeof rec);
    /* short last record: 2 records and 1,000 bytes */
    expect_broken("short", 2, rec, 2 * XT_CIFAR_RECORD + 1000, "wrong size: 7,146 bytes is not a whole number of 3,073-byte records (2 records and 1000 bytes over)", "fetch it again");
    /* label 10 in record 1 */
    rec[XT_CIFAR_RECORD] = 10;
    expect_broken("label", 0, rec, 3 * XT_CIFAR_RECORD, "record 1 (byte 3,073) has label 10, outside 0..9", NULL);
    rec[XT_CIFAR_RECORD] = 1;
    expect_broken("empty", 4, rec, 0, "empty file", NULL);
    /* CIFAR-100 records (2 label bytes) */
    static uint8_t c100[2 * (XT_CIFAR_RECORD + 1)];
    expect_broken("c100", 5, c100, sizeof c100, "looks like CIFAR-100", NULL);
    expect_broken("missing", 2, NULL, 0, "not found", "extraction is incomplete");
    expect_broken("meta", 6, "a\nb\n", 4, "2 class names, expected 10", NULL);
    char longname[200];
    memset(longname, 'x', sizeof longname);
    expect_broken("meta2", 6, longname, sizeof longname, ":1: not a class name", NULL);
}

/* A broken archive: exit code 3, one line naming the archive. */
static void expect_broken_archive(const char *tgz, const char *want) {
    const char *dd = mkdir_in(test_tmpdir(), "broken-dd");
    unlink(path_in(dd, XT_CIFAR_ARCHIVE));
    CHECK_EQ(link(tgz, path_in(dd, XT_CIFAR_ARCHIVE)), 0);
    xt_dataset ds;
    xt_err e = {0};
    CHECK_EQ(open_split(dd, NULL, XT_SPLIT_TRAIN, &ds, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, XT_CIFAR_ARCHIVE);
    CHECK_STR_CONTAINS(e.msg, want);
    CHECK(!strchr(e.msg, '\n'));
}

static size_t file_bytes(const char *path, uint8_t **buf) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(n);
    CHECK_EQ(fread(*buf, 1, n, f), n);
    fclose(f);
    return n;
}

TEST(cifar_torn_and_incomplete_archives_are_refused) {
    const char *root = write_set("arc", META);
    const char *tgz = tar_set(root, "good.tar.gz", ALL_MEMBERS);
    CHECK(tgz != root);
    uint8_t *b;
    size_t n = file_bytes(tgz, &b);
    /* cut in the middle of the compressed stream */
    write_bytes(path_in(test_tmpdir(), "half.tar.gz"), b, n / 2);
    expect_broken_archive(path_in(test_tmpdir(), "half.tar.gz"), "damaged or truncated archive");
    /* the gzip trailer (CRC32, ISIZE) cut off */
    write_bytes(path_in(test_tmpdir(), "notrailer.tar.gz"), b, n - 8);
    expect_broken_archive(path_in(test_tmpdir(), "notrailer.tar.gz"), "damaged or truncated archive");
    /* a flipped byte in the deflate data: refused, either by inflate or the gzip CRC ("damaged or
     * truncated archive") or, when the damaged stream still inflates, by the records it yields (a
     * label over 9, a member of the wrong size): which one depends on where tar's mtimes put the byte */
    b[n / 2] ^= 0x55;
    write_bytes(path_in(test_tmpdir(), "flipped.tar.gz"), b, n);
    expect_broken_archive(path_in(test_tmpdir(), "flipped.tar.gz"), XT_CIFAR_ARCHIVE);
    free(b);
    /* a member missing */
    expect_broken_archive(tar_set(root, "nob3.tar.gz",
                                  "cifar-10-batches-bin/data_batch_1.bin cifar-10-batches-bin/data_batch_2.bin "
                                  "cifar-10-batches-bin/data_batch_4.bin cifar-10-batches-bin/data_batch_5.bin"),
                          "has no data_batch_3.bin; the archive is incomplete");
    /* a member of the wrong size, named inside the archive */
    write_bytes(path_in(path_in(root, XT_CIFAR_DIR), "data_batch_4.bin"), "abc", 3);
    expect_broken_archive(tar_set(root, "bad4.tar.gz", ALL_MEMBERS), "data_batch_4.bin: wrong size: 3 bytes");
}

/* ---- synthetic_cifar10 -------------------------------------------------------- */

TEST(synthetic_cifar_is_a_pure_function_of_seed_split_index) {
    uint8_t a[XT_CIFAR_PIXELS], b[XT_CIFAR_PIXELS], g[28 * 28];
    for (int64_t i = 0; i < 40; i++) {
        int la = xt_synth_cifar_sample(7, XT_SPLIT_TRAIN, i, a);
        int lb = xt_synth_cifar_sample(7, XT_SPLIT_TRAIN, i, b);
        CHECK_EQ(la, lb);
        CHECK(!memcmp(a, b, sizeof a));
        CHECK_EQ(la, xt_synth_sample(7, XT_SPLIT_TRAIN, i, g)); /* the digit's label */
    }
    xt_synth_cifar_sample(7, XT_SPLIT_TEST, 3, b);
    xt_synth_cifar_sample(7, XT_SPLIT_TRAIN, 3, a);
    CHECK(memcmp(a, b, sizeof a) != 0);
    /* a subset generates the same samples as the whole split */
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_SYNTHETIC_CIFAR10;
    o.seed = 7;
    o.synthetic_train_size = 50;
    o.train_subset[0] = 20, o.train_subset[1] = 30;
    xt_dataset d;
    xt_err e = {0};
    CHECK_MSG(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e) == 0, "%s", e.msg);
    CHECK(d.channels == 3 && d.rows == 32 && d.cols == 32 && d.n == 10);
    xt_synth_cifar_sample(7, XT_SPLIT_TRAIN, 25, a);
    CHECK(!memcmp(d.images + 5 * XT_CIFAR_PIXELS, a, sizeof a));
    double m[3] = XT_SYNTH_CIFAR_MEAN;
    CHECK_NEAR(d.mean[1], m[1], 1e-12);
    CHECK(d.class_names[0][0] == 0); /* digits: numbers in the grid */
    xt_dataset_free(&d);
}

TEST(synthetic_cifar_colours_do_not_give_the_class_away) {
    /* mean colour per class: every class spans the whole range, so only shape tells them apart */
    uint8_t a[XT_CIFAR_PIXELS];
    double lo[10], hi[10];
    for (int k = 0; k < 10; k++) lo[k] = 255, hi[k] = 0;
    for (int64_t i = 0; i < 600; i++) {
        int l = xt_synth_cifar_sample(1, XT_SPLIT_TRAIN, i, a);
        double s = 0;
        for (int p = 0; p < 1024; p++) s += a[p];
        s /= 1024;
        lo[l] = s < lo[l] ? s : lo[l];
        hi[l] = s > hi[l] ? s : hi[l];
    }
    for (int k = 0; k < 10; k++) CHECK_MSG(lo[k] < 80 && hi[k] > 175, "class %d red means %.0f..%.0f", k, lo[k], hi[k]);
}

/* ---- augmentation on 3 channels ------------------------------------------------ */

TEST(transform_crop_then_flip_on_three_channels_matches_a_plain_reference) {
    const double mean[3] = {0.4914, 0.4822, 0.4465}, std[3] = {0.2470, 0.2435, 0.2616};
    const int P = 4, S = 32;
    xt_transform t;
    xt_transform_init(&t, 3, S, S, mean, std, P, 1, 5);
    static uint8_t src[3 * 32 * 32];
    static float dst[3 * 32 * 32];
    for (int i = 0; i < 3 * S * S; i++) src[i] = (uint8_t)(1 + (i * 37) % 254);
    int flips = 0;
    for (int64_t idx = 0; idx < 200; idx++) {
        int dy, dx, fl, dy0, dx0, fl0;
        xt_transform_choice(&t, 2, idx, &dy, &dx, &fl);
        /* the flip does not move the crop: the same offsets as crop alone */
        xt_transform t0 = t;
        t0.flip = 0;
        xt_transform_choice(&t0, 2, idx, &dy0, &dx0, &fl0);
        CHECK(dy == dy0 && dx == dx0 && !fl0);
        flips += fl;
        xt_transform_apply(&t, src, dst, 2, idx, NULL);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    /* torchvision: pad P with zeros, crop at (dy, dx), then mirror x */
                    int cx = fl ? S - 1 - x : x, sy = y + dy - P, sx = cx + dx - P;
                    double v = sy < 0 || sy >= S || sx < 0 || sx >= S ? 0 : src[(c * S + sy) * S + sx];
                    CHECK_NEAR(dst[(c * S + y) * S + x], (v / 255.0 - mean[c]) / std[c], 1e-5);
                }
    }
    CHECK_MSG(flips > 70 && flips < 130, "%d of 200 flipped", flips);
}

TEST(loader_batches_of_three_channel_images_are_the_same_for_any_thread_count) {
    xt_data_opts o;
    xt_data_opts_defaults(&o);
    o.kind = XT_DATA_SYNTHETIC_CIFAR10;
    o.synthetic_train_size = 100;
    xt_dataset d;
    xt_err e = {0};
    CHECK_EQ(xt_dataset_open(&d, &o, XT_SPLIT_TRAIN, &e), 0);
    static float first[2][16 * 3 * 32 * 32];
    for (int w = 0; w < 2; w++) {
        xt_sampler s;
        CHECK_EQ(xt_sampler_init(&s, d.n, 1, 0, 1, 3, 1, &e), 0);
        xt_loader_opts lo;
        xt_loader_opts_defaults(&lo);
        lo.batch_size = 16, lo.num_workers = w * 3, lo.random_crop_padding = 4, lo.random_flip = 1;
        xt_loader l;
        CHECK_EQ(xt_loader_open(&l, &d, &s, &lo, &e), 0);
        xt_loader_start_epoch(&l, 2);
        const xt_batch *b = xt_loader_next(&l);
        CHECK(b != NULL);
        if (b) memcpy(first[w], b->x, sizeof first[w]);
        xt_loader_release(&l, b);
        xt_loader_close(&l);
        xt_sampler_free(&s);
    }
    CHECK(!memcmp(first[0], first[1], sizeof first[0]));
    xt_dataset_free(&d);
}

/* ---- download: the checksum path, with a local mirror ------------------------------ */

TEST(cifar_download_checks_the_published_md5) {
    CHECK(!strcmp(xt_download_md5(XT_DATA_CIFAR10, XT_CIFAR_ARCHIVE), "c32a1d4ab5d03f1284b67883e8d87530"));
    if (system("command -v curl >/dev/null 2>&1") != 0) test_skip("curl not installed");
    const char *mirror = mkdir_in(test_tmpdir(), "mirror"), *dest = keep(path_in(test_tmpdir(), "dest"));
    write_bytes(path_in(mirror, XT_CIFAR_ARCHIVE), "<html>not the archive</html>", 28);
    char env[1300];
    snprintf(env, sizeof env, "file://%s/", mirror);
    setenv("XLATRAIN_DATA_MIRROR", env, 1);
    xt_err e = {0};
    CHECK_EQ(xt_download_dataset(XT_DATA_CIFAR10, dest, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "could not download cifar-10-binary.tar.gz into");
    CHECK_STR_CONTAINS(e.msg, "MD5 mismatch (got ");
    CHECK_STR_CONTAINS(e.msg, "expected c32a1d4ab5d03f1284b67883e8d87530");
    CHECK(access(path_in(dest, XT_CIFAR_ARCHIVE), F_OK) != 0);
    CHECK(access(path_in(dest, "cifar-10-binary.tar.gz.part"), F_OK) != 0);
    CHECK_EQ(xt_download_dataset(XT_DATA_SYNTHETIC_CIFAR10, dest, NULL, NULL, &e), XT_EUSAGE);
    /* make data's shell twin refuses it the same way */
    char cmd[2000], out[4096];
    snprintf(cmd, sizeof cmd, "XLATRAIN_DATA_MIRROR=file://%s/ sh data/fetch.sh cifar10 %s", mirror, dest);
    CHECK_EQ(test_run(cmd, out, sizeof out), 1);
    CHECK_STR_CONTAINS(out, "MD5 mismatch (got ");
}

/* ---- the binary ------------------------------------------------------------------ */

static int run_bin(const char *args, char *out, size_t cap) {
    char cmd[4000];
    if (access(test_bin(), X_OK) != 0) test_skip("the xlatrain binary is not built (make builds it first)");
    snprintf(cmd, sizeof cmd, "%s %s", test_bin(), args);
    return test_run(cmd, out, cap);
}

TEST(cli_trains_on_a_cifar_tar_gz_and_predicts_a_bin_file) {
    const char *root = write_set("cli", META);
    const char *dd = mkdir_in(test_tmpdir(), "clidata");
    CHECK_EQ(link(tar_set(root, "cli.tar.gz", ALL_MEMBERS), path_in(dd, XT_CIFAR_ARCHIVE)), 0);
    const char *out_dir = keep(path_in(test_tmpdir(), "run"));
    char args[3000], out[1 << 15];
    snprintf(args, sizeof args, "--config configs/cifar10.yaml --set datadir=%s --set model=models/cifar_cnn.yaml "
             "--set num_epochs=2 --set schedule.warmup_epochs=1 --set batch_size=4 --set test_batch_size=4 "
             "--set num_cores=1 --set output_dir=%s", dd, out_dir);
    int rc = run_bin(args, out, sizeof out);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    CHECK_STR_CONTAINS(out, "\"dataset\":\"cifar10\"");
    CHECK_STR_CONTAINS(out, "\"random_crop_padding\":4,\"random_flip\":true");
    struct stat st;
    CHECK(stat(path_in(out_dir, "predictions.png"), &st) == 0 && st.st_size > 1000);
    snprintf(args, sizeof args, "--config %s/config.yaml --resume latest --predict %s/%s/test_batch.bin --output %s/p.csv",
             out_dir, root, XT_CIFAR_DIR, test_tmpdir());
    rc = run_bin(args, out, sizeof out);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, out);
    uint8_t *csv;
    size_t n = file_bytes(path_in(test_tmpdir(), "p.csv"), &csv);
    CHECK(n > 0 && !memcmp(csv, "index,predicted,label,p0", 24));
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += csv[i] == '\n';
    CHECK_EQ(lines, 1 + TEST_RECORDS);
    free(csv);
}

TEST(cli_broken_cifar_file_exits_3_with_one_line) {
    const char *root = write_set("clibroken", META);
    write_bytes(path_in(path_in(root, XT_CIFAR_DIR), "data_batch_5.bin"), "\x0b", 1);
    char args[3000], out[8192];
    snprintf(args, sizeof args, "--config configs/cifar10.yaml --set datadir=%s --set model=models/cifar_cnn.yaml "
             "--set output_dir=%s/run 2>&1 >/dev/null", root, test_tmpdir());
    CHECK_EQ(run_bin(args, out, sizeof out), 3);
    CHECK_STR_CONTAINS(out, "data_batch_5.bin: wrong size: 1 bytes");
    /* a 3-channel model on MNIST-shaped data is a config error naming both shapes */
    snprintf(args, sizeof args, "--config configs/smoke.yaml --set model=models/cifar_cnn.yaml --dry-run");
    CHECK_EQ(run_bin(args, out, sizeof out), 2);
    CHECK_STR_CONTAINS(out, "the model's input is [3, 32, 32] but synthetic images are [1, 28, 28]");
}

/* The shipped smoke config, as CI and its users run it: it must reach its
 * target_accuracy (80%), else the run exits 6. Under the sanitizers
 * (make asan) its 8 epochs take minutes, nearly all of it in the instrumented
 * conv micro-kernels that every other training test runs too, and the set
 * is learnt only after about 100 steps, so there the same pipeline (crop,
 * flip, per-channel normalization, Nesterov, warm-up + cosine, evaluation,
 * checkpoint) runs 2 short epochs with no accuracy target; the learning claim
 * is this test's release run, which CI runs as make test. */
TEST(cli_cifar10_smoke_config_learns_the_synthetic_set) {
    char args[2000], out[1 << 15], want[64];
    const char *d = test_tmpdir();
    int sanitized = test_sanitized(), epochs = sanitized ? 2 : 8; /* 8: the shipped config's num_epochs */
    int n = snprintf(args, sizeof args, "--config configs/cifar10_smoke.yaml --set output_dir=%s/smoke", d);
    if (sanitized)
        snprintf(args + n, sizeof args - (size_t)n, " --set synthetic_train_size=1024 --set synthetic_test_size=256 "
                 "--set num_epochs=%d --set target_accuracy=0", epochs);
    int rc = run_bin(args, out, sizeof out);
    CHECK_MSG(rc == 0, "exit %d (6 = below target_accuracy): %s", rc, out);
    CHECK_STR_CONTAINS(out, "\"dataset\":\"synthetic_cifar10\"");
    snprintf(want, sizeof want, "\"epochs\":%d,", epochs);
    CHECK_STR_CONTAINS(out, want);
    CHECK_MSG(!strstr(out, "nan") && !strstr(out, "inf,"), "a non-finite figure in: %s", out);
    snprintf(want, sizeof want, "smoke/checkpoint-epoch%03d.safetensors", epochs);
    CHECK_EQ(access(path_in(d, want), F_OK), 0);
}
