/* test_data_download.c — MD5 (RFC 1321 vectors, chunking, the published
 * checksums against the real t10k files) and downloading: from a local file://
 * mirror through curl, mirror fallback, checksum mismatch (nothing left under
 * the final name, no .part), offline failure that is fast and says where to
 * put the files, and the same behaviours from data/fetch.sh.
 */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/download.h"
#include "data/md5.h"
#include "test.h"

TEST(md5_rfc1321_test_vectors) {
    static const char *const v[][2] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    char hex[33];
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        xt_md5_hex(v[i][0], strlen(v[i][0]), hex);
        CHECK_MSG(!strcmp(hex, v[i][1]), "MD5(\"%s\") = %s, expected %s", v[i][0], hex, v[i][1]);
    }
}

TEST(md5_same_digest_for_any_chunking) {
    enum { N = 300007 };
    uint8_t *buf = malloc(N);
    uint32_t x = 1;
    for (int i = 0; i < N; i++) buf[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
    char whole[33], file_hex[33];
    xt_md5_hex(buf, N, whole);
    const size_t chunks[] = {1, 55, 56, 63, 64, 65, 119, 4096};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        xt_md5 m;
        uint8_t d[16];
        char hex[33];
        xt_md5_init(&m);
        for (size_t off = 0; off < N; off += chunks[c])
            xt_md5_update(&m, buf + off, off + chunks[c] > N ? N - off : chunks[c]);
        xt_md5_final(&m, d);
        for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
        CHECK_MSG(!strcmp(hex, whole), "chunk %zu: %s vs %s", chunks[c], hex, whole);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/blob", test_tmpdir());
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, N, f);
    fclose(f);
    xt_err e = {0};
    CHECK_EQ(xt_md5_file(path, file_hex, &e), 0);
    CHECK(!strcmp(file_hex, whole));
    CHECK_EQ(xt_md5_file("/nonexistent/x", file_hex, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "/nonexistent/x");
    free(buf);
}

static const char *shared_t10k(void) {
    static char dir[1024];
    const char *env = getenv("XLATRAIN_SHARED");
    snprintf(dir, sizeof dir, "%s/data/mnist-t10k", env && *env ? env : "../shared");
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/t10k-labels-idx1-ubyte.gz", dir);
    return access(probe, R_OK) == 0 ? dir : NULL;
}

TEST(md5_published_checksums_match_the_real_t10k_files) {
    CHECK(!strcmp(xt_download_md5(XT_DATA_MNIST, "train-images-idx3-ubyte.gz"), "f68b3c2dcbeaaa9fbdd348bbdeb94873"));
    CHECK(!strcmp(xt_download_md5(XT_DATA_FASHION_MNIST, "t10k-labels-idx1-ubyte.gz"),
                  "bb300cfdad3c16e7a12a480ee83cd310"));
    CHECK(xt_download_md5(XT_DATA_SYNTHETIC, "t10k-labels-idx1-ubyte.gz") == NULL);
    CHECK(xt_download_md5(XT_DATA_MNIST, "t10k-labels-idx1-ubyte") == NULL);
    const char *dir = shared_t10k();
    if (!dir) test_skip("no ../shared/data/mnist-t10k: real-data check skipped");
    const char *names[] = {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 2; i++) {
        char path[1200], hex[33];
        xt_err e = {0};
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK_EQ(xt_md5_file(path, hex, &e), 0);
        CHECK(!strcmp(hex, xt_download_md5(XT_DATA_MNIST, names[i])));
    }
}

/* ---- downloading through curl from file:// mirrors ----------------------------- */

/* dir as an absolute path (curl's file:// URLs need one). */
static const char *abs_path(const char *dir) {
    static char buf[2100];
    char cwd[1024];
    if (dir[0] == '/' || !getcwd(cwd, sizeof cwd)) return dir;
    snprintf(buf, sizeof buf, "%s/%s", cwd, dir);
    return buf;
}

static void need_curl(void) {
    if (system("command -v curl >/dev/null 2>&1") != 0) test_skip("curl not installed");
}

/* <tmpdir>/<sub>, created */
static const char *subdir(const char *sub) {
    static char bufs[4][600];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, 600, "%s/%s", test_tmpdir(), sub);
    mkdir(p, 0777);
    return p;
}

static void put_file(const char *dir, const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
}

static int exists(const char *dir, const char *name) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static char g_notes[4096];
static void collect(void *ctx, const char *line) {
    (void)ctx;
    strncat(g_notes, line, sizeof g_notes - strlen(g_notes) - 2);
    strcat(g_notes, "\n");
}

TEST(download_from_a_mirror_verifies_then_renames) {
    need_curl();
    const char *mirror = subdir("mirror"), *dest = subdir("dest/nested");
    put_file(mirror, "t10k-labels-idx1-ubyte.gz", "pretend labels");
    char md5[33], url[700];
    xt_md5_hex("pretend labels", 14, md5);
    snprintf(url, sizeof url, "file://%s", mirror); /* no trailing slash: one is added */
    const char *mirrors[] = {url};
    xt_err e = {0};
    g_notes[0] = 0;
    CHECK_MSG(xt_download_file(mirrors, 1, dest, "t10k-labels-idx1-ubyte.gz", md5, collect, NULL, &e) == 0, "%s",
              e.msg);
    CHECK(exists(dest, "t10k-labels-idx1-ubyte.gz"));
    CHECK(!exists(dest, "t10k-labels-idx1-ubyte.gz.part"));
    CHECK_STR_CONTAINS(g_notes, "downloaded from file://");
    CHECK_STR_CONTAINS(g_notes, "MD5 ok");
    /* a second run keeps the verified file */
    g_notes[0] = 0;
    CHECK_EQ(xt_download_file(mirrors, 1, dest, "t10k-labels-idx1-ubyte.gz", md5, collect, NULL, &e), 0);
    CHECK_STR_CONTAINS(g_notes, "already present, MD5 ok");
}

TEST(download_falls_back_to_the_next_mirror) {
    need_curl();
    const char *empty = subdir("empty"), *good = subdir("good"), *dest = subdir("dest");
    put_file(good, "x.gz", "the data");
    char md5[33], u1[700], u2[700];
    xt_md5_hex("the data", 8, md5);
    snprintf(u1, sizeof u1, "file://%s/", empty);
    snprintf(u2, sizeof u2, "file://%s/", good);
    const char *mirrors[] = {u1, u2};
    xt_err e = {0};
    g_notes[0] = 0;
    CHECK_MSG(xt_download_file(mirrors, 2, dest, "x.gz", md5, collect, NULL, &e) == 0, "%s", e.msg);
    CHECK_STR_CONTAINS(g_notes, u2);
    /* a file present with the wrong content is replaced */
    put_file(dest, "x.gz", "stale");
    g_notes[0] = 0;
    CHECK_EQ(xt_download_file(mirrors, 2, dest, "x.gz", md5, collect, NULL, &e), 0);
    CHECK_STR_CONTAINS(g_notes, "MD5 is wrong; downloading it again");
    char hex[33], p[1200];
    snprintf(p, sizeof p, "%s/x.gz", dest);
    CHECK_EQ(xt_md5_file(p, hex, &e), 0);
    CHECK(!strcmp(hex, md5));
}

TEST(download_checksum_mismatch_leaves_nothing_behind) {
    need_curl();
    const char *mirror = subdir("mirror"), *dest = subdir("dest");
    put_file(mirror, "train-images-idx3-ubyte.gz", "<html>captive portal</html>");
    char url[700];
    snprintf(url, sizeof url, "file://%s/", mirror);
    const char *mirrors[] = {url};
    xt_err e = {0};
    CHECK_EQ(xt_download_file(mirrors, 1, dest, "train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", NULL,
                              NULL, &e),
             XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "could not download train-images-idx3-ubyte.gz into");
    CHECK_STR_CONTAINS(e.msg, "MD5 mismatch (got ");
    CHECK_STR_CONTAINS(e.msg, "expected f68b3c2dcbeaaa9fbdd348bbdeb94873");
    CHECK(!exists(dest, "train-images-idx3-ubyte.gz"));
    CHECK(!exists(dest, "train-images-idx3-ubyte.gz.part"));
}

TEST(download_offline_fails_fast_and_says_where_to_put_files) {
    need_curl();
    const char *dest = subdir("mnist");
    /* nothing listens on port 1: the connection is refused at once, as a
     * missing network fails DNS at once */
    setenv("XLATRAIN_DATA_MIRROR", "http://127.0.0.1:1/mnist/", 1);
    xt_err e = {0};
    time_t t0 = time(NULL);
    CHECK_EQ(xt_download_dataset(XT_DATA_MNIST, dest, NULL, NULL, &e), XT_EDATA);
    CHECK(time(NULL) - t0 < 8);
    CHECK_STR_CONTAINS(e.msg, "could not download train-images-idx3-ubyte.gz");
    CHECK_STR_CONTAINS(e.msg, "http://127.0.0.1:1/mnist/train-images-idx3-ubyte.gz: curl: ");
    CHECK_STR_CONTAINS(e.msg, "copy the files into");
    CHECK_STR_CONTAINS(e.msg, dest);
    CHECK_STR_CONTAINS(e.msg, "dataset: synthetic");
    CHECK(strchr(e.msg, '\n') == NULL);
    /* it stopped at the first file and left nothing */
    CHECK(!exists(dest, "train-images-idx3-ubyte.gz.part"));
    CHECK(!exists(dest, "train-labels-idx1-ubyte.gz"));
    unsetenv("XLATRAIN_DATA_MIRROR");
    CHECK_EQ(xt_download_dataset(XT_DATA_SYNTHETIC, dest, NULL, NULL, &e), XT_EUSAGE);
    CHECK_EQ(xt_download_dataset(XT_DATA_MNIST, "", NULL, NULL, &e), XT_EUSAGE);
}

TEST(download_dataset_from_a_local_mirror_with_the_real_files) {
    need_curl();
    const char *dir = shared_t10k();
    if (!dir) test_skip("no ../shared/data/mnist-t10k: real-data check skipped");
    /* the two t10k files come from the mirror; the two train files are
     * already in place uncompressed, which the downloader accepts as is */
    const char *dest = subdir("mnist");
    put_file(dest, "train-images-idx3-ubyte", "x");
    put_file(dest, "train-labels-idx1-ubyte", "x");
    char url[2200];
    snprintf(url, sizeof url, "file://%s/", abs_path(dir));
    setenv("XLATRAIN_DATA_MIRROR", url, 1);
    xt_err e = {0};
    g_notes[0] = 0;
    CHECK_MSG(xt_download_dataset(XT_DATA_MNIST, dest, collect, NULL, &e) == 0, "%s", e.msg);
    CHECK(exists(dest, "t10k-images-idx3-ubyte.gz"));
    CHECK(exists(dest, "t10k-labels-idx1-ubyte.gz"));
    CHECK_STR_CONTAINS(g_notes, "train-images-idx3-ubyte: present (uncompressed");
    CHECK_STR_CONTAINS(g_notes, "t10k-images-idx3-ubyte.gz: downloaded from file://");
    unsetenv("XLATRAIN_DATA_MIRROR");
}

/* ---- data/fetch.sh (run from the repository root, the tests' CWD) ------------- */

TEST(fetch_sh_verifies_and_fails_clearly) {
    need_curl();
    if (access("data/fetch.sh", R_OK) != 0) test_skip("data/fetch.sh not found from the current directory");
    const char *mirror = subdir("mirror"), *dest = subdir("out");
    put_file(mirror, "t10k-labels-idx1-ubyte.gz", "not the real file");
    char cmd[2000], out[4096];
    snprintf(cmd, sizeof cmd, "XLATRAIN_DATA_MIRROR=file://%s/ sh data/fetch.sh mnist %s t10k-labels-idx1-ubyte.gz",
             mirror, dest);
    CHECK_EQ(test_run(cmd, out, sizeof out), 1);
    CHECK_STR_CONTAINS(out, "could not download t10k-labels-idx1-ubyte.gz into");
    CHECK_STR_CONTAINS(out, "MD5 mismatch (got ");
    CHECK_STR_CONTAINS(out, "dataset: synthetic");
    CHECK(!exists(dest, "t10k-labels-idx1-ubyte.gz"));
    CHECK(!exists(dest, "t10k-labels-idx1-ubyte.gz.part"));

    time_t t0 = time(NULL);
    snprintf(cmd, sizeof cmd, "XLATRAIN_DATA_MIRROR=http://127.0.0.1:1/ sh data/fetch.sh fashion_mnist %s", dest);
    CHECK_EQ(test_run(cmd, out, sizeof out), 1);
    CHECK(time(NULL) - t0 < 8);
    CHECK_STR_CONTAINS(out, "could not download train-images-idx3-ubyte.gz");
    CHECK_STR_CONTAINS(out, "copy the files into");

    CHECK_EQ(test_run("sh data/fetch.sh", out, sizeof out), 2);
    CHECK_STR_CONTAINS(out, "usage: sh data/fetch.sh mnist|fashion_mnist|cifar10 DIR");
    CHECK_EQ(test_run("sh data/fetch.sh cifar100 /tmp/x", out, sizeof out), 2);
    CHECK_STR_CONTAINS(out, "unknown dataset 'cifar100'");
}

TEST(fetch_sh_fetches_the_real_t10k_files) {
    need_curl();
    const char *dir = shared_t10k();
    if (!dir) test_skip("no ../shared/data/mnist-t10k: real-data check skipped");
    if (access("data/fetch.sh", R_OK) != 0) test_skip("data/fetch.sh not found from the current directory");
    const char *dest = subdir("mnist");
    char cmd[4000], out[4096];
    snprintf(cmd, sizeof cmd,
             "XLATRAIN_DATA_MIRROR=file://%s/ sh data/fetch.sh mnist %s t10k-images-idx3-ubyte.gz "
             "t10k-labels-idx1-ubyte.gz",
             abs_path(dir), dest);
    CHECK_EQ(test_run(cmd, out, sizeof out), 0);
    CHECK_STR_CONTAINS(out, "t10k-images-idx3-ubyte.gz: downloaded from file://");
    CHECK(exists(dest, "t10k-labels-idx1-ubyte.gz"));
    CHECK_EQ(test_run(cmd, out, sizeof out), 0);
    CHECK_STR_CONTAINS(out, "t10k-labels-idx1-ubyte.gz: already present, MD5 ok");
}

TEST(download_uses_wget_without_curl_and_says_when_neither_exists) {
    if (access("/usr/bin/wget", X_OK) != 0) test_skip("no /usr/bin/wget");
    const char *bin = subdir("bin"), *dest = subdir("dest");
    char link[700];
    snprintf(link, sizeof link, "%s/wget", bin);
    CHECK(symlink("/usr/bin/wget", link) == 0);
    setenv("PATH", bin, 1); /* this test runs in its own child process */
    const char *mirrors[] = {"http://127.0.0.1:1/"};
    xt_err e = {0};
    CHECK_EQ(xt_download_file(mirrors, 1, dest, "x.gz", "00000000000000000000000000000000", NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "http://127.0.0.1:1/x.gz: wget: ");
    CHECK(!exists(dest, "x.gz") && !exists(dest, "x.gz.part"));
    unlink(link);
    CHECK_EQ(xt_download_file(mirrors, 1, dest, "x.gz", "00000000000000000000000000000000", NULL, NULL, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "neither curl nor wget is installed");
    CHECK_STR_CONTAINS(e.msg, dest);
}
