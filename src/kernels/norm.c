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
 * The fast versions sum each plane in float vector lanes (vec4.h) and fold the
 * planes together in double, so even N*HW = 10^5 terms keep float accuracy.
 */
#include "kernels/kernels.h"
#include "kernels/vec4.h"

#include <math.h>

/* Sums in four 4-lane accumulators: a vector add has 3-4 cycles of latency, so
 * fewer chains would wait on it (measured: 2 chains ran at half this speed). */
#define ACC4 v4f a0 = v4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0

/* sum of p[0..n) */
static double vsum(const float *p, size_t n) {
    ACC4;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 += v4_load(p + i);
        a1 += v4_load(p + i + 4);
        a2 += v4_load(p + i + 8);
        a3 += v4_load(p + i + 12);
    }
    for (; i + 4 <= n; i += 4) a0 += v4_load(p + i);
    double t = v4_hsum((a0 + a1) + (a2 + a3));
    for (; i < n; i++) t += p[i];
    return t;
}

/* sum of (p - m)^2 */
static double vsqdev(const float *p, size_t n, float m) {
    ACC4;
    v4f mv = v4_splat(m), d0, d1, d2, d3;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        d0 = v4_load(p + i) - mv, d1 = v4_load(p + i + 4) - mv;
        d2 = v4_load(p + i + 8) - mv, d3 = v4_load(p + i + 12) - mv;
        a0 += d0 * d0, a1 += d1 * d1, a2 += d2 * d2, a3 += d3 * d3;
    }
    for (; i + 4 <= n; i += 4) {
        d0 = v4_load(p + i) - mv;
        a0 += d0 * d0;
    }
    double t = v4_hsum((a0 + a1) + (a2 + a3));
    for (; i < n; i++) t += (double)(p[i] - m) * (p[i] - m);
    return t;
}

void k_bn_stats(int N, int C, int HW, float *mean, float *var, const float *x) {
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double s = 0.0;
        for (int n = 0; n < N; n++) s += vsum(x + ((size_t)n * C + c) * HW, (size_t)HW);
        float m = (float)(s / cnt);
        double q = 0.0;
        for (int n = 0; n < N; n++) q += vsqdev(x + ((size_t)n * C + c) * HW, (size_t)HW, m);
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
    for (int c = 0; c < C; c++) {
        float invstd = (float)(1.0 / sqrt((double)var[c] + eps));
        float scale = (gamma ? gamma[c] : 1.0f) * invstd;
        float shift = (beta ? beta[c] : 0.0f) - mean[c] * scale;
        v4f sv = v4_splat(scale), tv = v4_splat(shift);
        for (int n = 0; n < N; n++) {
            const float *xp = x + ((size_t)n * C + c) * HW;
            float *yp = y + ((size_t)n * C + c) * HW;
            int i = 0;
            for (; i + 4 <= HW; i += 4) v4_store(yp + i, v4_load(xp + i) * sv + tv);
            for (; i < HW; i++) yp[i] = xp[i] * scale + shift;
        }
    }
}

/* adds sum dy and sum dy*(x - m) to *sdy, *sdyx (two chains each) */
static void vdsums(const float *dy, const float *x, size_t n, float m, double *sdy, double *sdyx) {
    ACC4;
    v4f mv = v4_splat(m);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4f g0 = v4_load(dy + i), g1 = v4_load(dy + i + 4);
        a0 += g0, a1 += g1;
        a2 += g0 * (v4_load(x + i) - mv);
        a3 += g1 * (v4_load(x + i + 4) - mv);
    }
    for (; i + 4 <= n; i += 4) {
        v4f g = v4_load(dy + i);
        a0 += g;
        a2 += g * (v4_load(x + i) - mv);
    }
    double ta = v4_hsum(a0 + a1), tb = v4_hsum(a2 + a3);
    for (; i < n; i++) {
        ta += dy[i];
        tb += (double)dy[i] * (x[i] - m);
    }
    *sdy += ta;
    *sdyx += tb;
}

/* y = k1*dy + k2*(x - m) + k3 over n floats */
static void vbn_dx(float *y, const float *dy, const float *x, size_t n, float k1, float k2, float m, float k3) {
    v4f v1 = v4_splat(k1), v2 = v4_splat(k2), vm = v4_splat(m), v3 = v4_splat(k3);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) v4_store(y + i, v1 * v4_load(dy + i) + v2 * (v4_load(x + i) - vm) + v3);
    for (; i < n; i++) y[i] = k1 * dy[i] + k2 * (x[i] - m) + k3;
}

/* dx = k1*dy + k2*(x-mean) + k3 per channel: the formula above with xhat =
 * (x-mean)*invstd expanded. (x-mean) stays a difference: folding -k2*mean into
 * k3 would cancel catastrophically when |mean| >> std. */
void k_bn_bwd(int N, int C, int HW, float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
              const float *mean, const float *var, const float *gamma, float eps) {
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt((double)var[c] + eps), sdy = 0.0, sdyx = 0.0;
        float m = mean[c];
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            vdsums(dy + o, x + o, (size_t)HW, m, &sdy, &sdyx);
        }
        double sdyxhat = sdyx * invstd, g = gamma ? gamma[c] : 1.0;
        if (dgamma) dgamma[c] = (float)sdyxhat;
        if (dbeta) dbeta[c] = (float)sdy;
        /* dx = g*invstd*(dy - sdy/n - (x-m)*invstd*sdyxhat/n) */
        float k1 = (float)(g * invstd);
        float k2 = (float)(-g * invstd * invstd * sdyxhat / cnt);
        float k3 = (float)(-g * invstd * sdy / cnt);
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c) * HW;
            vbn_dx(dx + o, dy + o, x + o, (size_t)HW, k1, k2, m, k3);
        }
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
