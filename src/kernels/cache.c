/* cache.c — the L1d and L2 sizes the CPU reports (see cache.h). Is not: any
 * blocking decision; callers choose what fraction to use. */
#include "kernels/cache.h"

#include <unistd.h>

/* sysconf(name) when it lies in [lo, hi] (a report outside is not a
 * per-core cache of that level: some VMs say 0, or a whole socket's), else
 * the fallback */
static size_t reported(int name, long lo, long hi, size_t fallback) {
    long v = name >= 0 ? sysconf(name) : -1;
    return v >= lo && v <= hi ? (size_t)v : fallback;
}

/* glibc's names; elsewhere the fallbacks */
#ifndef _SC_LEVEL2_CACHE_SIZE
#define _SC_LEVEL2_CACHE_SIZE (-1)
#define _SC_LEVEL1_DCACHE_SIZE (-1)
#endif

size_t k_cache_l2_bytes(void) {
    static size_t cached;
    if (!cached) cached = reported(_SC_LEVEL2_CACHE_SIZE, 64L * 1024, 64L * 1024 * 1024, K_CACHE_L2_FALLBACK);
    return cached;
}

size_t k_cache_l1d_bytes(void) {
    static size_t cached;
    if (!cached) cached = reported(_SC_LEVEL1_DCACHE_SIZE, 8L * 1024, 4L * 1024 * 1024, K_CACHE_L1D_FALLBACK);
    return cached;
}
