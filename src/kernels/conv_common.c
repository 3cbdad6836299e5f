/* conv_common.c — what the convolution methods share: the bias gradient.
 *
 * Is: k_conv_bias_grad, below both conv_im2col.c (which calls it) and conv.c
 * (which calls the methods), so neither depends on the other.
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
