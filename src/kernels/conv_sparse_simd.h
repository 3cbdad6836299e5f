/* conv_sparse_simd.h — the vector code of conv_sparse.c (the weight gradient
 * under a 2x2 max pool), written once over the vector width (vecw.h) and
 * included by conv_sparse.c only, once per width: 8 lanes (AVX2) and 16
 * (AVX-512).
 *
 * Is: the kernels that add one (image, channel)'s kept pixels into a slice of
 * the kernel rows' accumulators, their table, the channels-last copy of an
 * image, the listing of a band's kept pixels, and the pass over a part of the
 * batch. The includer defines SPARSE_CFGS, the (rows, vectors) kernels of
 * this width, and SPARSE_MAX_ACC, the accumulators they may keep: the
 * register blocking differs (16 ymm registers against 32 zmm). A kernel row
 * whose vectors do not fit in registers at once is done in slices of rows and
 * vectors (sparse_plan in conv_sparse.c), each slice a pass over the list;
 * every accumulator still sees its products in list order, so the bits do not
 * depend on the slicing or on the width.
 * Is not: the cost model, the sizes of scratch, the plan (conv_sparse.c).
 */

/* One (image, channel)'s sums over the m kept pixels e of one band of rows,
 * in list order, for a slice of KH kernel rows x VPR vectors:
 * a[i][v] += g[e] * xc[off[e] + i*xrow + v*VL ..]. The sums start from +0
 * (start) or from `part`, where the previous band left them; the last band
 * (finish) adds them into the image's lane of the accumulators,
 * acc_out[i*arow + v*VL ..], the others leave them in `part` (rows arow
 * apart too, aligned). */
static inline __attribute__((always_inline)) TGT void VFN(sparse_body)(const int KH, const int VPR, const float *xc,
                                                                      size_t xrow, const int32_t *off, const float *g,
                                                                      int m, float *part, int start, int finish,
                                                                      float *acc_out, size_t arow) {
    vec a[SPARSE_MAX_ACC];
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < VPR; v++) a[i * VPR + v] = start ? VZERO() : VLOADA(part + i * arow + v * VL);
    for (int e = 0; e < m; e++) {
        vec gv = VSET1(g[e]);
        const float *p = xc + off[e];
XT_UNROLL
        for (int i = 0; i < KH; i++, p += xrow) /* a pointer step per row: row offsets in registers spilled */
XT_UNROLL
            for (int v = 0; v < VPR; v++) a[i * VPR + v] = VFMA(gv, VLOAD(p + v * VL), a[i * VPR + v]);
    }
XT_UNROLL
    for (int i = 0; i < KH; i++)
XT_UNROLL
        for (int v = 0; v < VPR; v++) {
            if (!finish) {
                VSTOREA(part + i * arow + v * VL, a[i * VPR + v]);
                continue;
            }
            float *o = acc_out + i * arow + v * VL;
            VSTORE(o, VADD(VLOAD(o), a[i * VPR + v]));
        }
}

#define SPARSE_FN(kh, vpr)                                                                                             \
    static TGT void VFN(sparse_##kh##_##vpr)(const float *xc, size_t xrow, const int32_t *off, const float *g, int m,  \
                                             float *part, int start, int finish, float *acc_out, size_t arow) {        \
        VFN(sparse_body)(kh, vpr, xc, xrow, off, g, m, part, start, finish, acc_out, arow);                           \
    }
SPARSE_CFGS(SPARSE_FN)
#undef SPARSE_FN
#define SPARSE_ROW(kh, vpr) {kh, vpr, VFN(sparse_##kh##_##vpr)},
static const sparse_cfg VFN(cfgs)[] = {SPARSE_CFGS(SPARSE_ROW)};
#undef SPARSE_ROW

/* xc[(h + ph)*Wp + w + pw][ci] <- x[ci][h][w] of one image, through pro
 * (relu?(x * scale + shift), the product and the sum each rounded, as the
 * direct kernel's packing makes it); the padding border is left as it is
 * (zero). VL channels x VL pixels of a row at a time, transposed in
 * registers; a last partial channel block is stored masked, so no store runs
 * into the next pixel's channels. */
static TGT void VFN(to_channels_last)(const k_conv_shape *s, float *xc, const float *x, const k_conv_prologue *pro) {
    int Ci = s->Ci, H = s->H, W = s->W, Wp = W + 2 * s->pw;
    for (int h = 0; h < H; h++)
        for (int w0 = 0; w0 < W; w0 += VL) {
            int nw = W - w0 < VL ? W - w0 : VL;
            for (int c0 = 0; c0 < Ci; c0 += VL) {
                int nc = Ci - c0 < VL ? Ci - c0 : VL;
                vec r[VL];
                for (int c = 0; c < VL; c++) {
                    if (c >= nc) {
                        r[c] = VZERO();
                        continue;
                    }
                    const float *src = x + ((size_t)(c0 + c) * H + h) * W + w0;
                    r[c] = nw == VL ? VLOAD(src) : VLOADN(src, nw);
                    if (pro->scale) {
                        vec t = VMUL(r[c], VSET1(pro->scale[c0 + c]));
                        t = VADD(t, VSET1(pro->shift[c0 + c]));
                        r[c] = pro->relu ? VMAX0(t) : t; /* +0 for NaN and -0, as VRELU */
                    }
                }
                VTRANSPOSE(r);
                float *dst = xc + ((size_t)(h + s->ph) * Wp + w0 + s->pw) * Ci + c0;
                if (nc == VL)
                    for (int q = 0; q < nw; q++) VSTORE(dst + (size_t)q * Ci, r[q]);
                else
                    for (int q = 0; q < nw; q++) VSTOREN(dst + (size_t)q * Ci, nc, r[q]);
            }
        }
}

/* The kept pixels of pooled row ph of one (image, channel) plane appended
 * to the list's first m, in row-major order of the conv output: the windows
 * whose argmax (the window cell, 0-3 row-major) is in their top row, then
 * those in their bottom row. off: where the pixel's receptive field starts
 * in xc; an argmax past the window's 4 cells (never from k_maxpool2d_fwd)
 * keeps nothing, as the dense scatter writes nothing there.
 * VL windows at a time, compressed in registers: which row of a window the
 * pool took is a coin toss, and a branch per window mispredicted so often
 * that listing the pixels took twice as long as their multiply-adds.
 * Stores whole vectors: off and gv hold band_max(s) entries. `avail`: the
 * elements of g and am readable from the plane's start on. */
static TGT int VFN(kept_pixels)(const k_conv_shape *s, int ph, const float *g, const uint8_t *am, size_t avail,
                                int32_t *off, float *gv, int m) {
    int Wq = s->Wo / 2, Wp = s->W + 2 * s->pw;
    g += (size_t)ph * Wq, am += (size_t)ph * Wq;
    const veci two_pw = VI_ADD(VI_IOTA(), VI_IOTA());
    const veci sw = VI_SET1(s->sw), ci = VI_SET1(s->Ci);
    for (int r = 0; r < 2; r++) {
        int oh = 2 * ph + r;
        for (int pw0 = 0; pw0 < Wq; pw0 += VL) {
            int n = Wq - pw0 < VL ? Wq - pw0 : VL;
            unsigned in = n == VL ? VALL : (1u << n) - 1;
            veci col = VI_ADD(two_pw, VI_SET1(2 * pw0)); /* the window's first column */
            /* whole loads where the buffers run on (lanes past the row are
             * dropped by `in`): masked loads cost several times more on Zen 5,
             * and with rows of fewer than 16 windows every load was masked */
            int whole = (size_t)ph * Wq + pw0 + VL <= avail;
            veci a = whole ? VI_U8(am + pw0) : VI_U8N(am + pw0, n);
            veci d = VI_SUB(a, VI_SET1(2 * r)); /* 0 or 1 (the column): a cell of this row */
            unsigned keep = in & (VI_BITS_EQ(a, 2 * r) | VI_BITS_EQ(a, 2 * r + 1));
            veci o = VI_MUL(VI_ADD(col, d), sw);
            o = VI_MUL(VI_ADD(o, VI_SET1(oh * s->sh * Wp)), ci);
            vec gw = whole ? VLOAD(g + pw0) : VLOADN(g + pw0, n);
            VI_STORE(off + m, VICOMPRESS(keep, o));
            VSTORE(gv + m, VCOMPRESS(keep, gw));
            m += __builtin_popcount(keep);
        }
    }
    return m;
}

/* Image by image: copied channels-last, then band by band (pooled rows whose
 * input rows fit in L1; the whole image when it does), every output
 * channel's kept pixels of the band, slice by slice of the plan. The running
 * sums go to `part` between bands, which leaves their bits alone. Then, on
 * the last part, dw from the accumulators' lane sums. */
static TGT void VFN(bwd_weight)(const k_conv_shape *s, float *dw, const float *x, k_unpool2 up, float *scratch,
                                float *acc, int first, int last, k_conv_prologue pro) {
    sparse_plan pl;
    plan_for(VFN(cfgs), sizeof VFN(cfgs) / sizeof VFN(cfgs)[0], s->kh, row_vecs(s, VL), &pl);
    int vpr = row_vecs(s, VL), Lp = vpr * VL, Hq = s->Ho / 2, Wq = s->Wo / 2, bq = band_rows(s);
    size_t xrow = (size_t)(s->W + 2 * s->pw) * s->Ci, arow = (size_t)Lp, sums = (size_t)s->kh * Lp;
    size_t per_lane = (size_t)s->Co * sums; /* one lane's sums: [co][i][Lp] */
    float *part = scratch + ((16 - ((uintptr_t)scratch / sizeof(float)) % 16) % 16); /* 64-byte aligned */
    float *xc = part + part_floats(s);
    int32_t *off = (int32_t *)(xc + image_floats(s));
    float *gv = (float *)(off + band_max(s));
    if (!acc) acc = gv + band_max(s);
    if (first) memset(acc, 0, sizeof(float) * VL * per_lane);
    memset(xc, 0, sizeof(float) * image_floats(s)); /* the padding border and the slack */
    size_t img_x = (size_t)s->Ci * s->H * s->W, img_g = (size_t)s->Co * Hq * Wq;
    for (int n = 0; n < s->N; n++) {
        VFN(to_channels_last)(s, xc, x + n * img_x, &pro);
        float *lane = acc + (size_t)(n % VL) * per_lane;
        for (int ph0 = 0; ph0 < Hq; ph0 += bq) {
            int ph1 = ph0 + bq < Hq ? ph0 + bq : Hq;
            for (int co = 0; co < s->Co; co++) {
                size_t plane = n * img_g + (size_t)co * Hq * Wq;
                int m = 0;
                size_t avail = (size_t)s->N * img_g - plane; /* g and argmax elements from the plane on */
                for (int ph = ph0; ph < ph1; ph++)
                    m = VFN(kept_pixels)(s, ph, up.g + plane, up.argmax + plane, avail, off, gv, m);
                for (int i0 = 0; i0 < s->kh; i0 += pl.R)
                    for (int v0 = 0; v0 < vpr; v0 += pl.VB) {
                        size_t at = co * sums + (size_t)i0 * Lp + (size_t)v0 * VL;
                        pl.fn[i0 + pl.R > s->kh][v0 + pl.VB > vpr](xc + i0 * xrow + v0 * VL, xrow, off, gv, m,
                                                                    part + at, ph0 == 0, ph1 == Hq, lane + at, arow);
                    }
            }
        }
    }
    if (last) lane_sums_to_dw(s, dw, acc, Lp, VL);
}
