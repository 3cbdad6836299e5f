/* test_data_folder.c — the folder dataset's scan and image cache
 * (src/data/folder.c, image_cache.c) on trees the tests write: classes and
 * order, the broken trees (empty class, symlink loop, dangling link, FIFO,
 * unreadable files), the train/validation split, and the cache's reuse,
 * invalidation, skipping and concurrent builders. */
#include <dirent.h>
#include <errno.h>
#include <png.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/folder.h"
#include "data/image_cache.h"
#include "image_files.h"
#include "test.h"

static const char *path_of(const char *rel) {
    static char bufs[8][512];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), rel);
    return p;
}

static void mk(const char *rel) { CHECK(mkdir(path_of(rel), 0755) == 0 || errno == EEXIST); }

/* A w x h grey PNG whose pixels are all v. */
static void gray_png(const char *rel, int w, int h, uint8_t v) {
    uint8_t *px = malloc((size_t)w * h);
    memset(px, v, (size_t)w * h);
    CHECK_EQ(timg_png_raw(path_of(rel), w, h, PNG_COLOR_TYPE_GRAY, 8, px, (size_t)w, NULL, 0, NULL, 0), 0);
    free(px);
}

static void gray_jpeg(const char *rel, int w, int h, uint8_t v) {
    uint8_t *px = malloc((size_t)w * h);
    memset(px, v, (size_t)w * h);
    CHECK_EQ(timg_jpeg(path_of(rel), px, w, h, 1, 95), 0);
    free(px);
}

/* collects warnings */
static char g_warn[4096];
static int g_nwarn;
static void warn(void *ctx, const char *line) {
    (void)ctx;
    g_nwarn++;
    snprintf(g_warn + strlen(g_warn), sizeof g_warn - strlen(g_warn), "%s\n", line);
}

/* The tree most tests use: 3 classes of 4x4 grey images, class k's pixels k * 50 + i. */
static void small_tree(void) {
    mk("d");
    mk("d/b_dog"), mk("d/a_cat"), mk("d/c_eel"), mk("d/.hidden"), mk("d/c_eel/deeper");
    gray_png("d/a_cat/2.png", 4, 4, 1);
    gray_png("d/a_cat/1.jpg", 4, 4, 0); /* a PNG named .jpg: read by content */
    gray_jpeg("d/b_dog/x.png", 4, 4, 50);
    gray_png("d/c_eel/deeper/z.png", 4, 4, 101);
    gray_png("d/c_eel/y.png", 4, 4, 100);
    gray_png("d/.hidden/skipped.png", 4, 4, 9);
    gray_png("d/a_cat/.DS_Store", 4, 4, 9);
    gray_png("d/not_a_class.png", 4, 4, 9);
}

TEST(folder_scan_classes_sorted_files_recursive) {
    small_tree();
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    CHECK_EQ(f.nclasses, 3);
    CHECK_STR_EQ(f.classes[0], "a_cat");
    CHECK_STR_EQ(f.classes[1], "b_dog");
    CHECK_STR_EQ(f.classes[2], "c_eel");
    CHECK_EQ(f.n, 5);
    CHECK_STR_CONTAINS(f.files[0].path, "d/a_cat/1.jpg");
    CHECK_STR_CONTAINS(f.files[1].path, "d/a_cat/2.png");
    CHECK_STR_CONTAINS(f.files[2].path, "d/b_dog/x.png");
    CHECK_STR_CONTAINS(f.files[3].path, "d/c_eel/deeper/z.png");
    CHECK_STR_CONTAINS(f.files[4].path, "d/c_eel/y.png");
    int labels[5] = {0, 0, 1, 2, 2};
    for (int i = 0; i < 5; i++) CHECK_EQ(f.files[i].label, labels[i]);
    CHECK(f.files[2].size > 0 && f.files[2].mtime_ns > 0);
    xt_folder_free(&f);
    /* not a folder, missing, no classes */
    CHECK_EQ(xt_folder_scan(&f, path_of("d/not_a_class.png"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "not_a_class.png: not a folder (the value of train_dir)");
    CHECK_EQ(xt_folder_scan(&f, path_of("nothing"), "test_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "No such file or directory (the value of test_dir)");
    mk("flat");
    gray_png("flat/1.png", 4, 4, 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("flat"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "flat: no class folders in it; put each class's images in a subfolder");
}

TEST(folder_scan_broken_trees_error_or_skip) {
    small_tree();
    xt_folder f;
    xt_err e = {0};
    /* an empty class folder */
    mk("d/d_empty");
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/d_empty: an empty class folder (no files in it); put images in it or remove the folder");
    CHECK_STR_CONTAINS(e.msg, "on_bad_image: skip");
    g_warn[0] = 0, g_nwarn = 0;
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 1, warn, NULL, &e), 0);
    CHECK_EQ(f.nclasses, 4); /* kept: the labels of the others do not move */
    CHECK_EQ(f.n, 5);
    CHECK_EQ(f.skipped, 1);
    CHECK_STR_CONTAINS(g_warn, "warning: ");
    CHECK_STR_CONTAINS(g_warn, "d_empty: an empty class folder");
    xt_folder_free(&f);
    rmdir(path_of("d/d_empty"));
    /* a symlink loop: a link to an ancestor */
    CHECK(symlink("..", path_of("d/b_dog/loop")) == 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/b_dog/loop: a symlink loop");
    g_warn[0] = 0;
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 1, warn, NULL, &e), 0);
    CHECK_EQ(f.n, 5);
    CHECK_STR_CONTAINS(g_warn, "loop: a symlink loop");
    xt_folder_free(&f);
    unlink(path_of("d/b_dog/loop"));
    /* a link to itself, a link to nothing */
    CHECK(symlink("self", path_of("d/b_dog/self")) == 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/b_dog/self: cannot be read: ");
    CHECK_STR_CONTAINS(e.msg, "(a symlink loop)");
    unlink(path_of("d/b_dog/self"));
    CHECK(symlink("gone.png", path_of("d/b_dog/dangling.png")) == 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/b_dog/dangling.png: cannot be read: No such file or directory (a symlink to nothing)");
    unlink(path_of("d/b_dog/dangling.png"));
    /* a FIFO among the images (opening it would block for ever) */
    CHECK(mkfifo(path_of("d/a_cat/pipe"), 0644) == 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/a_cat/pipe: not a regular file");
    unlink(path_of("d/a_cat/pipe"));
    /* a link to a class folder elsewhere is followed */
    mk("elsewhere"), mk("elsewhere/f_fox");
    gray_png("elsewhere/f_fox/1.png", 4, 4, 7);
    CHECK(symlink(path_of("elsewhere/f_fox"), path_of("d/f_fox")) == 0);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    CHECK_EQ(f.nclasses, 4);
    CHECK_EQ(f.n, 6);
    xt_folder_free(&f);
}

TEST(folder_split_is_deterministic_by_seed) {
    mk("s"), mk("s/a"), mk("s/b");
    char rel[64];
    for (int i = 0; i < 40; i++) {
        snprintf(rel, sizeof rel, "s/%s/%02d.png", i % 2 ? "a" : "b", i);
        CHECK_EQ(timg_write(path_of(rel), "x", 1), 0);
    }
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("s"), "train_dir", 0, NULL, NULL, &e), 0);
    uint8_t v1[40], v2[40], v3[40];
    xt_folder_split(&f, 0.2, 7, v1);
    xt_folder_split(&f, 0.2, 7, v2);
    xt_folder_split(&f, 0.2, 8, v3);
    int n1 = 0;
    for (int i = 0; i < 40; i++) n1 += v1[i];
    CHECK_EQ(n1, 8);
    CHECK(!memcmp(v1, v2, 40));
    CHECK(memcmp(v1, v3, 40) != 0);
    xt_folder_split(&f, 0, 7, v3);
    for (int i = 0; i < 40; i++) CHECK_EQ(v3[i], 0);
    xt_folder_free(&f);
}

/* ---- the cache ---------------------------------------------------------------- */

static xt_cache_opts cache_opts(int skip, int threads) {
    xt_cache_opts o = {.dir = path_of("cache"), .key = "train_dir", .channels = 1, .rows = 4, .cols = 4,
                       .max_pixels = 1000000, .skip = skip, .threads = threads, .warn = warn};
    return o;
}

static int count_files(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.' && (!suffix || strstr(de->d_name, suffix))) n++;
    if (d) closedir(d);
    return n;
}

TEST(image_cache_builds_reuses_and_invalidates) {
    small_tree();
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    xt_cache_opts o = cache_opts(0, 2);
    xt_image_set s;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 1);
    CHECK_EQ(s.n, 5);
    CHECK_EQ(s.skipped, 0);
    const uint8_t want[5] = {0, 1, 50, 101, 100};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(s.labels[i], f.files[i].label);
        for (int p = 0; p < 16; p++) CHECK_NEAR(s.images[i * 16 + p], want[i], i == 2 ? 2 : 0); /* [2] is the JPEG */
    }
    char first[1024];
    snprintf(first, sizeof first, "%s", s.path);
    xt_image_set_close(&s);
    /* the same files: mapped, not decoded */
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 0);
    CHECK_EQ(s.n, 5);
    CHECK_STR_EQ(s.path, first);
    xt_image_set_close(&s);
    xt_folder_free(&f);
    /* one file rewritten (new mtime and content): a new cache, the old one removed */
    usleep(20000);
    gray_png("d/b_dog/x.png", 4, 4, 77);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 1);
    CHECK(strcmp(s.path, first) != 0);
    CHECK_EQ(s.images[2 * 16], 77);
    CHECK(access(first, F_OK) != 0);
    CHECK_EQ(count_files(path_of("cache"), NULL), 1);
    xt_image_set_close(&s);
    xt_folder_free(&f);
    /* an added file */
    gray_png("d/b_dog/y.png", 4, 4, 60);
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 1);
    CHECK_EQ(s.n, 6);
    CHECK_EQ(s.images[3 * 16], 60);
    xt_image_set_close(&s);
    /* a damaged cache file is rebuilt, not trusted */
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    char cur[1024];
    snprintf(cur, sizeof cur, "%s", s.path);
    xt_image_set_close(&s);
    CHECK(truncate(cur, 4096 + 10) == 0);
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 1);
    CHECK_EQ(s.n, 6);
    xt_image_set_close(&s);
    xt_folder_free(&f);
}

TEST(image_cache_size_mismatch_and_resize) {
    mk("r"), mk("r/a"), mk("r/b");
    gray_png("r/a/1.png", 4, 4, 10);
    gray_png("r/b/big.png", 8, 6, 200);
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("r"), "train_dir", 0, NULL, NULL, &e), 0);
    xt_cache_opts o = cache_opts(0, 1);
    xt_image_set s;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "r/b/big.png: 6x8 pixels (h x w) but the model's input is 4x4; set resize: [4, 4]");
    CHECK_EQ(count_files(path_of("cache"), NULL), 0); /* no cache, no temp file left */
    o.resize = 1;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.n, 2);
    for (int p = 0; p < 16; p++) CHECK_EQ(s.images[16 + p], 200);
    xt_image_set_close(&s);
    /* RGB asked of grey files: replicated into three planes */
    o.channels = 3;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.n, 2);
    for (int p = 0; p < 48; p++) CHECK_EQ(s.images[p], 10);
    xt_image_set_close(&s);
    xt_folder_free(&f);
}

TEST(image_cache_bad_files_error_or_skip_and_remembered) {
    small_tree();
    CHECK_EQ(timg_write(path_of("d/a_cat/empty.png"), "", 0), 0);
    CHECK_EQ(timg_write(path_of("d/b_dog/notes.txt"), "a cat, really\n", 14), 0);
    size_t n;
    uint8_t *png = timg_read(path_of("d/a_cat/2.png"), &n);
    CHECK_EQ(timg_write(path_of("d/c_eel/cut.png"), png, n - 20), 0);
    free(png);
    CHECK_EQ(timg_png_header_only(path_of("d/c_eel/bomb.png"), 100000, 100000), 0);
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), 0);
    CHECK_EQ(f.n, 9);
    xt_cache_opts o = cache_opts(0, 1);
    xt_image_set s;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/a_cat/empty.png: an empty file (0 bytes), not an image; remove or replace the file, or set on_bad_image: skip");
    CHECK_EQ(count_files(path_of("cache"), NULL), 0);
    g_warn[0] = 0, g_nwarn = 0;
    o = cache_opts(1, 2);
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.n, 5);
    CHECK_EQ(s.skipped, 4);
    CHECK_EQ(g_nwarn, 4);
    CHECK_STR_CONTAINS(g_warn, "empty.png: an empty file");
    CHECK_STR_CONTAINS(g_warn, "notes.txt: not a PNG or JPEG image");
    CHECK_STR_CONTAINS(g_warn, "cut.png: corrupt PNG");
    CHECK_STR_CONTAINS(g_warn, "bomb.png: PNG header declares 100000x100000");
    /* the kept images keep their own labels: nothing shifted */
    const uint8_t want_label[5] = {0, 0, 1, 2, 2}, want_px[5] = {0, 1, 50, 101, 100};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(s.labels[i], want_label[i]);
        CHECK_NEAR(s.images[i * 16], want_px[i], 2);
    }
    xt_image_set_close(&s);
    /* reused: the same warnings again; with skip off, the first is the error */
    g_warn[0] = 0, g_nwarn = 0;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.built, 0);
    CHECK_EQ(s.skipped, 4);
    CHECK_EQ(g_nwarn, 4);
    xt_image_set_close(&s);
    o.skip = 0;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "empty.png: an empty file");
    xt_folder_free(&f);
}

TEST(image_cache_selection_threads_and_concurrent_builders) {
    mk("m"), mk("m/a"), mk("m/b");
    char rel[64];
    for (int i = 0; i < 30; i++) {
        snprintf(rel, sizeof rel, "m/%s/%02d.png", i % 3 ? "a" : "b", i);
        gray_png(rel, 4, 4, (uint8_t)(i * 8));
    }
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("m"), "train_dir", 0, NULL, NULL, &e), 0);
    uint8_t val[30];
    xt_folder_split(&f, 0.3, 1, val);
    xt_cache_opts o1 = cache_opts(0, 1), o4 = cache_opts(0, 4);
    o4.dir = path_of("cache4");
    xt_image_set a, b, v;
    CHECK_EQ(xt_image_cache_open(&a, &f, val, 0, &o1, &e), 0);
    CHECK_EQ(xt_image_cache_open(&b, &f, val, 0, &o4, &e), 0);
    CHECK_EQ(xt_image_cache_open(&v, &f, val, 1, &o1, &e), 0);
    CHECK_EQ(a.n, 21);
    CHECK_EQ(v.n, 9);
    CHECK(!memcmp(a.images, b.images, 21 * 16)); /* threads do not change a byte */
    CHECK(!memcmp(a.labels, b.labels, 21));
    CHECK(strcmp(a.path, v.path) != 0);
    xt_image_set_close(&a), xt_image_set_close(&b), xt_image_set_close(&v);
    /* three processes build the same cache at once: one complete file, no temp files */
    o1.dir = path_of("cache_race");
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            xt_image_set s;
            xt_err ce = {0};
            _exit(xt_image_cache_open(&s, &f, NULL, 0, &o1, &ce) || s.n != 30 ? 1 : 0);
        }
    }
    for (int k = 0; k < 3; k++) {
        int st = 0;
        CHECK(waitpid(kids[k], &st, 0) == kids[k]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ(count_files(path_of("cache_race"), NULL), 1);
    CHECK_EQ(count_files(path_of("cache_race"), ".tmp."), 0);
    CHECK_EQ(xt_image_cache_open(&a, &f, NULL, 0, &o1, &e), 0);
    CHECK_EQ(a.built, 0);
    CHECK_EQ(a.n, 30);
    xt_image_set_close(&a);
    xt_folder_free(&f);
}

/* Unreadable files and folders. Root reads through any permission bits, and
 * the tests run as root in CI, so as root this test first drops to the
 * 'nobody' user (each test runs in its own forked process, so nothing else
 * is affected); it skips only where it can do neither. */
TEST(folder_unreadable_files_and_folders) {
    small_tree();
    mk("d/d_locked");
    gray_png("d/d_locked/1.png", 4, 4, 3);
    gray_png("d/b_dog/secret.png", 4, 4, 3);
    mk("cache");
    CHECK(chmod(path_of("d/d_locked"), 0) == 0);
    CHECK(chmod(path_of("d/b_dog/secret.png"), 0) == 0);
    CHECK(chmod(path_of("cache"), 0777) == 0);
    if (geteuid() == 0) {
        CHECK(chmod(test_tmpdir(), 0755) == 0);
        if (setgid(65534) || setuid(65534)) test_skip("running as root and cannot drop to uid 65534 to test permissions");
        if (access(path_of("d"), X_OK)) test_skip("uid 65534 cannot reach the scratch folder (a parent is not world-searchable)");
    }
    if (access(path_of("d/b_dog/secret.png"), R_OK) == 0) test_skip("this user reads files whatever their permissions");
    xt_folder f;
    xt_err e = {0};
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 0, NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/d_locked: cannot list this folder: Permission denied; fix its permissions");
    g_warn[0] = 0, g_nwarn = 0;
    CHECK_EQ(xt_folder_scan(&f, path_of("d"), "train_dir", 1, warn, NULL, &e), 0);
    CHECK_STR_CONTAINS(g_warn, "d_locked: cannot list this folder");
    xt_cache_opts o = cache_opts(0, 1);
    xt_image_set s;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "d/b_dog/secret.png: cannot open: Permission denied");
    o.skip = 1;
    CHECK_EQ(xt_image_cache_open(&s, &f, NULL, 0, &o, &e), 0);
    CHECK_EQ(s.skipped, 1);
    CHECK_EQ(s.n, 5);
    xt_image_set_close(&s);
    xt_folder_free(&f);
}
