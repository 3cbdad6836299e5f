/* functional.h — composite tensor functions built from engine ops, as
 * torch.nn.functional: they emit graph nodes, compute nothing. Built from
 * generic elementwise ops so fusion can merge them with their neighbours
 * (batch-norm apply + ReLU is one pass) and autodiff differentiates them
 * without special cases. */
#ifndef XT_NN_FUNCTIONAL_H
#define XT_NN_FUNCTIONAL_H

#include "engine/graph.h"

/* y = (x - mean) / sqrt(var + eps) * gamma + beta, per channel of (N,C,H,W),
 * with the batch statistics `stats` = xt_bn_stats(x) (2, C). Computed as
 * x * scale + shift with scale = gamma * rsqrt(var + eps), shift = beta -
 * mean * scale: per-channel work on C values, one pass over x. */
xt_t xt_f_batch_norm_train(xt_graph *g, xt_t x, xt_t stats, xt_t gamma, xt_t beta, float eps);
/* Eval mode: the same with running mean/var leaves (C) instead of batch stats. */
xt_t xt_f_batch_norm_eval(xt_graph *g, xt_t x, xt_t mean, xt_t var, xt_t gamma, xt_t beta, float eps);
/* y = x W^T + b for x (N, in), W (out, in), b (out) or XT_NONE. */
xt_t xt_f_linear(xt_graph *g, xt_t x, xt_t w, xt_t b);

#endif
