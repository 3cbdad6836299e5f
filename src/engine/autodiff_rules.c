/* autodiff_rules.c — one gradient rule per differentiable op (the ops marked
 * D in ops.def), and the table that dispatches to them, generated from
 * ops.def. A rule only emits ordinary forward ops: nothing is computed.
 * Not here: the walk that calls the rules and sums gradients (autodiff.c).
 *
 * Each rule reads the node `a->n` with operands `a->in[]` and incoming
 * gradient `a->gy`, and sets `a->gin[k]` for each operand k that requires a
 * gradient (`a->rg[a->in[k]]`). A rule may redirect a gradient to another
 * node through `a->tgt[k]` (max-pool's values view sends it to the pool's
 * input).
 */
#include <string.h>

#include "engine/internal.h"

#define A (a->in[0])
#define B (a->in[1])
#define NEEDS(k) (a->rg[a->in[k]])

/* Gradient of a broadcasting operand: sum back down to its shape. */
static xt_t unbroadcast(xt_graph *g, xt_t grad, xt_t operand) {
    const xt_node *o = &g->nodes[operand];
    int32_t shape[XT_MAX_RANK];
    memcpy(shape, o->shape, sizeof shape);
    return xt_sum_to(g, grad, o->rank, shape);
}

/* A node of op `op` shaped like node `like`, with `attrs`' attributes. */
static xt_t op_like(xt_graph *g, xt_op op, xt_t like, const xt_node *attrs, const xt_t *ins, int nin) {
    const xt_node *l = &g->nodes[like];
    xt_node n = xt_proto(op, l->dtype, l->rank, l->shape);
    memcpy(n.iattr, attrs->iattr, sizeof n.iattr);
    memcpy(n.fattr, attrs->fattr, sizeof n.fattr);
    return xt_graph_push(g, &n, ins, nin);
}

/* ---- elementwise ---- */

/* broadcast: y = expand(a) -> da = sum_to(dy, shape(a)) */
static int grad_BROADCAST(xt_grad_args *a) { a->gin[0] = unbroadcast(a->g, a->gy, A); return 0; }
/* neg: y = -a */
static int grad_NEG(xt_grad_args *a) { a->gin[0] = xt_neg(a->g, a->gy); return 0; }
/* relu: y = max(a, 0) -> da = dy where a > 0 */
static int grad_RELU(xt_grad_args *a) { a->gin[0] = xt_relu_bwd(a->g, a->gy, A); return 0; }
/* exp: y = e^a -> da = dy * y */
static int grad_EXP(xt_grad_args *a) { a->gin[0] = xt_mul(a->g, a->gy, a->i); return 0; }
/* log: y = ln a -> da = dy / a */
static int grad_LOG(xt_grad_args *a) { a->gin[0] = xt_div(a->g, a->gy, A); return 0; }
/* sqrt: y = a^1/2 -> da = dy / (2 y) */
static int grad_SQRT(xt_grad_args *a) {
    a->gin[0] = xt_div(a->g, xt_mul(a->g, a->gy, xt_const(a->g, 0.5f)), a->i);
    return 0;
}
/* rsqrt: y = a^-1/2 -> da = dy * (-1/2) y^3 */
static int grad_RSQRT(xt_grad_args *a) {
    xt_graph *g = a->g;
    a->gin[0] = xt_mul(g, a->gy, xt_mul(g, xt_mul(g, xt_square(g, a->i), a->i), xt_const(g, -0.5f)));
    return 0;
}
/* square: y = a^2 -> da = dy * 2a */
static int grad_SQUARE(xt_grad_args *a) {
    a->gin[0] = xt_mul(a->g, a->gy, xt_mul(a->g, A, xt_const(a->g, 2.0f)));
    return 0;
}
/* add: y = a + b */
static int grad_ADD(xt_grad_args *a) {
    if (NEEDS(0)) a->gin[0] = unbroadcast(a->g, a->gy, A);
    if (NEEDS(1)) a->gin[1] = unbroadcast(a->g, a->gy, B);
    return 0;
}
/* sub: y = a - b */
static int grad_SUB(xt_grad_args *a) {
    if (NEEDS(0)) a->gin[0] = unbroadcast(a->g, a->gy, A);
    if (NEEDS(1)) a->gin[1] = unbroadcast(a->g, xt_neg(a->g, a->gy), B);
    return 0;
}
/* mul: y = a * b */
static int grad_MUL(xt_grad_args *a) {
    if (NEEDS(0)) a->gin[0] = unbroadcast(a->g, xt_mul(a->g, a->gy, B), A);
    if (NEEDS(1)) a->gin[1] = unbroadcast(a->g, xt_mul(a->g, a->gy, A), B);
    return 0;
}
/* div: y = a / b -> da = dy / b, db = -dy y / b */
static int grad_DIV(xt_grad_args *a) {
    xt_graph *g = a->g;
    if (NEEDS(0)) a->gin[0] = unbroadcast(g, xt_div(g, a->gy, B), A);
    if (NEEDS(1)) a->gin[1] = unbroadcast(g, xt_neg(g, xt_div(g, xt_mul(g, a->gy, a->i), B)), B);
    return 0;
}

/* ---- views and reductions ---- */

/* view: a window of a's buffer. The values half of a max-pool's packed
 * output routes through the argmax indices to the pool's input; a view of
 * all of a is a reshape; a partial view scatters dy into zeros. */
static int grad_VIEW(xt_grad_args *a) {
    xt_graph *g = a->g;
    const xt_node *base = &g->nodes[A];
    if (base->op == XT_OP_MAXPOOL2D && a->n.iattr[0] == 0) {
        xt_t x = xt_ins(g, base)[0];
        xt_node attrs = *base;
        xt_t ins[2] = {a->gy, xt_maxpool_argmax(g, A, &a->n)};
        a->gin[0] = op_like(g, XT_OP_MAXPOOL2D_BWD, x, &attrs, ins, 2);
        a->tgt[0] = x; /* the gradient belongs to the pool's input, not the packed node */
        return 0;
    }
    if (a->n.iattr[0] == 0 && xt_numel(base) == xt_numel(&a->n)) {
        int32_t shape[XT_MAX_RANK];
        memcpy(shape, base->shape, sizeof shape);
        a->gin[0] = xt_reshape(g, a->gy, base->rank, shape);
        return 0;
    }
    if (base->dtype != XT_F32 || a->n.dtype != XT_F32) {
        xt_graph_fail(g, "backward: no gradient through an int32 view of %s", xt_op_table[base->op].name);
        return -1;
    }
    xt_node attrs = xt_proto(XT_OP_VIEW_GRAD, XT_F32, 0, NULL);
    attrs.iattr[0] = a->n.iattr[0];
    a->gin[0] = op_like(g, XT_OP_VIEW_GRAD, A, &attrs, &a->gy, 1);
    return 0;
}
/* sum_to: y = sum of a down to a broadcastable shape -> da = expand(dy) */
static int grad_SUM_TO(xt_grad_args *a) {
    const xt_node *x = &a->g->nodes[A];
    int32_t shape[XT_MAX_RANK];
    memcpy(shape, x->shape, sizeof shape);
    a->gin[0] = xt_broadcast_to(a->g, a->gy, x->rank, shape);
    return 0;
}

/* ---- structured ops ---- */

/* matmul: y = op(a) op(b) -> da = dy op(b)^T, db = op(a)^T dy (transposes folded) */
static int grad_MATMUL(xt_grad_args *a) {
    xt_graph *g = a->g;
    int tA = a->n.iattr[0], tB = a->n.iattr[1];
    if (NEEDS(0)) a->gin[0] = !tA ? xt_matmul(g, a->gy, B, 0, !tB) : xt_matmul(g, B, a->gy, tB, 1);
    if (NEEDS(1)) a->gin[1] = !tB ? xt_matmul(g, A, a->gy, !tA, 0) : xt_matmul(g, a->gy, A, 1, tA);
    return 0;
}
/* conv2d: y = x * w + b -> dx = conv_bwd_data(dy, w), dw = conv_bwd_weight(x, dy), db = sum(dy) per channel */
/* The bias's sum first: it then runs while dy is still in cache, not after
 * the two convolution passes have streamed their operands through it. */
static int grad_CONV2D(xt_grad_args *a) {
    xt_graph *g = a->g;
    if (a->n.nin > 2 && NEEDS(2)) {
        int co = a->n.shape[1];
        xt_t s = xt_sum_to(g, a->gy, 4, (int32_t[]){1, co, 1, 1});
        a->gin[2] = xt_reshape(g, s, 1, (int32_t[]){co});
    }
    if (NEEDS(0)) { xt_t ins[2] = {a->gy, B}; a->gin[0] = op_like(g, XT_OP_CONV2D_BWD_DATA, A, &a->n, ins, 2); }
    if (NEEDS(1)) { xt_t ins[2] = {A, a->gy}; a->gin[1] = op_like(g, XT_OP_CONV2D_BWD_WEIGHT, B, &a->n, ins, 2); }
    return 0;
}
/* avg_pool2d: dx spreads each dy evenly over its window */
static int grad_AVGPOOL2D(xt_grad_args *a) {
    a->gin[0] = op_like(a->g, XT_OP_AVGPOOL2D_BWD, A, &a->n, &a->gy, 1);
    return 0;
}
/* bn_stats: (mean, var) of x per channel -> dx from both rows of dy */
static int grad_BN_STATS(xt_grad_args *a) {
    xt_t ins[3] = {a->gy, A, a->i};
    a->gin[0] = op_like(a->g, XT_OP_BN_STATS_BWD, A, &a->n, ins, 3);
    return 0;
}
/* log_softmax: y = x - logsumexp(x) -> dx = dy - softmax(x) sum(dy) */
static int grad_LOG_SOFTMAX(xt_grad_args *a) {
    xt_t ins[2] = {a->gy, a->i};
    a->gin[0] = op_like(a->g, XT_OP_LOG_SOFTMAX_BWD, A, &a->n, ins, 2);
    return 0;
}
/* nll_loss: y = mean(-logp[i, t_i]) -> dlogp = -dy/N at each target */
static int grad_NLL_LOSS(xt_grad_args *a) {
    xt_t ins[2] = {a->gy, B};
    a->gin[0] = op_like(a->g, XT_OP_NLL_LOSS_BWD, A, &a->n, ins, 2);
    return 0;
}
/* dropout: y = x * mask / (1 - p) -> dx = dy * the same mask / (1 - p) */
static int grad_DROPOUT(xt_grad_args *a) {
    xt_t ins[2] = {a->gy, B};
    a->gin[0] = op_like(a->g, XT_OP_DROPOUT_BWD, A, &a->n, ins, 2);
    return 0;
}

#define XT_GRAD_RULE_D(name) grad_##name
#define XT_GRAD_RULE_N(name) NULL
const xt_grad_rule xt_grad_rules[XT_OP_COUNT] = {
#define XT_OP(name, arity, kind, grad, scratch, cls) [XT_OP_##name] = XT_GRAD_RULE_##grad(name),
#include "engine/ops.def"
};
