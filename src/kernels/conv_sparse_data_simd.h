/* conv_sparse_data_simd.h — the vector code of conv_sparse_data.c (backward-data
 * under a 2x2 max pool), written once over the vector width (vecw.h) and
 * included by conv_sparse_data.c only, once per width: 8 lanes (AVX2) and 16
 * (AVX-512).
 *
 * Is: the kernels that add one cell's (or two side by side cells') kept
 * channels into a slice of d's rows, their tables, the layout changes of g
 * and argmax (window-major) and of d (channels-last, out to dx), and the pass
 * over the images. The includer defines DATA_CFGS and PAIR_CFGS, the kernels
 * of this width, and DATA_MAX_ACC and PAIR_MAX_ACC, the accumulators they may
 * keep (16 ymm registers against 32 zmm). A cell whose kh rows of vectors do
 * not fit in registers at once is done in slices of rows (data_plan in
 * conv_sparse_data.c), each a pass over its channels; every value of d still
 * goes through its multiply-adds in the same order, so the bits depend on
 * neither the slicing nor the width.
 * Is not: the cost model, the sizes of scratch, the plans.
 */

/* The accumulators a[i*U + v] (KH rows of U vectors of d) loaded, stored. */
static inline __attribute__((always_inline)) TGT void VFN(acc_load)(const int KH, const int U, vec *a, const float *d,
                                                                   size_t drow) {
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < U; v++) a[i * U + v] = VLOADA(d + i * drow + v * VL);
}
static inline __attribute__((always_inline)) TGT void VFN(acc_store)(const int KH, const int U, const vec *a, float *d,
                                                                    size_t drow) {
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < U; v++) VSTOREA(d + i * drow + v * VL, a[i * U + v]);
}

/* One cell's channels, in order, added into the accumulators whose rows
 * start OFF vectors in: a[i*U + OFF + v] += g[co] * wp[co*wco + (i*VPR + v)*VL].
 * Loops nested by row and vector, each fully unrolled (XT_UNROLL's count
 * covers either, not 25 in one loop: a 5x5 kernel's accumulators would stay
 * in memory), and the list's loop not unrolled, which would need a second
 * broadcast register and spill accumulators. wp may be the caller's buffer
 * (k_conv_packed), so unaligned loads. */
static inline __attribute__((always_inline)) TGT void VFN(cell_fmas)(const int KH, const int VPR, const int U,
                                                                    const int OFF, vec *a, const uint16_t *keep, int nb,
                                                                    const float *g, const float *wp, size_t wco) {
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 1
        for (unsigned m = keep[b]; m; m &= m - 1) {
            int co = b * KEEP_BITS + __builtin_ctz(m);
            vec gv = VSET1(g[co]);
            const float *w = wp + (size_t)co * wco;
XT_UNROLL
            for (int i = 0; i < KH; i++)
XT_UNROLL
                for (int v = 0; v < VPR; v++)
                    a[i * U + OFF + v] = VFMA(gv, VLOAD(w + (i * VPR + v) * VL), a[i * U + OFF + v]);
        }
}

#define DATA_FITS(kh, vpr) _Static_assert((kh) * (vpr) <= DATA_MAX_ACC, "a cell's accumulators fit its array");
DATA_CFGS(DATA_FITS)
#undef DATA_FITS
#define DATA_FN(kh, vpr)                                                                                               \
    static TGT void VFN(data_##kh##_##vpr)(float *d, size_t drow, const uint16_t *keep, int nb, const float *g,        \
                                           const float *wp, size_t wco) {                                              \
        vec a[DATA_MAX_ACC];                                                                                           \
        VFN(acc_load)(kh, vpr, a, d, drow);                                                                            \
        VFN(cell_fmas)(kh, vpr, vpr, 0, a, keep, nb, g, wp, wco);                                                      \
        VFN(acc_store)(kh, vpr, a, d, drow);                                                                           \
    }
DATA_CFGS(DATA_FN)
#undef DATA_FN
#define DATA_ROW(kh, vpr) {kh, vpr, VFN(data_##kh##_##vpr)},
static const data_cfg VFN(data_cfgs)[] = {DATA_CFGS(DATA_ROW)};
#undef DATA_ROW

/* Two cells side by side (a window's top or bottom pair), SH vectors apart
 * in d (the stride times cb): their union of accumulators loaded once, the
 * first cell's channels added, then the second's, stored once. Each value
 * of d goes through the same multiply-adds in the same order as with one
 * cell at a time, which stored it between the two and loaded it again: the
 * same bits, 2*kh*VPR loads and stores traded for kh*(VPR + SH). */
#define PAIR_FITS(kh, vpr, sh)                                                                                         \
    _Static_assert((kh) * ((vpr) + (sh)) <= PAIR_MAX_ACC && (sh) <= (vpr), "a pair's accumulators fit its array, "    \
                                                                             "and the two cells' vectors touch");
PAIR_CFGS(PAIR_FITS)
#undef PAIR_FITS
#define PAIR_FN(kh, vpr, sh)                                                                                           \
    static TGT void VFN(pair_##kh##_##vpr##_##sh)(float *d, size_t drow, const uint16_t *keep0, const uint16_t *keep1, \
                                                  int nb, const float *g, const float *wp, size_t wco) {              \
        vec a[PAIR_MAX_ACC];                                                                                           \
        VFN(acc_load)(kh, vpr + sh, a, d, drow);                                                                       \
        VFN(cell_fmas)(kh, vpr, vpr + sh, 0, a, keep0, nb, g, wp, wco);                                                \
        VFN(cell_fmas)(kh, vpr, vpr + sh, sh, a, keep1, nb, g, wp, wco);                                               \
        VFN(acc_store)(kh, vpr + sh, a, d, drow);                                                                      \
    }
PAIR_CFGS(PAIR_FN)
#undef PAIR_FN
#define PAIR_ROW(kh, vpr, sh) {kh, vpr, sh, VFN(pair_##kh##_##vpr##_##sh)},
static const pair_cfg VFN(pair_cfgs)[] = {PAIR_CFGS(PAIR_ROW)};
#undef PAIR_ROW

/* One image's g and argmax, [co][window], to window-major [window][co_padded]
 * (the argmax as int32), VL x VL blocks transposed in registers. Lanes past
 * Co hold +0 and cell 0; the listing masks them off. */
static TGT void VFN(to_window_major)(const k_conv_shape *s, float *gT, int32_t *aT, const float *g, const uint8_t *am) {
    int Co = s->Co, CoP = co_padded(s), nw = (int)windows(s);
    for (int c0 = 0; c0 < CoP; c0 += VL)
        for (int w0 = 0; w0 < nw; w0 += VL) {
            int n = nw - w0 < VL ? nw - w0 : VL;
            vec rg[VL], ra[VL];
            for (int c = 0; c < VL; c++) {
                if (c0 + c >= Co) {
                    rg[c] = ra[c] = VZERO();
                    continue;
                }
                size_t at = (size_t)(c0 + c) * nw + w0;
                rg[c] = n == VL ? VLOAD(g + at) : VLOADN(g + at, n);
                ra[c] = VI_AS_F(n == VL ? VI_U8(am + at) : VI_U8N(am + at, n));
            }
            VTRANSPOSE(rg);
            VTRANSPOSE(ra);
            for (int k = 0; k < n; k++) {
                VSTORE(gT + (size_t)(w0 + k) * CoP + c0, rg[k]);
                VSTORE((float *)aT + (size_t)(w0 + k) * CoP + c0, ra[k]);
            }
        }
}

/* dx[ci][h][w] = d[h + ph][w + pw][ci] (masked by relu_mask > 0 when given),
 * VL pixels of the image's plane (row-major, across rows) x one block of VL
 * channels at a time, transposed in registers. A plane of VL pixels or more
 * ends on a group shifted back to its last VL (rewriting a few values with
 * their own), so every store and mask load is a whole vector: masked ones
 * cost several times more on Zen 5, and with rows of fewer than 16 pixels
 * (the seed CNN's 12) every one was masked. */
static TGT void VFN(from_channels_last)(const k_conv_shape *s, float *dx, const float *d, const float *mask) {
    int cb = div_up(s->Ci, VL), W = s->W, HW = s->H * s->W, Wp = W + 2 * s->pw;
    for (int p0 = 0; p0 < HW; p0 += VL) {
        int q0 = p0 + VL <= HW || HW < VL ? p0 : HW - VL, nq = HW - q0 < VL ? HW - q0 : VL;
        const float *src[VL];
        int h = q0 / W, w = q0 % W; /* one division per group, not one per pixel */
        for (int q = 0; q < VL; q++) {
            src[q] = d + ((size_t)(h + s->ph) * Wp + w + s->pw) * cb * VL;
            if (q + 1 < nq && ++w == W) w = 0, h++; /* past the plane: the last pixel again */
        }
        for (int b = 0; b < cb; b++) {
            vec r[VL];
            for (int q = 0; q < VL; q++) r[q] = VLOADA(src[q] + b * VL);
            VTRANSPOSE(r);
            int nc = s->Ci - b * VL < VL ? s->Ci - b * VL : VL;
            for (int c = 0; c < nc; c++) {
                size_t at = (size_t)(b * VL + c) * HW + q0;
                vec v = r[c];
                if (nq == VL) {
                    if (mask) v = VKEEP_GT0(VLOAD(mask + at), v);
                    VSTORE(dx + at, v);
                } else {
                    if (mask) v = VKEEP_GT0(VLOADN(mask + at, nq), v);
                    VSTOREN(dx + at, nq, v);
                }
            }
        }
        if (q0 != p0) break; /* the shifted group was the last */
    }
}

/* Image by image: d zeroed, g and argmax turned window-major, each window's
 * channels masked by the cell they kept and each cell's sum added into d
 * (slice by slice of rows), then d out to dx. */
static TGT void VFN(run_images)(const k_conv_shape *s, float *dx, k_unpool2 up, const float *w, const float *relu_mask,
                                float *scratch, k_conv_packed pk) {
    int cb = div_up(s->Ci, VL), vpr = s->kw * cb, CoP = co_padded(s), nb = CoP / KEEP_BITS, Wq = s->Wo / 2;
    int nw = (int)windows(s), Wp = s->W + 2 * s->pw;
    data_plan pl = {.R = 0}, pp = {.R = 0};
    if (!data_plan_for(VFN(data_cfgs), sizeof VFN(data_cfgs) / sizeof VFN(data_cfgs)[0], s->kh, vpr, VFN(DATA_SLICES),
                       &pl))
        return; /* never: k_conv_sparse_data_runs asked */
    int pairs = g_pairs && pair_plan_for(VFN(pair_cfgs), sizeof VFN(pair_cfgs) / sizeof VFN(pair_cfgs)[0], s->kh, vpr,
                                         s->sw * cb, VFN(DATA_SLICES), &pp);
    size_t drow = (size_t)Wp * cb * VL, wco = (size_t)s->kh * vpr * VL, wrow = (size_t)vpr * VL;
    float *base = scratch + ((16 - ((uintptr_t)scratch / sizeof(float)) % 16) % 16); /* 64-byte aligned */
    float *wp = pk.buf ? pk.buf : base;
    float *d = base + k_conv_sparse_data_packed_floats(s);
    float *gT = d + d_floats(s);
    int32_t *aT = (int32_t *)(gT + (size_t)nw * CoP);
    uint16_t *keep = (uint16_t *)(aT + (size_t)nw * CoP); /* [cell][nb] */
    if (!pk.buf || pk.fresh) pack_weights(s, wp, w, VL);
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_g = (size_t)s->Co * nw, dn = (size_t)(s->H + 2 * s->ph) * drow;
    for (int n = 0; n < s->N; n++) {
        memset(d, 0, sizeof(float) * dn);
        VFN(to_window_major)(s, gT, aT, up.g + n * img_g, up.argmax + n * img_g);
        for (int win = 0; win < nw; win++) {
            const float *gw = gT + (size_t)win * CoP;
            const float *aw = (const float *)aT + (size_t)win * CoP;
            unsigned any[4] = {0, 0, 0, 0};
            for (int b = 0; b < nb; b++) {
                unsigned nz = 0, eq[4] = {0, 0, 0, 0};
                for (int h = 0; h < KEEP_BITS; h += VL) { /* the 16 channels of a mask, a vector at a time */
                    veci av = VF_AS_I(VLOAD(aw + b * KEEP_BITS + h));
                    nz |= VBITS_NEQ0(VLOAD(gw + b * KEEP_BITS + h)) << h; /* a NaN g is kept, as the dense pass spreads it */
                    for (int cell = 0; cell < 4; cell++) eq[cell] |= VI_BITS_EQ(av, cell) << h;
                }
                int left = s->Co - b * KEEP_BITS;
                unsigned live = nz & (left >= KEEP_BITS ? 0xffffu : (1u << left) - 1);
                for (int cell = 0; cell < 4; cell++) {
                    keep[cell * nb + b] = (uint16_t)(eq[cell] & live);
                    any[cell] |= eq[cell] & live;
                }
            }
            int wy = win / Wq, wx = win % Wq;
            for (int cell = 0; cell < 4; cell++) {
                if (!any[cell]) continue;
                int oy = (2 * wy + (cell >> 1)) * s->sh, ox = (2 * wx + (cell & 1)) * s->sw;
                float *at = d + (size_t)oy * drow + (size_t)ox * cb * VL;
                if (pairs && !(cell & 1) && any[cell + 1]) { /* this cell and the one to its right */
                    for (int i0 = 0; i0 < s->kh; i0 += pp.R)
                        pp.pair[i0 + pp.R > s->kh](at + i0 * drow, drow, keep + cell * nb, keep + (cell + 1) * nb, nb,
                                                   gw, wp + i0 * wrow, wco);
                    cell++;
                    continue;
                }
                for (int i0 = 0; i0 < s->kh; i0 += pl.R)
                    pl.fn[i0 + pl.R > s->kh](at + i0 * drow, drow, keep + cell * nb, nb, gw, wp + i0 * wrow, wco);
            }
        }
        VFN(from_channels_last)(s, dx + n * img_x, d, relu_mask ? relu_mask + n * img_x : NULL);
    }
}
