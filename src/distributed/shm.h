/* shm.h — the shared region of a data-parallel run (what forked workers share).
 *
 * One MAP_SHARED|MAP_ANONYMOUS mapping, created before fork(): nothing is
 * named, so nothing can leak into /dev/shm even if everyone is SIGKILLed.
 * It holds a control block (world size, per-worker status / heartbeat / last
 * step, the abort flag and its reason, the stop-requested flag), a
 * process-shared barrier, the gradient staging area (one 64-byte aligned row
 * of `grad_cap` floats per worker, plus the reduced vector) and a small
 * scratch area for xt_mesh_reduce_sum().
 *
 *   xt_dist *d;
 *   if (xt_dist_create(&d, world, n_params, e)) return e->code;   // before fork
 *   xt_spawn(d, world, worker_main, &args, &opts, e);             // spawn.h
 *     // in each worker: xt_dist_heartbeat(d, rank, step); xt_allreduce(d, rank, g, n, e); ...
 *   xt_dist_destroy(d);
 *
 * The handle is the mapping itself, so it stays valid in every forked worker.
 * A NULL handle means "world of one": every collective is then a no-op.
 * Not thread-safe within a process: one rank per process.
 */
#ifndef XT_DIST_SHM_H
#define XT_DIST_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define XT_DIST_MAX_WORLD 256
#define XT_MESH_MAX 64 /* doubles per xt_mesh_reduce_sum() call */

typedef struct xt_dist xt_dist;

/* Map the shared region for `world` workers (1..XT_DIST_MAX_WORLD) and
 * gradient vectors of up to `grad_cap` floats (0 is allowed: no gradient
 * block). Longer vectors are still all-reduced, in chunks of grad_cap.
 * Returns 0 or XT_ERUNTIME (mmap failed). */
int xt_dist_create(xt_dist **out, int world, size_t grad_cap, xt_err *e);

/* Unmap. Only once no worker uses it any more (after xt_spawn returned). NULL is fine. */
void xt_dist_destroy(xt_dist *d);

/* Clear the abort/stop flags, the barrier and every worker's status so the
 * region can be used for another run. Only while no worker is running
 * (xt_spawn calls it itself). */
void xt_dist_reset(xt_dist *d);

int xt_dist_world(const xt_dist *d);        /* 1 for NULL */
size_t xt_dist_grad_cap(const xt_dist *d);  /* floats per staging row */

/* Worker `rank`'s staging row (grad_cap floats, 64-byte aligned). Writing the
 * gradients there directly and passing it to xt_allreduce() saves a copy. */
float *xt_dist_grad_row(xt_dist *d, int rank);

/* The reduced vector of the last xt_allreduce() (grad_cap floats, 64-byte
 * aligned); valid in a rank until that rank calls xt_allreduce() again. */
const float *xt_dist_grad_sum(const xt_dist *d);

/* Timeout of every barrier/serial wait, in seconds (<= 0: wait forever, the
 * default). xt_spawn() sets it to opts->timeout_s + 10 s, so the supervising
 * parent names a hung worker before its peers give up waiting for it. */
void xt_dist_set_wait_timeout(xt_dist *d, double seconds);

/* Publish progress: the worker is at `step` (any monotonic counter; messages
 * say "at step N" / "last step N" with the last value given). Cheap: two
 * stores and a vDSO clock read, so call it every step (and every so many
 * batches of a long eval or data load). The parent declares a worker hung
 * when it neither heartbeats nor passes a barrier for opts->timeout_s. */
void xt_dist_heartbeat(xt_dist *d, int rank, long long step);

/* Stop everything: set the abort flag with a one-line reason (the first
 * reason wins), wake every waiter. Every rank's pending and future collective
 * then fails with XT_ERUNTIME. rank -1 = the supervising parent. */
void xt_dist_abort(xt_dist *d, int rank, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int xt_dist_aborted(const xt_dist *d);
/* The abort reason, or "" while there is none (or it is being written). */
const char *xt_dist_abort_reason(const xt_dist *d);

/* Ask for a graceful stop (what SIGINT/SIGTERM to the parent or a worker do).
 * Async-signal-safe. */
void xt_dist_request_stop(xt_dist *d, int sig);

/* Was a stop requested? Poll at step boundaries (after the step's
 * all-reduce): the flag is latched by the last arriver of each barrier, so
 * every worker that passed the same barriers gets the same answer and they
 * all stop after the same step. With a world of one it is read directly;
 * linked to other hosts (uplink.h), it is the flag every host agreed on at
 * the last cross-host exchange. */
int xt_dist_should_stop(const xt_dist *d);
/* Has any stop been asked for, here or (once exchanged) on another host?
 * Unlike xt_dist_should_stop, not agreed on a step: for best-effort work
 * that must not hold up a stop, such as a log line nobody reads. */
int xt_dist_stop_asked(const xt_dist *d);

/* The run's summary (results.json) is written: the master worker says so,
 * and its parent, which sees only exit codes, does not write a second one. */
void xt_dist_note_summary(xt_dist *d);
int xt_dist_summary_written(const xt_dist *d);

/* Hand the parent this worker's error message (call before returning e->code
 * from the worker function); xt_spawn appends it to its report. */
void xt_dist_report(xt_dist *d, int rank, const xt_err *err);

/* Wait for every rank (process-shared barrier). 0, or XT_ERUNTIME when the
 * run was aborted or the wait timed out (then the run is aborted too). */
int xt_dist_barrier(xt_dist *d, int rank, xt_err *e);

/* Run fn(arg, e) in one process at a time, in ordinal order (like
 * MpSerialExecutor), e.g. to load a dataset without N processes thrashing the
 * disk. Every rank must call it. Returns fn's code (the turn still passes on
 * so the others do not hang) or XT_ERUNTIME if the run was aborted. */
int xt_dist_serial(xt_dist *d, int rank, int (*fn)(void *arg, xt_err *e), void *arg, xt_err *e);

#endif
