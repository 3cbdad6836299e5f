/* simd.h — which SIMD flavour the kernels run (private to src/kernels, tests, bench).
 *
 * The build targets x86-64-v2 so the binary runs everywhere; kernels that gain
 * from AVX2+FMA or AVX-512 compile those variants per function (target
 * attributes) and ask k_simd_level() at run time which one to call. Tests and
 * the kernel bench force each level in turn so every variant is checked.
 */
#ifndef XT_KERNELS_SIMD_H
#define XT_KERNELS_SIMD_H

enum k_simd { K_SIMD_GENERIC = 0, K_SIMD_AVX2 = 1, K_SIMD_AVX512 = 2 };

/* The best level this CPU (and OS) supports, unless forced. */
int k_simd_level(void);
/* The best level the CPU supports, ignoring any forcing. */
int k_simd_detect(void);
/* Force a level (clamped to what the CPU supports); -1 returns to automatic.
 * Returns the level now in effect. For tests and benchmarks only. */
int k_simd_force(int level);

#endif
