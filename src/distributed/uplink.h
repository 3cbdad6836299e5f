/* uplink.h — a host's link to the other hosts: the second level of the
 * hierarchical all-reduce and mesh-reduce.
 *
 *   level 1 (allreduce.c): the host's workers sum their rows in shared
 *            memory, in local ordinal order, without scaling;
 *   level 2 (here):        local worker 0 posts the host's sum; the
 *            supervising parent — the MPI rank, the only process of the
 *            host that may use MPI — sums the hosts' vectors in rank order
 *            (cluster.h), scales by 1 / global world, and writes the result
 *            back into shared memory, where every local worker reads it.
 *
 * So the global sum is (host 0's sum) + (host 1's sum) + ... in that order:
 * deterministic for a layout, and 2 hosts x 1 worker give exactly the bits
 * of 1 host x 2 workers. Each exchange also carries every host's "stop
 * requested" flag, so a SIGINT/SIGTERM on any host stops every worker of
 * every host after the same step (xt_dist_should_stop reads the agreed flag).
 *
 * Not here: the transport (cluster.h), the supervision loop that calls
 * xt_uplink_serve between its polls (spawn.c).
 */
#ifndef XT_DIST_UPLINK_H
#define XT_DIST_UPLINK_H

#include <stdint.h>

#include "distributed/shm.h"
#include "util/err.h"

/* Make d the shared region of one host among `hosts`, whose local worker i
 * is global ordinal ordinal_base + i of global_world (the supervisor's
 * messages name that). Before xt_spawn; hosts <= 1: no uplink. */
void xt_dist_set_uplink(xt_dist *d, int hosts, int global_world, int ordinal_base);

/* Is d linked to other hosts? */
int xt_dist_has_uplink(const xt_dist *d);

/* Worker side, after a local reduce every local rank has finished (it passed
 * the barrier that ends it): local rank 0 posts (kind, len) — and, for a
 * mesh-reduce, copies mesh[0..len) into the shared request — then every local
 * rank waits until the parent has answered; mesh (if not NULL) gets the
 * global sums back. 0, or XT_ERUNTIME when the run was aborted or the wait
 * timed out. */
int xt_uplink_exchange(xt_dist *d, int rank, int kind, uint64_t len, double *mesh, xt_err *e);

/* For the supervisor's hang check of a worker marked XT_IN_UPLINK: 1 while
 * the other hosts still owe this host its answer (the worker waits for them,
 * it is not hung); else 0, with *answered_ns = when the last answer came
 * (the worker should have moved on since). */
int xt_uplink_pending(const xt_dist *d, int64_t *answered_ns);

/* Parent side: wait up to wait_ns for a posted request and serve it (a few
 * MPI collectives with the other hosts' parents). Returns 0 (served, or
 * nothing came), or an error (hosts disagree on the call, MPI failed); the
 * caller then aborts the host's run. */
int xt_uplink_serve(xt_dist *d, int64_t wait_ns, xt_err *e);

#endif
