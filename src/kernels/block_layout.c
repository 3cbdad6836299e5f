/* block_layout.c — NCHW <-> nChw8c / nChw16c fused with batch norm's apply or a
 * ReLU's backward mask (block_layout.h says what and why).
 *
 * The vector loops need a block of the level's lanes and whole groups of VL
 * pixels per plane (ResNet's 32x32, 16x16 and 8x8 planes); anything else runs
 * the scalar loops, which give the same bits (each value sees the same
 * operations, in the same rounding; -std=c11 does not contract a*b+c).
 */
#include "kernels/block_layout.h"

#include "kernels/simd.h"

static float prologue_of(const k_conv_prologue *pro, int c, float v) {
    if (!pro) return v;
    float t = v * pro->scale[c];
    t = t + pro->shift[c];
    return pro->relu ? (t > 0.0f ? t : 0.0f) : t;
}

static void block_prologue_scalar(int N, int C, int HW, int B, const k_conv_prologue *pro, const float *x,
                                  float *out) {
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            const float *xp = x + ((size_t)n * C + c) * HW;
            float *op = out + (((size_t)n * (C / B) + c / B) * HW) * B + c % B;
            for (int p = 0; p < HW; p++) op[(size_t)p * B] = prologue_of(pro, c, xp[p]);
        }
}

static void unblock_masked_scalar(int N, int C, int HW, int B, const float *in, const float *mask, float *out) {
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t plane = ((size_t)n * C + c) * HW;
            const float *ip = in + (((size_t)n * (C / B) + c / B) * HW) * B + c % B;
            for (int p = 0; p < HW; p++) {
                float v = ip[(size_t)p * B];
                out[plane + p] = !mask || mask[plane + p] > 0.0f ? v : 0.0f;
            }
        }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BLOCK_WIDE 1
#define VW 8
#include "kernels/vecw.h"
#include "kernels/block_layout_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#define VW 16
#include "kernels/vecw.h"
#include "kernels/block_layout_simd.h"
#include "kernels/vecw_end.h"
#undef VW
#endif

/* the level's lanes when the vector loops fit this block and plane, else 0 */
static int vector_lanes(int B, int HW) {
#ifdef BLOCK_WIDE
    int lvl = k_simd_level(), vl = lvl == K_SIMD_AVX512 ? 16 : lvl == K_SIMD_AVX2 ? 8 : 0;
    /* a block of 8 at AVX-512 runs at 8 lanes: AVX2 is there too */
    if (B == 8 && vl == 16) vl = 8;
    return vl == B && HW % B == 0 ? vl : 0;
#else
    (void)B, (void)HW;
    return 0;
#endif
}

void k_block_prologue(int N, int C, int HW, int B, const k_conv_prologue *pro, const float *x, float *out) {
    switch (vector_lanes(B, HW)) {
#ifdef BLOCK_WIDE
    case 8: block_prologue_avx2(N, C, HW, pro, x, out); return;
    case 16: block_prologue_avx512(N, C, HW, pro, x, out); return;
#endif
    default: block_prologue_scalar(N, C, HW, B, pro, x, out);
    }
}

void k_unblock_masked(int N, int C, int HW, int B, const float *in, const float *mask, float *out) {
    switch (vector_lanes(B, HW)) {
#ifdef BLOCK_WIDE
    case 8: unblock_masked_avx2(N, C, HW, in, mask, out); return;
    case 16: unblock_masked_avx512(N, C, HW, in, mask, out); return;
#endif
    default: unblock_masked_scalar(N, C, HW, B, in, mask, out);
    }
}
