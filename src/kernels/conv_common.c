/* conv_common.c — what the convolution methods share: the bias gradient
 * and the shape of the 2x2 pool the _pool2 and _unpool2 passes fuse.
 *
 * Is: k_conv_bias_grad and k_conv_pool2_shape, below both the methods
 * (conv_im2col.c, conv_rows.c, conv_bf16.c call them) and conv.c (which
 * calls the methods), so no method depends on the dispatcher.
 * Is not: a method or the dispatcher.
 */
#include "kernels/conv_common.h"
#include "kernels/vec4.h"

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

k_pool_shape k_conv_pool2_shape(const k_conv_shape *s, int n) {
    k_pool_shape p = {.N = n, .C = s->Co, .H = s->Ho, .W = s->Wo, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    k_pool_shape_infer(&p);
    return p;
}
