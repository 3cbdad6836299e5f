/* conv_ref.c — the obvious convolution loops: the algorithmic reference.
 *
 * Is: shape inference and the naive forward, backward-data and backward-weight
 * of torch.nn.Conv2d (cross-correlation, zero padding, stride, groups=1), each
 * written straight from its defining sum with double accumulation, so the
 * tests can hold the fast methods (conv_im2col.c, conv_direct.c) against it.
 * Is not: fast, or used by the engine. Its own correctness is pinned by
 * hand-computed cases and a finite-difference gradient check in the tests.
 */
#include "kernels/kernels.h"

int k_conv_shape_infer(k_conv_shape *s) {
    if (s->N <= 0 || s->Ci <= 0 || s->H <= 0 || s->W <= 0 || s->Co <= 0 || s->kh <= 0 || s->kw <= 0 ||
        s->sh <= 0 || s->sw <= 0 || s->ph < 0 || s->pw < 0)
        return -1;
    int eh = s->H + 2 * s->ph - s->kh, ew = s->W + 2 * s->pw - s->kw;
    if (eh < 0 || ew < 0) return -1;
    s->Ho = eh / s->sh + 1;
    s->Wo = ew / s->sw + 1;
    return 0;
}

/* y[n,co,oh,ow] = b[co] + sum_{ci,i,j} w[co,ci,i,j] * x[n,ci,oh*sh+i-ph,ow*sw+j-pw] (0 outside). */
void k_conv2d_fwd_ref(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b) {
    for (int n = 0; n < s->N; n++)
        for (int co = 0; co < s->Co; co++)
            for (int oh = 0; oh < s->Ho; oh++)
                for (int ow = 0; ow < s->Wo; ow++) {
                    double acc = b ? b[co] : 0.0;
                    for (int ci = 0; ci < s->Ci; ci++)
                        for (int i = 0; i < s->kh; i++) {
                            int h = oh * s->sh + i - s->ph;
                            if (h < 0 || h >= s->H) continue;
                            for (int j = 0; j < s->kw; j++) {
                                int ww = ow * s->sw + j - s->pw;
                                if (ww < 0 || ww >= s->W) continue;
                                acc += (double)w[((size_t)(co * s->Ci + ci) * s->kh + i) * s->kw + j] *
                                       x[((size_t)(n * s->Ci + ci) * s->H + h) * s->W + ww];
                            }
                        }
                    y[((size_t)(n * s->Co + co) * s->Ho + oh) * s->Wo + ow] = (float)acc;
                }
}

/* dx[n,ci,h,w] = sum over the (co,i,j) whose tap lands on (h,w): oh = (h+ph-i)/sh must be
 * a whole number inside [0,Ho), likewise ow. Gather form, so each dx is written once. */
void k_conv2d_bwd_data_ref(const k_conv_shape *s, float *dx, const float *dy, const float *w) {
    for (int n = 0; n < s->N; n++)
        for (int ci = 0; ci < s->Ci; ci++)
            for (int h = 0; h < s->H; h++)
                for (int ww = 0; ww < s->W; ww++) {
                    double acc = 0.0;
                    for (int co = 0; co < s->Co; co++)
                        for (int i = 0; i < s->kh; i++) {
                            int th = h + s->ph - i;
                            if (th < 0 || th % s->sh) continue;
                            int oh = th / s->sh;
                            if (oh >= s->Ho) continue;
                            for (int j = 0; j < s->kw; j++) {
                                int tw = ww + s->pw - j;
                                if (tw < 0 || tw % s->sw) continue;
                                int ow = tw / s->sw;
                                if (ow >= s->Wo) continue;
                                acc += (double)w[((size_t)(co * s->Ci + ci) * s->kh + i) * s->kw + j] *
                                       dy[((size_t)(n * s->Co + co) * s->Ho + oh) * s->Wo + ow];
                            }
                        }
                    dx[((size_t)(n * s->Ci + ci) * s->H + h) * s->W + ww] = (float)acc;
                }
}

/* dw[co,ci,i,j] = sum_{n,oh,ow} dy[n,co,oh,ow] * x[n,ci,oh*sh+i-ph,ow*sw+j-pw]; db[co] = sum dy. */
void k_conv2d_bwd_weight_ref(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy) {
    for (int co = 0; co < s->Co; co++) {
        for (int ci = 0; ci < s->Ci; ci++)
            for (int i = 0; i < s->kh; i++)
                for (int j = 0; j < s->kw; j++) {
                    double acc = 0.0;
                    for (int n = 0; n < s->N; n++)
                        for (int oh = 0; oh < s->Ho; oh++) {
                            int h = oh * s->sh + i - s->ph;
                            if (h < 0 || h >= s->H) continue;
                            for (int ow = 0; ow < s->Wo; ow++) {
                                int ww = ow * s->sw + j - s->pw;
                                if (ww < 0 || ww >= s->W) continue;
                                acc += (double)dy[((size_t)(n * s->Co + co) * s->Ho + oh) * s->Wo + ow] *
                                       x[((size_t)(n * s->Ci + ci) * s->H + h) * s->W + ww];
                            }
                        }
                    dw[((size_t)(co * s->Ci + ci) * s->kh + i) * s->kw + j] = (float)acc;
                }
        if (db) {
            double acc = 0.0;
            for (int n = 0; n < s->N; n++)
                for (int p = 0; p < s->Ho * s->Wo; p++) acc += dy[((size_t)(n * s->Co + co)) * s->Ho * s->Wo + p];
            db[co] = (float)acc;
        }
    }
}
