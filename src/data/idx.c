/* idx.c — IDX (MNIST format) reader with full validation; see idx.h.
 *
 * The file is opened through io/infile.h (regular files only, size known
 * first) and gzip is inflated here with zlib's inflate, not gzread, so the
 * reader decides how much is inflated: the header (magic and sizes) first,
 * then exactly the payload the header declares, then only the gzip trailer,
 * whose CRC32 and ISIZE zlib verifies. Before any payload is read, the
 * header's claim is checked against what the file can hold: a raw file's
 * size exactly, a gzip file's trailer ISIZE and deflate's maximum ratio, so
 * a small file claiming gigabytes ("a zip bomb", or a damaged header) is
 * refused at once. The buffer still grows as bytes arrive rather than
 * trusting the header's count. A file of several gzip members (.gz files
 * concatenated) is read as one stream, as gzip -d reads it; the trailer
 * check of the last member's ISIZE then only diagnoses (up to DIAGNOSE_MAX,
 * above every MNIST file).
 */
#include "data/idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/infile.h"

#define MAX_DIM 65536L         /* image side; MNIST's is 28 */
#define MAX_COUNT 0x7fffffffL  /* samples; indices are int64 but batches use int */
#define MAX_RATIO 1032u        /* deflate cannot expand one input byte to more output bytes */
#define CHUNK (1u << 18)
#define DIAGNOSE_MAX ((uint64_t)64 << 20) /* bytes; MNIST's largest file is 47 MB */

typedef struct {
    xt_infile in;
    int gz;            /* gzip-compressed (magic 1f 8b), else raw */
    z_stream zs;
    int zinit;
    int ended;         /* the gzip member's end (trailer verified) was reached */
    int cut;           /* the compressed input ran out before the member's end */
    const char *zmsg;  /* zlib's text for damaged data */
    uint64_t consumed; /* compressed bytes read from the file */
    unsigned char ibuf[CHUNK];
} zin;

/* Raw bytes from the file into the inflate input when it is empty. */
static int refill(zin *z) {
    if (z->zs.avail_in) return 0;
    size_t got = 0;
    int err = xt_in_read(&z->in, z->ibuf, CHUNK, &got);
    if (err) {
        z->zmsg = strerror(err);
        return -1;
    }
    z->consumed += got;
    z->zs.next_in = z->ibuf;
    z->zs.avail_in = (uInt)got;
    return 0;
}

/* Read up to n bytes of content; *got says how many arrived. Returns 0 at n
 * bytes or at the end of the data, -1 on damaged gzip data (text in
 * z->zmsg: a bad deflate block, CRC32 or ISIZE). Input that ends before the
 * gzip member does sets z->cut. */
static int zread(zin *z, void *buf, size_t n, size_t *got) {
    *got = 0;
    if (!z->gz) {
        int err = xt_in_read(&z->in, buf, n, got);
        if (err) z->zmsg = strerror(err);
        return err ? -1 : 0;
    }
    while (*got < n && !z->ended) {
        if (refill(z)) return -1;
        if (!z->zs.avail_in) {
            z->cut = 1;
            break;
        }
        size_t want = n - *got > (1u << 30) ? (1u << 30) : n - *got;
        z->zs.next_out = (Bytef *)buf + *got;
        z->zs.avail_out = (uInt)want;
        int r = inflate(&z->zs, Z_NO_FLUSH);
        *got += want - z->zs.avail_out;
        if (r == Z_STREAM_END) {
            /* another member may follow (concatenated .gz files), which gzip -d
             * reads as one stream: go on into it; anything else is for
             * check_end to name */
            if (refill(z)) return -1;
            if (z->zs.avail_in >= 2 && z->zs.next_in[0] == 0x1f && z->zs.next_in[1] == 0x8b && inflateReset(&z->zs) == Z_OK) continue;
            z->ended = 1;
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            z->zmsg = z->zs.msg ? z->zs.msg : "inflate failed";
            return -1;
        }
    }
    return 0;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *what_name(int ndim) { return ndim == 3 ? "images" : "labels"; }

/* "10,000 images of 28x28 (7,840,000 bytes)" / "10,000 labels (10,000 bytes)" */
static void describe(char *out, size_t cap, int ndim, long n, int rows, int cols, size_t bytes) {
    char a[32], b[32];
    if (ndim == 3)
        snprintf(out, cap, "%s images of %dx%d (%s bytes)", xt_commas(a, (unsigned long long)n), rows, cols,
                 xt_commas(b, bytes));
    else
        snprintf(out, cap, "%s labels (%s bytes)", xt_commas(a, (unsigned long long)n), xt_commas(b, bytes));
}

static int corrupt(xt_err *e, const char *path, const char *zmsg, size_t at) {
    char a[32];
    size_t plen = strlen(path);
    if (!strncmp(zmsg, path, plen) && !strncmp(zmsg + plen, ": ", 2)) zmsg += plen + 2; /* gzerror prefixes the path */
    return xt_fail(e, XT_EDATA, "%s: corrupt gzip data (zlib: %s) after %s bytes; delete the file and fetch it again",
                   path, zmsg, xt_commas(a, at));
}

/* What the header declares. */
typedef struct idx_shape {
    int ndim;          /* 3 images, 1 labels */
    long n;
    int rows, cols;    /* 0 for labels */
    size_t bytes;      /* of the payload */
} idx_shape;

static void describe_shape(char *out, size_t cap, const idx_shape *s) {
    describe(out, cap, s->ndim, s->n, s->rows, s->cols, s->bytes);
}

/* The magic number: IDX unsigned bytes with ndim dimensions. */
static int read_magic(zin *z, const char *path, int ndim, xt_err *e) {
    const uint32_t want_magic = 0x800u | (uint32_t)ndim;
    uint8_t hdr[4];
    size_t got = 0;
    if (zread(z, hdr, 4, &got) < 0) return corrupt(e, path, z->zmsg, got);
    if (got < 4)
        return xt_fail(e, XT_EDATA, "%s: %s (%zu bytes); expected an IDX %s file", path,
                       got ? "truncated header" : "empty file", got, what_name(ndim));
    uint32_t magic = be32(hdr);
    if ((magic & 0xffffff00u) != 0x800u) {
        const char *hint = "";
        if (!z->gz && strlen(path) > 3 && !strcmp(path + strlen(path) - 3, ".gz"))
            hint = " (named .gz but not gzip-compressed)";
        return xt_fail(e, XT_EDATA, "%s: bad magic 0x%08x, expected 0x%08x (IDX unsigned-byte %s)%s; not an MNIST-format file",
                       path, magic, want_magic, what_name(ndim), hint);
    }
    if ((int)(magic & 0xff) != ndim) {
        int have = (int)(magic & 0xff);
        return xt_fail(e, XT_EDATA, "%s: IDX header declares %d dimension%s (magic 0x%08x), expected %d for %s%s", path,
                       have, have == 1 ? "" : "s", magic, ndim, what_name(ndim),
                       have == 1 ? "; this looks like a labels file" : have == 3 ? "; this looks like an images file" : "");
    }
    return 0;
}

/* The sizes after the magic, checked against the limits and the wanted image size. */
static int read_shape(zin *z, const char *path, int ndim, int want_rows, int want_cols, idx_shape *sh, xt_err *e) {
    uint8_t hdr[12];
    size_t got = 0;
    if (zread(z, hdr, 4u * (unsigned)ndim, &got) < 0) return corrupt(e, path, z->zmsg, 4 + got);
    if (got < 4u * (unsigned)ndim)
        return xt_fail(e, XT_EDATA, "%s: truncated header: %zu of %d size bytes present", path, got, 4 * ndim);
    uint32_t dims[3] = {0, 0, 0};
    for (int i = 0; i < ndim; i++) dims[i] = be32(hdr + 4 * i);
    if (dims[0] == 0 || dims[0] > MAX_COUNT)
        return xt_fail(e, XT_EDATA, "%s: header says %lu %s", path, (unsigned long)dims[0], what_name(ndim));
    if (ndim == 3 && (dims[1] == 0 || dims[2] == 0 || dims[1] > MAX_DIM || dims[2] > MAX_DIM ||
                      (want_rows && (int)dims[1] != want_rows) || (want_cols && (int)dims[2] != want_cols)))
        return xt_fail(e, XT_EDATA, "%s: images are %lux%lu, expected %dx%d", path, (unsigned long)dims[1],
                       (unsigned long)dims[2], want_rows ? want_rows : 28, want_cols ? want_cols : 28);
    sh->ndim = ndim;
    sh->n = (long)dims[0];
    sh->rows = ndim == 3 ? (int)dims[1] : 0;
    sh->cols = ndim == 3 ? (int)dims[2] : 0;
    sh->bytes = (size_t)sh->n * (ndim == 3 ? (size_t)sh->rows * (size_t)sh->cols : 1);
    return 0;
}

/* The payload into *data, growing as bytes arrive (see the file comment). */
static int read_payload(zin *z, const char *path, const idx_shape *sh, uint8_t **data, xt_err *e) {
    size_t expect = sh->bytes, got = 0;
    size_t cap = expect < ((size_t)8 << 20) ? expect : ((size_t)8 << 20), have = 0;
    for (;;) {
        uint8_t *grown = realloc(*data, cap);
        if (!grown) return xt_fail(e, XT_EDATA, "%s: out of memory for %zu bytes", path, cap);
        *data = grown;
        int zr = zread(z, *data + have, cap - have, &got);
        have += got;
        if (zr < 0) return corrupt(e, path, z->zmsg, have);
        if (have < cap) break; /* EOF */
        if (cap == expect) break;
        cap = cap * 2 < expect ? cap * 2 : expect;
    }
    if (have < expect) {
        char d[160], h[32];
        describe_shape(d, sizeof d, sh);
        return xt_fail(e, XT_EDATA, "%s: truncated: header says %s but only %s present%s; delete the file and fetch it again",
                       path, d, xt_commas(h, have), z->cut ? " (the gzip stream is cut short)" : "");
    }
    return 0;
}

/* Nothing may follow the declared payload: extra bytes mean the header and
 * the data disagree, a gzip member must end with its trailer (CRC32 and
 * ISIZE, verified by zlib), and nothing may follow that member. Extra
 * content is counted up to EXTRA_MAX only, so it costs bounded time. */
#define EXTRA_MAX (1u << 20)
static int check_end(zin *z, const char *path, const idx_shape *sh, xt_err *e) {
    size_t extra = 0, got = 0;
    for (;;) {
        uint8_t sink[1 << 14];
        int zr = zread(z, sink, sizeof sink, &got);
        extra += got;
        if (zr < 0) return corrupt(e, path, z->zmsg, sh->bytes + extra);
        if (got < sizeof sink || extra >= EXTRA_MAX) break;
    }
    if (extra) {
        char d[160], x[32];
        describe_shape(d, sizeof d, sh);
        return xt_fail(e, XT_EDATA, "%s: %s%s trailing bytes after the %s the header declares; the file is damaged or not MNIST",
                       path, extra >= EXTRA_MAX ? "more than " : "", xt_commas(x, extra), d);
    }
    if (z->gz && !z->ended)
        return xt_fail(e, XT_EDATA, "%s: truncated: the gzip stream is cut short after the data (its checksum trailer is "
                       "missing); delete the file and fetch it again", path);
    if (z->gz && (z->zs.avail_in || z->consumed < z->in.size)) {
        char x[32];
        return xt_fail(e, XT_EDATA, "%s: %s bytes of garbage after the end of the gzip data; the file is damaged, delete it and fetch it again",
                       path, xt_commas(x, z->zs.avail_in + (z->in.size - z->consumed)));
    }
    return 0;
}

/* What the file can hold, against what the header declares, before any
 * payload is read: a raw file's size is exact; a gzip file's trailer
 * records its uncompressed size (mod 2^32) and deflate expands at most
 * MAX_RATIO-fold. */
static int check_claim(zin *z, const char *path, const idx_shape *sh, xt_err *e) {
    char d[160], a[32];
    describe_shape(d, sizeof d, sh);
    uint64_t hdr = 4 + 4 * (uint64_t)sh->ndim, want = hdr + sh->bytes, size = z->in.size;
    if (!z->gz) {
        if (size < want)
            return xt_fail(e, XT_EDATA, "%s: truncated: header says %s but only %s present; delete the file and fetch it again",
                           path, d, xt_commas(a, size - hdr));
        return 0; /* extra bytes: check_end names them */
    }
    if (size < 18 || want / MAX_RATIO > size)
        return xt_fail(e, XT_EDATA, "%s: header says %s but a gzip file of %s bytes cannot hold that much; the file is truncated or damaged, delete it and fetch it again",
                       path, d, xt_commas(a, size));
    uint8_t t[4];
    if (xt_in_pread(&z->in, t, 4, size - 4) != 0)
        return xt_fail(e, XT_EDATA, "%s: cannot read the gzip trailer; delete the file and fetch it again", path);
    uint32_t isize = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    /* A mismatch is certain damage. Up to DIAGNOSE_MAX, inflating to find
     * where (truncated, trailing bytes, a missing trailer) is cheap and says
     * more; beyond it, refuse now rather than inflate gigabytes. */
    if (isize != (uint32_t)want && want > DIAGNOSE_MAX) {
        char b[32];
        snprintf(b, sizeof b, "%s", isize >= hdr ? xt_commas(a, isize - hdr) : "fewer than 0");
        return xt_fail(e, XT_EDATA, "%s: truncated or damaged: header says %s but the gzip trailer records %s bytes after the header; delete the file and fetch it again",
                       path, d, b);
    }
    return 0;
}

/* Open path through infile.h and start inflate when it is gzip. */
static int zopen(zin *z, const char *path, xt_err *e) {
    const xt_in_opts o = {XT_EIO, XT_EDATA, "pass an IDX file (raw or .gz)"};
    int rc = xt_in_open(&z->in, path, &o, e);
    if (rc) return rc;
    uint8_t m[2];
    z->gz = z->in.size >= 2 && xt_in_pread(&z->in, m, 2, 0) == 0 && m[0] == 0x1f && m[1] == 0x8b;
    if (z->gz) {
        if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK)
            return xt_fail(e, XT_EDATA, "%s: out of memory starting zlib; free some memory and retry", path);
        z->zinit = 1;
    }
    return 0;
}

static void zclose(zin *z) {
    if (z->zinit) inflateEnd(&z->zs);
    xt_in_close(&z->in);
}

static int read_idx(const char *path, int ndim, int want_rows, int want_cols, xt_idx *out, xt_err *e) {
    memset(out, 0, sizeof *out);
    zin *z = calloc(1, sizeof *z);
    if (!z) return xt_fail(e, XT_EDATA, "%s: out of memory; free some memory and retry", path);
    idx_shape sh = {0};
    uint8_t *data = NULL;
    int rc = zopen(z, path, e);
    if (!rc) rc = read_magic(z, path, ndim, e);
    if (!rc) rc = read_shape(z, path, ndim, want_rows, want_cols, &sh, e);
    if (!rc) rc = check_claim(z, path, &sh, e);
    if (!rc) rc = read_payload(z, path, &sh, &data, e);
    if (!rc) rc = check_end(z, path, &sh, e);
    if (!rc) {
        out->n = sh.n;
        out->rows = sh.rows;
        out->cols = sh.cols;
        out->data = data;
        data = NULL;
    }
    free(data);
    zclose(z);
    free(z);
    return rc;
}

int xt_idx_read_images(const char *path, int rows, int cols, xt_idx *out, xt_err *e) {
    return read_idx(path, 3, rows, cols, out, e);
}

int xt_idx_read_labels(const char *path, int num_classes, xt_idx *out, xt_err *e) {
    int rc = read_idx(path, 1, 0, 0, out, e);
    if (rc) return rc;
    for (long i = 0; i < out->n; i++) {
        if (out->data[i] >= num_classes) {
            char a[32];
            rc = xt_fail(e, XT_EDATA, "%s: label %d at index %s is out of range 0..%d", path, out->data[i],
                         xt_commas(a, (unsigned long long)i), num_classes - 1);
            xt_idx_free(out);
            return rc;
        }
    }
    return 0;
}

void xt_idx_free(xt_idx *x) {
    free(x->data);
    memset(x, 0, sizeof *x);
}
