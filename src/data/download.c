/* download.c — mirrors, checksums and the curl/wget child process; see download.h. */
#include "data/download.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/cifar.h"
#include "data/md5.h"
#include "util/mkdirs.h"

typedef struct {
    const char *name, *md5;
} remote_file;

/* torchvision's lists (torchvision/datasets/mnist.py): mirrors in order, MD5 of each .gz. */
static const char *const MNIST_MIRRORS[] = {
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
};
static const remote_file MNIST_FILES[4] = {
    {XT_IDX_TRAIN_IMAGES ".gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"},
    {XT_IDX_TRAIN_LABELS ".gz", "d53e105ee54ea40749a09fcbcd1e9432"},
    {XT_IDX_TEST_IMAGES ".gz", "9fb629c4189551a2d022fa330f9573f3"},
    {XT_IDX_TEST_LABELS ".gz", "ec29112dd5afa0611ce80d1b7f02629c"},
};
static const char *const FASHION_MIRRORS[] = {
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
};
static const remote_file FASHION_FILES[4] = {
    {XT_IDX_TRAIN_IMAGES ".gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"},
    {XT_IDX_TRAIN_LABELS ".gz", "25c81989df183df01b3e8a0aad5dffbe"},
    {XT_IDX_TEST_IMAGES ".gz", "bef4ecab320f06d8554ea6380940ec79"},
    {XT_IDX_TEST_LABELS ".gz", "bb300cfdad3c16e7a12a480ee83cd310"},
};

/* https://www.cs.toronto.edu/~kriz/cifar.html: the binary version and the MD5 published beside it. */
static const char *const CIFAR_MIRRORS[] = {"https://www.cs.toronto.edu/~kriz/"};
static const remote_file CIFAR_FILES[1] = {{XT_CIFAR_ARCHIVE, "c32a1d4ab5d03f1284b67883e8d87530"}};

typedef struct {
    const remote_file *files;
    int nfiles;
    const char *const *mirrors;
    int nmirrors;
} remote_set;

/* The files and mirrors of kind; 0, or -1 for a generated dataset. */
static int remote_of(xt_data_kind kind, remote_set *rs) {
    switch (kind) {
    case XT_DATA_MNIST: *rs = (remote_set){MNIST_FILES, 4, MNIST_MIRRORS, 2}; return 0;
    case XT_DATA_FASHION_MNIST: *rs = (remote_set){FASHION_FILES, 4, FASHION_MIRRORS, 1}; return 0;
    case XT_DATA_CIFAR10: *rs = (remote_set){CIFAR_FILES, 1, CIFAR_MIRRORS, 1}; return 0;
    case XT_DATA_SYNTHETIC:
    case XT_DATA_SYNTHETIC_CIFAR10:
    case XT_DATA_FOLDER: break; /* the user's own files */
    }
    return -1;
}

const char *xt_download_md5(xt_data_kind kind, const char *name) {
    remote_set rs;
    for (int i = 0; remote_of(kind, &rs) == 0 && i < rs.nfiles; i++)
        if (!strcmp(rs.files[i].name, name)) return rs.files[i].md5;
    return NULL;
}

static void notef(xt_download_note note, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void notef(xt_download_note note, void *ctx, const char *fmt, ...) {
    if (!note) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    note(ctx, line);
}

/* Full path of an executable on $PATH into out, or 0. */
static int on_path(const char *prog, char *out, size_t cap) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        snprintf(out, cap, "%.*s/%s", (int)len, len ? path : ".", prog);
        if (access(out, X_OK) == 0) return 1;
        path += len + (path[len] == ':');
    }
    return 0;
}

static int mkdir_p(const char *dir, xt_err *e) {
    char p[1024];
    if (xt_mkdirs(dir, p, sizeof p)) return xt_fail(e, XT_EDATA, "%s: cannot create directory: %s", p, strerror(errno));
    return 0;
}

/* Run argv (argv[0] an absolute path) with stdout to /dev/null and stderr
 * captured; returns the exit status (or 128 + signal, or -1 when it could
 * not start) and keeps the last line of stderr in err. Uses only fork/dup2/
 * execv in the child, which is safe in a threaded process. */
static int run(char *const argv[], char *err, size_t cap) {
    int fd[2];
    err[0] = 0;
    if (pipe2(fd, O_CLOEXEC) != 0) {
        snprintf(err, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, cap, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        if (devnull >= 0) close(devnull);
        return -1;
    }
    if (pid == 0) {
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        dup2(fd[1], 2); /* dup2 clears close-on-exec on the copy */
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    if (devnull >= 0) close(devnull);
    /* Keep only the last bytes of stderr: the error is at the end. */
    char buf[4096], tail[1024];
    size_t have = 0;
    ssize_t r;
    while ((r = read(fd[0], buf, sizeof buf)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        size_t add = (size_t)r > sizeof tail - 1 ? sizeof tail - 1 : (size_t)r;
        if (have + add > sizeof tail - 1) {
            size_t drop = have + add - (sizeof tail - 1);
            memmove(tail, tail + drop, have - drop);
            have -= drop;
        }
        memcpy(tail + have, buf + r - add, add);
        have += add;
    }
    close(fd[0]);
    tail[have] = 0;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    while (have && (tail[have - 1] == '\n' || tail[have - 1] == '\r' || tail[have - 1] == ' ')) tail[--have] = 0;
    const char *last = strrchr(tail, '\n');
    last = last ? last + 1 : tail;
    size_t len = strlen(last) < cap - 1 ? strlen(last) : cap - 1;
    memcpy(err, last, len);
    err[len] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The downloader to run: curl, else wget; its path into tool. NULL if neither. */
static const char *find_tool(char *tool, size_t cap) {
    if (on_path("curl", tool, cap)) return "curl";
    if (on_path("wget", tool, cap)) return "wget";
    return NULL;
}

/* Fetch url to dest; 0 or nonzero with a one-line reason in why. */
static int fetch(const char *url, const char *dest, char *why, size_t cap) {
    char tool[1024], msg[512];
    const char *name = find_tool(tool, sizeof tool);
    if (!name) {
        snprintf(why, cap, "neither curl nor wget is installed");
        return -1;
    }
    char *curl[] = {tool, "-fsSL", "--connect-timeout", "10", "--speed-limit", "1024", "--speed-time", "30",
                    "-o", (char *)dest, (char *)url, NULL};
    char *wget[] = {tool, "-nv", "--tries=1", "--timeout=10", "-O", (char *)dest, (char *)url, NULL};
    /* curl -f: an HTTP error is a failure, not an HTML page saved as data. No
     * retries (the next mirror is the retry); give up on a stalled transfer
     * (< 1 KB/s for 30 s) rather than after a total time, which a slow but
     * working link could exceed. */
    int rc = run(!strcmp(name, "curl") ? curl : wget, msg, sizeof msg);
    if (rc == 0) return 0;
    if (!msg[0]) snprintf(msg, sizeof msg, "exit status %d", rc);
    /* the tools usually name themselves ("curl: (6) Could not resolve host"); say it once */
    if (!strncmp(msg, name, strlen(name)) && msg[strlen(name)] == ':')
        snprintf(why, cap, "%.240s", msg);
    else
        snprintf(why, cap, "%s: %.200s", name, msg);
    return rc;
}

int xt_download_file(const char *const *mirrors, int n, const char *dir, const char *name, const char *md5_hex,
                     xt_download_note note, void *ctx, xt_err *e) {
    char final[1024], part[1100], url[2048], got[33], reasons[700] = "";
    size_t used = 0;
    char tool[1024];
    if (!dir || !*dir) return xt_fail(e, XT_EUSAGE, "cannot download %s: no directory given", name);
    if (!find_tool(tool, sizeof tool))
        return xt_fail(e, XT_EDATA,
                       "cannot download %s: neither curl nor wget is installed; install one (apt-get install curl), "
                       "or copy the files into %s by hand (see data/README.md), or use `dataset: synthetic`",
                       name, dir);
    int rc = mkdir_p(dir, e);
    if (rc) return rc;
    snprintf(final, sizeof final, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    snprintf(part, sizeof part, "%s.part", final);
    if (access(final, F_OK) == 0) {
        if (xt_md5_file(final, got, NULL) == 0 && !strcmp(got, md5_hex)) {
            notef(note, ctx, "%s: already present, MD5 ok", final);
            return 0;
        }
        notef(note, ctx, "%s: present but its MD5 is wrong; downloading it again", final);
    }
    for (int m = 0; m < n; m++) {
        const char *base = mirrors[m];
        snprintf(url, sizeof url, "%s%s%s", base, base[0] && base[strlen(base) - 1] == '/' ? "" : "/", name);
        char why[400] = "";
        if (fetch(url, part, why, sizeof why) == 0) {
            if (xt_md5_file(part, got, NULL) != 0)
                snprintf(why, sizeof why, "the download vanished");
            else if (strcmp(got, md5_hex) != 0)
                snprintf(why, sizeof why, "MD5 mismatch (got %s, expected %s)", got, md5_hex);
            else if (rename(part, final) != 0)
                snprintf(why, sizeof why, "cannot rename the .part file: %s", strerror(errno));
            else {
                notef(note, ctx, "%s: downloaded from %s, MD5 ok", final, url);
                return 0;
            }
        }
        unlink(part);
        int w = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s", used ? "; " : "", url, why);
        if (w > 0) used = used + (size_t)w < sizeof reasons ? used + (size_t)w : sizeof reasons - 1;
    }
    return xt_fail(e, XT_EDATA,
                   "could not download %s into %s (%s); if this machine is offline, copy the files into %s by hand "
                   "(see data/README.md) or use `dataset: synthetic`",
                   name, dir, n ? reasons : "no mirror given", dir);
}

/* What the reader would use instead of the download, when it is there:
 * an uncompressed IDX file, or CIFAR-10's extracted batches. Its checksum is
 * not published, so it is kept unchecked (the reader validates it). */
static int have_unpacked(xt_data_kind kind, const char *dir, const remote_file *f, xt_download_note note, void *ctx) {
    char raw[1024];
    if (kind == XT_DATA_CIFAR10) {
        if (xt_cifar_find(dir, XT_SPLIT_TRAIN, raw, sizeof raw) != 1 || xt_cifar_find(dir, XT_SPLIT_TEST, raw, sizeof raw) != 1)
            return 0;
        notef(note, ctx, "%s: extracted CIFAR-10 present (not checked against the archive's MD5)", raw);
        return 1;
    }
    snprintf(raw, sizeof raw, "%s/%.*s", dir, (int)(strlen(f->name) - 3), f->name);
    if (access(raw, F_OK) != 0) return 0;
    notef(note, ctx, "%s: present (uncompressed, not checked against the .gz MD5)", raw);
    return 1;
}

int xt_download_dataset(xt_data_kind kind, const char *dir, xt_download_note note, void *ctx, xt_err *e) {
    remote_set rs;
    if (remote_of(kind, &rs))
        return xt_fail(e, XT_EUSAGE, "--download: dataset %s is generated, there is nothing to download",
                       xt_data_kind_name(kind));
    if (!dir || !*dir)
        return xt_fail(e, XT_EUSAGE, "--download: datadir is not set; set it to where the files should go");
    const char *env = getenv("XLATRAIN_DATA_MIRROR");
    const char *one[1] = {env};
    if (env && *env) rs.mirrors = one, rs.nmirrors = 1;
    for (int i = 0; i < rs.nfiles; i++) {
        if (have_unpacked(kind, dir, &rs.files[i], note, ctx)) continue;
        int rc = xt_download_file(rs.mirrors, rs.nmirrors, dir, rs.files[i].name, rs.files[i].md5, note, ctx, e);
        if (rc) return rc;
    }
    return 0;
}
