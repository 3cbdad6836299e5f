/* autodiff.c — reverse-mode differentiation on the IR, before fusion.
 *
 * One walk over the nodes from the loss down (call order is topological, so
 * no recursion is needed): each differentiable node with an incoming
 * gradient emits ordinary forward ops for its operands' gradients, and
 * gradients reaching the same node accumulate through add nodes. Nothing is
 * computed: the result is more graph (as ggml's build_backward, kann's
 * kad_grad). A forward "requires grad" pass first limits the work to the
 * paths between the wrt nodes and the loss (e.g. no gradient for the input
 * batch, so conv1 never runs its data-gradient kernel).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* Gradient of a broadcasting binary op's operand: sum back to its shape. */
static xt_t unbroadcast(xt_graph *g, xt_t grad, xt_t operand) {
    const xt_node *o = &g->nodes[operand];
    int32_t shape[XT_MAX_RANK];
    memcpy(shape, o->shape, sizeof shape);
    return xt_sum_to(g, grad, o->rank, shape);
}

static xt_t op_like(xt_graph *g, xt_op op, xt_t like, const xt_node *attrs, const xt_t *ins, int nin) {
    const xt_node *l = &g->nodes[like];
    xt_node n = xt_proto(op, l->dtype, l->rank, l->shape);
    memcpy(n.iattr, attrs->iattr, sizeof n.iattr);
    memcpy(n.fattr, attrs->fattr, sizeof n.fattr);
    return xt_graph_push(g, &n, ins, nin);
}

/* Emit the operands' gradients of node `i` given its gradient `gy`:
 * gin[k] receives a gradient for node tgt[k] (operand k unless a rule
 * redirects it) or XT_NONE. Returns 0, or -1 with the graph's error set. */
static int node_grads(xt_graph *g, xt_t i, xt_t gy, const uint8_t *rg, xt_t *gin, xt_t *tgt) {
    xt_node n = g->nodes[i]; /* copy: pushes may move the node array */
    int32_t in[64];
    memcpy(in, xt_ins(g, &n), (size_t)n.nin * sizeof *in);
    xt_t a = n.nin > 0 ? in[0] : XT_NONE, b = n.nin > 1 ? in[1] : XT_NONE;
    for (int k = 0; k < n.nin; k++) {
        gin[k] = XT_NONE;
        tgt[k] = in[k];
    }
    switch ((xt_op)n.op) {
    case XT_OP_BROADCAST: gin[0] = unbroadcast(g, gy, a); break;
    case XT_OP_NEG: gin[0] = xt_neg(g, gy); break;
    case XT_OP_RELU: gin[0] = xt_relu_bwd(g, gy, a); break;
    case XT_OP_EXP: gin[0] = xt_mul(g, gy, i); break;
    case XT_OP_LOG: gin[0] = xt_div(g, gy, a); break;
    case XT_OP_SQRT: gin[0] = xt_div(g, xt_mul(g, gy, xt_const(g, 0.5f)), i); break;
    case XT_OP_RSQRT: /* d/da a^-1/2 = -1/2 y^3 */
        gin[0] = xt_mul(g, gy, xt_mul(g, xt_mul(g, xt_square(g, i), i), xt_const(g, -0.5f)));
        break;
    case XT_OP_SQUARE: gin[0] = xt_mul(g, gy, xt_mul(g, a, xt_const(g, 2.0f))); break;
    case XT_OP_ADD:
        if (rg[a]) gin[0] = unbroadcast(g, gy, a);
        if (rg[b]) gin[1] = unbroadcast(g, gy, b);
        break;
    case XT_OP_SUB:
        if (rg[a]) gin[0] = unbroadcast(g, gy, a);
        if (rg[b]) gin[1] = unbroadcast(g, xt_neg(g, gy), b);
        break;
    case XT_OP_MUL:
        if (rg[a]) gin[0] = unbroadcast(g, xt_mul(g, gy, b), a);
        if (rg[b]) gin[1] = unbroadcast(g, xt_mul(g, gy, a), b);
        break;
    case XT_OP_DIV:
        if (rg[a]) gin[0] = unbroadcast(g, xt_div(g, gy, b), a);
        if (rg[b]) gin[1] = unbroadcast(g, xt_neg(g, xt_div(g, xt_mul(g, gy, i), b)), b);
        break;
    case XT_OP_COPY: gin[0] = gy; break;
    case XT_OP_SUM_TO: {
        const xt_node *x = &g->nodes[a];
        int32_t shape[XT_MAX_RANK];
        memcpy(shape, x->shape, sizeof shape);
        gin[0] = xt_broadcast_to(g, gy, x->rank, shape);
        break;
    }
    case XT_OP_MATMUL: {
        int tA = n.iattr[0], tB = n.iattr[1];
        if (rg[a]) gin[0] = !tA ? xt_matmul(g, gy, b, 0, !tB) : xt_matmul(g, b, gy, tB, 1);
        if (rg[b]) gin[1] = !tB ? xt_matmul(g, a, gy, !tA, 0) : xt_matmul(g, gy, a, 1, tA);
        break;
    }
    case XT_OP_CONV2D: {
        if (rg[a]) { xt_t ins[2] = {gy, b}; gin[0] = op_like(g, XT_OP_CONV2D_BWD_DATA, a, &n, ins, 2); }
        if (rg[b]) { xt_t ins[2] = {a, gy}; gin[1] = op_like(g, XT_OP_CONV2D_BWD_WEIGHT, b, &n, ins, 2); }
        if (n.nin > 2 && rg[in[2]]) {
            int co = n.shape[1];
            xt_t s = xt_sum_to(g, gy, 4, (int32_t[]){1, co, 1, 1});
            gin[2] = xt_reshape(g, s, 1, (int32_t[]){co});
        }
        break;
    }
    case XT_OP_VIEW: {
        const xt_node *base = &g->nodes[a];
        if (base->op == XT_OP_MAXPOOL2D && n.iattr[0] == 0) {
            /* the values half of a max-pool: route through the argmax indices */
            xt_t x = xt_ins(g, base)[0];
            xt_t am = xt_maxpool_argmax(g, a, &n);
            xt_t ins[2] = {gy, am};
            xt_node attrs = g->nodes[a];
            /* the gradient belongs to the pool's input, not the packed node */
            gin[0] = op_like(g, XT_OP_MAXPOOL2D_BWD, x, &attrs, ins, 2);
            tgt[0] = x;
            break;
        }
        if (n.iattr[0] == 0 && xt_numel(base) == xt_numel(&n)) {
            int32_t shape[XT_MAX_RANK];
            memcpy(shape, base->shape, sizeof shape);
            gin[0] = xt_reshape(g, gy, base->rank, shape);
            break;
        }
        if (base->dtype != XT_F32 || n.dtype != XT_F32) {
            xt_graph_fail(g, "backward: no gradient through an int32 view of %s", xt_op_table[base->op].name);
            return -1;
        }
        xt_t like = a;
        xt_node attrs = xt_proto(XT_OP_VIEW_GRAD, XT_F32, 0, NULL);
        attrs.iattr[0] = n.iattr[0];
        gin[0] = op_like(g, XT_OP_VIEW_GRAD, like, &attrs, &gy, 1);
        break;
    }
    case XT_OP_AVGPOOL2D: gin[0] = op_like(g, XT_OP_AVGPOOL2D_BWD, a, &n, &gy, 1); break;
    case XT_OP_BN_STATS: { xt_t ins[3] = {gy, a, i}; gin[0] = op_like(g, XT_OP_BN_STATS_BWD, a, &n, ins, 3); break; }
    case XT_OP_LOG_SOFTMAX: { xt_t ins[2] = {gy, i}; gin[0] = op_like(g, XT_OP_LOG_SOFTMAX_BWD, a, &n, ins, 2); break; }
    case XT_OP_NLL_LOSS: { xt_t ins[2] = {gy, b}; gin[0] = op_like(g, XT_OP_NLL_LOSS_BWD, a, &n, ins, 2); break; }
    case XT_OP_DROPOUT: { xt_t ins[2] = {gy, b}; gin[0] = op_like(g, XT_OP_DROPOUT_BWD, a, &n, ins, 2); break; }
    default:
        xt_graph_fail(g, "backward: %s has no gradient", xt_op_table[n.op].name);
        return -1;
    }
    return 0;
}

int xt_backward(xt_graph *g, xt_t loss, const xt_t *wrt, int nwrt, xt_t *grads) {
    for (int k = 0; k < nwrt; k++) grads[k] = XT_NONE;
    if (g->err[0] || loss < 0 || loss >= g->n) return -1;
    if (xt_numel(&g->nodes[loss]) != 1) return xt_graph_fail(g, "backward: the loss must be a scalar"), -1;
    int n0 = loss + 1;
    uint8_t *rg = calloc((size_t)n0, 1);
    xt_t *grad = malloc((size_t)n0 * sizeof *grad);
    if (!rg || !grad) { free(rg); free(grad); return xt_graph_fail(g, "out of memory in backward"), -1; }
    for (int i = 0; i < n0; i++) grad[i] = XT_NONE;
    for (int k = 0; k < nwrt; k++)
        if (wrt[k] >= 0 && wrt[k] < n0) rg[wrt[k]] = 1;
    /* requires-grad: forward closure of the wrt set */
    for (int i = 0; i < n0; i++) {
        const xt_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin && !rg[i]; k++) rg[i] = rg[xt_ins(g, n)[k]];
    }
    /* the int32 argmax/labels paths never carry gradients */
    int rc = 0;
    if (rg[loss]) {
        grad[loss] = xt_const(g, 1.0f);
        for (xt_t i = loss; i >= 0 && rc == 0; i--) {
            if (grad[i] == XT_NONE || !rg[i]) continue;
            const xt_node *n = &g->nodes[i];
            if (n->op == XT_OP_LEAF || n->op == XT_OP_CONST) continue;
            xt_t gin[64], tgt[64];
            int nin = n->nin;
            if (nin > 64) { rc = -1; xt_graph_fail(g, "backward: too many operands"); break; }
            if (node_grads(g, i, grad[i], rg, gin, tgt)) { rc = -1; break; }
            for (int k = 0; k < nin; k++) {
                xt_t o = tgt[k];
                if (gin[k] == XT_NONE || !rg[o]) continue;
                grad[o] = grad[o] == XT_NONE ? gin[k] : xt_add(g, grad[o], gin[k]);
            }
        }
    }
    if (g->err[0]) rc = -1;
    for (int k = 0; k < nwrt && rc == 0; k++)
        if (wrt[k] >= 0 && wrt[k] < n0) grads[k] = grad[wrt[k]];
    free(rg);
    free(grad);
    return rc;
}
