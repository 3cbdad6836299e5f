/* tfevents.c — TensorBoard's event file format; see tfevents.h. Each record
 * is encoded whole in memory (io/protobuf.h), framed and written with one
 * fwrite, so a crash can tear only the last record, which TensorBoard's
 * reader skips. */
#include "io/tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/atomic.h"
#include "io/crc32c.h"
#include "io/protobuf.h"
#include "util/mkdirs.h"

enum { EV_WALL_TIME = 1, EV_STEP = 2, EV_FILE_VERSION = 3, EV_SUMMARY = 5, EV_SESSION_LOG = 7 };
enum { SUM_VALUE = 1, VAL_TAG = 1, VAL_SIMPLE = 2, VAL_IMAGE = 4 };
enum { IMG_HEIGHT = 1, IMG_WIDTH = 2, IMG_COLORSPACE = 3, IMG_ENCODED = 4 };
enum { SESSION_STATUS = 1, SESSION_START = 1 };

static void le(uint8_t *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) out[i] = (uint8_t)(v >> (8 * i));
}

/* Frame the encoded Event in b and write it. */
static int write_record(xt_tfevents *w, xt_pb *b) {
    int rc = -1;
    if (!w->fp) goto out;
    if (b->oom) {
        if (!w->write_errno) w->write_errno = ENOMEM;
        goto out;
    }
    uint8_t head[12], tail[4];
    le(head, b->len, 8);
    le(head + 8, xt_crc32c_masked(head, 8), 4);
    le(tail, xt_crc32c_masked(b->buf, b->len), 4);
    if (fwrite(head, 1, sizeof head, w->fp) != sizeof head || fwrite(b->buf, 1, b->len, w->fp) != b->len ||
        fwrite(tail, 1, sizeof tail, w->fp) != sizeof tail) {
        if (!w->write_errno) w->write_errno = errno ? errno : EIO;
        goto out;
    }
    rc = 0;
out:
    xt_pb_free(b);
    return rc;
}

static void event_head(xt_pb *b, long long step, double wall_time) {
    xt_pb_double(b, EV_WALL_TIME, wall_time);
    xt_pb_varint(b, EV_STEP, (uint64_t)step);
}

static int make_dirs(const char *dir, xt_err *e) {
    char p[1024];
    if (!xt_mkdirs(dir, p, sizeof p)) return 0;
    int err = errno;
    if (err == ENAMETOOLONG) return xt_fail(e, XT_EIO, "logdir %.100s...: the path is too long; choose a shorter logdir", dir);
    return xt_fail(e, XT_EIO, "cannot create %s for the TensorBoard event files: %s; %s", p, strerror(err), xt_io_hint(err));
}

int xt_tfevents_open(xt_tfevents *w, const char *dir, xt_err *e) {
    memset(w, 0, sizeof *w);
    int rc = make_dirs(dir, e);
    if (rc) return rc;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *p = host; *p; p++)
        if (*p == '/') *p = '_';
    long secs = (long)time(NULL);
    int fd = -1;
    for (int k = 0; k < 100 && fd < 0; k++) {
        int n = k ? snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%ld.%s.%ld.%d", dir, secs, host, (long)getpid(), k)
                  : snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%ld.%s.%ld", dir, secs, host, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof w->path) return xt_fail(e, XT_EIO, "logdir %.100s...: the path is too long; choose a shorter logdir", dir);
        fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || !(w->fp = fdopen(fd, "wb"))) {
        int err = errno;
        if (fd >= 0) close(fd);
        return xt_fail(e, XT_EIO, "cannot create %s: %s; %s", w->path, strerror(err), xt_io_hint(err));
    }
    xt_pb b = {0};
    event_head(&b, 0, (double)secs);
    xt_pb_string(&b, EV_FILE_VERSION, "brain.Event:2");
    write_record(w, &b);
    return xt_tfevents_flush(w, e);
}

int xt_tfevents_scalar(xt_tfevents *w, const char *tag, long long step, double wall_time, float value) {
    xt_pb b = {0};
    event_head(&b, step, wall_time);
    size_t sum = xt_pb_begin(&b, EV_SUMMARY), val = xt_pb_begin(&b, SUM_VALUE);
    xt_pb_string(&b, VAL_TAG, tag);
    xt_pb_float(&b, VAL_SIMPLE, value);
    xt_pb_end(&b, val);
    xt_pb_end(&b, sum);
    return write_record(w, &b);
}

int xt_tfevents_image(xt_tfevents *w, const char *tag, long long step, double wall_time, const uint8_t *png,
                      size_t len, int width, int height) {
    xt_pb b = {0};
    event_head(&b, step, wall_time);
    size_t sum = xt_pb_begin(&b, EV_SUMMARY), val = xt_pb_begin(&b, SUM_VALUE);
    xt_pb_string(&b, VAL_TAG, tag);
    size_t img = xt_pb_begin(&b, VAL_IMAGE);
    xt_pb_varint(&b, IMG_HEIGHT, (uint64_t)height);
    xt_pb_varint(&b, IMG_WIDTH, (uint64_t)width);
    xt_pb_varint(&b, IMG_COLORSPACE, 3);
    xt_pb_bytes(&b, IMG_ENCODED, png, len);
    xt_pb_end(&b, img);
    xt_pb_end(&b, val);
    xt_pb_end(&b, sum);
    return write_record(w, &b);
}

int xt_tfevents_session_start(xt_tfevents *w, long long step, double wall_time) {
    xt_pb b = {0};
    event_head(&b, step, wall_time);
    size_t s = xt_pb_begin(&b, EV_SESSION_LOG);
    xt_pb_varint(&b, SESSION_STATUS, SESSION_START);
    xt_pb_end(&b, s);
    return write_record(w, &b);
}

int xt_tfevents_flush(xt_tfevents *w, xt_err *e) {
    if (!w->fp) return xt_fail(e, XT_EIO, "%s: the event file is not open; this is a bug, please report it", w->path);
    if (fflush(w->fp) && !w->write_errno) w->write_errno = errno ? errno : EIO;
    if (w->write_errno)
        return xt_fail(e, XT_EIO, "cannot write %s: %s; %s", w->path, strerror(w->write_errno), xt_io_hint(w->write_errno));
    return 0;
}

void xt_tfevents_close(xt_tfevents *w) {
    if (w->fp) fclose(w->fp);
    w->fp = NULL;
}
