/* fma_limit.c — the arithmetic limit of one core: fp32 fused multiply-adds
 * per second, measured directly.
 *
 * Is: for every vector width this CPU runs (128-bit SSE FMA, 256-bit AVX2,
 * 512-bit AVX-512), a loop of independent accumulator chains (more chains
 * than FMA latency x FMA ports, so the units never wait on a result), best
 * of several timed runs. Prints one line per width and a last line
 *   "FMA_LIMIT gflops=228.1 width=512 model=AMD EPYC ..."
 * that tests/bench/run.sh uses as the yardstick: a model's FLOP rate is
 * reported as a share of it (2 FLOPs per FMA per lane). Is not: a GEMM (that
 * is kernel_bench's sgemm line, a second reference that depends on which
 * kernels OpenBLAS picked for this CPU). ../shared/bench/fma_peak.c is an
 * independent cross-check.
 *
 * Also the bf16 limit (issue #18), measured the same way: independent chains
 * of vdpbf16ps (AVX512-BF16: each 512-bit instruction is 32 bf16 products
 * added pairwise into 16 fp32 lanes, 64 FLOPs), printed as a last line
 *   "BF16_LIMIT gflops=... width=512 model=..." (gflops=0 without AVX512-BF16).
 *
 * And, where the CPU has AMX (Intel Xeons of the Sapphire Rapids class) and
 * the kernel grants the tile state (arch_prctl ARCH_REQ_XCOMP_PERM), the
 * AMX-BF16 limit: tdpbf16ps on 4 independent 16x16 fp32 accumulator tiles
 * (each instruction 16 x 16 x 32 multiply-adds, 16,384 FLOPs), printed as
 *   "AMX_LIMIT gflops=... model=..." (gflops=0 without AMX).
 * ../shared/bench/amx_peak.c is the independent cross-check; the project's
 * own machines (Zen 5, and Intel VMs without AMX) cannot run this loop, so
 * the figure comes from the machines that have it.
 *
 * With --cores N (N > 1), also the limit of N cores busy at once: N forked
 * copies run the widest FMA loop (and vdpbf16ps) together, and the mean per
 * core is printed as
 *   "FMA_LIMIT_BUSY cores=2 gflops=... bf16_gflops=... model=..."
 * Why: a core's clock can drop when its neighbours work too (turbo is set
 * by package power and current), and then N x the one-core figure would
 * overstate what N busy cores can do. run.sh prints it beside the one-core
 * limit, so a 2-worker shortfall can be told apart: on the Zen 5 machines
 * here both busy cores kept 98-100% of the one-core rate (4 runs), so what
 * 2 workers lose is shared cache and memory, not clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>
#include <sys/syscall.h>
#define HAVE_X86 1
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifdef HAVE_X86
/* 12 independent chains a_i = a_i * m + c (written out: an array would go
 * through memory), `iters` times; returns the lanes' sum so the compiler
 * keeps the work. 12 chains cover 2 FMA ports x 4-6 cycles of latency. */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define FMA_KERNEL(name, TGT, VEC, SET1, FMA, ADD, STORE, LANES)                 \
    static TGT float name(long iters) {                                           \
        CHAINS(DECL_##name)                                                       \
        const VEC m = SET1(0.999999f), c = SET1(1e-7f);                           \
        for (long i = 0; i < iters; i++) {                                        \
            CHAINS(STEP_##name)                                                   \
            __asm__ volatile("" ::: "memory");                                    \
        }                                                                         \
        VEC s = SET1(0.0f);                                                       \
        CHAINS(SUM_##name)                                                        \
        float out[LANES];                                                         \
        STORE(out, s);                                                            \
        float t = 0;                                                              \
        for (int k = 0; k < LANES; k++) t += out[k];                              \
        return t;                                                                 \
    }
#define DECL_fma512(i) __m512 a##i = _mm512_set1_ps(1.0f + 1e-3f * i);
#define STEP_fma512(i) a##i = _mm512_fmadd_ps(a##i, m, c);
#define SUM_fma512(i) s = _mm512_add_ps(s, a##i);
#define DECL_fma256(i) __m256 a##i = _mm256_set1_ps(1.0f + 1e-3f * i);
#define STEP_fma256(i) a##i = _mm256_fmadd_ps(a##i, m, c);
#define SUM_fma256(i) s = _mm256_add_ps(s, a##i);
#define DECL_fma128(i) __m128 a##i = _mm_set1_ps(1.0f + 1e-3f * i);
#define STEP_fma128(i) a##i = _mm_fmadd_ps(a##i, m, c);
#define SUM_fma128(i) s = _mm_add_ps(s, a##i);
FMA_KERNEL(fma512, __attribute__((target("avx512f"))), __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
           _mm512_storeu_ps, 16)
FMA_KERNEL(fma256, __attribute__((target("avx2,fma"))), __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
           _mm256_storeu_ps, 8)
FMA_KERNEL(fma128, __attribute__((target("fma"))), __m128, _mm_set1_ps, _mm_fmadd_ps, _mm_add_ps, _mm_storeu_ps, 4)

/* 16 chains of a_i += x . y (bf16 pairs; more than the fp32 loop's 12, in case
 * vdpbf16ps's latency is longer); x, y tiny so the sums stay normal */
#define CHAINS16(X) CHAINS(X) X(12) X(13) X(14) X(15)
#define BF16_TGT __attribute__((target("avx512f,avx512bf16")))
#define DECL_dp(i) __m512 a##i = _mm512_set1_ps(1.0f + 1e-3f * i);
#define STEP_dp(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
#define SUM_dp(i) s = _mm512_add_ps(s, a##i);
static BF16_TGT float dpbf16(long iters) {
    CHAINS16(DECL_dp)
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f)), y = x;
    for (long i = 0; i < iters; i++) {
        CHAINS16(STEP_dp)
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = _mm512_setzero_ps();
    CHAINS16(SUM_dp)
    float out[16];
    _mm512_storeu_ps(out, s);
    float t = 0;
    for (int k = 0; k < 16; k++) t += out[k];
    return t;
}

/* AMX: CPUID.(7,0).EDX bit 24 (AMX-TILE) and 22 (AMX-BF16), and the tile
 * data state granted by the kernel (Linux 5.16+) */
static int have_amx(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22))) return 0;
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
struct tile_config {
    uint8_t palette, start;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};
/* 4 accumulators (tmm0-3) fed by two A tiles and two B tiles (tmm4-7), as
 * amx_peak.c; operands tiny so the sums stay normal */
static __attribute__((target("amx-tile,amx-bf16"))) float tdpbf16(long iters) {
    struct tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) cfg.rows[i] = 16, cfg.colsb[i] = 64;
    _tile_loadconfig(&cfg);
    static uint16_t a[16 * 32] __attribute__((aligned(64)));
    static float o[16 * 16] __attribute__((aligned(64)));
    for (int i = 0; i < 16 * 32; i++) a[i] = 0x38d1; /* bf16 1e-4 */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, a, 64);
    _tile_loadd(7, a, 64);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 6, 5);
        _tile_dpbf16ps(3, 6, 7);
    }
    _tile_stored(0, o, 64);
    _tile_release();
    return o[0];
}
#endif

typedef float (*kernel_fn)(long iters);

/* Best GFLOP/s of 5 runs of ~0.1 s each. */
static double measure(kernel_fn f, int lanes, int chains) {
    long iters = 1 << 16;
    volatile float sink = 0;
    for (;;) { /* size a run to about 0.1 s */
        double t0 = now_s();
        sink += f(iters);
        if (now_s() - t0 > 0.05) break;
        iters *= 2;
    }
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        sink += f(iters);
        double g = 2.0 * lanes * chains * (double)iters / (now_s() - t0) * 1e-9;
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}

static void model_name(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            const char *v = strchr(line, ':');
            if (v) {
                v++;
                while (*v == ' ') v++;
                snprintf(out, cap, "%s", v);
                out[strcspn(out, "\n")] = 0;
            }
            break;
        }
    fclose(f);
}

/* The mean per core of f's rate with `cores` copies running at once (0 on
 * failure). Each child waits on `go` until all are forked, so the copies
 * overlap from the start; each sends its best rate through `out`. */
static double busy_mean(kernel_fn f, int lanes, int chains, int cores) {
    int go[2], out[2];
    if (pipe(go) || pipe(out)) return 0;
    int forked = 0;
    for (; forked < cores; forked++) {
        pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) < 0) _exit(1); /* returns 0 at EOF: the parent closed it */
            double g = measure(f, lanes, chains);
            _exit(write(out[1], &g, sizeof g) == (ssize_t)sizeof g ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]); /* start */
    close(out[1]);
    double sum = 0, g;
    int got = 0;
    while (read(out[0], &g, sizeof g) == (ssize_t)sizeof g) sum += g, got++;
    close(out[0]);
    while (wait(NULL) > 0) {
    }
    return got == cores && forked == cores ? sum / cores : 0;
}

int main(int argc, char **argv) {
    int cores = argc > 2 && !strcmp(argv[1], "--cores") ? atoi(argv[2]) : 1;
    kernel_fn best_f = NULL;
    int best_lanes = 0;
    char model[256];
    model_name(model, sizeof model);
    double best = 0;
    int best_width = 0;
#ifdef HAVE_X86
    __builtin_cpu_init();
    struct {
        const char *feature;
        kernel_fn f;
        int width, lanes, chains;
    } widths[] = {{"fma", fma128, 128, 4, 12}, {"avx2", fma256, 256, 8, 12}, {"avx512f", fma512, 512, 16, 12}};
    for (int i = 0; i < 3; i++) {
        int have = i == 0 ? __builtin_cpu_supports("fma") : i == 1 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                                                   : __builtin_cpu_supports("avx512f");
        if (!have) {
            printf("fma %3d-bit: not on this CPU\n", widths[i].width);
            continue;
        }
        double g = measure(widths[i].f, widths[i].lanes, widths[i].chains);
        printf("fma %3d-bit: %7.1f GFLOP/s (%d chains)\n", widths[i].width, g, widths[i].chains);
        if (g > best) best = g, best_width = widths[i].width, best_f = widths[i].f, best_lanes = widths[i].lanes;
    }
#endif
    printf("FMA_LIMIT gflops=%.1f width=%d model=%s\n", best, best_width, model);
    double bf16 = 0;
#ifdef HAVE_X86
    if (__builtin_cpu_supports("avx512bf16")) {
        bf16 = measure(dpbf16, 32, 16); /* 32 multiply-adds per instruction: "lanes" of one FMA each */
        printf("vdpbf16ps 512-bit: %7.1f GFLOP/s (16 chains) = %.2fx the fp32 FMA limit\n", bf16, best > 0 ? bf16 / best : 0);
    } else {
        printf("vdpbf16ps: not on this CPU (no AVX512-BF16)\n");
    }
#endif
    printf("BF16_LIMIT gflops=%.1f width=512 model=%s\n", bf16, model);
    double amx = 0;
#ifdef HAVE_X86
    if (have_amx()) {
        amx = measure(tdpbf16, 8192, 4); /* 4 instructions an iteration, 16,384 FLOPs each */
        printf("tdpbf16ps (AMX-BF16): %7.1f GFLOP/s = %.1fx the fp32 FMA limit\n", amx, best > 0 ? amx / best : 0);
    } else {
        printf("tdpbf16ps: not on this CPU (no AMX-BF16, or the kernel did not grant the tile state)\n");
    }
#endif
    printf("AMX_LIMIT gflops=%.1f model=%s\n", amx, model);
#ifdef HAVE_X86
    if (cores > 1 && best_f) {
        double busy = busy_mean(best_f, best_lanes, 12, cores), busy_bf16 = bf16 > 0 ? busy_mean(dpbf16, 32, 16, cores) : 0;
        printf("fma %3d-bit, %d cores busy at once: %7.1f GFLOP/s per core (%.0f%% of one core alone)\n", best_width, cores, busy,
               100 * busy / best);
        if (bf16 > 0)
            printf("vdpbf16ps, %d cores busy at once: %7.1f GFLOP/s per core (%.0f%% of one core alone)\n", cores, busy_bf16,
                   100 * busy_bf16 / bf16);
        printf("FMA_LIMIT_BUSY cores=%d gflops=%.1f bf16_gflops=%.1f model=%s\n", cores, busy, busy_bf16, model);
    }
#endif
    return best > 0 ? 0 : 1;
}
