/* infile.c — open regular files only, size first, bounded reads; see infile.h. */
#include "io/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *xt_file_kind(mode_t m) {
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

static const char *fix_of(const xt_in_opts *o) { return o && o->fix ? o->fix : "check the path"; }

int xt_in_open(xt_infile *in, const char *path, const xt_in_opts *o, xt_err *e) {
    in->fd = -1;
    in->size = 0;
    in->path = path;
    /* O_NONBLOCK: opening a FIFO with no writer must not wait forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return xt_fail(e, o->open_code, "%s: cannot open: %s; %s", path, strerror(errno), fix_of(o));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return xt_fail(e, o->open_code, "%s: cannot open: %s; %s", path, strerror(err), fix_of(o));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return xt_fail(e, o->bad_code, "%s: is %s, not a regular file; %s", path, xt_file_kind(st.st_mode), fix_of(o));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        return xt_fail(e, o->open_code, "%s: cannot open: %s; %s", path, strerror(err), fix_of(o));
    }
    in->fd = fd;
    in->size = (uint64_t)st.st_size;
    return 0;
}

int xt_in_read(xt_infile *in, void *buf, size_t n, size_t *got) {
    *got = 0;
    while (*got < n) {
        size_t want = n - *got > (1u << 30) ? (1u << 30) : n - *got;
        ssize_t r = read(in->fd, (char *)buf + *got, want);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) break;
        *got += (size_t)r;
    }
    return 0;
}

int xt_in_pread(xt_infile *in, void *buf, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(in->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return EIO;
        got += (size_t)r;
    }
    return 0;
}

void xt_in_close(xt_infile *in) {
    if (in->fd >= 0) close(in->fd);
    in->fd = -1;
}

int xt_in_read_all(const char *path, size_t max, const xt_in_opts *o, char **buf, size_t *len, xt_err *e) {
    *buf = NULL;
    *len = 0;
    xt_infile in;
    int rc = xt_in_open(&in, path, o, e);
    if (rc) return rc;
    if (in.size > max) {
        xt_in_close(&in);
        return xt_fail(e, o->bad_code, "%s: %llu bytes, larger than the %zu-byte limit; %s", path,
                       (unsigned long long)in.size, max, fix_of(o));
    }
    /* one byte more than the size, to notice a file that grew meanwhile */
    size_t cap = (size_t)in.size + 1, got = 0;
    char *b = malloc(cap + 1);
    if (!b) {
        xt_in_close(&in);
        return xt_fail(e, o->bad_code, "%s: out of memory for %zu bytes; free some memory and retry", path, cap);
    }
    int err = xt_in_read(&in, b, cap, &got);
    xt_in_close(&in);
    if (err || got != in.size) {
        free(b);
        return xt_fail(e, o->open_code, "%s: cannot read: %s; %s", path,
                       err ? strerror(err) : "it changed size while being read", fix_of(o));
    }
    b[got] = 0;
    *buf = b;
    *len = got;
    return 0;
}
