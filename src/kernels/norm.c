/* norm.c — training-mode batch normalization over (N, H*W) per channel.
 *
 * Is: batch statistics (mean, biased variance), the affine normalization, and
 * the backward through batch statistics; *_ref twins in plain double loops.
 * Is not: the running-statistics update or eval mode (ordinary elementwise
 * nodes in the engine), or layer/group norm.
 *
 *   mean = sum x / n,  var = sum (x - mean)^2 / n   (n = N*HW; two passes, so no
 *                                                    catastrophic cancellation)
 *   y    = (x - mean) * invstd * gamma + beta,  invstd = 1/sqrt(var + eps)
 *   dx   = gamma*invstd/n * (n*dy - sum dy - xhat * sum(dy*xhat)),
 *   dgamma = sum dy*xhat,  dbeta = sum dy
 * gamma / beta may be NULL (affine=False: 1 and 0); dgamma / dbeta may be NULL.
 * The fast versions run the loops of norm_simd.h (4-float vectors everywhere,
 * 16-float on AVX-512), summing in float vector lanes folded into double, so
 * even N*HW = 10^5 terms keep float accuracy.
 */
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "kernels/vec4.h"

#include <math.h>

typedef struct {
    double (*sum)(const float *p, int N, size_t stride, size_t HW);
    double (*sqdev)(const float *p, int N, size_t stride, size_t HW, float m);
    void (*dsums)(const float *dy, const float *x, int N, size_t stride, size_t HW, float m, double *sdy,
                  double *sdyx);
    void (*affine)(float *y, const float *x, int N, size_t stride, size_t HW, float scale, float shift);
    void (*dx)(float *dx, const float *dy, const float *x, int N, size_t stride, size_t HW, float k1, float k2,
               float m, float k3);
} bn_isa;

#define FOLD_PLANES 8

#define SFX _gen
#define TGT
#define VW 4
#define vec v4f
#define VLOAD(p) v4_load(p)
#define VSTORE(p, v) v4_store(p, v)
#define VSPLAT(s) v4_splat(s)
#include "kernels/norm_simd.h"
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
#define SFX _avx512
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define VW 16
#define vec v16f
#define VLOAD(p) (*(const v16f_u *)(p))
#define VSTORE(p, v) (*(v16f_u *)(p) = (v))
#define VSPLAT(s) ((v16f){0} + (s))
#include "kernels/norm_simd.h"
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

void k_bn_stats(int N, int C, int HW, float *mean, float *var, const float *x) {
    const bn_isa *isa = bn_now();
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        const float *xc = x + (size_t)c * HW;
        float m = (float)(isa->sum(xc, N, (size_t)C * HW, (size_t)HW) / cnt);
        double q = isa->sqdev(xc, N, (size_t)C * HW, (size_t)HW, m);
        mean[c] = m;
        var[c] = (float)(q / cnt);
    }
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

/* y = x*scale + shift with scale = gamma*invstd, shift = beta - mean*scale. */
void k_bn_apply(int N, int C, int HW, float *y, const float *x, const float *mean, const float *var,
                const float *gamma, const float *beta, float eps) {
    const bn_isa *isa = bn_now();
    for (int c = 0; c < C; c++) {
        float invstd = (float)(1.0 / sqrt((double)var[c] + eps));
        float scale = (gamma ? gamma[c] : 1.0f) * invstd;
        float shift = (beta ? beta[c] : 0.0f) - mean[c] * scale;
        isa->affine(y + (size_t)c * HW, x + (size_t)c * HW, N, (size_t)C * HW, (size_t)HW, scale, shift);
    }
}

/* dx = k1*dy + k2*(x-mean) + k3 per channel: the formula above with xhat =
 * (x-mean)*invstd expanded. (x-mean) stays a difference: folding -k2*mean into
 * k3 would cancel catastrophically when |mean| >> std. */
void k_bn_bwd(int N, int C, int HW, float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
              const float *mean, const float *var, const float *gamma, float eps) {
    const bn_isa *isa = bn_now();
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt((double)var[c] + eps), sdy = 0.0, sdyx = 0.0;
        float m = mean[c];
        size_t o = (size_t)c * HW, stride = (size_t)C * HW;
        isa->dsums(dy + o, x + o, N, stride, (size_t)HW, m, &sdy, &sdyx);
        double sdyxhat = sdyx * invstd, g = gamma ? gamma[c] : 1.0;
        if (dgamma) dgamma[c] = (float)sdyxhat;
        if (dbeta) dbeta[c] = (float)sdy;
        /* dx = g*invstd*(dy - sdy/n - (x-m)*invstd*sdyxhat/n) */
        float k1 = (float)(g * invstd);
        float k2 = (float)(-g * invstd * invstd * sdyxhat / cnt);
        float k3 = (float)(-g * invstd * sdy / cnt);
        isa->dx(dx + o, dy + o, x + o, N, stride, (size_t)HW, k1, k2, m, k3);
    }
}

void k_bn_bwd_ref(int N, int C, int HW, float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                  const float *mean, const float *var, const float *gamma, float eps) {
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt((double)var[c] + eps), sdy = 0.0, sdyxhat = 0.0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) {
                size_t o = ((size_t)n * C + c) * HW + i;
                sdy += dy[o];
                sdyxhat += dy[o] * ((x[o] - (double)mean[c]) * invstd);
            }
        if (dgamma) dgamma[c] = (float)sdyxhat;
        if (dbeta) dbeta[c] = (float)sdy;
        double g = gamma ? gamma[c] : 1.0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < HW; i++) {
                size_t o = ((size_t)n * C + c) * HW + i;
                double xhat = (x[o] - (double)mean[c]) * invstd;
                dx[o] = (float)(g * invstd / cnt * (cnt * dy[o] - sdy - xhat * sdyxhat));
            }
    }
}
