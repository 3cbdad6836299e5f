/* autodiff.c — reverse-mode differentiation on the IR, before fusion.
 *
 * One walk over the nodes from the loss down (call order is topological, so
 * no recursion is needed): each differentiable node with an incoming
 * gradient emits ordinary forward ops for its operands' gradients, and
 * gradients reaching the same node accumulate through add nodes. Nothing is
 * computed: the result is more graph (as ggml's build_backward, kann's
 * kad_grad). A forward "requires grad" pass first limits the work to the
 * paths between the wrt nodes and the loss (e.g. no gradient for the input
 * batch, so conv1 never runs its data-gradient kernel). The rules
 * themselves are in autodiff_rules.c. Its scratch lives with the graph, so
 * a traced step allocates nothing here once the first step has sized it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* Make the per-node scratch hold n0 nodes (grows only; kept with the graph). */
static int reserve_nodes(xt_graph *g, int n0) {
    if (n0 <= g->bw_cap) return 0;
    int cap = g->bw_cap ? g->bw_cap : 256;
    while (cap < n0) cap *= 2;
    uint8_t *rg = realloc(g->bw_requires_grad, (size_t)cap);
    if (rg) g->bw_requires_grad = rg;
    xt_t *gr = realloc(g->bw_grad, (size_t)cap * sizeof *gr);
    if (gr) g->bw_grad = gr;
    if (!rg || !gr) return -1;
    g->bw_cap = cap;
    return 0;
}

/* Make the operand scratch hold 3 lists of nin (grows only). */
static int reserve_operands(xt_graph *g, int nin) {
    if (3 * nin <= g->bw_opnd_cap) return 0;
    int cap = g->bw_opnd_cap ? g->bw_opnd_cap : 48;
    while (cap < 3 * nin) cap *= 2;
    xt_t *p = realloc(g->bw_opnd, (size_t)cap * sizeof *p);
    if (!p) return -1;
    g->bw_opnd = p;
    g->bw_opnd_cap = cap;
    return 0;
}

/* Mark the nodes the gradient must flow through: the forward closure of
 * the wrt set, up to the loss. */
static void mark_requires_grad(const xt_graph *g, uint8_t *rg, int n0, const xt_t *wrt, int nwrt) {
    memset(rg, 0, (size_t)n0);
    for (int k = 0; k < nwrt; k++)
        if (wrt[k] >= 0 && wrt[k] < n0) rg[wrt[k]] = 1;
    for (int i = 0; i < n0; i++) {
        const xt_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin && !rg[i]; k++) rg[i] = rg[xt_ins(g, n)[k]];
    }
}

/* Apply node i's gradient rule and add what it emits to its operands'
 * gradients. Returns 0, or -1 with the graph's error set. */
static int differentiate_node(xt_graph *g, xt_t i, const uint8_t *rg, xt_t *grad) {
    int nin = g->nodes[i].nin;
    if (reserve_operands(g, nin)) return xt_graph_fail(g, "out of memory in backward"), -1;
    xt_grad_args a = {.g = g, .i = i, .n = g->nodes[i], .gy = grad[i], .rg = rg};
    xt_t *in = g->bw_opnd, *gin = in + nin, *tgt = gin + nin;
    memcpy(in, xt_ins(g, &a.n), (size_t)nin * sizeof *in); /* copy: pushes may move the operand array */
    for (int k = 0; k < nin; k++) {
        gin[k] = XT_NONE;
        tgt[k] = in[k];
    }
    a.in = in;
    a.gin = gin;
    a.tgt = tgt;
    xt_grad_rule rule = xt_grad_rules[a.n.op];
    if (!rule) return xt_graph_fail(g, "backward: %s has no gradient", xt_op_table[a.n.op].name), -1;
    if (rule(&a)) return -1;
    for (int k = 0; k < nin; k++) {
        xt_t o = tgt[k];
        if (gin[k] == XT_NONE || !rg[o]) continue;
        grad[o] = grad[o] == XT_NONE ? gin[k] : xt_add(g, grad[o], gin[k]);
    }
    return 0;
}

int xt_backward(xt_graph *g, xt_t loss, const xt_t *wrt, int nwrt, xt_t *grads) {
    for (int k = 0; k < nwrt; k++) grads[k] = XT_NONE;
    if (g->err[0] || loss < 0 || loss >= g->n) return -1;
    if (xt_numel(&g->nodes[loss]) != 1) return xt_graph_fail(g, "backward: the loss must be a scalar"), -1;
    int n0 = loss + 1;
    if (reserve_nodes(g, n0)) return xt_graph_fail(g, "out of memory in backward"), -1;
    uint8_t *rg = g->bw_requires_grad;
    xt_t *grad = g->bw_grad;
    mark_requires_grad(g, rg, n0, wrt, nwrt);
    for (int i = 0; i < n0; i++) grad[i] = XT_NONE;
    int rc = 0;
    if (rg[loss]) {
        grad[loss] = xt_const(g, 1.0f);
        for (xt_t i = loss; i >= 0 && rc == 0; i--) {
            if (grad[i] == XT_NONE || !rg[i] || g->nodes[i].nin == 0) continue; /* leaves and constants end the walk */
            rc = differentiate_node(g, i, rg, grad);
        }
    }
    if (g->err[0]) rc = -1;
    for (int k = 0; k < nwrt && rc == 0; k++)
        if (wrt[k] >= 0 && wrt[k] < n0) grads[k] = grad[wrt[k]];
    return rc;
}
