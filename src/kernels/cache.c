/* cache.c — the L2 size the CPU reports (see cache.h). Is not: any
 * blocking decision; callers choose what fraction to use. */
#include "kernels/cache.h"

#include <unistd.h>

size_t k_cache_l2_bytes(void) {
    static size_t cached;
    if (!cached) {
        long v = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
        v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        /* a report below 64 KiB or above 64 MiB is not a per-core L2 */
        cached = v >= 64 * 1024 && v <= 64L * 1024 * 1024 ? (size_t)v : K_CACHE_L2_FALLBACK;
    }
    return cached;
}
