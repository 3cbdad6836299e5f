/* spawn.c — fork the workers, supervise them, stop them; see spawn.h.
 *
 * The parent polls every XT_POLL_NS: waitpid(WNOHANG) on each of its own
 * children (never waitpid(-1): the caller may have other children), the
 * stop flag, heartbeats, and barriers that can no longer complete. The first
 * failure it sees (or the first abort a worker raised itself) is the culprit
 * named in the report; everything after it is a consequence.
 */
#include "distributed/spawn.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "distributed/shm_layout.h"
#include "distributed/uplink.h"

#define XT_POLL_NS (10 * 1000 * 1000LL)
#define XT_STUCK_NS (1000 * 1000 * 1000LL) /* a barrier that cannot complete, seen this long */
#define XT_WAIT_MARGIN_S 10.0              /* workers' own wait timeout = timeout_s + this */

static xt_dist *volatile g_sig_dist;
static volatile sig_atomic_t g_sig_count, g_sig_last;

static void on_stop_signal(int sig) {
    int saved = errno;
    xt_dist *d = g_sig_dist;
    if (d) xt_dist_request_stop(d, sig); /* lock-free atomic stores only */
    g_sig_count++;
    g_sig_last = sig;
    errno = saved;
}

static const char *sig_name(int sig) {
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return "unknown signal";
    }
}

/* Exit codes that mean something to the caller (enum xt_exit); others become XT_ERUNTIME. */
static int meaningful(int code) {
    return code == XT_EUSAGE || code == XT_EDATA || code == XT_ERUNTIME || code == XT_EIO || code == XT_EBELOW ||
           code == XT_EINTR;
}

/* The (i % ncpu)-th CPU this process may run on. */
static int pick_cpu(int i) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int n = CPU_COUNT(&set);
    if (n <= 0) return -1;
    int want = i % n;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && want-- == 0) return c;
    return -1;
}

static _Noreturn void child_main(xt_dist *d, int i, pid_t parent, int cpu, int (*fn)(int, void *), void *arg) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(XT_ERUNTIME); /* the parent died before prctl took effect */
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set); /* advisory: a refusal (cgroup) is not an error */
    }
    xt_slot *s = xt_dist_slot(d, i);
    atomic_store(&s->pid, (int32_t)getpid());
    atomic_store(&s->beat_ns, xt_mono_ns());
    atomic_store(&s->state, XT_SLOT_RUNNING);
    int rc = fn(i, arg);
    if (rc < 0 || rc > 255) rc = XT_ERUNTIME;
    atomic_store(&s->exit_code, rc);
    int clean = rc == 0 || rc == XT_EBELOW || (rc == XT_EINTR && atomic_load(&d->stop));
    if (!clean) xt_dist_abort_code(d, i, rc, "worker xla:%d exited with code %d", i + d->ordinal_base, rc); /* wake the others now */
    atomic_store(&s->state, XT_SLOT_EXITED);
    fflush(NULL);
    _exit(rc);
}

enum { K_NONE, K_KILLED, K_EXITED, K_HUNG, K_STUCK, K_ABORTED, K_LOST };

typedef struct {
    int rank, kind, other;
    double age;
    long long step;
    int64_t at;
} culprit;

typedef struct {
    pid_t pid;
    int reaped, status, killed_by_us;
} kid;

static int failed_status(const kid *k, int stopping) {
    if (k->status == -1) return 1;
    if (WIFSIGNALED(k->status)) return 1;
    int code = WEXITSTATUS(k->status);
    return !(code == 0 || code == XT_EBELOW || (code == XT_EINTR && stopping));
}

/* "at step 37" / "before its first step" */
static const char *at_step(char *buf, size_t cap, long long step) {
    if (step < 0) snprintf(buf, cap, "before its first step");
    else snprintf(buf, cap, "at step %lld", step);
    return buf;
}

/* Describe how worker c->rank ended; returns the exit code to report. */
static int describe(xt_dist *d, const culprit *c, const kid *kids, char *out, size_t cap) {
    int r = c->rank, g = r + d->ordinal_base; /* messages name the global ordinal */
    xt_slot *s = xt_dist_slot(d, r);
    const kid *k = &kids[r];
    char sb[48];
    long long step = atomic_load(&s->step);
    const char *wmsg = atomic_load(&s->has_msg) ? s->msg : "";
    switch (c->kind) {
    case K_HUNG:
        /* whole seconds, rounded down: at least the configured timeout, never more than was seen */
        if (c->step < 0) snprintf(out, cap, "worker xla:%d hung: no progress for %lld s (no step yet)", g, (long long)c->age);
        else snprintf(out, cap, "worker xla:%d hung: no progress for %lld s (last step %lld)", g, (long long)c->age, c->step);
        return XT_ERUNTIME;
    case K_STUCK:
        snprintf(out, cap, "worker xla:%d waits for worker xla:%d, which already exited with code %d (last step %lld); every worker must make the same collective calls (equal batches per worker)",
                 g, c->other + d->ordinal_base, WEXITSTATUS(kids[c->other].status), (long long)atomic_load(&xt_dist_slot(d, c->other)->step));
        return XT_ERUNTIME;
    case K_LOST:
        snprintf(out, cap, "worker xla:%d disappeared (reaped by someone else) %s", g, at_step(sb, sizeof sb, step));
        return XT_ERUNTIME;
    default:
        break;
    }
    /* K_KILLED, K_EXITED, K_ABORTED: by how the process ended */
    if (k->reaped && k->status != -1 && WIFSIGNALED(k->status) && !(c->kind == K_ABORTED && k->killed_by_us)) {
        int sig = WTERMSIG(k->status);
        int n = snprintf(out, cap, "worker xla:%d was killed by signal %d (%s) %s", g, sig, sig_name(sig), at_step(sb, sizeof sb, step));
        if (*wmsg && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, ": %s", wmsg);
        return XT_ERUNTIME;
    }
    const char *why = c->kind == K_ABORTED ? xt_dist_abort_reason(d) : "";
    char base[64];
    if (k->reaped && k->status != -1 && WIFEXITED(k->status) && WEXITSTATUS(k->status) != 0) {
        int code = WEXITSTATUS(k->status);
        snprintf(base, sizeof base, "worker xla:%d exited with code %d", g, code);
        /* the worker's own message first; the abort reason unless it only repeats the base */
        const char *detail = *wmsg ? wmsg : (*why && strncmp(why, base, strlen(base)) != 0 ? why : "");
        snprintf(out, cap, "%s%s%s", base, *detail ? ": " : "", detail);
        return meaningful(code) ? code : XT_ERUNTIME;
    }
    snprintf(out, cap, "worker xla:%d aborted the run %s: %s", g, at_step(sb, sizeof sb, step), *why ? why : wmsg);
    int code = atomic_load(&d->abort_code);
    return meaningful(code) && code != XT_EBELOW ? code : XT_ERUNTIME;
}

static void kill_all(kid *kids, int n, int *killed_all) {
    for (int i = 0; i < n; i++)
        if (!kids[i].reaped) {
            kill(kids[i].pid, SIGKILL);
            kids[i].killed_by_us = 1;
        }
    *killed_all = 1;
}

static void sleep_ns(int64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / XT_NS_PER_S), .tv_nsec = (long)(ns % XT_NS_PER_S)};
    nanosleep(&ts, NULL); /* EINTR (a signal) just ends the poll early */
}

/* A live worker waiting on a barrier generation that cannot complete because
 * another worker already exited cleanly; sets *exited. Returns the waiter or -1. */
static int find_stuck(xt_dist *d, const kid *kids, int n, int *exited) {
    int gone = -1;
    for (int i = 0; i < n && gone < 0; i++)
        if (kids[i].reaped && !failed_status(&kids[i], 1)) gone = i;
    if (gone < 0) return -1;
    uint32_t seq = atomic_load(&d->bar.seq);
    uint32_t turn = atomic_load(&d->serial_turn);
    for (int i = 0; i < n; i++) {
        if (kids[i].reaped) continue;
        xt_slot *s = xt_dist_slot(d, i);
        uint32_t w = atomic_load(&s->waiting);
        if (w == XT_IN_BARRIER && atomic_load(&s->wait_gen) == seq) {
            *exited = gone;
            return i;
        }
        if (w == XT_IN_SERIAL && kids[turn % (uint32_t)n].reaped) {
            *exited = (int)(turn % (uint32_t)n);
            return i;
        }
    }
    return -1;
}

/* The supervisor's view of the run between polls. */
typedef struct sup {
    xt_dist *d;
    kid *kids;
    int n, live;
    const xt_spawn_opts *o;
    int stopping, killed_all, forced, stop_killed;
    int64_t grace_deadline, stop_deadline, stop_at, stuck_since;
    int stuck_pair[2];              /* (waiter, exited) last seen by find_stuck */
    culprit c;                      /* the first failure; rank -1 while none */
    int64_t timeout_ns;             /* no heartbeat for this long: hung (0: never) */
    int64_t last_poll, beat_floor;
} sup;

/* 1. Reap; the first failure is the culprit unless a worker already raised an abort. */
static void reap(sup *p, int64_t now) {
    xt_dist *d = p->d;
    for (int i = 0; i < p->n; i++) {
        kid *k = &p->kids[i];
        if (k->reaped) continue;
        int st = 0;
        pid_t r = waitpid(k->pid, &st, WNOHANG);
        if (r == 0 || (r < 0 && errno == EINTR)) continue;
        k->reaped = 1;
        k->status = r == k->pid ? st : -1;
        p->live--;
        /* a stop may have been requested since the last poll: a worker that
         * exited 130 for it is no failure (the same rule child_main applies) */
        int stop_seen = p->stopping || atomic_load(&d->stop) || g_sig_count;
        if (p->c.rank >= 0 || k->killed_by_us || !failed_status(k, stop_seen)) continue;
        if (atomic_load(&d->abort) && atomic_load(&d->abort_rank) >= 0)
            p->c = (culprit){.rank = atomic_load(&d->abort_rank), .kind = K_ABORTED, .at = now};
        else
            p->c = (culprit){.rank = i, .kind = k->status == -1 ? K_LOST : WIFSIGNALED(st) ? K_KILLED : K_EXITED, .at = now};
    }
}

/* 3. A stop requested (here, in a worker, or by the caller); a second signal kills at once. */
static void note_stop(sup *p, int64_t now) {
    if (!p->stopping && (atomic_load(&p->d->stop) || g_sig_count)) {
        p->stopping = 1;
        p->stop_at = now;
        p->stop_deadline = now + (int64_t)(p->o->stop_timeout_s * 1e9);
    }
    if (g_sig_count >= 2 && !p->killed_all) {
        p->forced = 1;
        kill_all(p->kids, p->n, &p->killed_all);
    }
}

/* 4. Hung: no heartbeat and not waiting for someone else. A worker waiting
 * for the other hosts' answer waits for someone else only until it came. */
static void check_hung(sup *p, int64_t now) {
    for (int i = 0; i < p->n; i++) {
        xt_slot *s = xt_dist_slot(p->d, i);
        uint32_t w = atomic_load(&s->waiting);
        int64_t beat = atomic_load(&s->beat_ns), answered = 0;
        if (p->kids[i].reaped || (w != XT_NOT_WAITING && w != XT_IN_UPLINK)) continue;
        if (w == XT_IN_UPLINK && xt_uplink_pending(p->d, &answered)) continue;
        if (answered > beat) beat = answered;
        int64_t age = now - (beat > p->beat_floor ? beat : p->beat_floor);
        if (age > p->timeout_ns) {
            p->c = (culprit){.rank = i, .kind = K_HUNG, .age = (double)age / 1e9, .step = atomic_load(&s->step), .at = now};
            return;
        }
    }
}

/* 5. Waiting on a barrier that can never complete, for XT_STUCK_NS. */
static void check_stuck(sup *p, int64_t now) {
    int gone = -1, w = find_stuck(p->d, p->kids, p->n, &gone);
    if (w < 0 || w != p->stuck_pair[0] || gone != p->stuck_pair[1]) {
        p->stuck_pair[0] = w;
        p->stuck_pair[1] = gone;
        p->stuck_since = now;
    } else if (now - p->stuck_since > XT_STUCK_NS) {
        p->c = (culprit){.rank = w, .kind = K_STUCK, .other = gone, .at = now};
    }
}

/* 6. Abort the others (wakes every barrier) and start the grace period. */
static void start_grace(sup *p, int64_t now) {
    if (!atomic_load(&p->d->abort)) {
        char msg[XT_SLOT_MSG];
        describe(p->d, &p->c, p->kids, msg, sizeof msg);
        xt_dist_abort(p->d, -1, "%s", msg);
    }
    p->grace_deadline = now + (int64_t)(p->o->grace_s * 1e9);
}

/* One poll; returns 1 once every worker is reaped. */
static int poll_once(sup *p) {
    xt_dist *d = p->d;
    int64_t now = xt_mono_ns();
    /* if this process itself did not run for a while (Ctrl-Z, a starved
     * machine), heartbeats older than that pause say nothing about the workers */
    if (now - p->last_poll > XT_NS_PER_S) p->beat_floor = now;
    p->last_poll = now;
    reap(p, now);
    /* 2. a worker raised the abort itself (a failed wait, xt_dist_abort, or fn returned an error) */
    if (p->c.rank < 0 && atomic_load(&d->abort) && atomic_load(&d->abort_rank) >= 0)
        p->c = (culprit){.rank = atomic_load(&d->abort_rank), .kind = K_ABORTED, .at = now};
    note_stop(p, now);
    if (p->c.rank < 0 && p->timeout_ns) check_hung(p, now);
    if (p->c.rank < 0) check_stuck(p, now);
    if (p->c.rank >= 0 && !p->grace_deadline) start_grace(p, now);
    if (p->live == 0) return 1;
    if (!p->killed_all && p->grace_deadline && now >= p->grace_deadline) kill_all(p->kids, p->n, &p->killed_all);
    if (!p->killed_all && p->stopping && now >= p->stop_deadline) {
        p->stop_killed = 1;
        kill_all(p->kids, p->n, &p->killed_all);
    }
    return 0;
}

/* The run's result once a stop was requested: how it stopped. */
static int stopped_verdict(const sup *p, const char *msg, xt_err *e) {
    int sig = g_sig_count ? (int)g_sig_last : (int)atomic_load(&p->d->stop_signal);
    char by[48];
    if (sig) snprintf(by, sizeof by, "interrupted by %s", sig_name(sig));
    else snprintf(by, sizeof by, "stop requested");
    if (p->forced) return xt_fail(e, XT_EINTR, "%s twice: %d workers killed without a checkpoint", by, p->n);
    if (p->c.rank >= 0) return xt_fail(e, XT_EINTR, "%s; while stopping, %s", by, msg);
    if (p->stop_killed)
        return xt_fail(e, XT_EINTR, "%s: workers did not stop within %.0f s and were killed", by, p->o->stop_timeout_s);
    return xt_fail(e, XT_EINTR, "%s: all %d workers stopped", by, p->n);
}

/* The run's result once every worker is reaped: the culprit, a stop, a
 * worker below target_accuracy, or success. */
static int verdict(const sup *p, xt_err *e) {
    char msg[sizeof e->msg];
    int code = 0;
    if (p->c.rank >= 0) code = describe(p->d, &p->c, p->kids, msg, sizeof msg);
    if (p->stopping && (p->c.rank < 0 || p->c.at >= p->stop_at)) return stopped_verdict(p, msg, e);
    if (p->c.rank >= 0) return xt_fail(e, code, "%s", msg);
    for (int i = 0; i < p->n; i++)
        if (WIFEXITED(p->kids[i].status) && WEXITSTATUS(p->kids[i].status) == XT_EBELOW) {
            xt_slot *s = xt_dist_slot(p->d, i);
            if (atomic_load(&s->has_msg)) return xt_fail(e, XT_EBELOW, "%s", s->msg);
            return xt_fail(e, XT_EBELOW, "worker xla:%d exited with code %d", i, XT_EBELOW);
        }
    return 0;
}

/* Between polls: sleep, or — linked to other hosts — serve this host's
 * cross-host exchanges meanwhile (uplink.h). A failed exchange aborts the
 * host's run; the workers then fail and the verdict names it. */
static void between_polls(sup *p) {
    if (!xt_dist_has_uplink(p->d) || atomic_load(&p->d->abort)) {
        sleep_ns(XT_POLL_NS);
        return;
    }
    xt_err ue = {0};
    if (xt_uplink_serve(p->d, XT_POLL_NS, &ue)) xt_dist_abort(p->d, -1, "%s", ue.msg);
}

static int supervise(xt_dist *d, kid *kids, int n, const xt_spawn_opts *o, xt_err *e) {
    sup p = {.d = d, .kids = kids, .n = n, .live = n, .o = o, .stuck_pair = {-1, -1}, .c = {.rank = -1}};
    p.timeout_ns = o->timeout_s > 0 ? (int64_t)(o->timeout_s * 1e9) : 0;
    p.last_poll = xt_mono_ns();
    while (!poll_once(&p)) between_polls(&p);
    return verdict(&p, e);
}

/* The caller's SIGINT/SIGTERM/SIGCHLD dispositions, restored after the run. */
typedef struct saved_signals {
    struct sigaction old_int, old_term, old_chld;
    int own_int, own_term;
} saved_signals;

/* SIGINT/SIGTERM request a stop (inherited by the children); SIGCHLD must
 * not be ignored, or the exit statuses are lost. */
static void install_signals(xt_dist *d, saved_signals *sv, const xt_spawn_opts *o) {
    struct sigaction sa, dfl;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    g_sig_count = 0;
    g_sig_last = 0;
    g_sig_dist = d;
    /* a signal the caller ignores (nohup, a background job) stays ignored */
    sigaction(SIGINT, NULL, &sv->old_int);
    sigaction(SIGTERM, NULL, &sv->old_term);
    sv->own_int = sv->old_int.sa_handler != SIG_IGN;
    sv->own_term = sv->old_term.sa_handler != SIG_IGN;
    if (sv->own_int) sigaction(SIGINT, &sa, NULL);
    if (sv->own_term) sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGCHLD, &dfl, &sv->old_chld);
    /* asked after the install: a signal before it went to the caller's handler, one after comes here */
    int sig = o->stop_pending ? o->stop_pending() : 0;
    if (sig) on_stop_signal(sig);
}

static void restore_signals(const saved_signals *sv) {
    if (sv->own_int) sigaction(SIGINT, &sv->old_int, NULL);
    if (sv->own_term) sigaction(SIGTERM, &sv->old_term, NULL);
    sigaction(SIGCHLD, &sv->old_chld, NULL);
    g_sig_dist = NULL;
}

/* Fork worker i for every rank; on a failed fork, kill and reap the ones started. */
static int fork_workers(xt_dist *d, kid *kids, int nprocs, const xt_spawn_opts *o, int (*fn)(int, void *), void *arg,
                        xt_err *e) {
    fflush(NULL); /* or the children would flush copies of our buffered output */
    pid_t parent = getpid();
    for (int i = 0; i < nprocs; i++) {
        int cpu = o->pin_cores ? pick_cpu(i) : -1;
        pid_t pid = fork();
        if (pid == 0) child_main(d, i, parent, cpu, fn, arg);
        if (pid < 0) {
            int err = errno;
            xt_dist_abort(d, -1, "cannot fork worker xla:%d", i);
            for (int j = 0; j < i; j++) {
                kill(kids[j].pid, SIGKILL);
                while (waitpid(kids[j].pid, NULL, 0) < 0 && errno == EINTR) {}
            }
            return xt_fail(e, XT_ERUNTIME, "cannot fork worker xla:%d: %s; use fewer processes", i, strerror(err));
        }
        kids[i].pid = pid;
        atomic_store(&xt_dist_slot(d, i)->pid, (int32_t)pid);
    }
    return 0;
}

int xt_spawn(xt_dist *d, int nprocs, int (*fn)(int ordinal, void *arg), void *arg, const xt_spawn_opts *opts,
             xt_err *e) {
    if (!d || !fn) return xt_fail(e, XT_EUSAGE, "xt_spawn: no shared region or no worker function");
    if (nprocs != d->world)
        return xt_fail(e, XT_EUSAGE, "xt_spawn: %d processes, but the shared region was made for %d", nprocs, d->world);
    if (g_sig_dist) return xt_fail(e, XT_ERUNTIME, "xt_spawn: already supervising workers in this process");
    xt_spawn_opts o = opts ? *opts : (xt_spawn_opts){0};
    if (o.grace_s <= 0) o.grace_s = 2.0;
    if (o.stop_timeout_s <= 0) o.stop_timeout_s = 60.0;

    xt_dist_reset(d);
    if (o.timeout_s > 0) xt_dist_set_wait_timeout(d, o.timeout_s + XT_WAIT_MARGIN_S);
    saved_signals sv;
    install_signals(d, &sv, &o);
    kid kids[XT_DIST_MAX_WORLD];
    memset(kids, 0, sizeof kids);
    int rc = fork_workers(d, kids, nprocs, &o, fn, arg, e);
    if (!rc) rc = supervise(d, kids, nprocs, &o, e);
    restore_signals(&sv);
    return rc;
}
