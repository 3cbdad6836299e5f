/* shm.c — the shared region, abort/stop flags, heartbeats, barrier and
 * serial sections; see shm.h (API) and shm_layout.h (layout). */
#include "distributed/shm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "distributed/shm_layout.h"

/* Busy-wait budget of a waiter before it sleeps, when every worker has a CPU. */
#define XT_SPIN_NS 20000u

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

int xt_dist_create(xt_dist **out, int world, size_t grad_cap, xt_err *e) {
    *out = NULL;
    if (world < 1 || world > XT_DIST_MAX_WORLD)
        return xt_fail(e, XT_EUSAGE, "cannot run %d worker processes; use 1..%d", world, XT_DIST_MAX_WORLD);
    size_t stride = round_up(grad_cap, 16);
    if (grad_cap > ((size_t)-1 / 4 - 4096) / (size_t)(world + 1) - 16)
        return xt_fail(e, XT_ERUNTIME, "gradient block of %zu floats x %d workers does not fit in memory", grad_cap, world);
    size_t off = round_up(sizeof(struct xt_dist), 64);
    size_t off_slots = off;
    off += (size_t)world * sizeof(xt_slot);
    size_t off_mesh = off;
    off += 2 * (size_t)world * XT_MESH_MAX * sizeof(double);
    off = round_up(off, 64);
    size_t off_rows = off;
    off += (size_t)world * stride * sizeof(float);
    size_t off_sum = off;
    off += stride * sizeof(float);
    long page = sysconf(_SC_PAGESIZE);
    size_t size = round_up(off, page > 0 ? (size_t)page : 4096);

    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        char buf[32];
        return xt_fail(e, XT_ERUNTIME, "cannot map %s bytes of shared memory for %d workers: %s; use fewer processes or a smaller model",
                       xt_commas(buf, size), world, strerror(errno));
    }
    xt_dist *d = p; /* the mapping is zero-filled */
    d->magic = XT_DIST_MAGIC;
    d->map_size = size;
    d->world = world;
    d->cap = grad_cap;
    d->stride = stride;
    d->off_slots = off_slots;
    d->off_mesh = off_mesh;
    d->off_rows = off_rows;
    d->off_sum = off_sum;
    d->spin_ns = world <= xt_cpus_allowed() ? XT_SPIN_NS : 0;
    atomic_store(&d->wait_timeout_ns, 0);
    xt_dist_reset(d);
    *out = d;
    return 0;
}

void xt_dist_destroy(xt_dist *d) {
    if (d && d->magic == XT_DIST_MAGIC) {
        d->magic = 0;
        munmap(d, d->map_size);
    }
}

void xt_dist_reset(xt_dist *d) {
    if (!d) return;
    atomic_store(&d->abort, 0);
    atomic_store(&d->abort_claimed, 0);
    atomic_store(&d->reason_ready, 0);
    atomic_store(&d->abort_rank, -1);
    atomic_store(&d->abort_code, 0);
    d->reason[0] = 0;
    atomic_store(&d->stop, 0);
    atomic_store(&d->summary_written, 0);
    atomic_store(&d->stop_signal, 0);
    atomic_store(&d->serial_turn, 0);
    atomic_store(&d->up_req, 0);
    atomic_store(&d->up_done, 0);
    atomic_store(&d->up_stop, 0);
    atomic_store(&d->up_done_ns, 0);
    xt_barrier_init(&d->bar, (uint32_t)d->world, d->spin_ns);
    int64_t now = xt_mono_ns();
    for (int r = 0; r < d->world; r++) {
        xt_slot *s = xt_dist_slot(d, r);
        memset((void *)s, 0, sizeof *s);
        atomic_store(&s->step, -1);
        atomic_store(&s->beat_ns, now);
    }
}

int xt_dist_world(const xt_dist *d) { return d ? d->world : 1; }
size_t xt_dist_grad_cap(const xt_dist *d) { return d ? d->cap : 0; }

float *xt_dist_grad_row(xt_dist *d, int rank) {
    if (!d || rank < 0 || rank >= d->world) return NULL;
    return xt_dist_rows(d) + (size_t)rank * d->stride;
}

const float *xt_dist_grad_sum(const xt_dist *d) { return d ? xt_dist_sum(d) : NULL; }

void xt_dist_set_wait_timeout(xt_dist *d, double seconds) {
    if (d) atomic_store(&d->wait_timeout_ns, seconds > 0 ? (int64_t)(seconds * 1e9) : 0);
}

void xt_dist_heartbeat(xt_dist *d, int rank, long long step) {
    if (!d || rank < 0 || rank >= d->world) return;
    xt_slot *s = xt_dist_slot(d, rank);
    atomic_store_explicit(&s->step, step, memory_order_relaxed);
    atomic_store_explicit(&s->beat_ns, xt_mono_ns(), memory_order_relaxed);
}

static void vabort(xt_dist *d, int rank, int code, const char *fmt, va_list ap) {
    if (!atomic_exchange(&d->abort_claimed, 1)) {
        vsnprintf(d->reason, sizeof d->reason, fmt, ap);
        for (char *p = d->reason; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        atomic_store(&d->abort_rank, rank);
        atomic_store(&d->abort_code, code);
        atomic_store(&d->reason_ready, 1);
    }
    atomic_store(&d->abort, 1);
    xt_barrier_break(&d->bar);
    xt_futex_wake_all(&d->serial_turn);
}

void xt_dist_abort(xt_dist *d, int rank, const char *fmt, ...) {
    if (!d) return;
    va_list ap;
    va_start(ap, fmt);
    vabort(d, rank, XT_ERUNTIME, fmt, ap);
    va_end(ap);
}

void xt_dist_abort_code(xt_dist *d, int rank, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vabort(d, rank, code, fmt, ap);
    va_end(ap);
}

int xt_dist_aborted(const xt_dist *d) { return d && atomic_load(&d->abort); }

const char *xt_dist_abort_reason(const xt_dist *d) {
    return d && atomic_load(&d->reason_ready) ? d->reason : "";
}

void xt_dist_request_stop(xt_dist *d, int sig) {
    if (!d) return;
    atomic_store(&d->stop_signal, (uint32_t)sig);
    atomic_store(&d->stop, 1);
}

void xt_dist_note_summary(xt_dist *d) {
    if (d) atomic_store(&d->summary_written, 1);
}

int xt_dist_summary_written(const xt_dist *d) { return d && atomic_load(&d->summary_written); }

int xt_dist_should_stop(const xt_dist *d) {
    if (!d) return 0;
    if (d->hosts > 1) return (int)atomic_load_explicit(&d->up_stop, memory_order_relaxed); /* agreed by every host */
    if (d->world == 1) return (int)atomic_load(&d->stop);
    return (int)atomic_load_explicit(&d->bar.latch, memory_order_relaxed);
}

int xt_dist_stop_asked(const xt_dist *d) {
    return d && (atomic_load(&d->stop) || atomic_load_explicit(&d->up_stop, memory_order_relaxed));
}

void xt_dist_report(xt_dist *d, int rank, const xt_err *err) {
    if (!d || !err || rank < 0 || rank >= d->world) return;
    xt_slot *s = xt_dist_slot(d, rank);
    atomic_store(&s->has_msg, 0);
    size_t n = strnlen(err->msg, sizeof s->msg - 1); /* truncate quietly: it is a one-line summary */
    memcpy(s->msg, err->msg, n);
    s->msg[n] = 0;
    atomic_store(&s->has_msg, 1);
}

static int aborted_error(xt_dist *d, int rank, const char *what, xt_err *e) {
    const char *why = xt_dist_abort_reason(d);
    return xt_fail(e, XT_ERUNTIME, "xla:%d: %s aborted: %s", rank, what, *why ? why : "another worker failed");
}

int xt_dist_check(xt_dist *d, int rank, const char *what, xt_err *e) {
    if (rank < 0 || rank >= d->world)
        return xt_fail(e, XT_ERUNTIME, "%s: rank %d is outside 0..%d", what, rank, d->world - 1);
    if (atomic_load(&d->abort)) return aborted_error(d, rank, what, e);
    return 0;
}

/* A wait of `rank` ended with r != XT_WAIT_OK: say why; a timeout aborts the run. */
static int wait_error(xt_dist *d, int rank, const char *what, int r, int in_serial, xt_err *e) {
    if (r == XT_WAIT_ABORTED) return aborted_error(d, rank, what, e);
    char who[256] = "";
    size_t n = 0;
    long long step = -1;
    int first = -1;
    if (in_serial) {
        first = (int)(atomic_load(&d->serial_turn) % (uint32_t)d->world);
    } else {
        uint32_t gen = atomic_load(&xt_dist_slot(d, rank)->wait_gen);
        for (int k = 0; k < d->world && n + 16 < sizeof who; k++) {
            xt_slot *s = xt_dist_slot(d, k);
            if (k == rank || (atomic_load(&s->waiting) == XT_IN_BARRIER && atomic_load(&s->wait_gen) == gen)) continue;
            if (first < 0) first = k;
            n += (size_t)snprintf(who + n, sizeof who - n, "%sxla:%d", n ? ", " : "", k);
        }
    }
    if (first >= 0) {
        step = atomic_load(&xt_dist_slot(d, first)->step);
        if (in_serial) snprintf(who, sizeof who, "xla:%d", first);
    } else {
        snprintf(who, sizeof who, "the other workers");
    }
    double secs = (double)atomic_load(&d->wait_timeout_ns) / 1e9;
    xt_fail(e, XT_ERUNTIME, "xla:%d: %s timed out after %g s waiting for %s (last step %lld); raise worker_timeout if a step can take that long",
            rank, what, secs, who, step);
    xt_dist_abort_code(d, rank, XT_ERUNTIME, "%s", e ? e->msg : "a wait timed out");
    return XT_ERUNTIME;
}

int xt_dist_wait(xt_dist *d, int rank, const char *what, xt_err *e) {
    xt_slot *s = xt_dist_slot(d, rank);
    atomic_store_explicit(&s->waiting, XT_IN_BARRIER, memory_order_relaxed);
    int r = xt_barrier_wait(&d->bar, &d->abort, &d->stop, &s->wait_gen, atomic_load(&d->wait_timeout_ns));
    if (r == XT_WAIT_OK) {
        atomic_store_explicit(&s->waiting, XT_NOT_WAITING, memory_order_relaxed);
        atomic_store_explicit(&s->beat_ns, xt_mono_ns(), memory_order_relaxed);
        return 0;
    }
    /* a failed wait leaves `waiting` set: a peer timing out at the same moment
     * must still count this rank as arrived when it names the missing ones */
    return wait_error(d, rank, what, r, 0, e);
}

static const char *const coll_names[] = {"?", "all-reduce", "mesh-reduce", "barrier"};

static const char *coll_desc(char *buf, size_t cap, uint64_t sig) {
    unsigned kind = (unsigned)(sig >> 56);
    char num[32];
    xt_commas(num, sig & ((1ULL << 56) - 1));
    const char *name = kind < 4 ? coll_names[kind] : "?";
    if (kind == XT_COLL_ALLREDUCE) snprintf(buf, cap, "%s of %s floats", name, num);
    else if (kind == XT_COLL_MESH) snprintf(buf, cap, "%s of %s values", name, num);
    else snprintf(buf, cap, "%s", name);
    return buf;
}

int xt_dist_collective(xt_dist *d, int rank, int kind, uint64_t len, uint32_t *call, xt_err *e) {
    xt_slot *s = xt_dist_slot(d, rank);
    uint32_t c = s->calls++;
    if (call) *call = c;
    uint64_t sig = (uint64_t)kind << 56 | (len & ((1ULL << 56) - 1));
    atomic_store_explicit(&s->sig[c & 1], sig, memory_order_relaxed);
    int rc = xt_dist_wait(d, rank, coll_names[kind], e);
    if (rc) return rc;
    for (int k = 0; k < d->world; k++) {
        uint64_t other = atomic_load_explicit(&xt_dist_slot(d, k)->sig[c & 1], memory_order_relaxed);
        if (other == sig) continue;
        char a[96], b[96];
        xt_fail(e, XT_ERUNTIME, "xla:%d: collective mismatch: xla:%d called %s while xla:%d called %s; every worker must make the same collective calls in the same order (equal batches per worker)",
                rank, rank, coll_desc(a, sizeof a, sig), k, coll_desc(b, sizeof b, other));
        xt_dist_abort_code(d, rank, XT_ERUNTIME, "%s", e ? e->msg : "collective mismatch");
        return XT_ERUNTIME;
    }
    return 0;
}

int xt_dist_barrier(xt_dist *d, int rank, xt_err *e) {
    if (!d) return 0;
    int rc = xt_dist_check(d, rank, "barrier", e);
    if (rc) return rc;
    if (d->world == 1) return 0;
    return xt_dist_collective(d, rank, XT_COLL_BARRIER, 0, NULL, e);
}

int xt_dist_serial(xt_dist *d, int rank, int (*fn)(void *arg, xt_err *e), void *arg, xt_err *e) {
    if (!d) return fn(arg, e);
    int rc = xt_dist_check(d, rank, "serial section", e);
    if (rc) return rc;
    if (d->world == 1) return fn(arg, e);
    xt_slot *s = xt_dist_slot(d, rank);
    uint32_t mine = s->serial_calls++ * (uint32_t)d->world + (uint32_t)rank;
    atomic_store_explicit(&s->waiting, XT_IN_SERIAL, memory_order_relaxed);
    int r = xt_wait_eq(&d->serial_turn, mine, &d->abort, d->spin_ns, atomic_load(&d->wait_timeout_ns));
    if (r != XT_WAIT_OK) return wait_error(d, rank, "serial section", r, 1, e);
    atomic_store_explicit(&s->waiting, XT_NOT_WAITING, memory_order_relaxed);
    atomic_store_explicit(&s->beat_ns, xt_mono_ns(), memory_order_relaxed);
    rc = fn(arg, e);
    atomic_store_explicit(&s->beat_ns, xt_mono_ns(), memory_order_relaxed);
    atomic_store_explicit(&d->serial_turn, mine + 1, memory_order_release);
    xt_futex_wake_all(&d->serial_turn);
    return rc;
}
