/* image_cache.c — decode a folder's images once into a mapped uint8 file;
 * see image_cache.h.
 *
 * The file: a 4096-byte header (so the pixels start page-aligned), the kept
 * images (n, channels, rows, cols), their labels (n bytes), then the
 * skipped files' messages, one a line. Building writes every chosen file's
 * image at its own slot of a temp file (pwrite from each thread: no lock
 * around the pixels), then, if some were skipped, moves the kept ones down
 * in order, writes labels, messages and header, and renames.
 * Not here: scanning, decoding, normalization.
 */
#include "data/image_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/image_decode.h"
#include "data/image_resize.h"
#include "data/md5.h"
#include "io/atomic.h"
#include "io/infile.h"
#include "util/mkdirs.h"

#define HEADER 4096
#define MAGIC "XTCACHE1"
/* what every bad file's message ends with */
#define FIX "remove or replace the file, or set on_bad_image: skip to leave it out"

typedef struct header {
    char magic[8];
    char key[33];           /* hex MD5 of the key text */
    char pad[7];
    int64_t n, skipped, msg_len, total;
    int32_t channels, rows, cols, unused;
} header;
_Static_assert(sizeof(header) <= HEADER, "the header fits its page");

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int chosen(const uint8_t *select, int want, int64_t i) { return !select || select[i] == want; }

/* ---- the key -------------------------------------------------------------------- */

static void md5_str(xt_md5 *m, const char *s) { xt_md5_update(m, s, strlen(s) + 1); }
static void md5_i64(xt_md5 *m, int64_t v) { xt_md5_update(m, &v, sizeof v); }

static void hex(const uint8_t d[16], char out[33]) {
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* name: what the cache is for (folder, selection, shape) -> which file to
 * replace; key: that plus every file's identity -> whether it is current. */
static void cache_names(const xt_folder *f, const uint8_t *select, int want, const xt_cache_opts *o, char name[33], char key[33]) {
    xt_md5 m;
    uint8_t d[16];
    char real[PATH_MAX];
    if (!realpath(f->root, real)) snprintf(real, sizeof real, "%s", f->root);
    xt_md5_init(&m);
    md5_str(&m, "xlatrain folder cache 1");
    md5_str(&m, real);
    md5_i64(&m, select ? want : -1);
    md5_i64(&m, o->channels), md5_i64(&m, o->rows), md5_i64(&m, o->cols), md5_i64(&m, o->resize);
    xt_md5 whole = m;
    xt_md5_final(&m, d);
    hex(d, name);
    md5_i64(&whole, o->max_pixels);
    for (int k = 0; k < f->nclasses; k++) md5_str(&whole, f->classes[k]);
    for (int64_t i = 0; i < f->n; i++) {
        if (!chosen(select, want, i)) continue;
        md5_str(&whole, f->files[i].path);
        md5_i64(&whole, f->files[i].size), md5_i64(&whole, f->files[i].mtime_ns), md5_i64(&whole, f->files[i].label);
    }
    xt_md5_final(&whole, d);
    hex(d, key);
}

/* ---- reading a cache ------------------------------------------------------------ */

/* Map path if it is a complete cache of this key: 1 yes, 0 no (build it). */
static int map_cache(xt_image_set *s, const char *path, const char *key, const xt_cache_opts *o) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0) return 0;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < HEADER) return close(fd), 0;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd); /* the mapping keeps the file */
    if (map == MAP_FAILED) return 0;
    header h;
    memcpy(&h, map, sizeof h);
    size_t px = (size_t)o->channels * (size_t)o->rows * (size_t)o->cols;
    if (memcmp(h.magic, MAGIC, 8) || strncmp(h.key, key, 32) || h.channels != o->channels || h.rows != o->rows ||
        h.cols != o->cols || h.n < 0 || h.msg_len < 0 || h.total != (int64_t)st.st_size ||
        (uint64_t)h.total != HEADER + (uint64_t)h.n * (px + 1) + (uint64_t)h.msg_len) {
        munmap(map, (size_t)st.st_size);
        return 0;
    }
    s->map = map, s->map_len = (size_t)st.st_size;
    s->n = h.n, s->skipped = h.skipped;
    s->images = (const uint8_t *)map + HEADER;
    s->labels = s->images + (size_t)h.n * px;
    return 1;
}

/* The messages of skipped files kept in the cache: warnings again, or with
 * skip off the first one is the error. */
static int replay_skipped(const xt_image_set *s, const xt_cache_opts *o, xt_err *e) {
    const char *msg = (const char *)s->labels + s->n, *end = (const char *)s->map + s->map_len;
    while (msg < end) {
        const char *nl = memchr(msg, '\n', (size_t)(end - msg));
        int len = (int)((nl ? nl : end) - msg);
        if (!o->skip)
            return xt_fail(e, XT_EDATA, "%.*s; " FIX " (known from the cache %s)", len, msg, s->path);
        char line[1400];
        snprintf(line, sizeof line, "warning: %.*s; skipped (on_bad_image: skip)", len, msg);
        if (o->warn) o->warn(o->ctx, line);
        msg = nl ? nl + 1 : end;
    }
    return 0;
}

/* ---- building a cache ----------------------------------------------------------- */

typedef struct build {
    const xt_folder *f;
    const xt_cache_opts *o;
    int64_t *order;           /* the chosen files' indices, nsel of them */
    int64_t nsel;
    int fd;                   /* the temp file */
    size_t px;
    atomic_llong next, done;
    atomic_int stop;          /* a hard error: the others stop taking files */
    char **why;               /* per chosen file: NULL = good, else the message */
    int hard;                 /* out of memory or a write error (not a bad file) */
    xt_err hard_err;
    pthread_mutex_t mu;
} build;

static void set_hard(build *b, int code, const char *msg) {
    pthread_mutex_lock(&b->mu);
    if (!b->hard) b->hard = code, snprintf(b->hard_err.msg, sizeof b->hard_err.msg, "%s", msg);
    pthread_mutex_unlock(&b->mu);
    atomic_store(&b->stop, 1);
}

/* One file to its planar slot; a message (malloc'd) when it cannot be used. */
static char *one_file(build *b, const char *path, uint8_t *planar) {
    const xt_cache_opts *o = b->o;
    xt_err e = {0};
    xt_infile in;
    xt_in_opts io = {.open_code = XT_EDATA, .bad_code = XT_EDATA, .fix = "check its permissions"};
    uint8_t *buf = NULL;
    xt_decoded d = {0};
    if (xt_in_open(&in, path, &io, &e)) goto out;
    if (in.size > (1ull << 31)) {
        xt_fail(&e, XT_EDATA, "%s: %llu bytes, more than any image this reads (2 GiB)", path, (unsigned long long)in.size);
        xt_in_close(&in);
        goto out;
    }
    buf = malloc(in.size ? (size_t)in.size : 1);
    if (!buf || (in.size && xt_in_pread(&in, buf, (size_t)in.size, 0))) {
        if (buf) xt_fail(&e, XT_EDATA, "%s: cannot read it: %s", path, strerror(errno));
        else xt_fail(&e, XT_ERUNTIME, "%s: out of memory for %llu bytes", path, (unsigned long long)in.size);
        xt_in_close(&in);
        goto out;
    }
    xt_in_close(&in);
    if (xt_image_decode(buf, (size_t)in.size, path, o->max_pixels, o->channels, &d, &e)) goto out;
    const uint8_t *hwc = d.px;
    uint8_t *tmp = NULL;
    if (d.h != o->rows || d.w != o->cols) {
        if (!o->resize) {
            xt_fail(&e, XT_EDATA, "%s: %dx%d pixels (h x w) but the model's input is %dx%d; set resize: [%d, %d] to "
                    "resize every image, or resize this file", path, d.h, d.w, o->rows, o->cols, o->rows, o->cols);
            goto out;
        }
        tmp = malloc((size_t)o->rows * (size_t)o->cols * (size_t)o->channels);
        if (!tmp || xt_image_resize(d.px, d.h, d.w, tmp, o->rows, o->cols, o->channels)) {
            free(tmp);
            xt_fail(&e, XT_ERUNTIME, "%s: out of memory resizing a %dx%d image", path, d.h, d.w);
            goto out;
        }
        hwc = tmp;
    }
    const size_t plane = (size_t)o->rows * (size_t)o->cols;
    for (int c = 0; c < o->channels; c++)
        for (size_t i = 0; i < plane; i++) planar[(size_t)c * plane + i] = hwc[i * (size_t)o->channels + (size_t)c];
    free(tmp);
out:
    free(buf);
    xt_decoded_free(&d);
    if (!e.code) return NULL;
    if (e.code != XT_EDATA) set_hard(b, e.code, e.msg);
    char *m = strdup(e.msg);
    if (!m) set_hard(b, XT_ERUNTIME, "out of memory");
    return m;
}

static void *worker(void *arg) {
    build *b = arg;
    uint8_t *planar = malloc(b->px);
    if (!planar) {
        set_hard(b, XT_ERUNTIME, "out of memory for one image");
        return NULL;
    }
    for (;;) {
        if (atomic_load(&b->stop)) break;
        long long j = atomic_fetch_add(&b->next, 1);
        if (j >= b->nsel) break;
        const char *path = b->f->files[b->order[j]].path;
        char *why = one_file(b, path, planar);
        if (why) {
            b->why[j] = why;
            if (!b->o->skip) atomic_store(&b->stop, 1); /* the run fails: no point decoding the rest */
        } else if (pwrite(b->fd, planar, b->px, HEADER + (off_t)j * (off_t)b->px) != (ssize_t)b->px) {
            char msg[300];
            snprintf(msg, sizeof msg, "cannot write the image cache: %s; free disk space or set cache_dir elsewhere", strerror(errno));
            set_hard(b, XT_EIO, msg);
        }
        atomic_fetch_add(&b->done, 1);
    }
    free(planar);
    return NULL;
}

static void progress(build *b, uint64_t t0, int last) {
    if (!b->o->progress) return;
    char a[32], c[32], line[1400];
    long long done = atomic_load(&b->done);
    double s = (double)(now_ns() - t0) * 1e-9, rate = s > 0 ? done / s : 0;
    int n = snprintf(line, sizeof line, "decoding %s of %s into the image cache: %s/%s", b->o->key, b->f->root,
                     xt_commas(a, (unsigned long long)done), xt_commas(c, (unsigned long long)b->nsel));
    if (rate > 0 && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, last ? ", %.0f images/s in %.1f s (%d threads)" : ", %.0f images/s, ETA %.0f s",
                 rate, last ? s : (b->nsel - done) / rate, b->o->threads);
    b->o->progress(b->o->ctx, line, last);
}

/* Copy the kept images down over the skipped ones' slots, in order. The
 * temp file is open write-only (atomic.h) and may have no name yet (an
 * O_TMPFILE file, named only at commit): reads go through a second fd
 * opened from this process's own descriptor. */
static int compact(build *b, int64_t *kept) {
    uint8_t *img = malloc(b->px);
    int64_t k = 0;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", b->fd);
    int rfd = open(self, O_RDONLY | O_CLOEXEC), rc = 0;
    if (!img || rfd < 0) rc = -1;
    for (int64_t j = 0; j < b->nsel && !rc; j++) {
        if (b->why[j]) continue;
        if (k != j && (pread(rfd, img, b->px, HEADER + (off_t)j * (off_t)b->px) != (ssize_t)b->px ||
                       pwrite(b->fd, img, b->px, HEADER + (off_t)k * (off_t)b->px) != (ssize_t)b->px))
            rc = -1;
        k++;
    }
    if (rfd >= 0) close(rfd);
    free(img);
    *kept = k;
    return rc;
}

/* Remove this cache's older versions: same name, another key. */
static void remove_stale(const char *dir, const char *name, const char *keep) {
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d) return;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, name, 32) || de->d_name[32] != '-' || !strcmp(de->d_name, keep)) continue;
        if (strlen(de->d_name) != strlen(keep)) continue; /* a temp file of a build under way */
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
}

static int write_tail(build *b, xt_atomic_file *af, const char *key, int64_t kept, int64_t skipped, xt_err *e) {
    int64_t msg_len = 0;
    off_t at = HEADER + (off_t)kept * (off_t)b->px;
    uint8_t *labels = malloc(kept ? (size_t)kept : 1);
    if (!labels) return xt_fail(e, XT_ERUNTIME, "out of memory writing the image cache");
    int64_t k = 0;
    for (int64_t j = 0; j < b->nsel; j++)
        if (!b->why[j]) labels[k++] = (uint8_t)b->f->files[b->order[j]].label;
    int ok = pwrite(b->fd, labels, (size_t)kept, at) == (ssize_t)kept;
    free(labels);
    at += (off_t)kept;
    for (int64_t j = 0; ok && j < b->nsel; j++) {
        if (!b->why[j]) continue;
        size_t n = strlen(b->why[j]);
        ok = pwrite(b->fd, b->why[j], n, at) == (ssize_t)n && pwrite(b->fd, "\n", 1, at + (off_t)n) == 1;
        at += (off_t)n + 1, msg_len += (int64_t)n + 1;
    }
    header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, 8);
    memcpy(h.key, key, 33);
    h.n = kept, h.skipped = skipped, h.msg_len = msg_len, h.total = (int64_t)at;
    h.channels = b->o->channels, h.rows = b->o->rows, h.cols = b->o->cols;
    ok = ok && pwrite(b->fd, &h, sizeof h, 0) == (ssize_t)sizeof h && ftruncate(b->fd, at) == 0;
    if (!ok) return xt_fail(e, XT_EIO, "cannot write the image cache %s: %s; free disk space or set cache_dir elsewhere", af->tmp, strerror(errno));
    return 0;
}

static int build_cache(const xt_folder *f, const uint8_t *select, int want, const xt_cache_opts *o, const char *path,
                       const char *key, xt_err *e) {
    build b = {.f = f, .o = o, .px = (size_t)o->channels * (size_t)o->rows * (size_t)o->cols};
    xt_atomic_file af;
    int rc = 0, nthreads = o->threads < 1 ? 1 : o->threads > 64 ? 64 : o->threads, started = 0;
    pthread_t th[64];
    pthread_mutex_init(&b.mu, NULL);
    b.order = malloc(sizeof *b.order * (size_t)(f->n ? f->n : 1));
    b.why = calloc((size_t)(f->n ? f->n : 1), sizeof *b.why);
    if (!b.order || !b.why) {
        rc = xt_fail(e, XT_ERUNTIME, "out of memory for %lld files", (long long)f->n);
        goto out;
    }
    for (int64_t i = 0; i < f->n; i++)
        if (chosen(select, want, i)) b.order[b.nsel++] = i;
    if ((rc = xt_atomic_open(&af, path, e))) goto out;
    b.fd = fileno(af.fp); /* only pwrite below: nothing goes through the FILE's buffer */
    if (ftruncate(b.fd, HEADER + (off_t)b.nsel * (off_t)b.px)) {
        rc = xt_fail(e, XT_EIO, "cannot write the image cache %s: %s; free disk space or set cache_dir elsewhere", af.tmp, strerror(errno));
        xt_atomic_abort(&af);
        goto out;
    }
    uint64_t t0 = now_ns(), last = t0;
    if (nthreads > b.nsel) nthreads = b.nsel ? (int)b.nsel : 1;
    for (; started < nthreads; started++)
        if (pthread_create(&th[started], NULL, worker, &b)) break;
    if (!started) worker(&b); /* no thread could start: decode here */
    while (started && atomic_load(&b.done) < b.nsel && !atomic_load(&b.stop)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (now_ns() - last > 500 * 1000 * 1000ull) last = now_ns(), progress(&b, t0, 0);
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    progress(&b, t0, 1);
    int64_t skipped = 0, kept = 0;
    for (int64_t j = 0; j < b.nsel; j++) skipped += b.why[j] != NULL;
    if (b.hard) {
        rc = xt_fail(e, b.hard, "%s", b.hard_err.msg);
    } else if (skipped && !o->skip) {
        for (int64_t j = 0; j < b.nsel && !rc; j++)
            if (b.why[j]) rc = xt_fail(e, XT_EDATA, "%s; " FIX, b.why[j]);
    } else if (compact(&b, &kept)) {
        rc = xt_fail(e, XT_EIO, "cannot write the image cache %s: %s", af.tmp, strerror(errno));
    } else {
        for (int64_t j = 0; j < b.nsel && o->warn; j++) {
            if (!b.why[j]) continue;
            char line[1400];
            snprintf(line, sizeof line, "warning: %s; skipped (on_bad_image: skip)", b.why[j]);
            o->warn(o->ctx, line);
        }
        rc = write_tail(&b, &af, key, kept, skipped, e);
    }
    if (rc) xt_atomic_abort(&af);
    else rc = xt_atomic_commit(&af, e);
out:
    for (int64_t j = 0; b.why && j < b.nsel; j++) free(b.why[j]);
    free(b.why);
    free(b.order);
    pthread_mutex_destroy(&b.mu);
    return rc;
}

static int mkdirs(const char *dir, xt_err *e) {
    char p[1024];
    if (xt_mkdirs(dir, p, sizeof p))
        return xt_fail(e, XT_EIO, "cannot create the image cache folder %s: %s; set cache_dir to a writable folder", p, strerror(errno));
    return 0;
}

int xt_image_cache_open(xt_image_set *s, const xt_folder *f, const uint8_t *select, int want, const xt_cache_opts *o,
                        xt_err *e) {
    char name[33], key[33], file[80];
    memset(s, 0, sizeof *s);
    cache_names(f, select, want, o, name, key);
    snprintf(file, sizeof file, "%s-%s.xtcache", name, key);
    if ((size_t)snprintf(s->path, sizeof s->path, "%s/%s", o->dir[0] ? o->dir : ".", file) >= sizeof s->path)
        return xt_fail(e, XT_EUSAGE, "cache_dir %s is too long a path", o->dir);
    int rc = 0;
    if (!map_cache(s, s->path, key, o)) {
        if ((rc = mkdirs(o->dir[0] ? o->dir : ".", e)) || (rc = build_cache(f, select, want, o, s->path, key, e))) goto fail;
        if (!map_cache(s, s->path, key, o)) {
            rc = xt_fail(e, XT_EIO, "%s: the image cache just written does not read back; remove it and run again", s->path);
            goto fail;
        }
        s->built = 1;
        remove_stale(o->dir[0] ? o->dir : ".", name, file);
        return 0; /* its warnings were said while building */
    }
    if ((rc = replay_skipped(s, o, e))) goto fail;
    return 0;
fail:
    xt_image_set_close(s);
    return rc;
}

void xt_image_set_close(xt_image_set *s) {
    if (s->map) munmap(s->map, s->map_len);
    memset(s, 0, sizeof *s);
}
