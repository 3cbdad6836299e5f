/* uplink.c — the two sides of a cross-host exchange; see uplink.h.
 *
 * One request at a time: local rank 0 posts request s (up_req = s) only
 * after every local rank passed the barrier ending the local reduce, and
 * every local rank waits for up_done == s before it goes on, so the parent
 * never sees two requests at once and the shared payload is not rewritten
 * while someone still reads it (the next request comes after the next
 * collective's barrier, which every rank reaches after reading).
 */
#include "distributed/uplink.h"

#include <stdio.h>
#include <string.h>

#include "distributed/cluster.h"
#include "distributed/shm_layout.h"

/* After a stop request, how long an exchange may still wait for the other
 * hosts: they got the same signal and answer within a step, unless the job
 * is being torn down because one of them is gone. */
#define XT_GONE_GRACE_S 5.0

void xt_dist_set_uplink(xt_dist *d, int hosts, int global_world, int ordinal_base) {
    if (!d) return;
    d->hosts = hosts > 1 ? hosts : 0;
    d->global_world = global_world;
    d->ordinal_base = ordinal_base;
}

int xt_dist_has_uplink(const xt_dist *d) { return d && d->hosts > 1; }

int xt_uplink_exchange(xt_dist *d, int rank, int kind, uint64_t len, double *mesh, xt_err *e) {
    xt_slot *s = xt_dist_slot(d, rank);
    uint32_t seq = ++s->uplink_calls;
    if (rank == 0) {
        d->up_kind = (uint32_t)kind;
        d->up_len = len;
        if (mesh) memcpy(d->up_mesh, mesh, (size_t)len * sizeof *mesh);
        atomic_store_explicit(&d->up_req, seq, memory_order_release);
        xt_futex_wake_all(&d->up_req);
    }
    atomic_store_explicit(&s->waiting, XT_IN_UPLINK, memory_order_relaxed);
    int64_t timeout = atomic_load(&d->wait_timeout_ns);
    int r = xt_wait_eq(&d->up_done, seq, &d->abort, d->spin_ns, timeout);
    if (r == XT_WAIT_ABORTED) {
        const char *why = xt_dist_abort_reason(d);
        return xt_fail(e, XT_ERUNTIME, "xla:%d: cross-host exchange aborted: %s", rank, *why ? why : "another worker failed");
    }
    if (r == XT_WAIT_TIMEDOUT) {
        xt_fail(e, XT_ERUNTIME, "xla:%d: waiting for the other hosts timed out after %g s (exchange %u); raise worker_timeout if a step can take that long",
                rank, (double)timeout / 1e9, seq);
        xt_dist_abort_code(d, rank, XT_ERUNTIME, "%s", e ? e->msg : "cross-host exchange timed out");
        return XT_ERUNTIME;
    }
    atomic_store_explicit(&s->waiting, XT_NOT_WAITING, memory_order_relaxed);
    atomic_store_explicit(&s->beat_ns, xt_mono_ns(), memory_order_relaxed);
    if (mesh) memcpy(mesh, d->up_mesh, (size_t)len * sizeof *mesh);
    return 0;
}

int xt_uplink_pending(const xt_dist *d, int64_t *answered_ns) {
    *answered_ns = atomic_load(&d->up_done_ns);
    return atomic_load(&d->up_done) != atomic_load(&d->up_req);
}

/* What every host sends first: the call it makes, and its stop flag. */
typedef struct header {
    uint32_t kind, stop;
    uint64_t len;
} header;

static const char *kind_name(uint32_t kind) {
    return kind == XT_COLL_ALLREDUCE ? "an all-reduce" : kind == XT_COLL_MESH ? "a mesh-reduce" : "an unknown collective";
}

/* Every host must be at the same call; the stop flags are OR-ed. */
static int agree(xt_dist *d, uint32_t *stop, xt_err *e) {
    int H = xt_cluster_size(), me = xt_cluster_rank();
    header mine = {.kind = d->up_kind, .stop = atomic_load(&d->stop) ? 1u : 0u, .len = d->up_len}, all[H];
    int rc = xt_cluster_allgather(&mine, all, sizeof mine, e);
    if (rc) return rc;
    *stop = 0;
    for (int h = 0; h < H; h++) {
        *stop |= all[h].stop;
        if (all[h].kind != mine.kind || all[h].len != mine.len)
            return xt_fail(e, XT_ERUNTIME, "host %d (MPI rank %d) makes %s of %llu values while host %d makes %s of %llu; every host must run the same model and the same number of steps (same config, same dataset size)",
                           h, h, kind_name(all[h].kind), (unsigned long long)all[h].len, me, kind_name(mine.kind),
                           (unsigned long long)mine.len);
    }
    return 0;
}

int xt_uplink_serve(xt_dist *d, int64_t wait_ns, xt_err *e) {
    /* another host failed alone and said so (rank 0 only): this host stops
     * too, and its summary carries that host's message */
    if (xt_cluster_failure_note(e)) return e->code;
    uint32_t done = atomic_load(&d->up_done);
    if (xt_wait_eq(&d->up_req, done + 1, &d->abort, 0, wait_ns) != XT_WAIT_OK) return 0;
    uint32_t stop = 0;
    xt_cluster_watch(&d->stop, XT_GONE_GRACE_S);
    int rc = agree(d, &stop, e);
    if (!rc && d->up_kind == XT_COLL_ALLREDUCE)
        rc = xt_cluster_sum_floats(xt_dist_sum(d), (size_t)d->up_len, 1.0f / (float)d->global_world, e);
    else if (!rc)
        rc = xt_cluster_sum_doubles(d->up_mesh, (int)d->up_len, e);
    xt_cluster_watch(NULL, 0); /* d may be unmapped before the next exchange */
    if (rc) return rc;
    if (stop && !atomic_load(&d->stop)) xt_dist_request_stop(d, 0); /* asked on another host */
    atomic_store(&d->up_stop, stop);
    atomic_store(&d->up_done_ns, xt_mono_ns());
    atomic_store_explicit(&d->up_done, done + 1, memory_order_release);
    xt_futex_wake_all(&d->up_done);
    return 0;
}
