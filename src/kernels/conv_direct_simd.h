/* conv_direct_simd.h — the inner loops of the batch-blocked direct convolution,
 * written once and compiled once per SIMD flavour (included by conv_direct.c only).
 *
 * Is: three register-tiled micro-kernels over blocked tensors t[c][h][w][NB]
 * (NB = VL images side by side, so one vector holds one pixel of NB images):
 *   fwd tile: y[co0+c][oh][ow0+t] = sum_k wpk[k][c] * xb[off[k] + t*xstep]   (CT channels x PT pixels)
 *   bww tile: acc[c][u] += sum_{pixels} dyb[c][pixel] * xb[off[u] + pixel]    (CT channels x TT taps;
 *             dy rows drow floats apart: its own layout or backward-data's padded one)
 *   bwd tile: dx[ci0+c][h][w] = sum over the taps that land on (h,w)           (CT channels x 1 pixel)
 * the transposes between plain planes and the blocked layout, a 2x2 max pool's
 * epilogue and its backward's scatter in that layout, and the tables of
 * (tile size, function) conv_direct.c chooses from. Tile sizes are compile-time
 * constants (always_inline + constant arguments, loops unrolled by pragma), so
 * the accumulators live in registers; each flavour's lists respect its register
 * count (32 vector registers for AVX-512, 16 for AVX2 and SSE).
 * Is not: geometry, weight packing or scratch layout (conv_direct.c).
 *
 * The includer defines SFX (name suffix), TGT (target attribute), VL (lanes),
 * vec (vector type), VZERO(), VLOAD(p), VSTORE(p,v), VSET1(s), VFMA(a,b,c) = a*b+c, VRELU(v) (lanes > 0 kept,
 * the rest, NaN and -0 included, +0: the engine's RELU),
 * VKEEP(m, v) (v where m > 0, else +0: NaN in m gives +0), VHSUM(v), NTRANSPOSE(r) (transpose VL vectors in place) and X-lists NFWD_CFGS,
 * NBWW_CFGS, NBWD_CFGS of the tile sizes to instantiate; for the max pool's epilogue and unpooling, a lane mask
 * type vmask, VGT(a, b) (a > b, false for NaN), VNAN(a), VMOR(m, n), VSEL(m, a, b) (b where m, else a) and
 * VEQCELL(a, q) (the lanes whose int32 bits are q). It undefines them all at its end, but the tile lists.
 */

#include "kernels/unroll.h" /* XT_UNROLL */

#define NCAT_(a, b) a##b
#define NCAT(a, b) NCAT_(a, b)
#define NFN(name) NCAT(name, SFX)

static inline __attribute__((always_inline)) TGT void NFN(nfwd_body)(const int CT, const int PT, const float *xb,
                                                                    const int32_t *off, int K, const float *wpk,
                                                                    size_t xstep, float *y, size_t ystride) {
    vec acc[8][8];
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int t = 0; t < PT; t++) acc[c][t] = VZERO();
    for (int k = 0; k < K; k++, wpk += CT) {
        const float *xs = xb + off[k];
        vec xv[8];
XT_UNROLL
        for (int t = 0; t < PT; t++) xv[t] = VLOAD(xs + t * xstep);
XT_UNROLL
        for (int c = 0; c < CT; c++) {
            vec wv = VSET1(wpk[c]);
XT_UNROLL
            for (int t = 0; t < PT; t++) acc[c][t] = VFMA(wv, xv[t], acc[c][t]);
        }
    }
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int t = 0; t < PT; t++) VSTORE(y + c * ystride + t * VL, acc[c][t]);
}

/* Sums over the Ho x Wo output pixels of one block and adds the CT x TT vector
 * accumulators into acc_out (lane sums are taken once, after the last block),
 * or with init (the first block) stores them there: acc_out needs no zeroing
 * (320 KB for the seed CNN's conv2, paid per call). The same bits at the end:
 * 0 + a and a differ only for a = -0, and a zero's sign cannot reach the
 * weight (a later nonzero addend absorbs it; the lane sum starts from +0.0). */
static inline __attribute__((always_inline)) TGT void NFN(nbww_body)(const int CT, const int TT, const float *dyb,
                                                                    size_t dstride, size_t drow, const float *xb,
                                                                    const int32_t *off, int Ho, int Wo, size_t xrow,
                                                                    size_t xcol, float *acc_out, int init) {
    vec acc[8][8];
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int u = 0; u < TT; u++) acc[c][u] = VZERO();
    for (int oh = 0; oh < Ho; oh++) {
        const float *xr = xb + oh * xrow, *dr = dyb + (size_t)oh * drow;
        for (int ow = 0; ow < Wo; ow++, xr += xcol, dr += VL) {
            vec xv[8];
XT_UNROLL
            for (int u = 0; u < TT; u++) xv[u] = VLOAD(xr + off[u]);
XT_UNROLL
            for (int c = 0; c < CT; c++) {
                vec dv = VLOAD(dr + c * dstride);
XT_UNROLL
                for (int u = 0; u < TT; u++) acc[c][u] = VFMA(dv, xv[u], acc[c][u]);
            }
        }
    }
XT_UNROLL
    for (int c = 0; c < CT; c++)
XT_UNROLL
        for (int u = 0; u < TT; u++) {
            float *o = acc_out + (size_t)(c * TT + u) * VL;
            if (init)
                VSTORE(o, acc[c][u]);
            else
                VSTORE(o, VLOAD(o) + acc[c][u]);
        }
}

/* One dx pixel for CT input channels: taps (i, oh) in rows[0..nr) x (j, ow) in
 * cols[0..nc) (only those that land on this pixel), all Co output channels.
 * wpk is [i][j][co][CT]; dyb pixel (oh, ow) of channel co is at co*dstride + (oh*Wo+ow)*VL. */
static inline __attribute__((always_inline)) TGT void NFN(nbwd_body)(const int CT, const float *dyb, size_t dstride,
                                                                    int Co, int Wo, const int32_t *rows, int nr,
                                                                    const int32_t *cols, int nc, const float *wpk,
                                                                    int kw, float *dx, size_t xstride) {
    vec acc[24];
XT_UNROLL
    for (int c = 0; c < CT; c++) acc[c] = VZERO();
    for (int r = 0; r < nr; r++)
        for (int q = 0; q < nc; q++) {
            int i = rows[2 * r], oh = rows[2 * r + 1], j = cols[2 * q], ow = cols[2 * q + 1];
            const float *d = dyb + (size_t)(oh * Wo + ow) * VL;
            const float *wk = wpk + (size_t)(i * kw + j) * Co * CT;
            for (int co = 0; co < Co; co++, d += dstride, wk += CT) {
                vec dv = VLOAD(d);
XT_UNROLL
                for (int c = 0; c < CT; c++) acc[c] = VFMA(VSET1(wk[c]), dv, acc[c]);
            }
        }
XT_UNROLL
    for (int c = 0; c < CT; c++) VSTORE(dx + c * xstride, acc[c]);
}

/* Blocked plane dst[(h+ph)*Wd + w+pw][VL] <- VL plain H x W planes src[l]:
 * whole VL x VL tiles through registers (NTRANSPOSE), the last partial tile
 * by element, each of the VL streams asking for the line PACK_AHEAD bytes
 * ahead of the one it loads. The lanes l < nb go through batch norm's apply
 * (and a ReLU) on the way: relu?(x * scale + shift), the product and the sum
 * each rounded (two statements, so no compiler contracts them into an FMA)
 * as the elementwise ops it stands for; the idle lanes keep the zeros they
 * read.
 * nb 0: a plain copy (a constant once inlined: the plain pack tests nothing). */
static inline TGT float NFN(affine1)(float v, float scale, float shift, int relu) {
    float t = v * scale;
    t = t + shift;
    return relu ? (t > 0.0f ? t : 0.0f) : t;
}
static inline __attribute__((always_inline)) TGT void NFN(pack_body)(float *dst, const float *const *src, int H, int W,
                                                                    int Wd, int ph, int pw, int nb, float scale,
                                                                    float shift, int relu) {
    int P = H * W, p = 0, h = 0, w = 0;
    vec sv = VSET1(scale), hv = VSET1(shift);
    for (; p + VL <= P; p += VL) {
        vec r[VL];
        if (VL >= 16 || p % 16 == 0) { /* once per cache line of each stream (prefetch_ahead, conv_direct.c) */
XT_UNROLL
            for (int l = 0; l < VL; l++) prefetch_ahead(src[l] + p);
        }
XT_UNROLL
        for (int l = 0; l < VL; l++) {
            r[l] = VLOAD(src[l] + p);
            if (l < nb) {
                vec t = r[l] * sv;
                t = t + hv;
                r[l] = relu ? VRELU(t) : t;
            }
        }
        NTRANSPOSE(r);
XT_UNROLL
        for (int q = 0; q < VL; q++) {
            VSTORE(dst + ((size_t)(h + ph) * Wd + w + pw) * VL, r[q]);
            if (++w == W) w = 0, h++;
        }
    }
    for (; p < P; p++) {
        for (int l = 0; l < VL; l++)
            dst[((size_t)(h + ph) * Wd + w + pw) * VL + l] = l < nb ? NFN(affine1)(src[l][p], scale, shift, relu) : src[l][p];
        if (++w == W) w = 0, h++;
    }
}
static TGT void NFN(pack_plane)(float *dst, const float *const *src, int H, int W, int Wd, int ph, int pw) {
    NFN(pack_body)(dst, src, H, W, Wd, ph, pw, 0, 1.0f, 0.0f, 0);
}
static TGT void NFN(pack_plane_affine)(float *dst, const float *const *src, int H, int W, int Wd, int ph, int pw,
                                       int nb, float scale, float shift, int relu) {
    NFN(pack_body)(dst, src, H, W, Wd, ph, pw, nb, scale, shift, relu);
}

/* VL plain H x W planes dst[l] (+ bias, then max(., 0) when relu) <- blocked
 * plane src[h*Wd + w][VL]. The ReLU is applied in registers as the planes are
 * stored: a second pass over the stored planes cost wide_cnn's conv1 (32
 * planes of 26 x 26 per image) a quarter of its time, more where the stores
 * first read the lines for ownership. VRELU is x > 0 ? x : +0, the engine's
 * RELU (NaN and -0 give +0), so the bits are those of the separate pass.
 * mask (VL planes laid out as dst, or NULL): each value is kept where its
 * mask value is > 0 and +0 elsewhere (VKEEP: the engine's RELU_BWD(v, mask),
 * NaN giving +0), in registers too; with a mask there is no bias or relu. */
static inline __attribute__((always_inline)) TGT void NFN(unpack_body)(float *const *dst, const float *src, int H,
                                                                      int W, int Wd, float bias, const int relu,
                                                                      const float *const *mask) {
    int P = H * W, p = 0, h = 0, w = 0;
    vec bv = VSET1(bias);
    for (; p + VL <= P; p += VL) {
        vec r[VL];
XT_UNROLL
        for (int q = 0; q < VL; q++) {
            r[q] = VLOAD(src + ((size_t)h * Wd + w) * VL);
            if (++w == W) w = 0, h++;
        }
        NTRANSPOSE(r);
XT_UNROLL
        for (int l = 0; l < VL; l++) {
            if (mask) {
                VSTORE(dst[l] + p, VKEEP(VLOAD(mask[l] + p), r[l]));
                continue;
            }
            vec t = r[l] + bv;
            VSTORE(dst[l] + p, relu ? VRELU(t) : t);
        }
    }
    for (; p < P; p++) {
        for (int l = 0; l < VL; l++) {
            float v = src[((size_t)h * Wd + w) * VL + l];
            if (mask) {
                dst[l][p] = mask[l][p] > 0.0f ? v : 0.0f;
                continue;
            }
            v += bias;
            dst[l][p] = relu ? (v > 0.0f ? v : 0.0f) : v;
        }
        if (++w == W) w = 0, h++;
    }
}
static TGT void NFN(unpack_plane)(float *const *dst, const float *src, int H, int W, int Wd, float bias) {
    NFN(unpack_body)(dst, src, H, W, Wd, bias, 0, NULL);
}
static TGT void NFN(unpack_plane_relu)(float *const *dst, const float *src, int H, int W, int Wd, float bias) {
    NFN(unpack_body)(dst, src, H, W, Wd, bias, 1, NULL);
}
static TGT void NFN(unpack_plane_mask)(float *const *dst, const float *src, int H, int W, int Wd,
                                       const float *const *mask) {
    NFN(unpack_body)(dst, src, H, W, Wd, -0.0f, 0, mask);
}

/* The 2x2, stride-2 max pool of one block's conv output yb (Co planes of
 * Ho x wo_pad pixels, blocked) into pv and its argmax into pa (blocked, the
 * window's cell 0-3 row-major as int32 bits): per lane, the window's values
 * (+ bias, then the ReLU when relu) compared in the order (0,0) (0,1) (1,0)
 * (1,1), a candidate taken when strictly greater or NaN, as k_maxpool2d_fwd
 * does. relu is a constant once inlined: after max(c, +0) (the engine's RELU:
 * NaN and -0 give +0) no candidate is NaN, so one compare decides a cell,
 * which made the seed CNN's conv1 forward with its pool faster (make bench's
 * kernel table, train_bench --kernels). A scalar loop here cost the AVX2
 * forward of that layer four times its convolution (perf on kernel_bench
 * "seed conv1" under XLATRAIN_ISA=avx2). */
static inline TGT vec NFN(cell_bits)(int q) {
    float f;
    memcpy(&f, &q, sizeof f);
    return VSET1(f);
}
static inline __attribute__((always_inline)) TGT void NFN(pool2_body)(const k_conv_shape *s, const float *yb,
                                                                     int wo_pad, const float *b, const int relu,
                                                                     float *pv, int32_t *pa) {
    int Hp = s->Ho / 2, Wp = s->Wo / 2; /* floor mode: a last odd row or column is in no window */
    vec zero = VZERO();
    for (int co = 0; co < s->Co; co++) {
        vec bv = VSET1(b ? b[co] : -0.0f);
        for (int ph = 0; ph < Hp; ph++) {
            const float *r0 = yb + ((size_t)co * s->Ho + 2 * ph) * wo_pad * VL, *r1 = r0 + (size_t)wo_pad * VL;
            size_t o = ((size_t)co * Hp + ph) * Wp * VL;
            for (int pw = 0; pw < Wp; pw++, r0 += 2 * VL, r1 += 2 * VL, o += VL) {
                const float *cell[4] = {r0, r0 + VL, r1, r1 + VL};
                vec v = zero, a = zero; /* cell 0: int32 0 is +0.0f's bits */
XT_UNROLL
                for (int q = 0; q < 4; q++) {
                    vec c = VLOAD(cell[q]) + bv;
                    if (relu) c = VRELU(c);
                    if (q == 0) {
                        v = c;
                        continue;
                    }
                    vmask t = relu ? VGT(c, v) : VMOR(VGT(c, v), VNAN(c));
                    v = VSEL(t, v, c);
                    a = VSEL(t, a, NFN(cell_bits)(q));
                }
                VSTORE(pv + o, v);
                VSTORE((float *)pa + o, a);
            }
        }
    }
}
static TGT void NFN(pool2_blocked)(const k_conv_shape *s, const float *yb, int wo_pad, const float *b, int relu,
                                   float *pv, int32_t *pa) {
    if (relu) NFN(pool2_body)(s, yb, wo_pad, b, 1, pv, pa);
    else NFN(pool2_body)(s, yb, wo_pad, b, 0, pv, pa);
}

/* One channel's blocked dy t[(h*Wd + P + w)*VL] for h < H/2*2, w < W/2*2 <-
 * the pooled gradient gb and argmax ib (each window's kept cell, 0-3),
 * blocked [(r*Wq + q)*VL]: g in the kept cell, +0 in the window's others, as
 * k_maxpool2d_bwd scatters it; every cell of a window written once. A last
 * odd row or column is the caller's (zero_unreached). */
static TGT void NFN(unpool_scatter)(float *t, int Wd, int P, const float *gb, const int32_t *ib, int H, int W) {
    int Hq = H / 2, Wq = W / 2;
    vec zero = VZERO();
    for (int r = 0; r < Hq; r++) {
        float *o0 = t + ((size_t)(2 * r) * Wd + P) * VL, *o1 = o0 + (size_t)Wd * VL;
        for (int q = 0; q < Wq; q++, o0 += 2 * VL, o1 += 2 * VL) {
            vec v = VLOAD(gb + ((size_t)r * Wq + q) * VL), a = VLOAD((const float *)ib + ((size_t)r * Wq + q) * VL);
            VSTORE(o0, VSEL(VEQCELL(a, 0), zero, v));
            VSTORE(o0 + VL, VSEL(VEQCELL(a, 1), zero, v));
            VSTORE(o1, VSEL(VEQCELL(a, 2), zero, v));
            VSTORE(o1 + VL, VSEL(VEQCELL(a, 3), zero, v));
        }
    }
}

/* sum of p[0..n), four vector accumulators (an add's latency is 3-4 cycles) */
static TGT double NFN(sum_floats)(const float *p, size_t n) {
    vec a = VZERO(), b = VZERO(), c = VZERO(), d = VZERO();
    size_t i = 0;
    for (; i + 4 * VL <= n; i += 4 * VL) {
        a = a + VLOAD(p + i);
        b = b + VLOAD(p + i + VL);
        c = c + VLOAD(p + i + 2 * VL);
        d = d + VLOAD(p + i + 3 * VL);
    }
    double t = (double)VHSUM((a + b) + (c + d));
    for (; i < n; i++) t += p[i];
    return t;
}

#define NFWD_INST(ct, pt)                                                                                     \
    static TGT void NFN(NCAT(NCAT(nfwd_, ct), NCAT(_, pt)))(const float *xb, const int32_t *off, int K,       \
                                                            const float *wpk, size_t xstep, float *y,         \
                                                            size_t ystride) {                                 \
        NFN(nfwd_body)(ct, pt, xb, off, K, wpk, xstep, y, ystride);                                           \
    }
#define NBWW_INST(ct, tt)                                                                                      \
    static TGT void NFN(NCAT(NCAT(nbww_, ct), NCAT(_, tt)))(const float *dyb, size_t dstride, size_t drow,      \
                                                            const float *xb, const int32_t *off, int Ho,       \
                                                            int Wo, size_t xrow, size_t xcol, float *acc_out,  \
                                                            int init) {                                        \
        NFN(nbww_body)(ct, tt, dyb, dstride, drow, xb, off, Ho, Wo, xrow, xcol, acc_out, init);                \
    }
#define NBWD_INST(ct)                                                                                          \
    static TGT void NFN(NCAT(nbwd_, ct))(const float *dyb, size_t dstride, int Co, int Wo, const int32_t *rows, \
                                         int nr, const int32_t *cols, int nc, const float *wpk, int kw,         \
                                         float *dx, size_t xstride) {                                           \
        NFN(nbwd_body)(ct, dyb, dstride, Co, Wo, rows, nr, cols, nc, wpk, kw, dx, xstride);                     \
    }
NFWD_CFGS(NFWD_INST)
NBWW_CFGS(NBWW_INST)
NBWD_CFGS(NBWD_INST)
#undef NFWD_INST
#undef NBWW_INST
#undef NBWD_INST

#define NFWD_ROW(ct, pt) {ct, pt, NFN(NCAT(NCAT(nfwd_, ct), NCAT(_, pt)))},
#define NBWW_ROW(ct, tt) {ct, tt, NFN(NCAT(NCAT(nbww_, ct), NCAT(_, tt)))},
#define NBWD_ROW(ct) {ct, NFN(NCAT(nbwd_, ct))},
static const nfwd_cfg NFN(nfwd_cfgs)[] = {NFWD_CFGS(NFWD_ROW)};
static const nbww_cfg NFN(nbww_cfgs)[] = {NBWW_CFGS(NBWW_ROW)};
static const nbwd_cfg NFN(nbwd_cfgs)[] = {NBWD_CFGS(NBWD_ROW)};
static const nisa NFN(nisa) = {VL,
                               NFN(pack_plane),
                               NFN(pack_plane_affine),
                               NFN(unpack_plane),
                               NFN(unpack_plane_relu),
                               NFN(unpack_plane_mask),
                               NFN(sum_floats),
                               NFN(pool2_blocked),
                               NFN(unpool_scatter),
                               NFN(nfwd_cfgs),
                               (int)(sizeof NFN(nfwd_cfgs) / sizeof NFN(nfwd_cfgs)[0]),
                               NFN(nbww_cfgs),
                               (int)(sizeof NFN(nbww_cfgs) / sizeof NFN(nbww_cfgs)[0]),
                               NFN(nbwd_cfgs),
                               (int)(sizeof NFN(nbwd_cfgs) / sizeof NFN(nbwd_cfgs)[0])};
#undef NFWD_ROW
#undef NBWW_ROW
#undef NBWD_ROW
#undef NFN
#undef NCAT
#undef NCAT_
/* the includer's flavour, so the next one can define its own (the tile lists stay: a flavour may share them) */
#undef NTRANSPOSE
#undef SFX
#undef TGT
#undef VL
#undef vec
#undef VZERO
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VFMA
#undef VHSUM
#undef VRELU
#undef VKEEP
#undef vmask
#undef VGT
#undef VNAN
#undef VMOR
#undef VSEL
#undef VEQCELL
