/* simd.c — run-time choice of the SIMD flavour and the ISA cap; see simd.h.
 *
 * Is: CPU feature detection (cached), the cap that stops it below what the
 * CPU has (XLATRAIN_ISA or the config's isa), and the test/bench override.
 * Is not: any kernel, or an error message for a bad XLATRAIN_ISA (config.c
 * reports it). __builtin_cpu_supports also checks that the OS saves the wide
 * registers (XCR0), so a "yes" here is safe to act on.
 */
#include "kernels/simd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_hw = -1;       /* cached detection */
static int g_hw_bf16 = -1;  /* cached: the CPU has AVX512-BF16 */
static int g_forced = -1;   /* -1: automatic */
static int g_cap_set;       /* k_isa_set_cap was called (else XLATRAIN_ISA is read once) */
static int g_cap = K_ISA_AUTO;
static char g_cap_from[64];

static const char *const names[] = {"generic", "avx2", "avx512"};

int k_simd_hardware(void) {
    if (g_hw < 0) {
        int lvl = K_SIMD_GENERIC, bf16 = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lvl = K_SIMD_AVX2;
        if (lvl == K_SIMD_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            lvl = K_SIMD_AVX512;
        bf16 = lvl == K_SIMD_AVX512 && __builtin_cpu_supports("avx512bf16");
#endif
        g_hw_bf16 = bf16;
        g_hw = lvl;
    }
    return g_hw;
}

const char *k_simd_name(int level) { return names[level >= 0 && level <= K_SIMD_AVX512 ? level : 0]; }

int k_isa_parse(const char *s) {
    if (!s || !*s || !strcmp(s, "auto")) return K_ISA_AUTO;
    for (int l = 0; l <= K_SIMD_AVX512; l++)
        if (!strcmp(s, names[l])) return l;
    return -2;
}

int k_isa_env_check(const char **value) {
    const char *env = getenv("XLATRAIN_ISA");
    if (value) *value = env;
    return k_isa_parse(env) == -2 ? -1 : 0;
}

void k_isa_set_cap(int level, const char *from) {
    g_cap_set = 1;
    g_cap = level >= K_SIMD_GENERIC && level <= K_SIMD_AVX512 ? level : K_ISA_AUTO;
    snprintf(g_cap_from, sizeof g_cap_from, "%s", from ? from : "");
}

int k_isa_cap(void) {
    if (!g_cap_set) { /* no run set it: the environment's, once (tests, benches) */
        const char *env = NULL;
        int lvl = k_isa_env_check(&env) ? K_ISA_AUTO : k_isa_parse(env);
        char from[64];
        snprintf(from, sizeof from, "XLATRAIN_ISA=%.40s", env ? env : "");
        k_isa_set_cap(lvl, from);
    }
    return g_cap;
}

const char *k_isa_cap_name(void) {
    int c = k_isa_cap();
    return c == K_ISA_AUTO ? "auto" : names[c];
}

int k_simd_detect(void) {
    int hw = k_simd_hardware(), cap = k_isa_cap();
    return cap != K_ISA_AUTO && cap < hw ? cap : hw;
}

int k_simd_has_avx512bf16(void) {
    k_simd_hardware();
    return g_hw_bf16 && k_simd_detect() == K_SIMD_AVX512;
}

int k_isa_reason(char *buf, size_t cap) {
    int hw = k_simd_hardware(), c = k_isa_cap();
    if (c == K_ISA_AUTO) snprintf(buf, cap, "detected");
    else if (c > hw) snprintf(buf, cap, "detected; %s asks for %s, above this CPU", g_cap_from, names[c]);
    else snprintf(buf, cap, "%s", g_cap_from);
    return k_simd_detect();
}

int k_simd_level(void) {
    int best = k_simd_detect();
    return g_forced >= 0 && g_forced < best ? g_forced : best;
}

int k_simd_force(int level) {
    int best = k_simd_detect();
    g_forced = level < 0 ? -1 : (level > best ? best : level);
    return k_simd_level();
}
