/* norm_simd.h — the loops of batch norm, written once and compiled per SIMD
 * flavour (included by norm.c only).
 *
 * Is: per-channel passes over the N planes p + n*stride of HW floats each: the
 * two sums the batch statistics need.
 * Reductions keep four vector accumulators (an add has 3-4 cycles of latency;
 * fewer chains wait on it) and fold them into double every FOLD_PLANES planes,
 * so float partials stay short (at most FOLD_PLANES*HW/(4*VW) terms per lane)
 * without paying a fold per plane, which cost more than the sums at HW = 16-144.
 * Is not: the formulas' bookkeeping (norm.c).
 *
 * The includer defines SFX (name suffix), TGT (target attribute), VW (lanes),
 * vec (a GCC vector of VW floats), VLOAD(p), VSTORE(p, v) (unaligned) and VSPLAT(s).
 */

#define BCAT_(a, b) a##b
#define BCAT(a, b) BCAT_(a, b)
#define BFN(name) BCAT(name, SFX)

static inline __attribute__((always_inline)) TGT double BFN(lanes)(vec v) {
    double t = 0.0;
    for (int l = 0; l < VW; l++) t += v[l];
    return t;
}

/* sum of x */
static TGT double BFN(sum_planes)(const float *p, int N, size_t stride, size_t HW) {
    vec a0 = VSPLAT(0.0f), a1 = a0, a2 = a0, a3 = a0;
    double t = 0.0;
    for (int n = 0; n < N; n++) {
        const float *q = p + n * stride;
        size_t i = 0;
        for (; i + 4 * VW <= HW; i += 4 * VW) {
            a0 += VLOAD(q + i);
            a1 += VLOAD(q + i + VW);
            a2 += VLOAD(q + i + 2 * VW);
            a3 += VLOAD(q + i + 3 * VW);
        }
        for (; i + VW <= HW; i += VW) a0 += VLOAD(q + i);
        for (; i < HW; i++) t += q[i];
        if (n % FOLD_PLANES == FOLD_PLANES - 1 || n == N - 1) {
            t += BFN(lanes)((a0 + a1) + (a2 + a3));
            a0 = a1 = a2 = a3 = VSPLAT(0.0f);
        }
    }
    return t;
}

/* sum of (x - m)^2 */
static TGT double BFN(sqdev_planes)(const float *p, int N, size_t stride, size_t HW, float m) {
    vec a0 = VSPLAT(0.0f), a1 = a0, a2 = a0, a3 = a0, mv = VSPLAT(m);
    double t = 0.0;
    for (int n = 0; n < N; n++) {
        const float *q = p + n * stride;
        size_t i = 0;
        for (; i + 4 * VW <= HW; i += 4 * VW) {
            vec d0 = VLOAD(q + i) - mv, d1 = VLOAD(q + i + VW) - mv;
            vec d2 = VLOAD(q + i + 2 * VW) - mv, d3 = VLOAD(q + i + 3 * VW) - mv;
            a0 += d0 * d0, a1 += d1 * d1, a2 += d2 * d2, a3 += d3 * d3;
        }
        for (; i + VW <= HW; i += VW) {
            vec d0 = VLOAD(q + i) - mv;
            a0 += d0 * d0;
        }
        for (; i < HW; i++) t += (double)(q[i] - m) * (q[i] - m);
        if (n % FOLD_PLANES == FOLD_PLANES - 1 || n == N - 1) {
            t += BFN(lanes)((a0 + a1) + (a2 + a3));
            a0 = a1 = a2 = a3 = VSPLAT(0.0f);
        }
    }
    return t;
}

/* dx = a + b * (x - mu) over one plane: the gradient through (mean,
 * variance); one multiply and two adds per element, never contracted (ISO C:
 * -ffp-contract=off), so every width gives the same bits. Then + u (u_first:
 * u + dx, else dx + u) where u is given, and m > 0 ? . : +0 where m is given
 * (k_bn_stats_bwd_fused): one pass over the plane for what were three. u is
 * first multiplied by *uf where uf is given (the addend was u * uf[c]), as
 * its own rounded product. u, uf and m are the same for the whole plane: the
 * branches on them always go one way. */
static TGT void BFN(stats_bwd_fused_plane)(float *dx, const float *x, const float *u, const float *uf, int u_first,
                                           const float *m, size_t HW, float a, float b, float mu) {
    vec av = VSPLAT(a), bv = VSPLAT(b), mv = VSPLAT(mu), zero = VSPLAT(0.0f), fv = VSPLAT(uf ? *uf : 1.0f);
    size_t i = 0;
    for (; i + VW <= HW; i += VW) {
        vec v = av + bv * (VLOAD(x + i) - mv);
        if (u) {
            vec w = VLOAD(u + i);
            if (uf) w = w * fv;
            v = u_first ? w + v : v + w;
        }
        if (m) {
            vec k = VLOAD(m + i);
            v = VKEEP(k > zero, v);
        }
        VSTORE(dx + i, v);
    }
    for (; i < HW; i++) {
        float v = a + b * (x[i] - mu);
        if (u) {
            float w = uf ? u[i] * *uf : u[i];
            v = u_first ? w + v : v + w;
        }
        if (m) v = m[i] > 0.0f ? v : 0.0f;
        dx[i] = v;
    }
}

static const bn_isa BFN(bn_isa) = {BFN(sum_planes), BFN(sqdev_planes), BFN(stats_bwd_fused_plane)};

#undef BFN
#undef BCAT
#undef BCAT_
