/* barrier.c — abortable process-shared barrier on a futex; see barrier.h.
 *
 * Generation barrier: an arriver reads the generation `seq`, then increments
 * `count`; the last one resets `count` and bumps `seq`, which releases the
 * others. Waiters spin briefly on `seq` (PAUSE, then sched_yield), then sleep in FUTEX_WAIT on it in
 * slices of at most XT_SLICE_NS, re-checking the abort word after each slice
 * (a safety net: xt_barrier_break() also bumps `seq`, so a sleeper wakes at
 * once). The last arriver only pays for FUTEX_WAKE when someone announced it
 * sleeps (`sleepers`); both sides use sequentially consistent operations on
 * `seq` and `sleepers`, so at least one of them sees the other's write.
 */
#include "distributed/barrier.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "process-shared atomics must be lock-free (address-free)");

/* Spin with PAUSE this long, then with sched_yield() for the rest of spin_ns.
 * Measured on a loaded 2-vCPU VM, all-reduce of 21,900 floats at N=2: when
 * the scheduler puts both workers on one CPU, a pure PAUSE spin of 20 us
 * doubles the time (~77 us vs ~40 us without spinning: the peer cannot run
 * while we spin); yielding keeps it at ~35 us, and with a CPU each both
 * spins give ~15 us. With more workers than CPUs, not spinning at all is best. */
#define XT_PAUSE_NS 1000

/* Longest single FUTEX_WAIT: bounds the reaction time to an abort whose wake-up was missed. */
#define XT_SLICE_NS (100 * 1000 * 1000LL)

int64_t xt_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * XT_NS_PER_S + ts.tv_nsec;
}

int xt_cpus_allowed(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static long futex_wait(_Atomic uint32_t *w, uint32_t expect, int64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / XT_NS_PER_S), .tv_nsec = (long)(ns % XT_NS_PER_S)};
    return syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, expect, &ts, NULL, 0);
}

void xt_futex_wake_all(_Atomic uint32_t *word) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void xt_barrier_init(xt_barrier *b, uint32_t n, uint32_t spin_ns) {
    atomic_store(&b->count, 0);
    atomic_store(&b->seq, 0);
    atomic_store(&b->sleepers, 0);
    atomic_store(&b->latch, 0);
    b->n = n ? n : 1;
    b->spin_ns = spin_ns;
}

/* Wait while *w == cur. Returns XT_WAIT_OK once it differs. */
static int wait_change(_Atomic uint32_t *w, uint32_t cur, _Atomic uint32_t *sleepers,
                       const _Atomic uint32_t *abort, uint32_t spin_ns, int64_t timeout_ns) {
    int64_t start = 0;
    if (spin_ns) {
        start = xt_mono_ns();
        for (unsigned i = 1;; i++) {
            if (atomic_load_explicit(w, memory_order_acquire) != cur) return XT_WAIT_OK;
            if (abort && atomic_load_explicit(abort, memory_order_relaxed)) return XT_WAIT_ABORTED;
            if ((i & 31) == 0) {
                int64_t spent = xt_mono_ns() - start;
                if (spent > (int64_t)spin_ns) break;
                if (spent > XT_PAUSE_NS) sched_yield(); /* let a peer that shares this CPU run */
            } else {
                cpu_relax();
            }
        }
    }
    int64_t deadline = timeout_ns > 0 ? (start ? start : xt_mono_ns()) + timeout_ns : 0;
    for (;;) {
        if (atomic_load(w) != cur) return XT_WAIT_OK;
        if (abort && atomic_load(abort)) return XT_WAIT_ABORTED;
        int64_t slice = XT_SLICE_NS;
        if (deadline) {
            int64_t left = deadline - xt_mono_ns();
            if (left <= 0) return XT_WAIT_TIMEDOUT;
            if (left < slice) slice = left;
        }
        if (sleepers) atomic_fetch_add(sleepers, 1);
        if (atomic_load(w) == cur) futex_wait(w, cur, slice); /* EAGAIN/EINTR/ETIMEDOUT: just re-check */
        if (sleepers) atomic_fetch_sub(sleepers, 1);
    }
}

int xt_barrier_wait(xt_barrier *b, const _Atomic uint32_t *abort, const _Atomic uint32_t *latch_src,
                    _Atomic uint32_t *gen_out, int64_t timeout_ns) {
    if (abort && atomic_load(abort)) return XT_WAIT_ABORTED;
    uint32_t gen = atomic_load_explicit(&b->seq, memory_order_acquire);
    if (gen_out) atomic_store_explicit(gen_out, gen, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        if (latch_src) atomic_store_explicit(&b->latch, atomic_load(latch_src), memory_order_relaxed);
        atomic_fetch_add(&b->seq, 1); /* seq_cst: release of count/latch, and orders the read below */
        if (atomic_load(&b->sleepers)) xt_futex_wake_all(&b->seq);
        return abort && atomic_load(abort) ? XT_WAIT_ABORTED : XT_WAIT_OK;
    }
    int r = wait_change(&b->seq, gen, &b->sleepers, abort, b->spin_ns, timeout_ns);
    if (r == XT_WAIT_OK && abort && atomic_load(abort)) r = XT_WAIT_ABORTED; /* woken by a break */
    return r;
}

void xt_barrier_break(xt_barrier *b) {
    atomic_fetch_add(&b->seq, 1);
    xt_futex_wake_all(&b->seq);
}

int xt_wait_eq(_Atomic uint32_t *word, uint32_t want, const _Atomic uint32_t *abort, uint32_t spin_ns,
               int64_t timeout_ns) {
    int64_t deadline = timeout_ns > 0 ? xt_mono_ns() + timeout_ns : 0;
    for (;;) {
        uint32_t cur = atomic_load_explicit(word, memory_order_acquire);
        if (cur == want) return XT_WAIT_OK;
        if (abort && atomic_load(abort)) return XT_WAIT_ABORTED;
        int64_t left = 0;
        if (deadline) {
            left = deadline - xt_mono_ns();
            if (left <= 0) return XT_WAIT_TIMEDOUT;
        }
        /* no sleeper count here: the waker always calls FUTEX_WAKE (serial sections are rare) */
        int r = wait_change(word, cur, NULL, abort, spin_ns, left);
        if (r != XT_WAIT_OK) return r;
    }
}
