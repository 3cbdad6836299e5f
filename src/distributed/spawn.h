/* spawn.h — fork N data-parallel workers and supervise them (xmp.spawn with
 * start_method='fork', on a CPU).
 *
 *   static int worker_main(int ordinal, void *arg) {        // device "xla:<ordinal>"
 *       struct run *r = arg;
 *       for (long step = 0; ; step++) {
 *           ...forward/backward into g...
 *           if (xt_allreduce(r->dist, ordinal, g, n, &e)) { xt_dist_report(r->dist, ordinal, &e); return e.code; }
 *           ...update...
 *           xt_dist_heartbeat(r->dist, ordinal, step);
 *           if (xt_dist_should_stop(r->dist)) { if (ordinal == 0) save_checkpoint(); return XT_EINTR; }
 *       }
 *   }
 *   xt_spawn_opts o = {.timeout_s = cfg->worker_timeout, .pin_cores = cfg->pin_cores};
 *   int rc = xt_spawn(dist, world, worker_main, &run, &o, &e);
 *
 * The parent forks nprocs children and then only supervises: it reaps them,
 * watches their heartbeats, and when one fails (non-zero exit, killed by a
 * signal, no progress for timeout_s) it sets the abort flag (waking every
 * barrier), gives the others grace_s to exit, SIGKILLs the rest, reaps
 * everyone and says who failed and why. Each child gets
 * PR_SET_PDEATHSIG=SIGKILL, so none outlives the parent.
 *
 * While xt_spawn runs, SIGINT/SIGTERM (to the parent or to a worker) request
 * a graceful stop (xt_dist_should_stop() turns true at the same step for
 * every worker); a second SIGINT/SIGTERM to the parent kills the workers at
 * once. The previous handlers are restored on return; a signal the caller
 * ignores (SIG_IGN: nohup, a background job) stays ignored.
 *
 * Linked to other hosts (uplink.h), the parent also serves the host's
 * cross-host exchanges between its polls, and its messages name workers by
 * global ordinal.
 *
 * Call it from the main thread, before starting other threads (fork copies
 * only the calling thread; PDEATHSIG fires when the forking thread exits).
 * One xt_spawn at a time per process.
 */
#ifndef XT_DIST_SPAWN_H
#define XT_DIST_SPAWN_H

#include "distributed/shm.h"
#include "util/err.h"

typedef struct xt_spawn_opts {
    int pin_cores;          /* pin worker i to the (i % ncpu)-th CPU this process may use */
    double timeout_s;       /* a worker with no heartbeat/barrier progress for this long is hung; <= 0: never */
    double grace_s;         /* after a failure, time the others get to exit before SIGKILL; 0: 2 s */
    double stop_timeout_s;  /* after SIGINT/SIGTERM, time to finish the step and checkpoint; 0: 60 s */
    int (*stop_pending)(void); /* the SIGINT/SIGTERM the caller's own handler took since its last look (0: none),
                                  asked once these handlers are in place, so a signal between the two is a stop
                                  request as if it came after the fork; NULL: none */
} xt_spawn_opts;

/* Fork nprocs (== xt_dist_world(d)) workers running fn(ordinal, arg); each
 * child _exit()s with fn's return value (outside 0..255: XT_ERUNTIME).
 * opts may be NULL (defaults: no pinning, no hang detection).
 * Returns 0 when every worker returned 0, otherwise:
 *  - the first failing worker's exit code if it is one of enum xt_exit
 *    (e.g. XT_EDATA from a data error), XT_ERUNTIME for any other failure:
 *    "worker xla:1 was killed by signal 9 (SIGKILL) at step 37",
 *    "worker xla:0 exited with code 3: <its xt_dist_report message>",
 *    "worker xla:1 hung: no progress for 30 s (last step 12)";
 *  - XT_EINTR after SIGINT/SIGTERM, once every worker has exited;
 *  - XT_EBELOW if a worker returned it and none failed (it does not abort the others).
 * Every child is reaped before it returns; e holds the one-line message. */
int xt_spawn(xt_dist *d, int nprocs, int (*fn)(int ordinal, void *arg), void *arg, const xt_spawn_opts *opts,
             xt_err *e);

#endif
