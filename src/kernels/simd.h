/* simd.h — which SIMD flavour the kernels run, and the ISA cap (private to
 * src/kernels, its callers that set or report the cap, tests, bench).
 *
 * The build targets x86-64-v2 so the binary runs everywhere; kernels that gain
 * from AVX2+FMA or AVX-512 compile those variants per function (target
 * attributes) and ask k_simd_level() at run time which one to call. Tests and
 * the kernel bench force each level in turn so every variant is checked.
 *
 * The ISA cap (XLATRAIN_ISA=avx512|avx2|generic, the config key isa) is the
 * one place that stops detection below what the CPU has, in the spirit of
 * oneDNN's ONEDNN_MAX_CPU_ISA and ATEN_CPU_CAPABILITY: k_simd_detect() and
 * the AVX512-BF16 check (k_simd_has_avx512bf16, which bf16.c asks) both
 * answer through it, so every kernel choice made after the cap is set obeys
 * it. A library back end maps k_isa_cap() to its own cap (oneDNN's
 * dnnl_set_max_cpu_isa). Not here: any kernel, or the messages for a bad
 * value (the config reports them; this file only says whether one is valid).
 *
 *   k_isa_set_cap(K_SIMD_AVX2, "XLATRAIN_ISA=avx2");  // before any kernel runs
 *   k_simd_level();                                     // K_SIMD_AVX2 on an AVX-512 CPU
 */
#ifndef XT_KERNELS_SIMD_H
#define XT_KERNELS_SIMD_H

#include <stddef.h>

enum k_simd { K_SIMD_GENERIC = 0, K_SIMD_AVX2 = 1, K_SIMD_AVX512 = 2 };
/* No cap: the CPU's best (k_isa_cap, k_isa_parse, k_isa_set_cap). */
#define K_ISA_AUTO (-1)

/* The best level this CPU (and OS) supports under the cap, unless forced. */
int k_simd_level(void);
/* The best level the CPU supports under the cap, ignoring any forcing. */
int k_simd_detect(void);
/* The best level the CPU supports, ignoring the cap and any forcing. */
int k_simd_hardware(void);
/* Force a level (clamped to k_simd_detect()); -1 returns to automatic.
 * Returns the level now in effect. For tests and benchmarks only. */
int k_simd_force(int level);
/* The CPU has AVX512-BF16 and the cap allows AVX-512. */
int k_simd_has_avx512bf16(void);
/* "generic", "avx2", "avx512" (a level out of range: "generic"). */
const char *k_simd_name(int level);

/* "avx512", "avx2", "generic" -> the level; "auto", "" or NULL -> K_ISA_AUTO;
 * anything else -> -2. */
int k_isa_parse(const char *s);
/* XLATRAIN_ISA: its value in *value (NULL when unset); 0 when it is unset or
 * one k_isa_parse accepts, -1 otherwise (the caller reports it; until then
 * an unknown value counts as auto). */
int k_isa_env_check(const char **value);
/* Cap the level (K_ISA_AUTO: no cap) and say what set it, for the log
 * ("XLATRAIN_ISA=avx2", "config"); before any kernel runs or is chosen, and
 * before workers fork (they inherit it). Without a call, the first question
 * reads XLATRAIN_ISA, so tests and benches obey it too. */
void k_isa_set_cap(int level, const char *from);
/* The cap in effect (K_ISA_AUTO or a level) and its name ("auto" for none). */
int k_isa_cap(void);
const char *k_isa_cap_name(void);
/* The level the kernels run at (k_simd_detect), with why in buf, for the log
 * and results.json: "XLATRAIN_ISA=avx2", "detected", "detected; config asks
 * for avx512, above this CPU". */
int k_isa_reason(char *buf, size_t cap);

#endif
