/* simd.c — run-time choice of the SIMD flavour; see simd.h.
 *
 * Is: CPU feature detection (cached) and the test/bench override.
 * Is not: any kernel. __builtin_cpu_supports also checks that the OS saves the
 * wide registers (XCR0), so a "yes" here is safe to act on.
 */
#include "kernels/simd.h"

static int g_detected = -1; /* cached detection */
static int g_forced = -1;   /* -1: automatic */

int k_simd_detect(void) {
    if (g_detected < 0) {
        int lvl = K_SIMD_GENERIC;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lvl = K_SIMD_AVX2;
        if (lvl == K_SIMD_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            lvl = K_SIMD_AVX512;
#endif
        g_detected = lvl;
    }
    return g_detected;
}

int k_simd_level(void) {
    return g_forced >= 0 ? g_forced : k_simd_detect();
}

int k_simd_force(int level) {
    int best = k_simd_detect();
    g_forced = level < 0 ? -1 : (level > best ? best : level);
    return k_simd_level();
}
