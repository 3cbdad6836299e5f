/* barrier.h — an abortable process-shared barrier and wait primitive.
 *
 * Lives in MAP_SHARED memory so forked workers can use it. A waiter spins for
 * up to spin_ns (PAUSE for a microsecond, then sched_yield so a peer sharing
 * its CPU can run; callers pass 0 when there are more parties than CPUs),
 * then sleeps on a futex (SYS_futex, FUTEX_WAIT/FUTEX_WAKE on the shared
 * word — not the PRIVATE variants, which do not work across processes).
 *
 * Unlike pthread_barrier, a wait can be aborted: whoever sets the shared
 * abort word and calls xt_barrier_break() wakes every waiter, which returns
 * XT_WAIT_ABORTED. A wait can also time out. An aborted or timed-out barrier
 * is dead (its arrival count is no longer meaningful) until re-initialized.
 *
 *   xt_barrier_init(&b, 4, spin_ns);                  // before fork
 *   int r = xt_barrier_wait(&b, &abort, &stop, NULL, 30 * XT_NS_PER_S, NULL);
 *   if (r == XT_WAIT_ABORTED) ...
 *
 * This layer knows nothing of ranks or messages; src/dist/shm.c wraps it.
 */
#ifndef XT_DIST_BARRIER_H
#define XT_DIST_BARRIER_H

#include <stdatomic.h>
#include <stdint.h>

#define XT_NS_PER_S 1000000000LL

enum xt_wait_result {
    XT_WAIT_OK = 0,
    XT_WAIT_ABORTED = 1,   /* *abort became non-zero */
    XT_WAIT_TIMEDOUT = 2,  /* timeout_ns elapsed */
};

typedef struct xt_barrier {
    _Alignas(64) _Atomic uint32_t count;  /* arrivals in the current generation */
    _Alignas(64) _Atomic uint32_t seq;    /* generation number; the futex word */
    _Atomic uint32_t sleepers;            /* waiters inside FUTEX_WAIT (or about to be) */
    _Atomic uint32_t latch;               /* *latch_src sampled by the last arriver */
    uint32_t n;                           /* parties */
    uint32_t spin_ns;                     /* busy-wait budget before sleeping; 0 = none */
} xt_barrier;

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC: one clock for all processes). */
int64_t xt_mono_ns(void);

/* Number of CPUs this process may run on (sched_getaffinity), at least 1. */
int xt_cpus_allowed(void);

/* Prepare b for n parties. Not concurrent-safe: call when nobody waits. */
void xt_barrier_init(xt_barrier *b, uint32_t n, uint32_t spin_ns);

/* Arrive and wait for the other n-1 parties. Returns XT_WAIT_OK when all
 * arrived, XT_WAIT_ABORTED if *abort is (or becomes) non-zero, or
 * XT_WAIT_TIMEDOUT after timeout_ns (<= 0: wait forever).
 * The last arriver copies *latch_src (if not NULL) into b->latch before
 * releasing the others, so every party leaving the same generation reads the
 * same value from b->latch (used to agree on "stop requested").
 * If gen_out is not NULL, the generation waited for is stored there before
 * arriving (lets a supervisor see who is stuck where). */
int xt_barrier_wait(xt_barrier *b, const _Atomic uint32_t *abort, const _Atomic uint32_t *latch_src,
                    _Atomic uint32_t *gen_out, int64_t timeout_ns);

/* Wake everyone waiting on b; call after setting the abort word. */
void xt_barrier_break(xt_barrier *b);

/* Wait until *word == want (set by another process followed by
 * xt_futex_wake_all(word)). Same abort/timeout rules as xt_barrier_wait. */
int xt_wait_eq(_Atomic uint32_t *word, uint32_t want, const _Atomic uint32_t *abort, uint32_t spin_ns,
               int64_t timeout_ns);

/* FUTEX_WAKE every waiter on word (shared, not PRIVATE). */
void xt_futex_wake_all(_Atomic uint32_t *word);

#endif
