/* norm.c — the batch statistics of training-mode batch normalization over
 * (N, H*W) per channel, and their *_ref twin in plain double loops.
 *
 *   mean = sum x / n,  var = sum (x - mean)^2 / n   (n = N*HW; two passes over
 *                                                    each chunk of samples, so no
 *                                                    catastrophic cancellation)
 *
 * And their gradient (k_bn_stats_bwd: dx from d(mean), d(var)), in NCHW or,
 * where the engine's layout pass asks, in the channel-blocked layout of the
 * oneDNN convolutions that read it (k_bn_stats_bwd_fused_blocked).
 * Is not: the normalization itself, its backward, the running-statistics
 * update or eval mode: the engine builds those from ordinary elementwise
 * nodes around BN_STATS (nn/functional.c), which fuse with their neighbours.
 * The fast version run the loops of norm_simd.h (4-float vectors everywhere,
 * 16-float on AVX-512), summing in float vector lanes folded into double, so
 * even N*HW = 10^5 terms keep float accuracy.
 */
#include "kernels/block_layout.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "kernels/vec4.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double (*sum)(const float *p, int N, size_t stride, size_t HW);
    double (*sqdev)(const float *p, int N, size_t stride, size_t HW, float m);
    void (*stats_bwd_fused)(float *dx, const float *x, const float *u, const float *uf, int u_first, const float *m,
                            size_t HW, float a, float b, float mu);
} bn_isa;

#define FOLD_PLANES 8

#define SFX _gen
#define TGT
#define VW 4
#define vec v4f
#define VLOAD(p) v4_load(p)
#define VSTORE(p, v) v4_store(p, v)
#define VSPLAT(s) v4_splat(s)
#define VKEEP(mask, v) v4_select(mask, v, v4_splat(0.0f)) /* mask lanes all-ones: v, else +0 */
#include "kernels/norm_simd.h"
#undef VKEEP
#undef SFX
#undef TGT
#undef VW
#undef vec
#undef VLOAD
#undef VSTORE
#undef VSPLAT

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define XT_NORM_AVX512 1
typedef float v16f __attribute__((vector_size(64)));
typedef float v16f_u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v16i __attribute__((vector_size(64)));
#define SFX _avx512
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define VW 16
#define vec v16f
#define VLOAD(p) (*(const v16f_u *)(p))
#define VSTORE(p, v) (*(v16f_u *)(p) = (v))
#define VSPLAT(s) ((v16f){0} + (s))
#define VKEEP(mask, v) ((v16f)((v16i)(v) & (mask)))
#include "kernels/norm_simd.h"
#undef VKEEP
#undef SFX
#undef TGT
#undef VW
#undef vec
#undef VLOAD
#undef VSTORE
#undef VSPLAT
#endif

static const bn_isa *bn_now(void) {
#ifdef XT_NORM_AVX512
    if (k_simd_level() == K_SIMD_AVX512) return &bn_isa_avx512;
#endif
    return &bn_isa_gen;
}

/* The statistics a chunk at a time (K_BN_CHUNK samples, the last one
 * shorter), merged in double in sample order (Chan, Golub and LeVeque's
 * pairwise update: n, mean and the sum of squared deviations about it):
 * a chunk's two passes read values the cache still holds, so a batch of any
 * size is read from memory once, and in a tiled plan (tiles are whole
 * chunks, pass_tile.c) while the convolution's output is still in cache.
 * The chunks fall on the same samples tiled or not: the same bits. Each
 * chunk subtracts its own mean, so no cancellation. acc: per channel
 * (n, mean, M2), k_bn_stats_acc_doubles(C). */
size_t k_bn_stats_acc_doubles(int C) { return (size_t)3 * C; }

void k_bn_stats_begin(int C, double *acc) { memset(acc, 0, k_bn_stats_acc_doubles(C) * sizeof *acc); }

void k_bn_stats_add(int N, int C, int HW, double *acc, const float *x) {
    const bn_isa *isa = bn_now();
    for (int n0 = 0; n0 < N; n0 += K_BN_CHUNK) {
        int nc = N - n0 < K_BN_CHUNK ? N - n0 : K_BN_CHUNK;
        double cb = (double)nc * HW;
        for (int c = 0; c < C; c++) {
            const float *xc = x + ((size_t)n0 * C + c) * HW;
            double mb = isa->sum(xc, nc, (size_t)C * HW, (size_t)HW) / cb;
            float mf = (float)mb;
            /* deviations about the float nearest the chunk's mean, moved to
             * the mean itself: sum (x - mb)^2 = sum (x - mf)^2 - cb (mb - mf)^2 */
            double q = isa->sqdev(xc, nc, (size_t)C * HW, (size_t)HW, mf) - cb * (mb - mf) * (mb - mf);
            double *a = acc + 3 * (size_t)c, na = a[0], n = na + cb, d = mb - a[1];
            a[0] = n;
            a[1] += d * (cb / n);
            a[2] += (q > 0 ? q : 0) + d * d * (na * cb / n);
        }
    }
}

void k_bn_stats_end(int C, const double *acc, float *mean, float *var) {
    for (int c = 0; c < C; c++) {
        const double *a = acc + 3 * (size_t)c;
        mean[c] = (float)a[1];
        var[c] = a[0] > 0 ? (float)(a[2] / a[0]) : 0.0f;
    }
}

void k_bn_stats(int N, int C, int HW, float *mean, float *var, const float *x) {
    double one[3 * 64], *acc = C <= 64 ? one : malloc(k_bn_stats_acc_doubles(C) * sizeof *acc);
    if (!acc) { /* out of memory: NaN statistics fail the step, as a NaN loss does */
        for (int c = 0; c < C; c++) mean[c] = var[c] = NAN;
        return;
    }
    k_bn_stats_begin(C, acc);
    k_bn_stats_add(N, C, HW, acc, x);
    k_bn_stats_end(C, acc, mean, var);
    if (acc != one) free(acc);
}

/* How far ahead k_bn_stats_bwd_fused asks for its inputs, in floats: two
 * planes, and at least 4 KB.
 * Why at all: the statistics' gradient reads x (saved in the forward) and
 * u, m (written by the layer above) plane by plane, long after they were
 * written. At batch 1024 they come from DRAM, and the hardware prefetchers,
 * seeing runs of a few lines in three or four streams, fetch them late.
 * With the requests, the seed CNN's bn1 and bn2 gradients at batch 1024 run
 * much faster, and a little faster at batch 128 (in cache) and on ResNet-20
 * (train_bench --kernels, interleaved runs). A distance of one
 * plane, two, 1024 or 4096 floats measured alike; prefetches that fetch
 * nothing useful (1e8 floats ahead) gave the times without. */
#define BN_BWD_AHEAD_MIN 1024

/* Asks for (does not wait for) the 16-float lines that start in p[from, to),
 * clipped to p[0, end): consecutive calls over consecutive ranges ask for
 * each line once, whatever the plane size (a 1x1 plane: one line in 16). */
static void prefetch_range(const float *p, size_t from, size_t to, size_t end) {
    if (to > end) to = end;
    for (size_t q = (from + 15) & ~(size_t)15; q < to; q += 16) __builtin_prefetch(p + q);
}

/* One plane (sample i, channel c) of the statistics' gradient into out,
 * asking for the plane `ahead` floats on. */
static void bwd_plane(const bn_isa *isa, int i, int c, int C, int HW, float inv_m, size_t ahead, size_t end, float *out,
                      const float *ds, const float *x, const float *st, const float *u, const float *uf, int u_first,
                      const float *m) {
    size_t o = ((size_t)i * C + c) * HW;
    size_t from = o + ahead, to = from + HW; /* the plane `ahead` floats on */
    prefetch_range(x, from, to, end);
    if (u) prefetch_range(u, from, to, end);
    if (m) prefetch_range(m, from, to, end);
    isa->stats_bwd_fused(out, x + o, u ? u + o : NULL, uf ? uf + c : NULL, u_first, m ? m + o : NULL, (size_t)HW,
                         ds[c] * inv_m, 2.0f * ds[C + c] * inv_m, st[c]);
}

static size_t bwd_ahead(int HW) {
    size_t ahead = 2 * (size_t)HW;
    return ahead < BN_BWD_AHEAD_MIN ? BN_BWD_AHEAD_MIN : ahead;
}

void k_bn_stats_bwd_fused(int N, int C, int HW, int64_t count, float *dx, const float *ds, const float *x,
                          const float *st, const float *u, const float *uf, int u_first, const float *m) {
    const bn_isa *isa = bn_now();
    float inv_m = 1.0f / (float)count;
    size_t end = (size_t)N * C * HW, ahead = bwd_ahead(HW);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            bwd_plane(isa, i, c, C, HW, inv_m, ahead, end, dx + ((size_t)i * C + c) * HW, ds, x, st, u, uf, u_first, m);
}

/* The same values, dx written in nChw{B}c: a block's B planes made into
 * `planes` (B * HW floats, k_bn_stats_bwd_blocked_floats), then blocked in
 * one transposing pass. The block's planes are all read before its part of dx
 * is written, and that part is where the same planes lie in NCHW, so dx may
 * be u (written in place) as in the plain form. */
size_t k_bn_stats_bwd_blocked_floats(int HW, int B) { return (size_t)HW * B; }

void k_bn_stats_bwd_fused_blocked(int N, int C, int HW, int B, int64_t count, float *dx, const float *ds,
                                  const float *x, const float *st, const float *u, const float *uf, int u_first,
                                  const float *m, float *planes) {
    const bn_isa *isa = bn_now();
    float inv_m = 1.0f / (float)count;
    size_t end = (size_t)N * C * HW, ahead = bwd_ahead(HW);
    for (int i = 0; i < N; i++)
        for (int c0 = 0; c0 < C; c0 += B) {
            for (int l = 0; l < B; l++)
                bwd_plane(isa, i, c0 + l, C, HW, inv_m, ahead, end, planes + (size_t)l * HW, ds, x, st, u, uf, u_first,
                          m);
            k_block_prologue(1, B, HW, B, NULL, planes, dx + ((size_t)i * C + c0) * HW);
        }
}

void k_bn_stats_bwd(int N, int C, int HW, int64_t count, float *dx, const float *ds, const float *x, const float *st) {
    k_bn_stats_bwd_fused(N, C, HW, count, dx, ds, x, st, NULL, NULL, 0, NULL);
}

void k_bn_stats_ref(int N, int C, int HW, float *mean, float *var, const float *x) {
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double s = 0.0, q = 0.0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) s += x[((size_t)n * C + c) * HW + i];
        double m = s / cnt;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) {
                double d = x[((size_t)n * C + c) * HW + i] - m;
                q += d * d;
            }
        mean[c] = (float)m;
        var[c] = (float)(q / cnt);
    }
}
