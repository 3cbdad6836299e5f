/* cache.h — the data cache sizes the CPU reports, for blocking decisions
 * made at run time (micro-batch tiles in the engine's pass_tile.c) rather
 * than constants tuned on one machine. */
#ifndef K_CACHE_H
#define K_CACHE_H

#include <stddef.h>

/* One core's L2 data cache in bytes: sysconf (glibc reads it from cpuid),
 * else K_CACHE_L2_FALLBACK when the system does not say (some VMs). */
#define K_CACHE_L2_FALLBACK ((size_t)512 * 1024)
size_t k_cache_l2_bytes(void);
/* One core's L1 data cache in bytes, the same way (fallback 32 KiB). */
#define K_CACHE_L1D_FALLBACK ((size_t)32 * 1024)
size_t k_cache_l1d_bytes(void);

#endif
