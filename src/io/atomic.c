/* atomic.c — temp file + fsync + rename + directory fsync; see atomic.h. */
#include "io/atomic.h"
#include "io/infile.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *xt_io_hint(int err) {
    switch (err) {
    case ENOSPC:
    case EDQUOT: return "free some disk space or choose another output_dir";
    case EFBIG: return "the file size limit (ulimit -f) was reached; raise it or choose another output_dir";
    case EACCES:
    case EPERM: return "make the directory writable or choose another output_dir";
    case EROFS: return "the file system is read-only; choose another output_dir";
    case ENOENT: return "create the directory first or fix the path";
    case ENOTDIR: return "a component of the path is a file, not a directory; fix the path";
    case EISDIR: return "a directory is in the way; remove it or choose another name";
    case ENAMETOOLONG: return "use a shorter path";
    default: return "check the path and the disk";
    }
}

static int io_fail(xt_err *e, const char *path, int err) {
    return xt_fail(e, XT_EIO, "cannot write %s: %s; %s", path, strerror(err), xt_io_hint(err));
}

/* The directory part of path ("." when none) into dir. */
static void parent_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* An unnamed file in the target's directory (O_TMPFILE): nothing is left
 * behind whatever kills the process; commit links it in through
 * /proc/self/fd. -1 where the file system or kernel cannot (the named
 * temp file is used then). */
static int open_unnamed(const char *path) {
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0) return -1;
    char dir[4096];
    parent_of(path, dir, sizeof dir);
    return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
#else
    (void)path;
    return -1;
#endif
}

int xt_atomic_open(xt_atomic_file *af, const char *path, xt_err *e) {
    memset(af, 0, sizeof *af);
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof af->path)
        return xt_fail(e, XT_EIO, "cannot write '%.200s': the path is empty or too long; use a shorter path", path);
    memcpy(af->path, path, n + 1);
    if (!strcmp(path, "-")) { /* standard output, on purpose: written as it comes, never renamed over */
        int fd = dup(STDOUT_FILENO);
        af->fp = fd < 0 ? NULL : fdopen(fd, "wb");
        if (!af->fp) {
            if (fd >= 0) close(fd);
            return xt_fail(e, XT_EIO, "cannot write to standard output: %s", strerror(errno));
        }
        af->to_stdout = 1;
        return 0;
    }
    /* only a regular file is replaced: renaming over a device node, a
     * symbolic link (/dev/stdout) or a FIFO would destroy it */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return xt_fail(e, XT_EIO, "cannot write %s: it is %s, and xlatrain replaces only regular files; remove it or choose another name%s",
                       path, xt_file_kind(st.st_mode), S_ISLNK(st.st_mode) || S_ISCHR(st.st_mode) ? " ('-' writes to standard output)" : "");
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open_unnamed(path);
    af->unnamed = fd >= 0;
    /* else a named temp. O_TRUNC without O_EXCL: a leftover temp with our
     * pid can only be from a dead process that had the same pid, and is
     * garbage. O_NOFOLLOW so a planted symlink cannot redirect the write. */
    if (fd < 0) fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return io_fail(e, path, errno);
    af->fp = fdopen(fd, "wb");
    if (!af->fp) {
        int err = errno;
        close(fd);
        if (!af->unnamed) unlink(af->tmp);
        return io_fail(e, path, err);
    }
    return 0;
}

int xt_atomic_write(xt_atomic_file *af, const void *data, size_t n) {
    if (!af->fp) return -1;
    errno = 0;
    if (n && fwrite(data, 1, n, af->fp) != n) {
        if (!af->write_errno) af->write_errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

void xt_atomic_abort(xt_atomic_file *af) {
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
        if (!af->unnamed && !af->to_stdout) unlink(af->tmp);
    }
}

/* Make the rename itself durable. Some file systems cannot fsync a directory
 * (EINVAL); the rename is still atomic there, so that is not an error. */
static int sync_parent_dir(const char *path) {
    char dir[4096];
    parent_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
    close(fd);
    return err;
}

int xt_atomic_commit(xt_atomic_file *af, xt_err *e) {
    if (!af->fp) return xt_fail(e, XT_EIO, "cannot write %s: internal error: the file was not open; please report this bug", af->path);
    int err = af->write_errno;
    errno = 0;
    if (!err && fflush(af->fp) != 0) err = errno ? errno : EIO;
    if (!err && ferror(af->fp)) err = EIO;
    if (af->to_stdout) {
        errno = 0;
        if (fclose(af->fp) != 0 && !err) err = errno ? errno : EIO;
        af->fp = NULL;
        return err ? xt_fail(e, XT_EIO, "cannot write to standard output: %s", strerror(err)) : 0;
    }
    if (!err && fsync(fileno(af->fp)) != 0 && errno != EINVAL) err = errno;
    /* the unnamed file gets the temp name only now, for the rename: a
     * process killed before this leaves nothing */
    if (!err && af->unnamed) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(af->fp));
        unlink(af->tmp); /* a dead process's with our pid */
        if (linkat(AT_FDCWD, proc, AT_FDCWD, af->tmp, AT_SYMLINK_FOLLOW) != 0) err = errno;
    }
    /* not replaced between open and now by something that is not a regular file */
    struct stat st;
    if (!err && lstat(af->path, &st) == 0 && !S_ISREG(st.st_mode)) err = EEXIST;
    errno = 0;
    if (fclose(af->fp) != 0 && !err) err = errno ? errno : EIO;
    af->fp = NULL;
    if (!err && rename(af->tmp, af->path) != 0) err = errno;
    if (err) {
        unlink(af->tmp);
        if (err == EEXIST)
            return xt_fail(e, XT_EIO, "cannot write %s: it became %s while being written, and xlatrain replaces only regular files; remove it or choose another name",
                           af->path, xt_file_kind(st.st_mode));
        return io_fail(e, af->path, err);
    }
    err = sync_parent_dir(af->path);
    if (err)
        return xt_fail(e, XT_EIO, "cannot write %s: syncing its directory failed: %s; %s", af->path,
                       strerror(err), xt_io_hint(err));
    return 0;
}

int xt_write_file_atomic(const char *path, const void *data, size_t len, xt_err *e) {
    xt_atomic_file af;
    int rc = xt_atomic_open(&af, path, e);
    if (rc) return rc;
    xt_atomic_write(&af, data, len);
    return xt_atomic_commit(&af, e);
}

int xt_append_file(const char *path, const void *data, size_t len, xt_err *e) {
    /* O_NOFOLLOW: a planted symlink must not make us append to its target;
     * O_NONBLOCK: a FIFO in its place must not block the run. */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0666);
    if (fd < 0) {
        if (errno == ELOOP)
            return xt_fail(e, XT_EIO, "cannot write %s: it is a symbolic link, which xlatrain does not follow; remove it", path);
        return io_fail(e, path, errno);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return xt_fail(e, XT_EIO, "cannot write %s: not a regular file; remove it or choose another output_dir", path);
    }
    const char *p = data;
    int err = 0;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    if (close(fd) != 0 && !err && errno != EINTR) err = errno;
    return err ? io_fail(e, path, err) : 0;
}

int xt_same_file(const char *out, const char *in) {
    struct stat a, b;
    return stat(out, &a) == 0 && stat(in, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int xt_dir_check_writable(const char *dir, xt_err *e) {
    char path[4200];
    const char *d = dir && *dir ? dir : ".";
    snprintf(path, sizeof path, "%s/.xlatrain-write-test", d);
    xt_atomic_file af;
    int rc = xt_atomic_open(&af, path, e);
    if (rc) return rc;
    xt_atomic_abort(&af);
    return 0;
}

/* The pid in "<name>.tmp.<pid>", or 0. */
static long tmp_pid(const char *name) {
    const char *t = strstr(name, ".tmp.");
    if (!t || t == name) return 0;
    const char *q;
    while ((q = strstr(t + 1, ".tmp.")) != NULL) t = q; /* the last one */
    long pid = 0;
    const char *p = t + 5;
    if (!*p) return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || pid > 99999999) return 0;
        pid = pid * 10 + (*p - '0');
    }
    return pid;
}

int xt_tmp_sweep(const char *dir) {
    const char *d = dir && *dir ? dir : ".";
    DIR *dp = opendir(d);
    if (!dp) return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        long pid = tmp_pid(de->d_name);
        if (pid <= 0) continue;
        /* ours (from a dead process that had our pid: we have nothing open
         * yet) or a process that no longer exists */
        if (pid != (long)getpid() && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) continue;
        struct stat st;
        if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (unlinkat(dirfd(dp), de->d_name, 0) == 0) removed++;
    }
    closedir(dp);
    return removed;
}
