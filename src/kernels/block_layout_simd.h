/* block_layout_simd.h — block_layout.c's loops at one vector width (vecw.h),
 * for a block of VL channels: VL planes' pixels go through one VL x VL
 * transpose per VL pixels. Included twice by block_layout.c; not a header of
 * its own. */

/* [n][cb] of a block: rows are the block's VL planes (stride HW), columns VL pixels */
TGT static void VFN(block_prologue)(int N, int C, int HW, const k_conv_prologue *pro, const float *x, float *out) {
    int CB = C / VL;
    for (int n = 0; n < N; n++)
        for (int cb = 0; cb < CB; cb++) {
            const float *xp = x + ((size_t)n * C + (size_t)cb * VL) * HW;
            float *op = out + ((size_t)n * CB + cb) * (size_t)HW * VL;
            vec sc = pro ? VLOAD(pro->scale + cb * VL) : VZERO(), sh = pro ? VLOAD(pro->shift + cb * VL) : VZERO();
            for (int p = 0; p < HW; p += VL) {
                vec r[VL];
                for (int l = 0; l < VL; l++) r[l] = VLOAD(xp + (size_t)l * HW + p);
                VTRANSPOSE(r); /* r[j]: pixel p + j, the block's channels in lanes */
                for (int j = 0; j < VL; j++) {
                    if (!pro) {
                        VSTORE(op + (size_t)(p + j) * VL, r[j]);
                        continue;
                    }
                    vec t = VADD(VMUL(r[j], sc), sh); /* two roundings, as the prologue's */
                    VSTORE(op + (size_t)(p + j) * VL, pro->relu ? VMAX0(t) : t);
                }
            }
        }
}

TGT static void VFN(unblock_masked)(int N, int C, int HW, const float *in, const float *mask, float *out) {
    int CB = C / VL;
    for (int n = 0; n < N; n++)
        for (int cb = 0; cb < CB; cb++) {
            const float *ip = in + ((size_t)n * CB + cb) * (size_t)HW * VL;
            size_t plane = ((size_t)n * C + (size_t)cb * VL) * HW;
            for (int p = 0; p < HW; p += VL) {
                vec r[VL];
                for (int j = 0; j < VL; j++) r[j] = VLOAD(ip + (size_t)(p + j) * VL);
                VTRANSPOSE(r); /* r[l]: channel cb * VL + l, pixels p .. p + VL - 1 */
                for (int l = 0; l < VL; l++) {
                    size_t at = plane + (size_t)l * HW + p;
                    VSTORE(out + at, mask ? VKEEP_GT0(VLOAD(mask + at), r[l]) : r[l]);
                }
            }
        }
}
