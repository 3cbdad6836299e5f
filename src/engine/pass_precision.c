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

int xt_pass_precision(const xt_graph *g, int precision, xt_graph *out, int32_t *map) {
    xt_t ins[64];
    uint8_t *cast_early = calloc((size_t)g->n + 1, 1); /* per node: a leaf some rounded operand reads */
    if (!cast_early) return -1;
    for (int i = 0; precision == XT_PREC_BF16 && i < g->n; i++)
        if (rounds_operands(g->nodes[i].op))
            for (int k = 0; k < 2; k++) {
                xt_t v = xt_ins(g, &g->nodes[i])[k];
                if (g->nodes[v].op == XT_OP_LEAF) cast_early[v] = 1;
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
        if (precision == XT_PREC_BF16 && rounds_operands(n->op))
            for (int k = 0; k < 2; k++) in[k] = cast_bf16(out, in[k]);
        map[i] = xt_graph_push(out, n, in, n->nin);
        free(heap);
        if (map[i] == XT_NONE || (cast_early[i] && cast_bf16(out, map[i]) == XT_NONE)) rc = -1;
    }
    free(cast_early);
    return rc;
}
