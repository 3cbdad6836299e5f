/* test_hardening.c — hostile and damaged files, one test per finding of
 * issue 13, each file built here by the test itself (the repository holds
 * none): checkpoint metadata edited or out of range, a gzip bomb, FIFOs as
 * inputs, a huge sparse checkpoint, symlinks planted where xlatrain writes,
 * temp files of a killed run, torn gzip files, and the smaller ones (a
 * read-only output directory, a file that is not YAML, a NUL in a string).
 * Each asserts one clear line, the documented exit code and, where the old
 * code went wrong by size, bounded memory and time of the child measured
 * with wait4(). Not here: random mutation (tests/fuzz/). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data/idx.h"
#include "io/safetensors.h"
#include "test.h"

#define SMALL "--config configs/smoke.yaml --set synthetic_train_size=512 --set synthetic_test_size=128 --set log_steps=0 --set target_accuracy=0"

static char g_out[1 << 16];

static int xl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int xl(const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    /* timeout: on the old code a FIFO blocked forever */
    snprintf(cmd, sizeof cmd, "timeout 60 %s %s", test_bin(), args);
    return test_run(cmd, g_out, sizeof g_out);
}

/* Run the binary with `args` (stdin from /dev/null, output into g_out) and
 * measure it: peak RSS in MB and wall seconds. Returns the exit code. */
typedef struct measured {
    double rss_mb, secs;
} measured;

static int xl_measured(measured *m, const char *args) {
    char cmd[8192], outp[600];
    snprintf(outp, sizeof outp, "%s/measured.out", test_tmpdir());
    snprintf(cmd, sizeof cmd, "exec %s %s >%s 2>&1 </dev/null", test_bin(), args, outp);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {}
    clock_gettime(CLOCK_MONOTONIC, &t1);
    m->rss_mb = (double)ru.ru_maxrss / 1024.0;
    m->secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    FILE *f = fopen(outp, "r");
    size_t n = f ? fread(g_out, 1, sizeof g_out - 1, f) : 0;
    g_out[n] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *path_in(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_in(const char *fmt, ...) {
    static char bufs[256][1024]; /* enough for every path one test names */
    static int k;
    char *b = bufs[k++ % 256];
    int o = snprintf(b, 1024, "%s/", test_tmpdir());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + o, 1024 - (size_t)o, fmt, ap);
    va_end(ap);
    return b;
}

/* One trained epoch in <tmp>/r, for the tests that need a checkpoint. */
static void train_one_epoch(void) {
    int rc = xl(SMALL " --set num_epochs=1 --set output_dir=%s", path_in("r"));
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
}

/* ---- 1. checkpoint metadata ------------------------------------------------ */

/* Rewrite the checkpoint at src into dst with metadata `key` set to value,
 * through the library, so the file is well formed and correctly checksummed:
 * only xlatrain's own range checks stand between it and the loop. */
static void rewrite_meta(const char *src, const char *dst, const char *key, const char *value) {
    xt_st_file f;
    xt_err e = {0};
    CHECK_MSG(xt_st_read(src, &f, &e) == 0, "%s", e.msg);
    xt_st_meta m[64];
    int nm = 0;
    for (int i = 0; i < f.nmeta && nm < 64; i++) {
        if (!strcmp(f.meta[i].key, XT_ST_CRC_KEY) || !strcmp(f.meta[i].key, XT_ST_SUM_KEY)) continue;
        m[nm] = f.meta[i];
        if (!strcmp(m[nm].key, key)) m[nm].value = value;
        nm++;
    }
    CHECK_MSG(xt_st_write(dst, f.tensors, f.ntensors, m, nm, &e) == 0, "%s", e.msg);
    xt_st_close(&f);
}

TEST(hardening_1_checkpoint_metadata_is_range_checked) {
    train_one_epoch();
    const char *ck = path_in("r/checkpoint-epoch001.safetensors");
    static const struct {
        const char *key, *value;
    } cases[] = {
        {"xlatrain.next_epoch", "2147483647"},   /* overflowed int: 'epoch -2147483648' */
        {"xlatrain.next_epoch", "-5"},           /* trained epochs -4.. */
        {"xlatrain.next_epoch", "4294967297"},   /* truncated to 1 */
        {"xlatrain.global_step", "99999999999999999999"},
        {"xlatrain.optimizer_steps", "99999999999999999999"},
        {"xlatrain.step_in_epoch", "-1"},
        {"xlatrain.next_epoch", "1x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *bad = path_in("bad%zu.safetensors", i);
        rewrite_meta(ck, bad, cases[i].key, cases[i].value);
        int rc = xl(SMALL " --set num_epochs=2 --set output_dir=%s --resume %s", path_in("o%zu", i), bad);
        CHECK_MSG(rc == 4, "%s=%s: exit %d: %s", cases[i].key, cases[i].value, rc, g_out);
        CHECK_STR_CONTAINS(g_out, cases[i].key);
        CHECK_STR_CONTAINS(g_out, "not an integer from");
        CHECK(strstr(g_out, "Finished training") == NULL);
        CHECK(strstr(g_out, "runtime error") == NULL); /* UBSan, in make asan */
    }
}

TEST(hardening_1_checkpoint_metadata_is_checksummed) {
    train_one_epoch();
    /* edit a metadata value by hand, same length so the file stays well formed */
    FILE *f = fopen(path_in("r/checkpoint-epoch001.safetensors"), "r+b");
    CHECK(f != NULL);
    if (!f) return;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    const char *needle = "\"xlatrain.next_epoch\":\"1\"";
    char *at = memmem(buf, n, needle, strlen(needle));
    CHECK(at != NULL);
    if (!at) {
        fclose(f);
        return;
    }
    fseek(f, (long)(at - buf) + (long)strlen(needle) - 2, SEEK_SET);
    fputc('7', f);
    fclose(f);
    int rc = xl(SMALL " --set num_epochs=9 --set output_dir=%s --resume %s", path_in("o"),
                path_in("r/checkpoint-epoch001.safetensors"));
    CHECK_MSG(rc == 4, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "checkpoint-epoch001.safetensors: checksum mismatch");
    CHECK_STR_CONTAINS(g_out, "metadata");
}

/* ---- 2. a gzip bomb ---------------------------------------------------------- */

/* <dir>/train-images-idx3-ubyte.gz: a valid gzip member whose IDX header
 * claims 2^31-1 images of 28x28 and which inflates to 4 GiB of zeros, from
 * about 4 MB on disk. Built by deflating one 1 MiB block of zeros after a
 * full flush (which resets the history, so every such block compresses to
 * the same bytes) and repeating those bytes; the trailer's CRC32 and ISIZE
 * are computed with crc32_combine. */
static void write_bomb(const char *path) {
    enum { MB = 1 << 20 };
    static unsigned char zeros[MB], out[2 * MB], block[2 * MB];
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, 16 + 15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    unsigned char hdr[16] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28};
    /* the header, then one block of zeros, flushed: gzip header + IDX header */
    uLong crc = crc32(0, hdr, 16);
    zs.next_in = hdr;
    zs.avail_in = 16;
    zs.next_out = out;
    zs.avail_out = sizeof out;
    CHECK(deflate(&zs, Z_FULL_FLUSH) == Z_OK);
    fwrite(out, 1, sizeof out - zs.avail_out, f);
    /* the repeated block: the same compressed bytes twice in a row proves it */
    size_t blen = 0;
    for (int k = 0; k < 2; k++) {
        zs.next_in = zeros;
        zs.avail_in = MB;
        zs.next_out = k ? out : block;
        zs.avail_out = sizeof out;
        CHECK(deflate(&zs, Z_FULL_FLUSH) == Z_OK);
        size_t len = sizeof out - zs.avail_out;
        if (k) CHECK(len == blen && !memcmp(out, block, len));
        blen = len;
    }
    uLong zc = crc32(0, zeros, MB);
    const int nblocks = 4096; /* 4 GiB */
    fwrite(block, 1, blen, f);
    fwrite(block, 1, blen, f);
    for (int k = 2; k < nblocks; k++) fwrite(block, 1, blen, f);
    for (int k = 0; k < nblocks; k++) crc = crc32_combine(crc, zc, MB);
    /* the final empty block and zlib's trailer, which we replace */
    zs.next_in = zeros;
    zs.avail_in = 0;
    zs.next_out = out;
    zs.avail_out = sizeof out;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t len = sizeof out - zs.avail_out;
    uint32_t isize = (uint32_t)(16 + (uint64_t)nblocks * MB);
    for (int i = 0; i < 4; i++) {
        out[len - 8 + i] = (unsigned char)(crc >> (8 * i));
        out[len - 4 + i] = (unsigned char)(isize >> (8 * i));
    }
    fwrite(out, 1, len, f);
    deflateEnd(&zs);
    CHECK(fclose(f) == 0);
}

TEST(hardening_2_gzip_bomb_is_refused_in_bounded_memory_and_time) {
    write_bomb(path_in("train-images-idx3-ubyte.gz"));
    test_write_file("train-labels-idx1-ubyte", ""); /* never reached: the images come first */
    struct stat st;
    CHECK(stat(path_in("train-images-idx3-ubyte.gz"), &st) == 0 && st.st_size < (16 << 20));
    char args[2048];
    snprintf(args, sizeof args, SMALL " --set dataset=mnist --set datadir=%s --set output_dir=%s", test_tmpdir(),
             path_in("o"));
    measured m;
    int rc = xl_measured(&m, args);
    fprintf(stderr, "    gzip bomb: exit %d, peak RSS %.1f MB, %.2f s\n", rc, m.rss_mb, m.secs);
    CHECK_MSG(rc == 3, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "train-images-idx3-ubyte.gz: header says 2,147,483,647 images");
    CHECK_MSG(m.rss_mb < 300, "peak RSS %.1f MB", m.rss_mb);
    CHECK_MSG(m.secs < 5, "%.2f s", m.secs);
}

/* ---- 3. FIFOs ------------------------------------------------------------------ */

TEST(hardening_3_fifos_are_refused_not_waited_on) {
    CHECK(mkdir(path_in("r"), 0777) == 0);
    CHECK(mkfifo(path_in("r/checkpoint-epoch001.safetensors"), 0666) == 0);
    int rc = xl(SMALL " --set output_dir=%s --resume latest --eval-only", path_in("r"));
    CHECK_MSG(rc == 4, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "checkpoint-epoch001.safetensors: is a FIFO, not a regular file");
    rc = xl(SMALL " --set num_epochs=2 --set output_dir=%s --resume latest", path_in("r"));
    CHECK_MSG(rc == 4, "exit %d: %s", rc, g_out);

    CHECK(mkfifo(path_in("c.yaml"), 0666) == 0);
    rc = xl("--config %s --dry-run", path_in("c.yaml"));
    CHECK_MSG(rc == 2, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "c.yaml: is a FIFO, not a regular file");

    CHECK(mkfifo(path_in("m.yaml"), 0666) == 0);
    rc = xl(SMALL " --set model=%s --dry-run", path_in("m.yaml"));
    CHECK_MSG(rc == 2, "exit %d: %s", rc, g_out); /* the model lookup takes regular files only */
    CHECK_STR_CONTAINS(g_out, "m.yaml");

    test_write_file("train-labels-idx1-ubyte", "");
    CHECK(mkfifo(path_in("train-images-idx3-ubyte"), 0666) == 0);
    rc = xl(SMALL " --set dataset=mnist --set datadir=%s --set output_dir=%s", test_tmpdir(), path_in("o"));
    CHECK_MSG(rc == 3, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "train-images-idx3-ubyte: is a FIFO");
}

/* ---- 4. a huge sparse checkpoint ---------------------------------------------- */

TEST(hardening_4_sparse_checkpoint_is_refused_before_reading_it) {
    const char *p = path_in("huge.safetensors");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)1 << 30) == 0); /* 1 GiB of holes: length field 0 */
    close(fd);
    char args[2048];
    snprintf(args, sizeof args, SMALL " --set output_dir=%s --resume %s", path_in("o"), p);
    measured m;
    int rc = xl_measured(&m, args);
    fprintf(stderr, "    1 GiB sparse checkpoint: exit %d, peak RSS %.1f MB, %.2f s\n", rc, m.rss_mb, m.secs);
    CHECK_MSG(rc == 4, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "huge.safetensors: the header does not start with '{'");
    CHECK_MSG(m.rss_mb < 300, "peak RSS %.1f MB", m.rss_mb);
    CHECK_MSG(m.secs < 5, "%.2f s", m.secs);
}

/* ---- 5. symlinks where xlatrain writes --------------------------------------- */

static long file_size(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0 ? (long)st.st_size : -1;
}

TEST(hardening_5_symlinks_are_not_followed_when_writing) {
    train_one_epoch();
    const char *victim = path_in("victim");
    test_write_file("victim", "precious\n");
    /* metrics.jsonl, appended to on --resume */
    CHECK(unlink(path_in("r/metrics.jsonl")) == 0);
    CHECK(symlink(victim, path_in("r/metrics.jsonl")) == 0);
    int rc = xl(SMALL " --set num_epochs=2 --set output_dir=%s --resume latest", path_in("r"));
    CHECK_MSG(rc == 5, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "metrics.jsonl: it is a symbolic link");
    CHECK_EQ(file_size(victim), 9);

    /* save_graphs: learn the dump names, plant symlinks there, dump again */
    rc = xl(SMALL " --set num_epochs=1 --set output_dir=%s --set save_graphs=%s", path_in("g1"), path_in("graphs"));
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && n=0 && for f in graph-*; do rm \"$f\" && ln -s %s \"$f\" && n=$((n+1)); done && echo $n",
             path_in("graphs"), victim);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    int links = atoi(g_out);
    CHECK(links >= 3);
    rc = xl(SMALL " --set num_epochs=1 --set output_dir=%s --set save_graphs=%s", path_in("g2"), path_in("graphs"));
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_EQ(file_size(victim), 9);
    snprintf(cmd, sizeof cmd, "find %s -type l | wc -l", path_in("graphs"));
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
    /* each link refused (atomic.h replaces only regular files), never
     * followed: its target untouched */
    CHECK_EQ(atoi(g_out), links);
}

/* ---- 6. temp files of a killed run --------------------------------------------- */

TEST(hardening_6_dead_processes_temp_files_are_removed) {
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0); /* reaped: this pid names no process now */
    CHECK(mkdir(path_in("r"), 0777) == 0);
    char stale[64], live[64];
    snprintf(stale, sizeof stale, "r/checkpoint-epoch001.safetensors.tmp.%ld", (long)dead);
    snprintf(live, sizeof live, "r/results.json.tmp.%ld", (long)getpid());
    test_write_file(stale, "half a checkpoint");
    test_write_file(live, "someone else's write in progress");
    test_write_file("r/notes.txt", "the user's");
    int rc = xl(SMALL " --set num_epochs=1 --set output_dir=%s", path_in("r"));
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    CHECK_EQ(file_size(path_in("%s", stale)), -1);
    CHECK(file_size(path_in("%s", live)) > 0);
    CHECK(file_size(path_in("r/notes.txt")) > 0);
}

/* ---- 7. torn gzip -------------------------------------------------------------- */

/* A gzip labels file of n labels 0..9 at path; returns its size. */
static long write_labels_gz(const char *path, int n) {
    gzFile g = gzopen(path, "wb9");
    CHECK(g != NULL);
    unsigned char hdr[8] = {0, 0, 8, 1, (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                            (unsigned char)n};
    gzwrite(g, hdr, 8);
    for (int i = 0; i < n; i++) {
        unsigned char v = (unsigned char)((i * 7) % 10);
        gzwrite(g, &v, 1);
    }
    gzclose(g);
    return file_size(path);
}

TEST(hardening_7_torn_gzip_and_trailing_garbage_are_refused) {
    const char *good = path_in("good.gz");
    long n = write_labels_gz(good, 3000);
    xt_idx x;
    xt_err e = {0};
    CHECK_EQ(xt_idx_read_labels(good, 10, &x, &e), 0);
    xt_idx_free(&x);
    char cmd[2048];
    for (int cut = 1; cut <= 9; cut++) {
        snprintf(cmd, sizeof cmd, "head -c %ld %s > %s", n - cut, good, path_in("torn%d.gz", cut));
        CHECK_EQ(test_run(cmd, NULL, 0), 0);
        memset(&e, 0, sizeof e);
        int rc = xt_idx_read_labels(path_in("torn%d.gz", cut), 10, &x, &e);
        CHECK_MSG(rc == XT_EDATA, "%d bytes cut: %d %s", cut, rc, e.msg);
        CHECK_STR_CONTAINS(e.msg, path_in("torn%d.gz", cut));
    }
    /* garbage after a complete member */
    snprintf(cmd, sizeof cmd, "cat %s > %s && printf 'garbage' >> %s", good, path_in("tail.gz"), path_in("tail.gz"));
    CHECK_EQ(test_run(cmd, NULL, 0), 0);
    CHECK_EQ(xt_idx_read_labels(path_in("tail.gz"), 10, &x, &e), XT_EDATA);
    CHECK_STR_CONTAINS(e.msg, "7 bytes of garbage after the end of the gzip data");

    /* and through the binary: exit 3 naming the file */
    const char *img = path_in("train-images.gz");
    gzFile g = gzopen(img, "wb9");
    CHECK(g != NULL);
    unsigned char hdr[16] = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 28, 0, 0, 0, 28};
    static unsigned char px[4 * 784];
    gzwrite(g, hdr, 16);
    gzwrite(g, px, sizeof px);
    gzclose(g);
    test_write_file("train-labels-idx1-ubyte", "");
    for (int cut = 0; cut <= 9; cut++) { /* cut 0: garbage appended instead */
        const char *torn = path_in("torn%d-images.gz", cut);
        if (cut) snprintf(cmd, sizeof cmd, "head -c %ld %s > %s", file_size(img) - cut, img, torn);
        else snprintf(cmd, sizeof cmd, "cat %s > %s && printf 'garbage' >> %s", img, torn, torn);
        CHECK_EQ(test_run(cmd, NULL, 0), 0);
        int rc = xl(SMALL " --set dataset=mnist --set datadir=%s --set train_images=%s --set output_dir=%s",
                    test_tmpdir(), torn, path_in("o%d", cut)); /* one run per directory */
        CHECK_MSG(rc == 3, "cut %d: exit %d: %s", cut, rc, g_out);
        char want[64];
        snprintf(want, sizeof want, "torn%d-images.gz: ", cut);
        CHECK_STR_CONTAINS(g_out, want);
    }
}

/* ---- 8. the smaller ones ------------------------------------------------------- */

TEST(hardening_8_read_only_output_dir_is_found_before_training) {
    train_one_epoch();
    /* root writes anywhere: then run as nobody, through setpriv */
    const char *as = "";
    if (geteuid() == 0) {
        if (access("/usr/bin/setpriv", X_OK) != 0) test_skip("running as root and no setpriv to drop privileges");
        as = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups ";
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "chmod -R a+rX %s", test_tmpdir());
        CHECK_EQ(test_run(cmd, NULL, 0), 0);
    }
    CHECK(chmod(path_in("r"), 0555) == 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "timeout 60 %s%s " SMALL " --set num_epochs=2 --set output_dir=%s --resume latest", as,
             test_bin(), path_in("r"));
    int rc = test_run(cmd, g_out, sizeof g_out);
    chmod(path_in("r"), 0777);
    CHECK_MSG(rc == 5, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "Permission denied");
    CHECK(strstr(g_out, "Finished training epoch 2") == NULL);
}

TEST(hardening_8_messages_do_not_quote_foreign_files) {
    test_write_file("secret.txt", "root:x:0:0:root:/root:/bin/bash\nhunter2\n");
    int rc = xl(SMALL " --set model=%s --dry-run", path_in("secret.txt"));
    CHECK_MSG(rc == 2, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "secret.txt:1:1: a model spec is a mapping");
    CHECK(strstr(g_out, "root:x") == NULL);
    CHECK(strstr(g_out, "hunter2") == NULL);
}

/* A --set string value is taken verbatim (paths may hold ':' or '#'), so it
 * is the one way bytes that are not UTF-8 could reach config.yaml and
 * results.json: refused, naming the byte. A config file whose own name is not
 * UTF-8 (a Linux name may be any bytes) still runs, and its recorded
 * config.yaml (the command line in its comment) loads again. Found by
 * fuzz_config (regressions/config/set-string-not-utf8.bin). */
TEST(hardening_8_strings_that_are_not_utf8_never_reach_yaml_or_json) {
    int rc = xl("--config configs/smoke.yaml --dry-run --set 'train_images=x\230.gz'");
    CHECK_MSG(rc == 2, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "train_images: the value is not valid UTF-8 (byte 0x98 at offset 1)");
    char cfg[600], out[600];
    snprintf(cfg, sizeof cfg, "%s/s\230.yaml", test_tmpdir());
    snprintf(out, sizeof out, "%s/run", test_tmpdir());
    FILE *f = fopen(cfg, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("dataset: synthetic\nmodel: mlp\nnum_epochs: 1\nsynthetic_train_size: 256\nsynthetic_test_size: 64\n", f);
    fclose(f);
    rc = xl("--config '%s' --set output_dir=%s --set target_accuracy=0", cfg, out);
    CHECK_MSG(rc == 0, "exit %d: %s", rc, g_out);
    rc = xl("--config %s/config.yaml --dry-run", out);
    CHECK_MSG(rc == 0, "the recorded config does not load: exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "# command: "); /* --dry-run prints the recorded file's comment lines too */
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "grep -c 's\\\\x98.yaml' %s/config.yaml", out);
    CHECK_EQ(test_run(cmd, g_out, sizeof g_out), 0);
}

TEST(hardening_8_yaml_string_with_nul_is_refused) {
    const char *p = test_write_file("c.yaml", "dataset: synthetic\nmodel: models/mlp.yaml\noutput_dir: \"runs/a\\0b\"\n");
    int rc = xl("--config %s --dry-run", p);
    CHECK_MSG(rc == 2, "exit %d: %s", rc, g_out);
    CHECK_STR_CONTAINS(g_out, "c.yaml:3:13: a string contains a NUL character");
}
