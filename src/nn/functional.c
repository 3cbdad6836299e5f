/* functional.c — composite tensor functions; see functional.h. */
#include "nn/functional.h"

static xt_t per_channel(xt_graph *g, xt_t v, int C) { return xt_reshape(g, v, 4, (int32_t[]){1, C, 1, 1}); }

static xt_t bn_apply(xt_graph *g, xt_t x, xt_t mean, xt_t var, xt_t gamma, xt_t beta, float eps) {
    const xt_node *xn = xt_node_of(g, x);
    if (!xn) return XT_NONE;
    int C = xn->shape[1];
    xt_t scale = xt_mul(g, gamma, xt_rsqrt(g, xt_add(g, var, xt_const(g, eps))));
    xt_t shift = xt_sub(g, beta, xt_mul(g, mean, scale));
    return xt_add(g, xt_mul(g, x, per_channel(g, scale, C)), per_channel(g, shift, C));
}

xt_t xt_f_batch_norm_train(xt_graph *g, xt_t x, xt_t stats, xt_t gamma, xt_t beta, float eps) {
    const xt_node *sn = xt_node_of(g, stats);
    if (!sn) return XT_NONE;
    int C = sn->shape[1];
    xt_t mean = xt_view(g, stats, 0, 1, (int32_t[]){C});
    xt_t var = xt_view(g, stats, C, 1, (int32_t[]){C});
    return bn_apply(g, x, mean, var, gamma, beta, eps);
}

xt_t xt_f_batch_norm_eval(xt_graph *g, xt_t x, xt_t mean, xt_t var, xt_t gamma, xt_t beta, float eps) {
    return bn_apply(g, x, mean, var, gamma, beta, eps);
}

xt_t xt_f_linear(xt_graph *g, xt_t x, xt_t w, xt_t b) {
    xt_t y = xt_matmul(g, x, w, 0, 1);
    return b == XT_NONE ? y : xt_add(g, y, b);
}
