/* test_dist_spawn.c — supervision: a worker killed, exiting, hung, aborting,
 * stuck; SIGINT to the spawner; abort and timeouts of raw barrier waits;
 * no zombies, orphans or /dev/shm leftovers; PDEATHSIG; pinning. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/allreduce.h"
#include "distributed/shm.h"
#include "distributed/spawn.h"
#include "run/log.h"
#include "test.h"

static void *shared(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        _exit(1);
    }
    memset(p, 0, size);
    return p;
}

/* Processes whose parent is this one (zombies included). */
static int count_children(void) {
    DIR *dir = opendir("/proc");
    if (!dir) return -1;
    int n = 0;
    pid_t me = getpid();
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
        char state;
        int ppid;
        if (p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 && ppid == me) n++;
    }
    closedir(dir);
    return n;
}

/* Is a process with this pid still there (running or zombie)? */
static int exists(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* The names in /dev/shm, newline-separated (a name per line). */
static void shm_names(char *out, size_t cap) {
    out[0] = 0;
    DIR *dir = opendir("/dev/shm");
    if (!dir) return;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(dir)))
        if (de->d_name[0] != '.' && n + strlen(de->d_name) + 2 < cap) n += (size_t)snprintf(out + n, cap - n, "%s\n", de->d_name);
    closedir(dir);
}

/* A name in `after` that is not in `before`, or NULL. */
static const char *new_shm_name(const char *before, const char *after) {
    static char name[256];
    for (const char *p = after; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p);
        snprintf(name, sizeof name, "\n%.*s\n", (int)len, p);
        char *b = malloc(strlen(before) + 2);
        b[0] = '\n';
        strcpy(b + 1, before);
        int found = strstr(b, name) != NULL;
        free(b);
        if (!found) {
            snprintf(name, sizeof name, "%.*s", (int)len, p);
            return name;
        }
        p = nl + 1;
    }
    return NULL;
}

/* ---- a training-like worker and what goes wrong in it ------------------------ */

enum mode { M_NONE, M_KILL9, M_EXIT7, M_HANG, M_DATA3, M_ABORT, M_SIGINT, M_SIGINT_TWICE, M_EARLY_EXIT0 };

typedef struct {
    volatile int pid[8];
    volatile int rc[8];           /* what a collective returned in each worker */
    volatile int stop_step[8];
    volatile int maps_shm;        /* lines of xla:0's /proc/self/maps naming /dev/shm */
    char msg[8][1024];            /* each worker's error */
} scoreboard;

typedef struct {
    xt_dist *d;
    enum mode mode;
    int victim, at_step, max_steps;
    scoreboard *sb;
} sc_args;

static int sc_worker(int rank, void *arg) {
    sc_args *a = arg;
    xt_dist *d = a->d;
    int n = xt_dist_world(d);
    a->sb->pid[rank] = getpid();
    a->sb->stop_step[rank] = -1;
    if (rank == 0) { /* the shared region must be anonymous: nothing named that could leak */
        FILE *f = fopen("/proc/self/maps", "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "/dev/shm")) a->sb->maps_shm++;
        if (f) fclose(f);
    }
    xt_err e = {0};
    float g[256];
    for (int step = 0; step < a->max_steps; step++) {
        for (int i = 0; i < 256; i++) g[i] = (float)(rank + step + i);
        if (rank == a->victim && step == a->at_step) {
            switch (a->mode) {
            case M_KILL9:
                xt_dist_heartbeat(d, rank, step);
                raise(SIGKILL);
                break;
            case M_EXIT7:
                _exit(7);
            case M_HANG:
                xt_dist_heartbeat(d, rank, step);
                for (;;) pause();
            case M_DATA3:
                xt_fail(&e, XT_EDATA, "data/train-images-idx3-ubyte: truncated at image 123");
                xt_dist_report(d, rank, &e);
                return e.code;
            case M_ABORT:
                xt_dist_abort(d, rank, "boom at step %d", step);
                return 0;
            case M_SIGINT:
                kill(getppid(), SIGINT);
                break;
            case M_SIGINT_TWICE:
                kill(getppid(), SIGINT);
                usleep(100 * 1000);
                kill(getppid(), SIGINT);
                break;
            case M_EARLY_EXIT0:
                return 0;
            case M_NONE:
                break;
            }
        }
        int rc = xt_allreduce(d, rank, g, 256, &e);
        if (rc) {
            a->sb->rc[rank] = rc;
            memcpy(a->sb->msg[rank], e.msg, sizeof e.msg);
            xt_dist_report(d, rank, &e);
            return rc;
        }
        for (int i = 0; i < 256; i++) {
            float want = 0;
            for (int r = 0; r < n; r++) want += (float)(r + step + i);
            if (g[i] != want * (1.0f / (float)n)) return 1;
        }
        xt_dist_heartbeat(d, rank, step);
        if (a->mode == M_SIGINT_TWICE) {
            usleep(1000); /* ignores the stop request: the second SIGINT must kill it */
            continue;
        }
        if (xt_dist_should_stop(d)) {
            a->sb->stop_step[rank] = step;
            if (rank == 0) { /* the master writes its checkpoint */
                FILE *f = fopen(test_write_file("ckpt", ""), "w");
                if (f) fprintf(f, "step %d\n", step), fclose(f);
            }
            return XT_EINTR;
        }
    }
    return 0;
}

typedef struct {
    int rc;
    double secs;
    xt_err e;
    scoreboard *sb;
} outcome;

static outcome run_scenario(int n, enum mode mode, int victim, int at_step, const xt_spawn_opts *o) {
    outcome out = {0};
    xt_dist *d;
    if (xt_dist_create(&d, n, 256, &out.e)) {
        out.rc = -1;
        return out;
    }
    out.sb = shared(sizeof(scoreboard));
    sc_args a = {d, mode, victim, at_step, mode == M_NONE ? 200 : 1000000, out.sb};
    double t0 = xt_wall_s();
    out.rc = xt_spawn(d, n, sc_worker, &a, o, &out.e);
    out.secs = xt_wall_s() - t0;
    xt_dist_destroy(d);
    return out;
}

static void check_all_gone(const outcome *o, int n) {
    CHECK_EQ(count_children(), 0);
    for (int r = 0; r < n; r++) CHECK_MSG(!exists(o->sb->pid[r]), "worker %d (pid %d) still exists", r, o->sb->pid[r]);
}

TEST(dist_spawn_clean_run_returns_0) {
    outcome o = run_scenario(4, M_NONE, -1, 0, NULL);
    CHECK_MSG(o.rc == 0, "rc %d: %s", o.rc, o.e.msg);
    check_all_gone(&o, 4);
}

TEST(dist_spawn_kill9_names_worker_signal_and_step) {
    char before[8192], after[8192];
    shm_names(before, sizeof before);
    xt_spawn_opts opts = {.timeout_s = 30};
    outcome o = run_scenario(3, M_KILL9, 1, 37, &opts);
    CHECK_EQ(o.rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:1 was killed by signal 9 (SIGKILL) at step 37");
    CHECK_MSG(o.secs < 10, "took %.1f s", o.secs);
    check_all_gone(&o, 3);
    /* the survivors' collectives failed, saying why */
    for (int r = 0; r < 3; r += 2) {
        CHECK_EQ(o.sb->rc[r], XT_ERUNTIME);
        CHECK_STR_CONTAINS(o.sb->msg[r], "all-reduce aborted: worker xla:1 was killed");
    }
    CHECK_EQ(o.sb->maps_shm, 0);
    shm_names(after, sizeof after);
    const char *extra = new_shm_name(before, after);
    if (extra) { /* another program on the machine may be using /dev/shm right now: look again */
        usleep(200 * 1000);
        shm_names(after, sizeof after);
        extra = new_shm_name(before, after);
    }
    CHECK_MSG(extra == NULL, "new in /dev/shm: %s", extra ? extra : "");
}

TEST(dist_spawn_worker_exit_mid_step_wakes_the_others) {
    xt_spawn_opts opts = {.grace_s = 5}; /* they must leave on their own, long before SIGKILL */
    outcome o = run_scenario(4, M_EXIT7, 2, 20, &opts);
    CHECK_EQ(o.rc, XT_ERUNTIME); /* 7 is not one of ours */
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:2 exited with code 7");
    CHECK_MSG(o.secs < 3, "took %.1f s", o.secs);
    for (int r = 0; r < 4; r++)
        if (r != 2) CHECK_EQ(o.sb->rc[r], XT_ERUNTIME);
    check_all_gone(&o, 4);
}

TEST(dist_spawn_data_error_code_3_propagates) {
    outcome o = run_scenario(2, M_DATA3, 1, 5, NULL);
    CHECK_EQ(o.rc, XT_EDATA);
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:1 exited with code 3: data/train-images-idx3-ubyte: truncated at image 123");
    CHECK_EQ(o.sb->rc[0], XT_ERUNTIME);
    check_all_gone(&o, 2);
}

TEST(dist_spawn_worker_abort_wakes_everyone) {
    xt_spawn_opts opts = {.grace_s = 5};
    outcome o = run_scenario(4, M_ABORT, 3, 50, &opts);
    CHECK_EQ(o.rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:3 aborted the run");
    CHECK_STR_CONTAINS(o.e.msg, "boom at step 50");
    CHECK_MSG(o.secs < 3, "took %.1f s", o.secs);
    for (int r = 0; r < 3; r++) CHECK_STR_CONTAINS(o.sb->msg[r], "boom at step 50");
    check_all_gone(&o, 4);
}

TEST(dist_spawn_hung_worker_is_detected) {
    xt_spawn_opts opts = {.timeout_s = 1, .grace_s = 0.5};
    outcome o = run_scenario(2, M_HANG, 1, 12, &opts);
    CHECK_EQ(o.rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:1 hung: no progress for 1 s (last step 12)");
    CHECK_MSG(o.secs < 5, "took %.1f s", o.secs);
    CHECK_EQ(o.sb->rc[0], XT_ERUNTIME);
    check_all_gone(&o, 2);
}

TEST(dist_spawn_worker_left_behind_at_barrier_is_detected) {
    /* xla:0 returns early (say, a shorter shard); xla:1 waits for it forever */
    xt_spawn_opts opts = {.grace_s = 0.5};
    outcome o = run_scenario(2, M_EARLY_EXIT0, 0, 5, &opts);
    CHECK_EQ(o.rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(o.e.msg, "worker xla:1 waits for worker xla:0, which already exited with code 0");
    CHECK_MSG(o.secs < 5, "took %.1f s", o.secs);
    check_all_gone(&o, 2);
}

TEST(dist_spawn_sigint_stops_all_workers_at_the_same_step) {
    struct sigaction before, after;
    sigaction(SIGINT, NULL, &before);
    if (before.sa_handler == SIG_IGN) { /* a background job: SIGINT stays ignored, as it should */
        signal(SIGINT, SIG_DFL);
        sigaction(SIGINT, NULL, &before);
    }
    xt_spawn_opts opts = {.timeout_s = 30};
    outcome o = run_scenario(3, M_SIGINT, 0, 10, &opts);
    CHECK_EQ(o.rc, XT_EINTR);
    CHECK_STR_CONTAINS(o.e.msg, "interrupted by SIGINT: all 3 workers stopped");
    CHECK_MSG(o.secs < 5, "took %.1f s", o.secs);
    CHECK(o.sb->stop_step[0] >= 10);
    for (int r = 1; r < 3; r++) CHECK_EQ(o.sb->stop_step[r], o.sb->stop_step[0]);
    char path[512];
    snprintf(path, sizeof path, "%s/ckpt", test_tmpdir());
    struct stat st;
    CHECK_MSG(stat(path, &st) == 0 && st.st_size > 0, "the master did not write its checkpoint");
    check_all_gone(&o, 3);
    /* the caller's handler is back */
    sigaction(SIGINT, NULL, &after);
    CHECK(after.sa_handler == before.sa_handler);
}

/* A SIGTERM the caller's own handler took after its last look and before
 * the supervisor's handlers were in place (opts.stop_pending, which the
 * trainer points at its signal flag): the workers are asked to stop as if it
 * came after the fork, all at the same step, and the run is an interrupt.
 * Before, it was lost and the workers trained to the end. */
static int term_pending(void) { return SIGTERM; }
TEST(dist_spawn_a_signal_taken_before_its_handlers_is_a_stop) {
    xt_spawn_opts opts = {.timeout_s = 30, .stop_pending = term_pending};
    outcome o = run_scenario(2, M_NONE, -1, 0, &opts);
    CHECK_EQ(o.rc, XT_EINTR);
    CHECK_STR_CONTAINS(o.e.msg, "interrupted by SIGTERM");
    CHECK_EQ(o.sb->stop_step[1], o.sb->stop_step[0]);
    CHECK_MSG(o.sb->stop_step[0] < 200, "the workers ran all 200 steps");
    check_all_gone(&o, 2);
}

TEST(dist_spawn_second_sigint_kills_at_once) {
    signal(SIGINT, SIG_DFL); /* in case the suite runs as a background job */
    xt_spawn_opts opts = {.stop_timeout_s = 60};
    outcome o = run_scenario(2, M_SIGINT_TWICE, 1, 3, &opts);
    CHECK_EQ(o.rc, XT_EINTR);
    CHECK_STR_CONTAINS(o.e.msg, "interrupted by SIGINT twice");
    CHECK_MSG(o.secs < 5, "took %.1f s", o.secs);
    check_all_gone(&o, 2);
}

static int ret_code(int rank, void *arg) { return *(int *)arg; }

TEST(dist_spawn_one_worker) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 1, 256, &e), 0);
    outcome o = run_scenario(1, M_NONE, -1, 0, NULL);
    CHECK_MSG(o.rc == 0, "rc %d: %s", o.rc, o.e.msg);
    int code = XT_EIO;
    CHECK_EQ(xt_spawn(d, 1, ret_code, &code, NULL, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "worker xla:0 exited with code 5");
    code = 300; /* not an exit code */
    CHECK_EQ(xt_spawn(d, 1, ret_code, &code, NULL, &e), XT_ERUNTIME);
    code = XT_EBELOW; /* finished, below target: not a failure of the run */
    CHECK_EQ(xt_spawn(d, 1, ret_code, &code, NULL, &e), XT_EBELOW);
    code = 0;
    CHECK_EQ(xt_spawn(d, 1, ret_code, &code, NULL, &e), 0);
    CHECK_EQ(xt_spawn(d, 2, ret_code, &code, NULL, &e), XT_EUSAGE);
    CHECK_EQ(count_children(), 0);
    xt_dist_destroy(d);
}

/* ---- raw barrier waits (no supervising parent) -------------------------------- */

TEST(dist_parent_abort_wakes_barrier_waiters) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 4, 0, &e), 0);
    pid_t kids[3];
    for (int r = 0; r < 3; r++) {
        kids[r] = fork();
        if (kids[r] == 0) { /* rank 3 never comes */
            double t0 = xt_wall_s();
            int rc = xt_dist_barrier(d, r, &e);
            int ok = rc == XT_ERUNTIME && strstr(e.msg, "barrier aborted: parent gave up") && xt_wall_s() - t0 < 3;
            _exit(ok ? 0 : 1);
        }
    }
    usleep(200 * 1000);
    xt_dist_abort(d, -1, "parent gave up");
    for (int r = 0; r < 3; r++) {
        int st = 0;
        waitpid(kids[r], &st, 0);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "waiter %d: status %#x", r, st);
    }
    xt_dist_destroy(d);
}

TEST(dist_barrier_wait_times_out_and_names_the_missing_worker) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 3, 0, &e), 0);
    xt_dist_set_wait_timeout(d, 0.3);
    xt_dist_heartbeat(d, 2, 41);
    char (*msgs)[1024] = shared(2 * 1024);
    pid_t kids[2];
    double t0 = xt_wall_s();
    for (int r = 0; r < 2; r++) {
        kids[r] = fork();
        if (kids[r] == 0) {
            int rc = xt_dist_barrier(d, r, &e);
            memcpy(msgs[r], e.msg, sizeof e.msg);
            _exit(rc);
        }
    }
    for (int r = 0; r < 2; r++) {
        int st = 0;
        waitpid(kids[r], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == XT_ERUNTIME);
        /* one timed out; the other may have been woken by the abort that followed */
    }
    CHECK(xt_wall_s() - t0 < 3);
    const char *m = strstr(msgs[0], "timed out") ? msgs[0] : msgs[1];
    CHECK_STR_CONTAINS(m, "barrier timed out after 0.3 s waiting for xla:2 (last step 41)");
    CHECK(xt_dist_aborted(d));
    munmap(msgs, 2 * 1024);
    xt_dist_destroy(d);
}

/* ---- the parent dies: PDEATHSIG takes the workers with it ----------------------- */

static int forever(int rank, void *arg) {
    volatile int *pids = arg;
    pids[rank] = getpid();
    for (;;) pause();
    return 0;
}

TEST(dist_workers_die_with_their_parent) {
    /* become the subreaper so the orphaned workers are reparented to us and can be reaped here */
    CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    volatile int *pids = shared(4096);
    pid_t mid = fork();
    if (mid == 0) {
        xt_dist *d;
        xt_err e = {0};
        if (xt_dist_create(&d, 3, 0, &e)) _exit(1);
        xt_spawn(d, 3, forever, (void *)pids, NULL, &e);
        _exit(1);
    }
    double t0 = xt_wall_s();
    while ((!pids[0] || !pids[1] || !pids[2]) && xt_wall_s() - t0 < 5) usleep(1000);
    CHECK(pids[0] && pids[1] && pids[2]);
    kill(mid, SIGKILL);
    int st;
    waitpid(mid, &st, 0);
    for (int r = 0; r < 3; r++) {
        pid_t p = 0;
        while ((p = waitpid(pids[r], &st, WNOHANG)) == 0 && xt_wall_s() - t0 < 5) usleep(1000);
        CHECK_MSG(p == pids[r] && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "worker %d: %d %#x", r, (int)p, st);
    }
    CHECK_EQ(count_children(), 0);
    munmap((void *)pids, 4096);
}

/* ---- pinning ---------------------------------------------------------------------- */

static int check_pinned(int rank, void *arg) {
    const int *want = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set)) return 1;
    return CPU_COUNT(&set) == 1 && CPU_ISSET(want[rank], &set) ? 0 : 1;
}

TEST(dist_spawn_pins_worker_i_to_cpu_i_mod_ncpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus[CPU_SETSIZE], ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) cpus[ncpu++] = c;
    int want[3];
    for (int r = 0; r < 3; r++) want[r] = cpus[r % ncpu];
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 3, 0, &e), 0);
    xt_spawn_opts o = {.pin_cores = 1};
    int rc = xt_spawn(d, 3, check_pinned, want, &o, &e);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, e.msg);
    xt_dist_destroy(d);
}

/* ---- a serial section that never ends --------------------------------------------- */

static int hang_fn(void *arg, xt_err *e) {
    for (;;) pause();
    return 0;
}

typedef struct {
    xt_dist *d;
    scoreboard *sb;
} ser_args;

static int ser_hang_worker(int rank, void *arg) {
    ser_args *a = arg;
    xt_err e = {0};
    a->sb->pid[rank] = getpid();
    int rc = xt_dist_serial(a->d, rank, hang_fn, NULL, &e); /* xla:0 goes first and never comes back */
    a->sb->rc[rank] = rc;
    memcpy(a->sb->msg[rank], e.msg, sizeof e.msg);
    return rc;
}

TEST(dist_serial_waiters_are_released_when_the_holder_hangs) {
    xt_dist *d;
    xt_err e = {0};
    CHECK_EQ(xt_dist_create(&d, 3, 0, &e), 0);
    ser_args a = {d, shared(sizeof(scoreboard))};
    xt_spawn_opts o = {.timeout_s = 1, .grace_s = 0.5};
    double t0 = xt_wall_s();
    int rc = xt_spawn(d, 3, ser_hang_worker, &a, &o, &e);
    CHECK_EQ(rc, XT_ERUNTIME);
    CHECK_STR_CONTAINS(e.msg, "worker xla:0 hung: no progress for 1 s");
    CHECK(xt_wall_s() - t0 < 5);
    for (int r = 1; r < 3; r++) {
        CHECK_EQ(a.sb->rc[r], XT_ERUNTIME);
        CHECK_STR_CONTAINS(a.sb->msg[r], "serial section aborted: worker xla:0 hung");
    }
    CHECK_EQ(count_children(), 0);
    munmap(a.sb, sizeof(scoreboard));
    xt_dist_destroy(d);
}
