/* sweep.c — --sweep: parse the axes, check every value as the run would,
 * claim the sweep's directory, then run the product one run at a time by
 * fork + exec of this binary, reading each run's results.json when it ends.
 *
 * Why exec and not a call back into xt_train_main: a run that crashes,
 * diverges, leaks or corrupts memory must not stop or skew the others, and
 * each run must be a normal run (its own lock, config.yaml, results.json,
 * exit code) that its recorded command line reproduces. A fresh process
 * gives that for free; the cost is a millisecond of exec per run.
 * The run's stdout goes to the sweep's stderr, so the sweep's stdout holds
 * only its table. Each run gets its own process group: a Ctrl-C reaches
 * the sweep alone, which passes it on once (so the run checkpoints and
 * exits 130, as a single run does) and then starts no further runs.
 * Not here: the summary files and the table (sweep_report.c). */
#include "run/sweep.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/config_keys.h"
#include "io/ckptdir.h"
#include "run/results_file.h"
#include "run/rundir.h"
#include "run/sweep_report.h"

#define XT_SWEEP_MAX_RUNS 100000

/* ---- the axes ------------------------------------------------------------- */

/* Add one value (a copy of s[0..n)) to axis a. */
static int add_value(xt_sweep_axis *a, const char *s, size_t n, const char *spec, xt_err *e) {
    if (!n) return xt_fail(e, XT_EUSAGE, "--sweep %s: an empty value; give KEY=v1,v2,... with no empty entries", spec);
    char **v = realloc(a->values, (size_t)(a->nvalues + 1) * sizeof *v);
    if (!v) return xt_fail(e, XT_ERUNTIME, "out of memory");
    a->values = v;
    if (!(v[a->nvalues] = strndup(s, n))) return xt_fail(e, XT_ERUNTIME, "out of memory");
    a->nvalues++;
    return 0;
}

/* "key=v1,v2,...": values split at commas outside [] and {} (so a list
 * value such as train_subset=[0,1000] stays whole). */
static int parse_axis(xt_sweep_axis *a, const char *spec, xt_err *e) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
        return xt_fail(e, XT_EUSAGE, "--sweep %s: expected KEY=v1,v2,..., e.g. --sweep learning_rate=0.01,0.1", spec);
    if ((size_t)(eq - spec) >= sizeof a->key) return xt_fail(e, XT_EUSAGE, "--sweep %.60s...: the key is too long", spec);
    snprintf(a->key, sizeof a->key, "%.*s", (int)(eq - spec), spec);
    if (!strcmp(a->key, "output_dir"))
        return xt_fail(e, XT_EUSAGE, "--sweep output_dir: each run's directory is <output_dir>/<i>-<values>; sweep other keys");
    int depth = 0;
    const char *start = eq + 1;
    for (const char *p = start;; p++) {
        if (*p == '[' || *p == '{') depth++;
        if ((*p == ']' || *p == '}') && depth > 0) depth--;
        if ((*p == ',' && depth == 0) || !*p) {
            if (add_value(a, start, (size_t)(p - start), spec, e)) return e->code;
            start = p + 1;
        }
        if (!*p) break;
    }
    return 0;
}

/* Each value exactly as the run will get it (--set KEY=VALUE after the
 * command line's own --set), so a typo or an out-of-range value stops the
 * sweep before its first run, with the config loader's message. */
static int check_value(const xt_cli *cli, const char *key, const char *value, xt_err *e) {
    char set[1200];
    snprintf(set, sizeof set, "%s=%s", key, value);
    const char **sets = malloc((size_t)(cli->nset + 1) * sizeof *sets);
    if (!sets) return xt_fail(e, XT_ERUNTIME, "out of memory");
    for (int i = 0; i < cli->nset; i++) sets[i] = cli->sets[i];
    sets[cli->nset] = set;
    xt_config c;
    int rc = xt_config_load(&c, cli->config_path, sets, cli->nset + 1, e);
    if (!rc) xt_config_free(&c);
    free(sets);
    if (rc && !strncmp(e->msg, "--set ", 6)) { /* the user wrote --sweep: say so */
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "--sweep %s", e->msg + 6);
        memcpy(e->msg, msg, sizeof msg);
    }
    return rc;
}

static int parse_axes(xt_sweep *s, const xt_cli *cli, xt_err *e) {
    s->axes = calloc((size_t)cli->nsweep, sizeof *s->axes);
    if (!s->axes) return xt_fail(e, XT_ERUNTIME, "out of memory");
    s->naxes = cli->nsweep;
    long long total = 1;
    for (int i = 0; i < s->naxes; i++) {
        xt_sweep_axis *a = &s->axes[i];
        if (parse_axis(a, cli->sweeps[i], e)) return e->code;
        for (int j = 0; j < i; j++)
            if (!strcmp(s->axes[j].key, a->key))
                return xt_fail(e, XT_EUSAGE, "--sweep %s: the key is swept twice; give all its values in one --sweep %s=v1,v2,...", a->key, a->key);
        for (int v = 0; v < a->nvalues; v++)
            if (check_value(cli, a->key, a->values[v], e)) return e->code;
        total *= a->nvalues;
        if (total > XT_SWEEP_MAX_RUNS)
            return xt_fail(e, XT_EUSAGE, "--sweep: more than %d runs in the product; split the sweep", XT_SWEEP_MAX_RUNS);
    }
    return 0;
}

/* ---- the runs ------------------------------------------------------------- */

/* A directory name's character: anything that could make a path or a
 * shell word ambiguous becomes '_'. */
static char dir_char(char ch) {
    return ch == '/' || ch == '\\' || (unsigned char)ch <= ' ' || ch == '"' || ch == '\'' || ch == '*' || ch == '?' ? '_' : ch;
}

/* <sweep dir>/<i>-<key=value,...> */
static int row_dir(const xt_sweep *s, xt_sweep_row *r, xt_err *e) {
    size_t cap = sizeof r->dir, o = (size_t)snprintf(r->dir, cap, "%s/%d-", s->dir, r->index);
    for (int a = 0; a < s->naxes && o < cap; a++) {
        o += (size_t)snprintf(r->dir + o, cap - o, "%s%s=", a ? "," : "", s->axes[a].key);
        for (const char *p = xt_sweep_value(s, r, a); *p && o < cap - 1; p++) r->dir[o++] = dir_char(*p);
        if (o < cap) r->dir[o] = 0;
    }
    if (o >= cap - 16)
        return xt_fail(e, XT_EUSAGE, "--sweep: run directory %.80s... is too long; use shorter values or a shorter output_dir", r->dir);
    return 0;
}

static int build_rows(xt_sweep *s, xt_err *e) {
    s->nrows = 1;
    for (int a = 0; a < s->naxes; a++) s->nrows *= s->axes[a].nvalues;
    s->rows = calloc((size_t)s->nrows, sizeof *s->rows);
    if (!s->rows) return xt_fail(e, XT_ERUNTIME, "out of memory");
    for (int i = 0; i < s->nrows; i++) {
        xt_sweep_row *r = &s->rows[i];
        r->index = i + 1;
        if (!(r->choice = calloc((size_t)s->naxes, sizeof *r->choice))) return xt_fail(e, XT_ERUNTIME, "out of memory");
        for (int a = s->naxes - 1, rest = i; a >= 0; a--) { /* the first axis varies slowest, as nested loops */
            r->choice[a] = rest % s->axes[a].nvalues;
            rest /= s->axes[a].nvalues;
        }
        r->best_acc = r->final_acc = r->final_loss = r->samples_per_sec = NAN;
        if (row_dir(s, r, e)) return e->code;
    }
    return 0;
}

/* --sweep-resume continues the grid that made the directory (or extends
 * it, keeping its runs): every run directory there ("<i>-<key=value,...>")
 * must be this grid's run i. Else the old rows would be replaced in
 * summary.csv and run numbers would mean two things. */
static int check_same_grid(const xt_sweep *s, xt_err *e) {
    DIR *dp = opendir(s->dir);
    if (!dp) return 0;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(dp))) {
        char *end;
        long i = strtol(de->d_name, &end, 10);
        if (end == de->d_name || *end != '-' || de->d_name[0] == '-' || de->d_name[0] == '+') continue;
        char path[1100];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name);
        if (stat(path, &st) || !S_ISDIR(st.st_mode)) continue;
        if (i >= 1 && i <= s->nrows && !strcmp(s->rows[i - 1].dir, path)) continue;
        rc = xt_fail(e, XT_EUSAGE, "--sweep-resume: %s holds a sweep over another grid (its run %s is not this grid's); give the --sweep options that made it, or set output_dir to a new directory for this grid",
                     s->dir, de->d_name);
    }
    closedir(dp);
    return rc;
}

/* r's results.json into r, when it was written at or after `since` (so a
 * file left by an earlier attempt is never taken for this one's). 0 when
 * read, -1 when absent, stale or unreadable. */
static int read_results(xt_sweep_row *r, const struct timespec *since) {
    char path[1100];
    snprintf(path, sizeof path, "%s/results.json", r->dir);
    struct stat st;
    if (stat(path, &st) || (since && (st.st_mtim.tv_sec < since->tv_sec ||
                                      (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))))
        return -1;
    xt_results_file f;
    if (xt_results_read(r->dir, &f)) return -1;
    const json_t *status = json_object_get(f.root, "status"), *code = json_object_get(f.root, "exit_code");
    int ok = json_is_string(status) && json_is_integer(code);
    if (ok) {
        snprintf(r->status, sizeof r->status, "%s", json_string_value(status));
        r->exit_code = (int)json_integer_value(code);
        r->best_acc = xt_results_num(&f, "best_accuracy");
        r->final_acc = xt_results_num(&f, "final_accuracy");
        r->final_loss = xt_results_num(&f, "final_loss");
        r->samples_per_sec = xt_results_num(&f, "samples_per_sec");
    }
    xt_results_free(&f);
    return ok ? 0 : -1;
}

/* ---- running one ---------------------------------------------------------- */

static volatile sig_atomic_t g_stop;      /* the signal that asked the sweep to stop, 0 if none */
static volatile pid_t g_child;

static void on_signal(int sig) {
    g_stop = sig;
    if (g_child > 0) kill(g_child, sig);  /* once: the run checkpoints and exits 130 */
}

/* The run's command line: this binary, the sweep's own options, the run's
 * values and directory, and how to treat what an earlier attempt left. */
static char **run_argv(const xt_sweep *s, const xt_sweep_row *r, const xt_cli *cli, const char *mode) {
    int cap = 12 + 2 * cli->nset + 2 * s->naxes, n = 0;
    char **av = calloc((size_t)cap + 1, sizeof *av);
    if (!av) return NULL;
    av[n++] = strdup(cli->argv[0]);
    av[n++] = strdup("--config");
    av[n++] = strdup(cli->config_path);
    for (int i = 0; i < cli->nset; i++) {
        av[n++] = strdup("--set");
        av[n++] = strdup(cli->sets[i]);
    }
    for (int a = 0; a < s->naxes; a++) {
        av[n++] = strdup("--set");
        if (asprintf(&av[n++], "%s=%s", s->axes[a].key, xt_sweep_value(s, r, a)) < 0) av[n - 1] = NULL;
    }
    av[n++] = strdup("--set");
    if (asprintf(&av[n++], "output_dir=%s", r->dir) < 0) av[n - 1] = NULL;
    if (s->logdir[0]) { /* one TensorBoard run per sweep run, side by side under the logdir */
        const char *base = strrchr(r->dir, '/');
        av[n++] = strdup("--set");
        if (asprintf(&av[n++], "logdir=%s/%s", s->logdir, base ? base + 1 : r->dir) < 0) av[n - 1] = NULL;
    }
    if (cli->download) av[n++] = strdup("--download");
    if (cli->max_compiles > 0) {
        av[n++] = strdup("--max-compiles");
        if (asprintf(&av[n++], "%d", cli->max_compiles) < 0) av[n - 1] = NULL;
    }
    if (!strcmp(mode, "resume")) {
        av[n++] = strdup("--resume");
        av[n++] = strdup("latest");
    } else if (!strcmp(mode, "overwrite")) av[n++] = strdup("--overwrite");
    for (int i = 0; i < n; i++)
        if (!av[i]) { /* out of memory: no half command line */
            for (int j = 0; j < n; j++) free(av[j]);
            free(av);
            return NULL;
        }
    return av;
}

static void free_argv(char **av) {
    for (int i = 0; av && av[i]; i++) free(av[i]);
    free(av);
}

/* Fork + exec the run and wait for it; returns its exit code (128+N when
 * killed by signal N, 127 when it could not be started). */
static int exec_run(char **av, int *signaled) {
    fflush(NULL);
    pid_t sweep = getpid(), pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        setpgid(0, 0);
        /* its own process group keeps a terminal's Ctrl-C to the sweep, which
         * passes it on once; but a sweep killed outright (SIGKILL, an OOM
         * kill) must not leave its run training unseen: the run gets the
         * SIGTERM it would get from the sweep, checkpoints and ends as
         * interrupted, and --sweep-resume continues it */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != sweep) _exit(128 + SIGTERM); /* the sweep died before prctl */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        dup2(STDERR_FILENO, STDOUT_FILENO); /* the sweep's stdout is its table */
        execv("/proc/self/exe", av);
        fprintf(stderr, "xlatrain: cannot run /proc/self/exe for a sweep run: %s\n", strerror(errno));
        _exit(127);
    }
    g_child = pid;
    if (g_stop) kill(pid, g_stop); /* a signal that came between the check and the fork */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    g_child = 0;
    *signaled = WIFSIGNALED(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 127;
}

/* What an earlier attempt left in the run's directory decides how this
 * one starts: ended with exit 0 -> skipped (--sweep-resume), a checkpoint -> resumed, other
 * outputs -> overwritten (only with --sweep-resume; otherwise the run
 * refuses the directory, as any run does). */
static const char *start_mode(xt_sweep_row *r, const xt_cli *cli) {
    if (!cli->sweep_resume) return "new";
    if (!read_results(r, NULL) && r->exit_code == 0) return "skip"; /* ok, time_limit or early_stopped */
    char ck[1100];
    xt_err ignored = {0};
    if (!xt_st_find_latest(r->dir, ck, sizeof ck, &ignored)) return "resume";
    return xt_rundir_holds_run(r->dir) ? "overwrite" : "new";
}

static int run_one(const xt_sweep *s, xt_sweep_row *r, const xt_cli *cli, xt_err *e) {
    const char *mode = start_mode(r, cli);
    if (!strcmp(mode, "skip")) {
        r->done = r->skipped = 1;
        fprintf(stderr, "xlatrain: sweep run %d/%d: %s already ended %s; skipped\n", r->index, s->nrows, r->dir, r->status);
        return 0;
    }
    fprintf(stderr, "xlatrain: sweep run %d/%d%s: %s\n", r->index, s->nrows, !strcmp(mode, "resume") ? " (resumed)" : "", r->dir);
    char **av = run_argv(s, r, cli, mode);
    if (!av) return xt_fail(e, XT_ERUNTIME, "out of memory");
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    t0.tv_sec -= 1; /* file systems with coarse timestamps */
    int signaled = 0, code = exec_run(av, &signaled);
    free_argv(av);
    memset(r->status, 0, sizeof r->status);
    /* this attempt's summary; or, for a resumed run with nothing left to
     * train (it reprints its summary without rewriting it), the one it kept */
    int have = !read_results(r, &t0) || (!strcmp(mode, "resume") && !read_results(r, NULL));
    if (!have || r->exit_code != code) { /* it wrote no summary of how it ended */
        snprintf(r->status, sizeof r->status, "%s", signaled ? "crashed" : code ? "error" : "ok");
        r->best_acc = r->final_acc = r->final_loss = r->samples_per_sec = NAN;
    }
    r->exit_code = code;
    r->done = 1;
    return 0;
}

/* ---- the sweep ------------------------------------------------------------ */

static void free_sweep(xt_sweep *s) {
    for (int a = 0; a < s->naxes; a++) {
        for (int v = 0; v < s->axes[a].nvalues; v++) free(s->axes[a].values[v]);
        free(s->axes[a].values);
    }
    free(s->axes);
    for (int i = 0; s->rows && i < s->nrows; i++) free(s->rows[i].choice);
    free(s->rows);
}

static int run_all(xt_sweep *s, const xt_cli *cli, xt_err *e) {
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = 0;
    for (int i = 0; i < s->nrows && !rc && !g_stop; i++) {
        rc = run_one(s, &s->rows[i], cli, e);
        if (!rc) rc = xt_sweep_report_write(s, e); /* a killed sweep keeps every finished run's row */
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}

/* The sweep's exit code: the first failing run's (in run order), with a
 * line that says how many failed and which, so a script or a person sees
 * at once whether it was one run or all of them. */
enum { FAILED_LISTED = 8 }; /* indices named in the line; the count says the rest */
static int fail_on_failed_runs(const xt_sweep *s, xt_err *e) {
    int nfailed = 0, first = -1, ndone = 0;
    char list[FAILED_LISTED * sizeof ", -2147483648" + sizeof ", ..."] = ""; /* the widest entries */
    size_t at = 0;
    for (int i = 0; i < s->nrows; i++) {
        if (!s->rows[i].done) continue;
        ndone++;
        if (!s->rows[i].exit_code) continue;
        if (first < 0) first = i;
        if (nfailed < FAILED_LISTED)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", nfailed ? ", " : "", s->rows[i].index);
        else if (nfailed == FAILED_LISTED)
            at += (size_t)snprintf(list + at, sizeof list - at, ", ...");
        if (at >= sizeof list) at = sizeof list - 1; /* cannot happen with the sizes above; never past the end */
        nfailed++;
    }
    if (first < 0) return 0;
    const xt_sweep_row *r = &s->rows[first];
    if (nfailed == 1)
        return xt_fail(e, r->exit_code, "sweep: 1 of %d runs failed: run %d (%s) ended with exit code %d (%s); see its results.json",
                       ndone, r->index, r->dir, r->exit_code, r->status);
    return xt_fail(e, r->exit_code,
                   "sweep: %d of %d runs failed (runs %s); the first, run %d (%s), ended with exit code %d (%s); see its "
                   "results.json",
                   nfailed, ndone, list, r->index, r->dir, r->exit_code, r->status);
}

int xt_sweep_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    xt_sweep s = {0};
    xt_rundir rd = {.lock_fd = -1};
    int rc = parse_axes(&s, cli, e);
    /* auto already gives each run its own <run dir>/tb; a swept logdir is the user's own */
    int logdir_swept = 0;
    for (int a = 0; a < s.naxes; a++) logdir_swept |= !strcmp(s.axes[a].key, "logdir");
    if (strcmp(c->logdir, "auto") && !logdir_swept) snprintf(s.logdir, sizeof s.logdir, "%s", c->logdir);
    if (!rc) rc = xt_rundir_claim(&rd, c->output_dir, cli->sweep_resume ? XT_CLAIM_CONTINUE : XT_CLAIM_NEW,
                                  !c->output_dir_set && !cli->sweep_resume, 0, e);
    if (!rc) {
        snprintf(s.dir, sizeof s.dir, "%s", rd.dir);
        fprintf(stderr, "xlatrain: sweep directory %s\n", s.dir);
        rc = build_rows(&s, e);
        if (!rc && cli->sweep_resume) rc = check_same_grid(&s, e);
    }
    if (!rc) rc = xt_sweep_report_write(&s, e); /* the header at once: the directory now holds a sweep */
    if (!rc) rc = run_all(&s, cli, e);
    if (!rc) {
        xt_sweep_report_print(&s, stdout);
        rc = fail_on_failed_runs(&s, e);
        if (g_stop)
            rc = xt_fail(e, XT_EINTR, "sweep interrupted; continue it with --sweep-resume --set output_dir=%s", s.dir);
    }
    xt_rundir_release(&rd);
    free_sweep(&s);
    return rc;
}
