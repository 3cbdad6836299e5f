/* test_io_safetensors.c — checkpoint format, validation, atomic writes and
 * the checkpoint directory (src/io/safetensors.c, atomic.c, ckptdir.c). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/atomic.h"
#include "io/ckptdir.h"
#include "io/safetensors.h"
#include "test.h"

/* ------------------------------------------------------------------ helpers */

static const char *tpath(const char *name) {
    static char bufs[8][1024];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, 1024, "%s/%s", test_tmpdir(), name);
    return p;
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A safetensors file from a literal header and data (no padding added). */
static const char *raw_file(const char *name, const char *header, const void *data, size_t ndata) {
    size_t hl = strlen(header);
    unsigned char *b = malloc(8 + hl + ndata + 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (ndata) memcpy(b + 8 + hl, data, ndata);
    const char *p = tpath(name);
    spit(p, b, 8 + hl + ndata);
    free(b);
    return p;
}

/* No "<name>.tmp.<pid>" left behind in dir. */
static int temp_files_in(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) n += strstr(de->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* Read `path` expecting XT_ERUNTIME with `what` and the path in the message. */
static void expect_corrupt(const char *path, const char *what) {
    xt_st_file f;
    xt_err e = {0};
    int rc = xt_st_read(path, &f, &e);
    CHECK_EQ(rc, XT_ERUNTIME);
    CHECK_EQ(e.code, XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, path);
    CHECK_STR_CONTAINS(e.msg, what);
    CHECK(strchr(e.msg, '\n') == NULL);
}

/* A small model-like checkpoint used by several tests. */
static float g_w[3 * 4 * 2 * 2];
static int64_t g_steps = 1234;
static uint8_t g_mask[3] = {1, 0, 1};

static int write_sample(const char *path, xt_err *e) {
    for (size_t i = 0; i < sizeof g_w / sizeof *g_w; i++) g_w[i] = (float)i * 0.5f - 3.0f;
    xt_st_tensor t[] = {
        {"conv.weight", XT_ST_F32, 4, {3, 4, 2, 2}, g_w, 0},
        {"mask", XT_ST_U8, 1, {3}, g_mask, 0},          /* odd size: the next one is unaligned in the file */
        {"num_batches_tracked", XT_ST_I64, 0, {0}, &g_steps, 0},
    };
    xt_st_meta m[] = {{"epoch", "7"}, {"note", "quote \" backslash \\ tab \t"}};
    return xt_st_write(path, t, 3, m, 2, e);
}

/* ------------------------------------------------------------------ format */

TEST(st_roundtrip_every_dtype_and_rank) {
    float s0 = 3.25f, f1[5] = {1, -2, 3.5f, 1e-30f, -0.0f}, f2[6], f3[24], f4[120];
    for (int i = 0; i < 6; i++) f2[i] = (float)i;
    for (int i = 0; i < 24; i++) f3[i] = (float)-i;
    for (int i = 0; i < 120; i++) f4[i] = (float)i / 7.0f;
    int64_t i64[3] = {INT64_MIN, -1, INT64_MAX};
    int32_t i32[2] = {INT32_MIN, 42};
    double f64[2] = {0.1, -1e300};
    uint8_t u8[7] = {0, 1, 2, 127, 128, 254, 255};
    xt_st_tensor t[] = {
        {"scalar", XT_ST_F32, 0, {0}, &s0, 0},
        {"r1", XT_ST_F32, 1, {5}, f1, 0},
        {"u8", XT_ST_U8, 1, {7}, u8, 0},
        {"r2", XT_ST_F32, 2, {2, 3}, f2, 0},
        {"empty", XT_ST_F32, 1, {0}, NULL, 0},
        {"r3", XT_ST_F32, 3, {2, 3, 4}, f3, 0},
        {"empty2d", XT_ST_I64, 2, {3, 0}, NULL, 0},
        {"r4", XT_ST_F32, 4, {2, 3, 4, 5}, f4, 0},
        {"i64", XT_ST_I64, 1, {3}, i64, 0},
        {"i32", XT_ST_I32, 1, {2}, i32, 0},
        {"f64", XT_ST_F64, 1, {2}, f64, 0},
    };
    int nt = (int)(sizeof t / sizeof *t);
    xt_st_meta m[] = {{"epoch", "12"}, {"unicode", "\xc3\xa9t\xc3\xa9"}};
    const char *p = tpath("rt.safetensors");
    xt_err e = {0};
    CHECK_EQ(xt_st_write(p, t, nt, m, 2, &e), 0);

    xt_st_file f;
    int rc = xt_st_read(p, &f, &e);
    CHECK_MSG(rc == 0, "read failed: %s", e.msg);
    if (rc) return;
    CHECK_EQ(f.ntensors, nt);
    for (int i = 0; i < nt && i < f.ntensors; i++) {
        const xt_st_tensor *r = &f.tensors[i];
        CHECK(strcmp(r->name, t[i].name) == 0); /* header order = the order given */
        CHECK_EQ(r->dtype, t[i].dtype);
        CHECK_EQ(r->rank, t[i].rank);
        size_t n = xt_st_dtype_size(t[i].dtype);
        for (int d = 0; d < t[i].rank; d++) {
            CHECK_EQ(r->shape[d], t[i].shape[d]);
            n *= (size_t)t[i].shape[d];
        }
        CHECK_EQ(r->nbytes, n);
        CHECK(r->data != NULL);
        CHECK_EQ((uintptr_t)r->data % 16, 0);
        if (n) CHECK(memcmp(r->data, t[i].data, n) == 0);
    }
    CHECK(xt_st_find(&f, "r4") == &f.tensors[7]);
    CHECK(xt_st_find(&f, "nope") == NULL);
    CHECK(strcmp(xt_st_meta_get(&f, "epoch"), "12") == 0);
    CHECK(strcmp(xt_st_meta_get(&f, "unicode"), "\xc3\xa9t\xc3\xa9") == 0);
    CHECK(strcmp(xt_st_meta_get(&f, "format"), "pt") == 0);
    CHECK(xt_st_meta_get(&f, XT_ST_SUM_KEY) != NULL);

    float back[24];
    CHECK_EQ(xt_st_copy(&f, "r3", XT_ST_F32, 3, (int64_t[]){2, 3, 4}, back, &e), 0);
    CHECK(memcmp(back, f3, sizeof back) == 0);
    CHECK_EQ(xt_st_copy(&f, "r3", XT_ST_F32, 3, (int64_t[]){2, 4, 3}, back, &e), XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "tensor 'r3' is F32 [2, 3, 4], the model expects F32 [2, 4, 3]");
    CHECK_STR_CONTAINS(e.msg, p);
    CHECK_EQ(xt_st_copy(&f, "r3", XT_ST_I32, 3, (int64_t[]){2, 3, 4}, back, &e), XT_ERUNTIME);
    CHECK_EQ(xt_st_copy(&f, "missing", XT_ST_F32, 0, NULL, back, &e), XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "no tensor 'missing'");
    xt_st_close(&f);
    xt_st_close(&f); /* idempotent */
}

TEST(st_file_bytes_follow_the_spec) {
    float a[2] = {1.0f, -2.0f};
    xt_st_tensor t[] = {{"a", XT_ST_F32, 1, {2}, a, 0}};
    xt_st_meta m[] = {{"epoch", "3"}};
    const char *p = tpath("spec.safetensors");
    xt_err e = {0};
    CHECK_EQ(xt_st_write(p, t, 1, m, 1, &e), 0);
    size_t n = 0;
    unsigned char *b = slurp(p, &n);
    CHECK(b != NULL);
    if (!b) return;

    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    CHECK_EQ(n, 8 + hl + 8);
    CHECK_EQ(hl % 8, 0); /* padded so the data is 8-byte aligned */

    /* the checksum: crc32 of the canonical header (NUL-separated fields:
     * metadata sorted by key, tensors by name with dtype, dims, offsets), then the data */
    static const char canon[] = "safetensors-canonical-v1\0m\0epoch\0" "3\0m\0format\0pt\0t\0a\0F32\0" "2\0" "0-8";
    char crc[16], want[512];
    uLong c = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)canon, sizeof canon);
    snprintf(crc, sizeof crc, "%08lx", crc32(c, (const Bytef *)a, 8));
    int wl = snprintf(want, sizeof want,
                      "{\"__metadata__\":{\"epoch\":\"3\",\"format\":\"pt\",\"xlatrain.checksum\":\"crc32:%s\"},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                      crc);
    while (wl % 8) want[wl++] = ' ';
    want[wl] = 0;
    CHECK_EQ(hl, (uint64_t)wl);
    CHECK_MSG(memcmp(b + 8, want, (size_t)wl) == 0, "header is %.*s", (int)hl, (const char *)b + 8);
    /* little-endian IEEE floats: 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0 */
    static const unsigned char data[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    CHECK(memcmp(b + 8 + hl, data, 8) == 0);
    free(b);
}

TEST(st_reads_foreign_files_without_checksum) {
    /* as written by other tools: no __metadata__, no padding, tensors in any order */
    float d[3] = {1, 2, 3};
    unsigned char data[4 + 12];
    memcpy(data, "\x01\x02\x03\x04", 4);
    memcpy(data + 4, d, 12);
    const char *p = raw_file("foreign.safetensors",
                             "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,16]},"
                             "\"b\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]}}",
                             data, sizeof data);
    xt_st_file f;
    xt_err e = {0};
    int rc = xt_st_read(p, &f, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    if (rc) return;
    CHECK_EQ(f.ntensors, 2);
    CHECK_EQ(f.nmeta, 0);
    const xt_st_tensor *w = xt_st_find(&f, "w");
    CHECK(w && memcmp(w->data, d, 12) == 0);
    CHECK_EQ((uintptr_t)w->data % 16, 0); /* offset 4 in the file, aligned for us */
    xt_st_close(&f);
}

/* ------------------------------------------------------------------ corrupt files */

TEST(st_refuses_flipped_data_byte) {
    const char *p = tpath("flip.safetensors");
    xt_err e = {0};
    CHECK_EQ(write_sample(p, &e), 0);
    size_t n = 0;
    unsigned char *b = slurp(p, &n);
    b[n - 20] ^= 0x01;
    spit(p, b, n);
    free(b);
    expect_corrupt(p, "checksum mismatch: the file is corrupt");
    xt_st_file f;
    xt_st_read(p, &f, &e);
    CHECK_STR_CONTAINS(e.msg, "use another checkpoint");
}

TEST(st_refuses_truncated_files) {
    const char *p = tpath("full.safetensors");
    xt_err e = {0};
    CHECK_EQ(write_sample(p, &e), 0);
    size_t n = 0;
    unsigned char *b = slurp(p, &n);
    const char *q = tpath("cut.safetensors");
    spit(q, b, n - 1); /* one data byte short */
    expect_corrupt(q, "truncated");
    spit(q, b, 40); /* inside the header */
    expect_corrupt(q, "header length field says");
    spit(q, b, 5); /* not even the length */
    expect_corrupt(q, "too short");
    spit(q, b, 0);
    expect_corrupt(q, "too short");
    free(b);
}

TEST(st_refuses_header_length_beyond_file) {
    unsigned char b[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
    const char *p = tpath("hlen.safetensors");
    spit(p, b, sizeof b);
    expect_corrupt(p, "header length field says 9223372036854775807 bytes but only 8 bytes follow");
}

TEST(st_refuses_bad_json) {
    expect_corrupt(raw_file("j1.safetensors", "{\"a\":{\"dtype\":\"F32\",}}", NULL, 0), "bad JSON header at byte");
    expect_corrupt(raw_file("j2.safetensors", "{\"a\": 01}", NULL, 0), "bad JSON header at byte 15: invalid token");
    expect_corrupt(raw_file("j3.safetensors", "[1, 2]    ", NULL, 0), "does not start with '{'");
    expect_corrupt(raw_file("j4.safetensors", "{} trailing", NULL, 0), "end of file expected");
    expect_corrupt(raw_file("j5.safetensors", "{\"a\":\"\xff\"}", NULL, 0), "unable to decode byte 0xff");
    expect_corrupt(raw_file("j6.safetensors", "{\"a\":1}", NULL, 0), "tensor 'a' is a JSON number, not an object");
}

/* A header inside the 100 MB format limit whose JSON tree would not be: 4M
 * tiny values (8 MB of text, ~160 MB as a tree) stop at the reader's 64 MiB
 * budget, with the file named, instead of costing the whole tree first. */
TEST(st_header_tree_is_bounded_in_memory) {
    size_t n = 4000000;
    char *h = malloc(2 * n + 16);
    size_t o = (size_t)sprintf(h, "{\"a\":[");
    for (size_t i = 0; i < n; i++) h[o++] = '0', h[o++] = ',';
    h[o - 1] = ']';
    h[o++] = '}';
    h[o] = 0;
    expect_corrupt(raw_file("tree.safetensors", h, NULL, 0), "the JSON tree needs more than 64 MiB of memory");
    free(h);
}

TEST(st_refuses_overlapping_and_gapped_offsets) {
    unsigned char d[16] = {0};
    expect_corrupt(raw_file("ov.safetensors",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                            d, 12),
                   "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
    /* same range twice: aliasing */
    expect_corrupt(raw_file("al.safetensors",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                            d, 8),
                   "overlap");
    expect_corrupt(raw_file("gap.safetensors",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                            d, 12),
                   "4 unused bytes before tensor 'b'");
    expect_corrupt(raw_file("tail.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d,
                            16),
                   "12 bytes after the last tensor");
    expect_corrupt(raw_file("oob.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[20],\"data_offsets\":[0,20]}}", d,
                            16),
                   "ends at data byte 20 but the file holds only 16");
    expect_corrupt(raw_file("rev.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,4]}}", d, 8),
                   "end before they begin");
}

TEST(st_refuses_wrong_sizes_dtypes_and_names) {
    unsigned char d[64] = {0};
    expect_corrupt(raw_file("sz.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, 8),
                   "tensor 'a': dtype F32 and shape [3] need 12 bytes but data_offsets [0, 8] hold 8");
    expect_corrupt(raw_file("i64.safetensors", "{\"a\":{\"dtype\":\"I64\",\"shape\":[2,2],\"data_offsets\":[0,16]}}", d,
                            16),
                   "need 32 bytes");
    expect_corrupt(raw_file("bf.safetensors", "{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", d, 4),
                   "dtype 'BF16', which xlatrain does not read");
    expect_corrupt(raw_file("dup.safetensors",
                            "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                            "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                            d, 2),
                   "duplicate object key near '\"a\"'");
    expect_corrupt(raw_file("neg.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", d, 0),
                   "shape entry 0 is not a non-negative integer");
    expect_corrupt(raw_file("flt.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", d,
                            1),
                   "not a non-negative integer");
    expect_corrupt(raw_file("ovf.safetensors",
                            "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", d,
                            0),
                   "is too large");
    expect_corrupt(raw_file("rank.safetensors",
                            "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", d, 1),
                   "rank 9");
    expect_corrupt(raw_file("key.safetensors",
                            "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"extra\":1}}", d, 1),
                   "unknown key 'extra'");
    expect_corrupt(raw_file("miss.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", d, 0),
                   "lacks dtype, shape or data_offsets");
    expect_corrupt(raw_file("meta.safetensors", "{\"__metadata__\":{\"epoch\":3}}", d, 0),
                   "metadata values are strings");
    expect_corrupt(raw_file("crc.safetensors", "{\"__metadata__\":{\"xlatrain.crc32\":\"xyz\"}}", d, 0),
                   "not 8 hex digits");
}

TEST(st_read_missing_file_is_eio) {
    xt_st_file f;
    xt_err e = {0};
    const char *p = tpath("does-not-exist.safetensors");
    CHECK_EQ(xt_st_read(p, &f, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, p);
    CHECK_STR_CONTAINS(e.msg, "No such file");
    CHECK_EQ(xt_st_read(test_tmpdir(), &f, &e), XT_ERUNTIME); /* a bad checkpoint argument, as a corrupt file */
    CHECK_STR_CONTAINS(e.msg, "not a regular file");
}

TEST(st_writer_refuses_bad_descriptors) {
    float x = 1;
    xt_err e = {0};
    const char *p = tpath("bad.safetensors");
    xt_st_tensor dup[] = {{"a", XT_ST_F32, 0, {0}, &x, 0}, {"a", XT_ST_F32, 0, {0}, &x, 0}};
    CHECK_EQ(xt_st_write(p, dup, 2, NULL, 0, &e), XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "'a' appears twice");
    xt_st_tensor neg[] = {{"a", XT_ST_F32, 1, {-2}, &x, 0}};
    CHECK_EQ(xt_st_write(p, neg, 1, NULL, 0, &e), XT_ERUNTIME);
    xt_st_tensor nodata[] = {{"a", XT_ST_F32, 1, {2}, NULL, 0}};
    CHECK_EQ(xt_st_write(p, nodata, 1, NULL, 0, &e), XT_ERUNTIME);
    xt_st_tensor ok[] = {{"a", XT_ST_F32, 0, {0}, &x, 0}};
    xt_st_meta crc[] = {{XT_ST_CRC_KEY, "0"}};
    CHECK_EQ(xt_st_write(p, ok, 1, crc, 1, &e), XT_ERUNTIME);
    CHECK(access(p, F_OK) != 0);
}

/* Mutations and truncations of a valid file never crash (run under ASan)
 * and are either accepted consistently or refused with XT_ERUNTIME. */
TEST(st_parse_survives_mutations) {
    const char *p = tpath("fuzz.safetensors");
    xt_err e = {0};
    CHECK_EQ(write_sample(p, &e), 0);
    size_t n = 0;
    unsigned char *good = slurp(p, &n);
    unsigned char *b = malloc(n + 16);
    unsigned seed = 12345;
    int accepted = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        xt_st_file f;
        int rc = xt_st_parse(good, cut, "cut", &f, &e);
        CHECK(rc == (cut == n ? 0 : XT_ERUNTIME));
        if (rc == 0) xt_st_close(&f);
    }
    for (int it = 0; it < 3000; it++) {
        memcpy(b, good, n);
        size_t len = n;
        int kind = it % 5, flips = 1 + (int)(rand_r(&seed) % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)rand_r(&seed) % n;
            if (kind == 0) b[at] ^= (unsigned char)(1u << (rand_r(&seed) % 8));        /* bit flip anywhere */
            else if (kind == 1) b[8 + at % 200] = (unsigned char)rand_r(&seed);          /* header garbage */
            else if (kind == 2) b[rand_r(&seed) % 8] = (unsigned char)rand_r(&seed);     /* length field */
            else if (kind == 3) b[8 + at % 200] = (unsigned char)"{}[]\",:0123456789-eE. \\u"[rand_r(&seed) % 24];
            else len = (size_t)rand_r(&seed) % (n + 1);                                   /* truncation */
        }
        xt_st_file f;
        int rc = xt_st_parse(b, len, "fuzz", &f, &e);
        CHECK(rc == 0 || rc == XT_ERUNTIME);
        if (rc == 0) {
            size_t total = 0;
            for (int i = 0; i < f.ntensors; i++) total += f.tensors[i].nbytes;
            CHECK_EQ(total, f.data_bytes);
            accepted++;
            xt_st_close(&f);
        }
    }
    CHECK(accepted < 3000); /* the checksum catches most data flips */
    free(b);
    free(good);
}

/* ------------------------------------------------------------------ atomic writes */

static void expect_old_intact(const char *p, const unsigned char *old, size_t oldn) {
    size_t n = 0;
    unsigned char *now = slurp(p, &n);
    CHECK(now != NULL);
    CHECK_EQ(n, oldn);
    if (now && n == oldn) CHECK(memcmp(now, old, n) == 0);
    free(now);
}

TEST(st_atomic_write_keeps_old_file_when_write_fails) {
    const char *p = tpath("ckpt.safetensors");
    xt_err e = {0};
    uint8_t small = 9;
    xt_st_tensor t1[] = {{"x", XT_ST_U8, 0, {0}, &small, 0}};
    CHECK_EQ(xt_st_write(p, t1, 1, NULL, 0, &e), 0);
    size_t oldn = 0;
    unsigned char *old = slurp(p, &oldn);

    /* the file size limit makes the write itself fail half-way (EFBIG) */
    static float big[8192];
    xt_st_tensor t2[] = {{"x", XT_ST_F32, 1, {8192}, big, 0}};
    struct rlimit was, lim = {4096, 4096};
    getrlimit(RLIMIT_FSIZE, &was);
    signal(SIGXFSZ, SIG_IGN);
    if (was.rlim_max != RLIM_INFINITY && was.rlim_max < lim.rlim_max) lim.rlim_cur = lim.rlim_max = was.rlim_max;
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = xt_st_write(p, t2, 1, NULL, 0, &e);
    setrlimit(RLIMIT_FSIZE, &was);
    CHECK_EQ(rc, XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "cannot write");
    CHECK_STR_CONTAINS(e.msg, p);
    CHECK_STR_CONTAINS(e.msg, "File too large");
    expect_old_intact(p, old, oldn);
    CHECK_EQ(temp_files_in(test_tmpdir()), 0);

    /* rename fails: a directory is in the way of the final name */
    const char *dirp = tpath("isdir.safetensors");
    mkdir(dirp, 0755);
    CHECK_EQ(xt_st_write(dirp, t1, 1, NULL, 0, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, dirp);
    CHECK_EQ(temp_files_in(test_tmpdir()), 0);

    /* the parent is a regular file: nothing can be created */
    const char *file = tpath("plainfile");
    spit(file, "x", 1);
    char under[1100];
    snprintf(under, sizeof under, "%s/ckpt.safetensors", file);
    CHECK_EQ(xt_st_write(under, t1, 1, NULL, 0, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "Not a directory");
    CHECK_STR_CONTAINS(e.msg, under);
    expect_old_intact(p, old, oldn);
    free(old);
}

TEST(st_atomic_write_keeps_old_file_in_unwritable_dir) {
    if (geteuid() == 0) {
        /* root ignores directory permissions: become nobody (this test runs
         * in its own forked child, so nothing else is affected) */
        if (chown(test_tmpdir(), 65534, 65534) || setgid(65534) || setuid(65534)) test_skip("cannot drop root privileges to nobody");
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/ro", test_tmpdir());
    mkdir(dir, 0755);
    char p[1100];
    snprintf(p, sizeof p, "%s/ckpt.safetensors", dir);
    xt_err e = {0};
    uint8_t v = 1;
    xt_st_tensor t[] = {{"x", XT_ST_U8, 0, {0}, &v, 0}};
    CHECK_EQ(xt_st_write(p, t, 1, NULL, 0, &e), 0);
    size_t oldn = 0;
    unsigned char *old = slurp(p, &oldn);
    chmod(dir, 0555);
    v = 2;
    CHECK_EQ(xt_st_write(p, t, 1, NULL, 0, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "Permission denied");
    CHECK_STR_CONTAINS(e.msg, "make the directory writable");
    chmod(dir, 0755);
    expect_old_intact(p, old, oldn);
    free(old);
}

TEST(atomic_write_file_and_append) {
    const char *p = tpath("results.json");
    xt_err e = {0};
    CHECK_EQ(xt_write_file_atomic(p, "{\"a\":1}\n", 8, &e), 0);
    CHECK_EQ(xt_write_file_atomic(p, "{}\n", 3, &e), 0);
    size_t n = 0;
    unsigned char *b = slurp(p, &n);
    CHECK(n == 3 && memcmp(b, "{}\n", 3) == 0);
    free(b);
    const char *l = tpath("metrics.jsonl");
    CHECK_EQ(xt_append_file(l, "1\n", 2, &e), 0);
    CHECK_EQ(xt_append_file(l, "2\n", 2, &e), 0);
    b = slurp(l, &n);
    CHECK(n == 4 && memcmp(b, "1\n2\n", 4) == 0);
    free(b);
    CHECK_EQ(xt_append_file(tpath("no/such/dir.jsonl"), "x", 1, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "create the directory");
    CHECK_EQ(temp_files_in(test_tmpdir()), 0);
}

/* ------------------------------------------------------------------ checkpoint directory */

TEST(ckpt_names_latest_and_prune) {
    const char *dir = test_tmpdir();
    char path[4096];
    xt_err e = {0};
    CHECK_EQ(xt_st_checkpoint_path(path, sizeof path, dir, 7, &e), 0);
    CHECK_STR_CONTAINS(path, "/checkpoint-epoch007.safetensors");
    CHECK_EQ(xt_st_checkpoint_path(path, 20, dir, 7, &e), XT_EIO);

    CHECK_EQ(xt_st_find_latest(dir, path, sizeof path, &e), XT_EUSAGE);
    CHECK_STR_CONTAINS(e.msg, "no checkpoint-epochNNN.safetensors in");

    uint8_t v = 0;
    xt_st_tensor t[] = {{"x", XT_ST_U8, 0, {0}, &v, 0}};
    int epochs[] = {3, 1, 10, 2, 1000, 9};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(xt_st_checkpoint_path(path, sizeof path, dir, epochs[i], &e), 0);
        CHECK_EQ(xt_st_write(path, t, 1, NULL, 0, &e), 0);
    }
    /* look-alikes that must be ignored */
    spit(tpath("checkpoint-epoch999.safetensors.tmp.123"), "x", 1);
    spit(tpath("checkpoint-epochX.safetensors"), "x", 1);
    spit(tpath("checkpoint-epoch.safetensors"), "x", 1);
    spit(tpath("notes.txt"), "x", 1);

    xt_st_ckpt *list;
    int n = 0;
    CHECK_EQ(xt_st_list_checkpoints(dir, &list, &n, &e), 0);
    CHECK_EQ(n, 6);
    int want[] = {1, 2, 3, 9, 10, 1000};
    for (int i = 0; i < n && i < 6; i++) CHECK_EQ(list[i].epoch, want[i]);
    free(list);

    CHECK_EQ(xt_st_find_latest(dir, path, sizeof path, &e), 0);
    CHECK_STR_CONTAINS(path, "checkpoint-epoch1000.safetensors");

    /* resumed at epoch 2 and just wrote it again: it survives, the newest others fill the rest */
    CHECK_EQ(xt_st_prune_checkpoints(dir, 3, 2, &e), 0);
    CHECK_EQ(xt_st_list_checkpoints(dir, &list, &n, &e), 0);
    CHECK_EQ(n, 3);
    if (n == 3) {
        CHECK_EQ(list[0].epoch, 2);
        CHECK_EQ(list[1].epoch, 10);
        CHECK_EQ(list[2].epoch, 1000);
    }
    free(list);
    CHECK_EQ(xt_st_prune_checkpoints(dir, 1, 1000, &e), 0);
    CHECK_EQ(xt_st_list_checkpoints(dir, &list, &n, &e), 0);
    CHECK(n == 1 && list[0].epoch == 1000);
    free(list);
    CHECK_EQ(xt_st_prune_checkpoints(dir, 0, 0, &e), 0); /* keep < 1: keep all */
    CHECK(access(tpath("notes.txt"), F_OK) == 0);
    CHECK(access(tpath("checkpoint-epoch999.safetensors.tmp.123"), F_OK) == 0);

    CHECK_EQ(xt_st_list_checkpoints(tpath("missing-dir"), &list, &n, &e), 0);
    CHECK_EQ(n, 0);
}
