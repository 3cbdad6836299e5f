/* bf16.c — the bf16 path choice and the float <-> bf16 conversions; see bf16.h.
 *
 * Is: the bf16 path (AVX512-BF16 as simd.c detects it under the ISA cap), the
 * test/bench override, and the two bulk conversions the engine's cast nodes
 * and the reference path use.
 * Is not: a GEMM or a convolution (gemm_bf16.c, conv_bf16.c).
 *
 * The conversion is written once, branch-free, and compiled twice: for the
 * baseline and for AVX-512 (where it vectorizes 16 lanes wide). It is not
 * vcvtneps2bf16: that instruction flushes denormal inputs to zero, and the
 * cast must give the same bits on every CPU so that the paths can be
 * compared and a run does not depend on the machine it ran on.
 */
#include "kernels/bf16.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/simd.h"

static int g_env_ref = -1; /* XLATRAIN_BF16_PATH=ref, read once */
static int g_forced = -1;

/* The hardware check goes through simd.c, which applies the ISA cap: a run
 * capped below AVX-512 takes the reference path. */
int k_bf16_detect(void) {
    if (g_env_ref < 0) { /* the environment can ask for the portable path (benches, bisecting) */
        const char *env = NULL;
        k_bf16_env_check(&env);
        g_env_ref = env && !strcmp(env, "ref");
    }
    return !g_env_ref && k_simd_has_avx512bf16() ? K_BF16_AVX512BF16 : K_BF16_REF;
}

int k_bf16_env_check(const char **value) {
    const char *env = getenv("XLATRAIN_BF16_PATH");
    if (value) *value = env;
    return !env || !*env || !strcmp(env, "auto") || !strcmp(env, "ref") ? 0 : -1;
}

int k_bf16_path(void) {
    int p = g_forced >= 0 ? g_forced : k_bf16_detect();
    return p != K_BF16_REF && k_simd_level() != K_SIMD_AVX512 ? K_BF16_REF : p;
}

/* the hardware paths (AVX512BF16, DIRECT) need AVX512-BF16; REF runs anywhere */
int k_bf16_force(int path) {
    int best = k_bf16_detect();
    g_forced = path < 0 ? -1 : (best == K_BF16_REF || path > K_BF16_DIRECT ? best : path);
    return k_bf16_path();
}

int k_bf16_forced(void) { return g_forced; }

int k_bf16_npaths(void) { return k_bf16_detect() == K_BF16_REF ? 1 : 3; }

const char *k_bf16_path_name(int path) {
    return path == K_BF16_DIRECT ? "AVX512-BF16 direct" : path == K_BF16_AVX512BF16 ? "AVX512-BF16" : "reference";
}

/* Branch-free k_bf16_from_f32 over an array (the same arithmetic). */
#define CAST_LOOP                                                                \
    for (size_t i = 0; i < n; i++) {                                             \
        uint32_t u;                                                              \
        memcpy(&u, &in[i], 4);                                                   \
        uint32_t rne = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                   \
        uint32_t qnan = (u >> 16) | 0x40u;                                       \
        out[i] = (k_bf16)((u & 0x7fffffffu) > 0x7f800000u ? qnan : rne);         \
    }
#define EXPAND_LOOP                                                              \
    for (size_t i = 0; i < n; i++) {                                             \
        uint32_t u = (uint32_t)in[i] << 16;                                      \
        memcpy(&out[i], &u, 4);                                                  \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void cast_avx512(size_t n, k_bf16 *out, const float *in) {
    CAST_LOOP
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void expand_avx512(size_t n, float *out, const k_bf16 *in) {
    EXPAND_LOOP
}
#define HAVE_AVX512_CLONES 1
#endif

void k_bf16_cast(size_t n, k_bf16 *out, const float *in) {
#ifdef HAVE_AVX512_CLONES
    if (k_simd_level() == K_SIMD_AVX512) {
        cast_avx512(n, out, in);
        return;
    }
#endif
    CAST_LOOP
}

void k_bf16_expand(size_t n, float *out, const k_bf16 *in) {
#ifdef HAVE_AVX512_CLONES
    if (k_simd_level() == K_SIMD_AVX512) {
        expand_avx512(n, out, in);
        return;
    }
#endif
    EXPAND_LOOP
}
