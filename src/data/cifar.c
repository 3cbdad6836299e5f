/* cifar.c — CIFAR-10 records, batch files, directories; see cifar.h.
 * The archive path (libarchive) is cifar_archive.c; both feed the same sink,
 * so a record is checked the same way whatever it came from. Which of them
 * reads a given path is cifar_source.c's choice, above both: this file
 * calls neither.
 */
#include "data/cifar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/infile.h"

#define META_MAX 4096 /* batches.meta.txt is 10 short lines */
#define READ_CHUNK (1u << 16)

/* The list on https://www.cs.toronto.edu/~kriz/cifar.html, as batches.meta.txt has it. */
const char *const xt_cifar_default_names[XT_CIFAR_CLASSES] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                              "dog",      "frog",       "horse", "ship", "truck"};

static const char *const TRAIN_FILES[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                          "data_batch_4.bin", "data_batch_5.bin"};
static const char *const TEST_FILES[] = {"test_batch.bin"};

int xt_cifar_split_files(int split, const char *const **names) {
    *names = split == 0 ? TRAIN_FILES : TEST_FILES;
    return split == 0 ? 5 : 1;
}

static const char *const FIX = "delete it and fetch it again (make data DATASET=cifar10, or xlatrain --download)";

int xt_cifar_check_size(const char *what, uint64_t size, xt_err *e) {
    char a[32], b[32];
    if (size == 0) return xt_fail(e, XT_EDATA, "%s: empty file; a CIFAR-10 batch holds 3,073-byte records; %s", what, FIX);
    if (size % XT_CIFAR_RECORD == 0) return 0;
    if (size % (XT_CIFAR_RECORD + 1) == 0)
        return xt_fail(e, XT_EDATA, "%s: %s bytes are whole 3,074-byte records: this looks like CIFAR-100 (two label "
                       "bytes), not CIFAR-10; use the CIFAR-10 binary version", what, xt_commas(a, size));
    uint64_t whole = size / XT_CIFAR_RECORD;
    return xt_fail(e, XT_EDATA, "%s: wrong size: %s bytes is not a whole number of 3,073-byte records (%s record%s and "
                   "%u bytes over); %s", what, xt_commas(a, size), xt_commas(b, whole), whole == 1 ? "" : "s",
                   (unsigned)(size % XT_CIFAR_RECORD), FIX);
}

void xt_cifar_sink_init(xt_cifar_sink *s, xt_cifar *out, const char *what) {
    memset(s, 0, sizeof *s);
    s->out = out;
    s->what = what;
}

static int grow(xt_cifar *c, const char *what, xt_err *e) {
    int64_t cap = c->cap ? c->cap * 2 : 1024;
    uint8_t *im = realloc(c->images, (size_t)cap * XT_CIFAR_PIXELS);
    if (im) c->images = im;
    uint8_t *lb = im ? realloc(c->labels, (size_t)cap) : NULL;
    if (lb) c->labels = lb;
    if (!im || !lb) return xt_fail(e, XT_ERUNTIME, "%s: out of memory for %lld images; free some memory", what, (long long)cap);
    c->cap = cap;
    return 0;
}

/* One complete record: check the label, keep it. */
static int take(xt_cifar_sink *s, const uint8_t *rec, xt_err *e) {
    xt_cifar *c = s->out;
    if (rec[0] >= XT_CIFAR_CLASSES) {
        char a[32], b[32];
        return xt_fail(e, XT_EDATA, "%s: record %s (byte %s) has label %d, outside 0..9; the file is damaged or not "
                       "CIFAR-10; %s", s->what, xt_commas(a, (unsigned long long)s->records),
                       xt_commas(b, (unsigned long long)s->records * XT_CIFAR_RECORD), rec[0], FIX);
    }
    if (c->n == c->cap && grow(c, s->what, e)) return e ? e->code : XT_ERUNTIME;
    c->labels[c->n] = rec[0];
    memcpy(c->images + (size_t)c->n * XT_CIFAR_PIXELS, rec + 1, XT_CIFAR_PIXELS);
    c->n++;
    s->records++;
    return 0;
}

int xt_cifar_sink_feed(xt_cifar_sink *s, const uint8_t *p, size_t n, xt_err *e) {
    while (n) {
        if (s->have == 0 && n >= XT_CIFAR_RECORD) { /* whole records straight from the input */
            int rc = take(s, p, e);
            if (rc) return rc;
            p += XT_CIFAR_RECORD, n -= XT_CIFAR_RECORD;
            continue;
        }
        size_t k = XT_CIFAR_RECORD - s->have < n ? XT_CIFAR_RECORD - s->have : n;
        memcpy(s->rec + s->have, p, k);
        s->have += k, p += k, n -= k;
        if (s->have == XT_CIFAR_RECORD) {
            s->have = 0;
            int rc = take(s, s->rec, e);
            if (rc) return rc;
        }
    }
    return 0;
}

int xt_cifar_sink_end(xt_cifar_sink *s, xt_err *e) {
    char a[32];
    if (s->have)
        return xt_fail(e, XT_EDATA, "%s: truncated: record %s has %zu of its 3,073 bytes (1 label + 3x32x32 pixels); %s",
                       s->what, xt_commas(a, (unsigned long long)s->records), s->have, FIX);
    if (!s->records) return xt_fail(e, XT_EDATA, "%s: empty; a CIFAR-10 batch holds 3,073-byte records; %s", s->what, FIX);
    return 0;
}

int xt_cifar_parse(const char *what, const uint8_t *buf, size_t len, xt_cifar *out, xt_err *e) {
    xt_cifar_sink s;
    xt_cifar_sink_init(&s, out, what);
    int rc = xt_cifar_sink_feed(&s, buf, len, e);
    return rc ? rc : xt_cifar_sink_end(&s, e);
}

int xt_cifar_parse_meta(const char *what, const char *text, size_t len, xt_cifar *out, xt_err *e) {
    char names[XT_CIFAR_CLASSES][XT_CIFAR_NAME_MAX];
    int k = 0, line = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        line++;
        size_t a = i, b = j; /* trim blanks and a CR */
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        i = j + 1;
        if (a == b) continue;
        if (k == XT_CIFAR_CLASSES)
            return xt_fail(e, XT_EDATA, "%s:%d: an 11th class name; CIFAR-10 has 10 (one a line); %s", what, line, FIX);
        if (b - a >= XT_CIFAR_NAME_MAX || memchr(text + a, 0, b - a))
            return xt_fail(e, XT_EDATA, "%s:%d: not a class name (%zu bytes; names are at most %d printable bytes); %s",
                           what, line, b - a, XT_CIFAR_NAME_MAX - 1, FIX);
        memcpy(names[k], text + a, b - a);
        names[k++][b - a] = 0;
    }
    if (k != XT_CIFAR_CLASSES)
        return xt_fail(e, XT_EDATA, "%s: %d class name%s, expected 10 (one a line); %s", what, k, k == 1 ? "" : "s", FIX);
    memcpy(out->names, names, sizeof names);
    out->have_names = 1;
    return 0;
}

int xt_cifar_read_file(const char *path, xt_cifar *out, xt_err *e) {
    const xt_in_opts o = {XT_EDATA, XT_EDATA, "pass a CIFAR-10 batch file (data_batch_N.bin, test_batch.bin)"};
    xt_infile in;
    int rc = xt_in_open(&in, path, &o, e);
    if (rc) return rc;
    rc = xt_cifar_check_size(path, in.size, e);
    xt_cifar_sink s;
    xt_cifar_sink_init(&s, out, path);
    uint8_t *buf = rc ? NULL : malloc(READ_CHUNK);
    if (!rc && !buf) rc = xt_fail(e, XT_ERUNTIME, "%s: out of memory", path);
    for (uint64_t left = in.size; !rc && left;) {
        size_t got = 0;
        int err = xt_in_read(&in, buf, left < READ_CHUNK ? (size_t)left : READ_CHUNK, &got);
        if (err) rc = xt_fail(e, XT_EDATA, "%s: read error: %s; %s", path, strerror(err), FIX);
        else if (!got) break; /* shrank while read: the sink names the short record */
        else rc = xt_cifar_sink_feed(&s, buf, got, e), left -= got;
    }
    if (!rc) rc = xt_cifar_sink_end(&s, e);
    free(buf);
    xt_in_close(&in);
    return rc;
}

/* DIR/NAME into out; an over-long path comes out cut, fails its stat and is
 * reported as missing under its (visible) name. */
static void join(char *out, size_t cap, const char *dir, const char *name) {
    size_t n = strlen(dir);
    if ((size_t)snprintf(out, cap, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) >= cap) out[cap - 1] = 0;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int xt_cifar_read_dir(const char *dir, int split, xt_cifar *out, xt_err *e) {
    const char *const *files;
    int nf = xt_cifar_split_files(split, &files);
    char path[4096];
    for (int i = 0; i < nf; i++) {
        join(path, sizeof path, dir, files[i]);
        if (!exists(path))
            return xt_fail(e, XT_EDATA, "%s: not found, but %s holds other CIFAR-10 files; the extraction is "
                           "incomplete, extract %s again or delete %s and fetch it again", path, dir, XT_CIFAR_ARCHIVE, dir);
        int rc = xt_cifar_read_file(path, out, e);
        if (rc) return rc;
    }
    join(path, sizeof path, dir, XT_CIFAR_META);
    if (!exists(path)) return 0;
    const xt_in_opts o = {XT_EDATA, XT_EDATA, "batches.meta.txt must be the class names, one a line"};
    char *text = NULL;
    size_t len = 0;
    int rc = xt_in_read_all(path, META_MAX, &o, &text, &len, e);
    if (!rc) rc = xt_cifar_parse_meta(path, text, len, out, e);
    free(text);
    return rc;
}

int xt_cifar_find(const char *datadir, int split, char *out, size_t cap) {
    const char *const *files;
    xt_cifar_split_files(split, &files);
    char probe[4096], sub[4096];
    join(sub, sizeof sub, datadir, XT_CIFAR_DIR);
    join(probe, sizeof probe, sub, files[0]);
    int found = 0;
    const char *src = NULL;
    if (exists(probe)) src = sub, found = 1;
    if (!found) join(probe, sizeof probe, datadir, files[0]);
    if (!found && exists(probe)) src = datadir, found = 1;
    if (!found) join(probe, sizeof probe, datadir, XT_CIFAR_ARCHIVE);
    if (!found && exists(probe)) src = probe, found = 2;
    if (found && (size_t)snprintf(out, cap, "%s", src) >= cap) return 0; /* too long to name: as if absent */
    return found;
}

void xt_cifar_free(xt_cifar *c) {
    free(c->images);
    free(c->labels);
    memset(c, 0, sizeof *c);
}
