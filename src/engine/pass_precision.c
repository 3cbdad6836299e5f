/* pass_precision.c — the compile pass that decides each node's precision.
 *
 * Under XT_PREC_FP32 it does nothing. Under XT_PREC_BF16 (mixed precision, as
 * torch_xla's XLA_USE_BF16 and PyTorch's autocast): the two tensor operands of
 * every CONV2D, CONV2D_BWD_DATA, CONV2D_BWD_WEIGHT and MATMUL are read
 * through a CAST_BF16 node (round to nearest even, 2 bytes per element), the
 * op itself still produces fp32 (its kernel accumulates in fp32). Everything
 * else stays fp32: the leaves (master weights), the optimizer's update, the
 * all-reduce of the gradients, batch-norm statistics, softmax and the loss,
 * and a convolution's bias (added in fp32).
 *
 * The lowered graph is built by pushing the traced nodes again, in order,
 * with the casts in front of their consumers. xt_graph_push's CSE makes a
 * cast shared by every consumer of the same value: a weight is rounded once
 * per step for the forward convolution and its backward-data twin, an
 * activation once for the forward and backward-weight passes, a gradient
 * once for both backward passes. Never per kernel call.
 *
 * A leaf's cast (a weight, the input batch) is pushed right after the leaf,
 * not in front of its first consumer: the casts of the weights then run
 * before the first layer instead of between two layers, where they would
 * split a micro-batch stretch (pass_tile.c: its kernels must be consecutive
 * and share one batch, and a weight's leading dim is not the batch).
 *
 * A ReLU's backward takes its mask from the bf16 copy of the activation
 * when the activation is rounded for a convolution anyway, as autocast's
 * ReLU on a bf16 tensor does: RELU_BWD(dy, x) -> RELU_BWD(dy, bf16(r)) where
 * r = RELU(x) (or x itself), or a reshape of it (a flatten before a linear
 * layer), is rounded; relu(x) > 0 exactly where x > 0. Why:
 * the fp32 activation is then read by nothing after the forward layer that
 * rounds it, so the micro-batch tiler keeps it a tile in cache
 * (pass_tile.c) instead of a batch-sized buffer that lives until the
 * backward pass; the backward reads half the bytes. The mask is the same:
 * rounding to nearest even keeps the sign and keeps a positive value
 * positive unless it is at most 2^-134 (half of bf16's smallest subnormal,
 * itself a subnormal fp32), which rounds to +0: only there the mask differs.
 *
 * keep_fp32 (a measured choice, compile.c): the nodes whose fastest
 * candidate on this CPU is an fp32 kernel keep fp32 operands, so asking for
 * bf16 never makes a node slower; their casts are then not made for them.
 *
 * Not here: the bf16 kernels (kernels/bf16.h) or the sizes of bf16 buffers
 * (the memory plan sizes every node by its dtype).
 */
#include <stdint.h>
#include <stdlib.h>

#include "engine/plan.h"

static int rounds_operands(int op) {
    return op == XT_OP_CONV2D || op == XT_OP_CONV2D_BWD_DATA || op == XT_OP_CONV2D_BWD_WEIGHT || op == XT_OP_MATMUL;
}

static xt_t cast_bf16(xt_graph *out, xt_t v) {
    const xt_node *n = &out->nodes[v];
    if (n->dtype != XT_F32) return v;
    xt_node c = xt_proto(XT_OP_CAST_BF16, XT_BF16, n->rank, n->shape);
    return xt_graph_push(out, &c, &v, 1);
}

/* rounded[v]: bit 0, some rounded operand reads node v; bit 1, v is a leaf
 * and so its cast goes right after it. */
enum { ROUNDED = 1, CAST_EARLY = 2 };

/* The node whose bf16 copy can stand for RELU_BWD's mask x: x if rounded,
 * else a rounded RELU(x) or reshape of one (relu_of[x]), else -1. */
static xt_t rounded_mask(const uint8_t *rounded, const xt_t *relu_of, xt_t x) {
    return rounded[x] & ROUNDED ? x : relu_of[x];
}

/* v, or the node v reshapes (a view at offset 0 of the same size), followed. */
static xt_t unreshaped(const xt_graph *g, xt_t v) {
    while (g->nodes[v].op == XT_OP_VIEW && g->nodes[v].iattr[0] == 0 &&
           xt_numel(&g->nodes[v]) == xt_numel(&g->nodes[xt_ins(g, &g->nodes[v])[0]]) &&
           g->nodes[v].dtype == g->nodes[xt_ins(g, &g->nodes[v])[0]].dtype)
        v = xt_ins(g, &g->nodes[v])[0];
    return v;
}

int xt_pass_precision(const xt_graph *g, int precision, const uint8_t *keep_fp32, xt_graph *out, int32_t *map) {
    xt_t ins[64];
    uint8_t *rounded = calloc((size_t)g->n + 1, 1);
    xt_t *relu_of = malloc(((size_t)g->n + 1) * sizeof *relu_of);
    if (!rounded || !relu_of) {
        free(rounded);
        free(relu_of);
        return -1;
    }
    for (int i = 0; i < g->n; i++) relu_of[i] = -1;
    for (int i = 0; precision == XT_PREC_BF16 && i < g->n; i++)
        if (rounds_operands(g->nodes[i].op) && !(keep_fp32 && keep_fp32[i]))
            for (int k = 0; k < 2; k++) {
                xt_t v = xt_ins(g, &g->nodes[i])[k];
                rounded[v] |= ROUNDED | (g->nodes[v].op == XT_OP_LEAF ? CAST_EARLY : 0);
            }
    for (int i = 0; i < g->n; i++) {
        xt_t r = unreshaped(g, i);
        if (rounded[i] & ROUNDED && g->nodes[r].op == XT_OP_RELU) relu_of[xt_ins(g, &g->nodes[r])[0]] = i;
    }
    int rc = 0;
    for (int i = 0; i < g->n && !rc; i++) {
        const xt_node *n = &g->nodes[i];
        xt_t *in = ins, *heap = NULL;
        if (n->nin > (int)(sizeof ins / sizeof *ins) && !(in = heap = malloc((size_t)n->nin * sizeof *in))) {
            rc = -1;
            break;
        }
        for (int k = 0; k < n->nin; k++) in[k] = map[xt_ins(g, n)[k]];
        if (precision == XT_PREC_BF16 && rounds_operands(n->op) && !(keep_fp32 && keep_fp32[i]))
            for (int k = 0; k < 2; k++) in[k] = cast_bf16(out, in[k]);
        xt_t mask = n->op == XT_OP_RELU_BWD ? rounded_mask(rounded, relu_of, xt_ins(g, n)[1]) : -1;
        if (mask >= 0 && mask < i) {
            const xt_node *x = &g->nodes[xt_ins(g, n)[1]];
            in[1] = xt_reshape(out, cast_bf16(out, map[mask]), x->rank, x->shape);
        }
        map[i] = xt_graph_push(out, n, in, n->nin);
        free(heap);
        if (map[i] == XT_NONE || (rounded[i] & CAST_EARLY && cast_bf16(out, map[i]) == XT_NONE)) rc = -1;
    }
    free(rounded);
    free(relu_of);
    return rc;
}
