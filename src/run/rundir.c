/* rundir.c — one run per output directory, and a lock while it runs.
 *
 * The lock is flock(2) on <dir>/xlatrain.lock: exclusive for training (new
 * or resumed), shared for --eval-only and --predict. flock belongs to the
 * open file description, so the workers forked later share it rather than
 * take it: none of them ever calls flock, the description stays locked
 * while any of them is alive, and the kernel drops it when the last one
 * dies. O_CLOEXEC keeps it out of anything exec'd (the downloader).
 * The exclusive holder writes its PID into the file so a refused run can
 * name it. Not here: the files a run writes (loop.c, finish.c,
 * checkpoint.c). */
#include "run/rundir.h"

#include "io/atomic.h"
#include "io/ckptdir.h"
#include "util/mkdirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define XT_MAX_RUN_SUFFIX 9999

/* The names a run writes, exactly; checkpoints are matched by pattern. */
const char *const xt_rundir_own_names[] = {
    "results.json", "metrics.jsonl", "curves.png", "predictions.png", "predictions.csv",
    "config.yaml",  "eval.json",     "eval-predictions.png", XT_LOCK_FILE,
    "summary.jsonl", "summary.csv", /* a sweep's directory (sweep_report.h) */
    "best.safetensors",             /* checkpoint.keep_best */
    "confusion.json", "confusion.png", "eval-confusion.json", "eval-confusion.png", /* confusion.h */
};
const int xt_rundir_nown_names = (int)(sizeof xt_rundir_own_names / sizeof *xt_rundir_own_names);

static int all_digits(const char *s, size_t n) {
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* checkpoint-epochNNN[-stepNNN].safetensors */
static int is_checkpoint_name(const char *s, size_t n) {
    static const char pre[] = "checkpoint-epoch", suf[] = ".safetensors";
    size_t np = sizeof pre - 1, ns = sizeof suf - 1;
    if (n <= np + ns || strncmp(s, pre, np) || strncmp(s + n - ns, suf, ns)) return 0;
    const char *mid = s + np;
    size_t nm = n - np - ns;
    const char *step = memchr(mid, '-', nm);
    if (!step) return all_digits(mid, nm);
    size_t ne = (size_t)(step - mid);
    return all_digits(mid, ne) && nm - ne > 5 && !strncmp(step, "-step", 5) && all_digits(step + 5, nm - ne - 5);
}

static int is_own_exact(const char *s, size_t n) {
    for (int i = 0; i < xt_rundir_nown_names; i++)
        if (strlen(xt_rundir_own_names[i]) == n && !strncmp(s, xt_rundir_own_names[i], n)) return 1;
    return is_checkpoint_name(s, n);
}

int xt_rundir_is_own_file(const char *name) {
    size_t n = strlen(name);
    if (is_own_exact(name, n)) return 1;
    /* a temp file of an atomic write: "<own name>.tmp.<pid>" */
    const char *t = strstr(name, ".tmp.");
    return t && all_digits(t + 5, strlen(t + 5)) && is_own_exact(name, (size_t)(t - name));
}

int xt_rundir_holds_run(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(dp))) /* a temp file is no finished output: it does not make a run */
        found = strcmp(de->d_name, XT_LOCK_FILE) && is_own_exact(de->d_name, strlen(de->d_name));
    closedir(dp);
    return found;
}

/* A sweep's directory: its summary files (sweep_report.h). */
static int holds_sweep(const char *dir) {
    char path[700];
    struct stat st;
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    if (lstat(path, &st) == 0) return 1;
    snprintf(path, sizeof path, "%s/summary.jsonl", dir);
    return lstat(path, &st) == 0;
}

int xt_rundir_newest(const char *base, char *out, size_t cap) {
    char dir[620];
    struct timespec best = {0, 0};
    int found = 0;
    for (int i = 1; i <= XT_MAX_RUN_SUFFIX; i++) {
        if (i == 1) snprintf(dir, sizeof dir, "%s", base);
        else snprintf(dir, sizeof dir, "%s-%d", base, i);
        struct stat st;
        /* written last: a run's checkpoints and summary are renamed into its directory */
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || !xt_rundir_holds_run(dir)) continue;
        if (!found++ || st.st_mtim.tv_sec > best.tv_sec || (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec)) {
            best = st.st_mtim;
            snprintf(out, cap, "%s", dir);
        }
    }
    return found;
}

static int mkdir_p(const char *path, xt_err *e) {
    char p[600];
    if (xt_mkdirs(path, p, sizeof p))
        return xt_fail(e, XT_EIO, "%s: cannot create the output directory: %s; set output_dir to a writable place", p, strerror(errno));
    return 0;
}

/* Who holds the lock, for the message. A shared lock we can take too
 * means readers (--eval-only, --predict) hold it; else a run holds it
 * exclusively: its PID once written, or a run still starting. */
static void holder(int fd, int wanted_exclusive, char *buf, size_t cap) {
    if (wanted_exclusive && flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        snprintf(buf, cap, "another xlatrain (--eval-only or --predict)");
        return;
    }
    char txt[32] = {0};
    ssize_t n = pread(fd, txt, sizeof txt - 1, 0);
    long pid = n > 0 ? strtol(txt, NULL, 10) : 0;
    if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) snprintf(buf, cap, "xlatrain PID %ld (a training run)", pid);
    else if (pid > 0) snprintf(buf, cap, "another xlatrain training run (its PID %ld is gone: its workers may still be ending)", pid);
    else snprintf(buf, cap, "another xlatrain training run (starting up)");
}

/* Open and try-lock <dir>/xlatrain.lock. 0 with d->lock_fd set; 1 when
 * busy (holder described in who); XT_EIO. */
static int try_lock(xt_rundir *d, xt_claim_kind kind, char *who, size_t cap, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", d->dir, XT_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && kind == XT_CLAIM_READ) fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && kind == XT_CLAIM_READ && errno == ENOENT) return 0; /* read-only directory, no run to guard */
    if (fd < 0) return xt_fail(e, XT_EIO, "%s: cannot open the lock file: %s; set output_dir to a writable place", path, strerror(errno));
    if (flock(fd, (kind == XT_CLAIM_READ ? LOCK_SH : LOCK_EX) | LOCK_NB)) {
        int err = errno;
        if (err != EWOULDBLOCK) {
            close(fd);
            return xt_fail(e, XT_EIO, "%s: cannot lock: %s", path, strerror(err));
        }
        holder(fd, kind != XT_CLAIM_READ, who, cap);
        close(fd);
        return 1;
    }
    d->lock_fd = fd;
    return 0;
}

/* The PID in the lock file, once the directory is ours (a refused run
 * leaves the file as it found it). */
static void write_pid(const xt_rundir *d) {
    char txt[32];
    int n = snprintf(txt, sizeof txt, "%ld\n", (long)getpid());
    if (ftruncate(d->lock_fd, 0) || pwrite(d->lock_fd, txt, (size_t)n, 0) != n) {} /* only a refusal's message needs it */
}

/* The event files of logdir: auto (<dir>/tb, run/tb.h), and the directory
 * when that leaves it empty; a logdir set elsewhere may hold other runs'
 * files and is left alone. Errors are ignored: TensorBoard would only show
 * the old run beside the new one. */
static void remove_own_events(const char *dir) {
    char tb[700], path[1000];
    snprintf(tb, sizeof tb, "%s/tb", dir);
    DIR *dp = opendir(tb);
    if (!dp) return;
    struct dirent *de;
    while ((de = readdir(dp)))
        if (!strncmp(de->d_name, "events.out.tfevents.", 20) && (size_t)snprintf(path, sizeof path, "%s/%s", tb, de->d_name) < sizeof path)
            unlink(path);
    closedir(dp);
    rmdir(tb);
}

/* Remove the previous run's own files (never the lock, never others). */
static int remove_own_files(const char *dir, xt_err *e) {
    remove_own_events(dir);
    DIR *dp = opendir(dir);
    if (!dp) return xt_fail(e, XT_EIO, "%s: cannot list the output directory: %s", dir, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(dp))) {
        if (!strcmp(de->d_name, XT_LOCK_FILE) || !xt_rundir_is_own_file(de->d_name)) continue;
        char path[900];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) && errno != ENOENT)
            rc = xt_fail(e, XT_EIO, "%s: cannot remove it for --overwrite: %s", path, strerror(errno));
    }
    closedir(dp);
    return rc;
}

static int busy(const xt_rundir *d, const char *who, xt_err *e) {
    return xt_fail(e, XT_EUSAGE, "%s is in use by %s; wait for it to end, or set output_dir to another directory", d->dir, who);
}

/* Claim exactly d->dir. 0; 1 (busy or holds a run: only with quiet, for
 * the default's next candidate); XT_EUSAGE; XT_EIO. */
static int claim_one(xt_rundir *d, xt_claim_kind kind, int overwrite, int quiet, xt_err *e) {
    char who[160];
    int rc = kind == XT_CLAIM_READ ? 0 : mkdir_p(d->dir, e);
    if (!rc) rc = try_lock(d, kind, who, sizeof who, e);
    if (rc == 1 && !quiet) return busy(d, who, e);
    if (rc) return rc;
    /* holding the lock, the temp files of dead writers are garbage: sweep them */
    if (kind != XT_CLAIM_READ) xt_tmp_sweep(d->dir);
    if (kind == XT_CLAIM_NEW && xt_rundir_holds_run(d->dir) && !overwrite) {
        xt_rundir_release(d);
        if (quiet) return 1;
        if (holds_sweep(d->dir)) /* --overwrite does not go with --sweep: name what does */
            return xt_fail(e, XT_EUSAGE, "%s holds a sweep (summary.csv); continue it, or re-run the runs that did not end ok, with --sweep-resume and the same --sweep options, or set output_dir to a new directory", d->dir);
        /* a run stopped before its first checkpoint (killed or interrupted early, or by a closed
         * pipe; its results.json, if any, says how) has nothing to resume */
        xt_st_ckpt *ck = NULL;
        int nck = 0;
        xt_err ignored = {0};
        if (!xt_st_list_checkpoints(d->dir, &ck, &nck, &ignored) && nck == 0) {
            free(ck);
            return xt_fail(e, XT_EUSAGE, "%s already holds a run that stopped before its first checkpoint; start it again with --overwrite, or set output_dir to a new directory", d->dir);
        }
        free(ck);
        return xt_fail(e, XT_EUSAGE, "%s already holds a run; continue it with --resume latest, replace it with --overwrite, or set output_dir to a new directory", d->dir);
    }
    if (kind != XT_CLAIM_READ && d->lock_fd >= 0) write_pid(d);
    return kind == XT_CLAIM_NEW && overwrite ? remove_own_files(d->dir, e) : 0;
}

int xt_rundir_claim(xt_rundir *d, const char *dir, xt_claim_kind kind, int pick_free, int overwrite, xt_err *e) {
    d->lock_fd = -1;
    if ((size_t)snprintf(d->dir, sizeof d->dir, "%s", dir) >= sizeof d->dir - 16)
        return xt_fail(e, XT_EUSAGE, "output_dir %s is too long; choose a shorter path", dir);
    if (!pick_free || kind != XT_CLAIM_NEW || overwrite) return claim_one(d, kind, overwrite, 0, e);
    for (int i = 1; i <= XT_MAX_RUN_SUFFIX; i++) {
        if (i > 1) snprintf(d->dir, sizeof d->dir, "%s-%d", dir, i);
        int rc = claim_one(d, kind, 0, 1, e);
        if (rc != 1) return rc;
    }
    return xt_fail(e, XT_EUSAGE, "%s ... %s-%d all hold runs; set output_dir or remove old runs", dir, dir, XT_MAX_RUN_SUFFIX);
}

void xt_rundir_release(xt_rundir *d) {
    if (d->lock_fd < 0) return;
    close(d->lock_fd); /* drops our reference; workers that still hold the description keep it locked */
    d->lock_fd = -1;
}
