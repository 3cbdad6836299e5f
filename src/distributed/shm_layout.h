/* shm_layout.h — private: the layout of the shared region (src/distributed/ only).
 *
 *   [struct xt_dist: control block + barrier]           offset 0
 *   [xt_slot x world]                                   off_slots, 64-aligned
 *   [mesh scratch: 2 x world x XT_MESH_MAX doubles]     off_mesh   (double-buffered)
 *   [staging rows: world x stride floats]               off_rows, 64-aligned, stride % 16 == 0
 *   [reduced vector: stride floats]                     off_sum,  64-aligned
 *
 * Everything is plain data addressed by offsets: the same bytes at the same
 * address in every forked process. Only lock-free atomics, so every field is
 * safe to touch from several processes.
 */
#ifndef XT_DIST_SHM_LAYOUT_H
#define XT_DIST_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "distributed/barrier.h"
#include "distributed/shm.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "process-shared atomics must be lock-free (address-free)");

#define XT_DIST_MAGIC 0x78746469737431ULL /* "xtdist1" */
#define XT_SLOT_MSG 512

enum xt_slot_state { XT_SLOT_IDLE = 0, XT_SLOT_RUNNING = 1, XT_SLOT_EXITED = 2 };
enum xt_slot_wait { XT_NOT_WAITING = 0, XT_IN_BARRIER = 1, XT_IN_SERIAL = 2, XT_IN_UPLINK = 3 };

/* One per worker; the first cache line holds what changes every step. */
typedef struct xt_slot {
    _Alignas(64) _Atomic int64_t step;  /* last step given to xt_dist_heartbeat; -1 before */
    _Atomic int64_t beat_ns;            /* xt_mono_ns() of the last sign of progress */
    _Atomic uint32_t waiting;           /* enum xt_slot_wait */
    _Atomic uint32_t wait_gen;          /* barrier generation it waits for */
    _Atomic uint64_t sig[2];            /* (kind << 56 | length) of its collective #calls, by parity */
    uint32_t calls;                     /* collectives entered (own rank only): sig/mesh parity */
    uint32_t serial_calls;              /* serial sections entered (own rank only) */
    uint32_t uplink_calls;              /* cross-host exchanges entered (own rank only) */
    _Atomic int32_t state;              /* enum xt_slot_state */
    _Atomic int32_t pid;
    _Atomic int32_t exit_code;          /* what fn returned (set by the worker before _exit) */
    _Atomic uint32_t has_msg;           /* msg is complete */
    char msg[XT_SLOT_MSG];              /* the worker's own error (xt_dist_report) */
} xt_slot;

struct xt_dist {
    uint64_t magic;
    size_t map_size;
    int world;
    uint32_t spin_ns;
    size_t cap, stride;                 /* floats per row; stride = cap rounded up to 16 */
    size_t off_slots, off_mesh, off_rows, off_sum;
    _Atomic int64_t wait_timeout_ns;    /* <= 0: none */

    _Alignas(64) _Atomic uint32_t abort;
    _Atomic uint32_t abort_claimed;     /* first xt_dist_abort() owns the reason */
    _Atomic uint32_t reason_ready;
    _Atomic int32_t abort_rank;         /* -1: the parent */
    _Atomic int32_t abort_code;         /* exit code behind the abort (the worker's), 0 if none */
    char reason[XT_SLOT_MSG];

    _Alignas(64) _Atomic uint32_t stop;       /* stop requested */
    _Atomic uint32_t stop_signal;             /* the signal that asked for it, 0 if none */
    _Atomic uint32_t summary_written;         /* a worker wrote the run's summary (xt_dist_note_summary) */
    _Alignas(64) _Atomic uint32_t serial_turn;

    xt_barrier bar;

    /* The host's link to the other hosts (uplink.c); hosts <= 1: none.
     * Local rank 0 posts request number up_req once the local reduce is
     * done; the supervising parent (the MPI rank) serves it and publishes
     * up_done = up_req. The payload is the reduced vector (floats) or
     * up_mesh (doubles). */
    int hosts, global_world;
    int ordinal_base;                   /* global ordinal of local rank 0 (messages) */
    _Alignas(64) _Atomic uint32_t up_req;
    _Atomic uint32_t up_done;
    _Atomic uint32_t up_stop;           /* a stop asked on any host, agreed at the last exchange */
    _Atomic int64_t up_done_ns;         /* xt_mono_ns() of the last answer */
    uint32_t up_kind;                   /* enum xt_coll_kind of the pending request */
    uint64_t up_len;                    /* its floats or doubles */
    double up_mesh[XT_MESH_MAX];
};

static inline xt_slot *xt_dist_slot(const xt_dist *d, int rank) {
    return (xt_slot *)((char *)d + d->off_slots) + rank;
}
static inline float *xt_dist_rows(const xt_dist *d) { return (float *)((char *)d + d->off_rows); }
static inline float *xt_dist_sum(const xt_dist *d) { return (float *)((char *)d + d->off_sum); }
static inline double *xt_dist_mesh(const xt_dist *d) { return (double *)((char *)d + d->off_mesh); }

/* Barrier wait for `rank` with status bookkeeping and messages:
 * "xla:<rank>: <what> aborted: <reason>" or "... timed out after ... waiting for xla:<k>".
 * A timeout aborts the run (the barrier is dead). Returns 0 or XT_ERUNTIME. */
int xt_dist_wait(xt_dist *d, int rank, const char *what, xt_err *e);

enum xt_coll_kind { XT_COLL_ALLREDUCE = 1, XT_COLL_MESH = 2, XT_COLL_BARRIER = 3 };

/* Enter a collective: publish (kind, len), wait at the barrier, then check
 * every rank entered the same kind with the same len (else abort: the ranks'
 * call sequences diverged, e.g. unequal batches per rank). *call gets this
 * collective's sequence number (its parity selects double buffers: the data
 * of call c may be overwritten only at call c+2, after a barrier in between).
 * Returns 0 or XT_ERUNTIME. */
int xt_dist_collective(xt_dist *d, int rank, int kind, uint64_t len, uint32_t *call, xt_err *e);

/* Check rank is in [0, world) and the run is not aborted. */
int xt_dist_check(xt_dist *d, int rank, const char *what, xt_err *e);

/* Set the abort flag with a reason and the exit code behind it. */
void xt_dist_abort_code(xt_dist *d, int rank, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
