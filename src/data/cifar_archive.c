/* cifar_archive.c — the split's batch files straight from
 * cifar-10-binary.tar.gz, through libarchive; see cifar.h.
 *
 * Why libarchive rather than zlib plus our own tar parser: tar has several
 * header dialects (ustar, GNU long names, pax), and libarchive is the
 * maintained C library every packager already trusts to read them, with its
 * own checks of header checksums and a truncated archive. It reads only the
 * gzip filter and the tar format here (no external programs, no other
 * formats). The archive is opened through io/infile.h (a regular file, size
 * known) and libarchive reads from that descriptor.
 *
 * Members are matched by base name, so cifar-10-batches-bin/ or any other top
 * directory works; each wanted member is parsed as it streams (nothing is
 * extracted to disk) into its own set, and the sets are joined in batch
 * order at the end, whatever order the archive stores them in. A member
 * claiming more bytes than the archive could hold at deflate's maximum
 * ratio is refused before it is read.
 * Not here: records and batches.meta.txt parsing (cifar.c).
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

#include "data/cifar.h"
#include "io/infile.h"

#define MAX_RATIO 1032u /* deflate cannot expand one input byte to more output bytes */
#define META_MAX 4096
#define CHUNK (1u << 16)

typedef struct arc {
    const char *path;
    struct archive *a;
    xt_infile in;
    int nf;                       /* batch files of the split */
    const char *const *files;
    xt_cifar parts[5];            /* one per batch file */
    int seen[5];
    char what[5][4096 + 64];      /* "ARCHIVE:member" for messages */
} arc;

static const char *FIX = "delete it and fetch it again (make data DATASET=cifar10, or xlatrain --download)";

static int torn(arc *z, const char *member, xt_err *e) {
    const char *msg = archive_error_string(z->a);
    return xt_fail(e, XT_EDATA, "%s: damaged or truncated archive (libarchive: %s)%s%s; %s", z->path,
                   msg ? msg : "read error", member ? " while reading " : "", member ? member : "", FIX);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* A member's bytes into a sink (records) or a text buffer (meta). */
static int read_member(arc *z, const char *name, xt_cifar_sink *sink, char *text, size_t *tlen, xt_err *e) {
    uint8_t buf[CHUNK];
    for (;;) {
        la_ssize_t got = archive_read_data(z->a, buf, sizeof buf);
        if (got < 0) return torn(z, name, e);
        if (got == 0) break;
        if (sink) {
            int rc = xt_cifar_sink_feed(sink, buf, (size_t)got, e);
            if (rc) return rc;
        } else {
            if (*tlen + (size_t)got > META_MAX)
                return xt_fail(e, XT_EDATA, "%s:%s: over %d bytes, not a list of 10 class names; %s", z->path, name,
                               META_MAX, FIX);
            memcpy(text + *tlen, buf, (size_t)got);
            *tlen += (size_t)got;
        }
    }
    return sink ? xt_cifar_sink_end(sink, e) : 0;
}

/* One header: a batch of the split, the class names, or something to skip. */
static int entry(arc *z, struct archive_entry *ent, xt_cifar *names_to, xt_err *e) {
    const char *full = archive_entry_pathname(ent);
    const char *name = base_name(full ? full : "");
    int64_t size = archive_entry_size_is_set(ent) ? archive_entry_size(ent) : -1;
    if (size > 0 && (uint64_t)size / MAX_RATIO > z->in.size)
        return xt_fail(e, XT_EDATA, "%s:%s: declares %lld bytes, more than a %llu-byte archive can hold; %s", z->path,
                       name, (long long)size, (unsigned long long)z->in.size, FIX);
    for (int i = 0; i < z->nf; i++) {
        if (strcmp(name, z->files[i]) || archive_entry_filetype(ent) != AE_IFREG) continue;
        snprintf(z->what[i], sizeof z->what[i], "%s:%s", z->path, full);
        if (z->seen[i]++)
            return xt_fail(e, XT_EDATA, "%s: holds %s twice; %s", z->path, name, FIX);
        if (size >= 0) {
            int rc = xt_cifar_check_size(z->what[i], (uint64_t)size, e);
            if (rc) return rc;
        }
        xt_cifar_sink s;
        xt_cifar_sink_init(&s, &z->parts[i], z->what[i]);
        return read_member(z, name, &s, NULL, NULL, e);
    }
    if (!strcmp(name, XT_CIFAR_META) && archive_entry_filetype(ent) == AE_IFREG) {
        char text[META_MAX], what[4096 + 64];
        size_t len = 0;
        int rc = read_member(z, name, NULL, text, &len, e);
        snprintf(what, sizeof what, "%s:%s", z->path, full);
        return rc ? rc : xt_cifar_parse_meta(what, text, len, names_to, e);
    }
    return archive_read_data_skip(z->a) == ARCHIVE_OK ? 0 : torn(z, name, e);
}

/* Every member read: all batches present, joined in order into out. */
static int join_parts(arc *z, xt_cifar *out, xt_err *e) {
    int64_t total = out->n;
    for (int i = 0; i < z->nf; i++) {
        if (!z->seen[i])
            return xt_fail(e, XT_EDATA, "%s: has no %s; the archive is incomplete, %s", z->path, z->files[i], FIX);
        total += z->parts[i].n;
    }
    if (total > out->cap) {
        uint8_t *im = realloc(out->images, (size_t)total * XT_CIFAR_PIXELS);
        if (im) out->images = im;
        uint8_t *lb = im ? realloc(out->labels, (size_t)total) : NULL;
        if (lb) out->labels = lb;
        if (!im || !lb) return xt_fail(e, XT_ERUNTIME, "%s: out of memory for %lld images", z->path, (long long)total);
        out->cap = total;
    }
    for (int i = 0; i < z->nf; i++) {
        memcpy(out->images + (size_t)out->n * XT_CIFAR_PIXELS, z->parts[i].images, (size_t)z->parts[i].n * XT_CIFAR_PIXELS);
        memcpy(out->labels + out->n, z->parts[i].labels, (size_t)z->parts[i].n);
        out->n += z->parts[i].n;
        xt_cifar_free(&z->parts[i]);
    }
    return 0;
}

int xt_cifar_read_archive(const char *path, int split, xt_cifar *out, xt_err *e) {
    const xt_in_opts o = {XT_EDATA, XT_EDATA, "pass cifar-10-binary.tar.gz"};
    arc *z = calloc(1, sizeof *z);
    if (!z) return xt_fail(e, XT_ERUNTIME, "%s: out of memory", path);
    z->path = path;
    z->nf = xt_cifar_split_files(split, &z->files);
    int rc = xt_in_open(&z->in, path, &o, e);
    if (!rc && !(z->a = archive_read_new())) rc = xt_fail(e, XT_ERUNTIME, "%s: out of memory", path);
    if (!rc && (archive_read_support_filter_gzip(z->a) != ARCHIVE_OK ||
                archive_read_support_format_tar(z->a) != ARCHIVE_OK ||
                archive_read_open_fd(z->a, z->in.fd, CHUNK) != ARCHIVE_OK))
        rc = torn(z, NULL, e);
    struct archive_entry *ent;
    int r = ARCHIVE_OK;
    while (!rc && (r = archive_read_next_header(z->a, &ent)) == ARCHIVE_OK) rc = entry(z, ent, out, e);
    if (!rc && r != ARCHIVE_EOF) rc = torn(z, NULL, e);
    if (!rc) rc = join_parts(z, out, e);
    for (int i = 0; i < z->nf; i++) xt_cifar_free(&z->parts[i]);
    if (z->a) archive_read_free(z->a);
    xt_in_close(&z->in);
    free(z);
    return rc;
}
