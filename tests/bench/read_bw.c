/* read_bw.c — how fast one core reads memory, by how much it reads: the
 * memory side of the physical limit, as fma_limit.c is the arithmetic side.
 *
 * Is: for footprints from 1 MB to 64 MB, a buffer read over and over with
 * 512-bit loads (AVX-512 where the CPU has it, chosen at run time; 256-bit
 * AVX2 or the compiler's baseline vectors otherwise) into independent
 * accumulators, best of several timed passes; one line per footprint,
 *   "READ_BW mb=16 gbs=97.4 width=512"
 * which run.sh prints as one line beside the batch sweep.
 * Why: the seed CNN's batch sweep (run.sh) keeps a large batch's values across
 * batch norm's barriers in its arena, read back a stretch later; whether the
 * arena plus the batch's images stay in the L3 this core gets (the read rate
 * stays near the L3's) or stream from DRAM is what decides batch 1024 against
 * batch 128 on a given machine. The L3 a virtual machine reports is not the
 * L3 it gets when its neighbours run, so the bench measures it beside the
 * sweep instead of reading sysfs. Is not: a write or copy bandwidth, or a
 * latency (a pointer chase); a footprint's figure is its best pass, so a
 * burst of another machine's load lowers it only if it lasts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/log.h" /* xt_wall_s */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define READ_BW_X86 1
#endif

/* Sum of n floats (n a multiple of 64) in independent accumulators, so the
 * adds never wait on each other; the sum is returned so no pass is dead. */
__attribute__((noinline)) static float read_generic(const float *p, size_t n) {
    float a[16] = {0};
    for (size_t i = 0; i < n; i += 16)
        for (int k = 0; k < 16; k++) a[k] += p[i + k];
    float s = 0;
    for (int k = 0; k < 16; k++) s += a[k];
    return s;
}
#ifdef READ_BW_X86
__attribute__((noinline, target("avx512f"))) static float read_avx512(const float *p, size_t n) {
    __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 64) {
        a = _mm512_add_ps(a, _mm512_load_ps(p + i));
        b = _mm512_add_ps(b, _mm512_load_ps(p + i + 16));
        c = _mm512_add_ps(c, _mm512_load_ps(p + i + 32));
        d = _mm512_add_ps(d, _mm512_load_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}
__attribute__((noinline, target("avx2"))) static float read_avx2(const float *p, size_t n) {
    __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 32) {
        a = _mm256_add_ps(a, _mm256_load_ps(p + i));
        b = _mm256_add_ps(b, _mm256_load_ps(p + i + 8));
        c = _mm256_add_ps(c, _mm256_load_ps(p + i + 16));
        d = _mm256_add_ps(d, _mm256_load_ps(p + i + 24));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif

int main(void) {
    typedef float (*read_fn)(const float *, size_t);
    read_fn rd = read_generic;
    const char *width = "baseline";
#ifdef READ_BW_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) rd = read_avx512, width = "512-bit";
    else if (__builtin_cpu_supports("avx2")) rd = read_avx2, width = "256-bit";
#endif
    static const int mb[] = {1, 2, 4, 8, 12, 16, 20, 24, 32, 64};
    float sink = 0;
    for (size_t k = 0; k < sizeof mb / sizeof mb[0]; k++) {
        size_t n = (size_t)mb[k] << 18; /* floats in mb[k] MiB */
        float *p = aligned_alloc(64, n * sizeof *p);
        if (!p) {
            fprintf(stderr, "read_bw: out of memory for %d MB\n", mb[k]);
            return 1;
        }
        for (size_t i = 0; i < n; i++) p[i] = (float)(i & 7);
        sink += rd(p, n); /* first touch and a warm pass */
        /* about 4 GB read per footprint, in passes over the whole buffer */
        int passes = 4096 / mb[k], per = passes / 4;
        double best = 0;
        for (int r = 0; r < 4; r++) {
            double t0 = xt_wall_s();
            for (int j = 0; j < per; j++) {
                __asm__ volatile("" ::: "memory");
                sink += rd(p, n);
            }
            double gbs = (double)per * (double)(n * sizeof *p) / (xt_wall_s() - t0) / 1e9;
            if (gbs > best) best = gbs;
        }
        free(p);
        printf("READ_BW mb=%d gbs=%.1f width=%s\n", mb[k], best, width);
        fflush(stdout);
    }
    return sink == -1.0f; /* never: keeps the sums live */
}
