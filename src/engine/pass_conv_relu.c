/* pass_conv_relu.c — a ReLU that follows a convolution runs in the
 * convolution's epilogue.
 *
 * Is: for y = CONV2D(x, w, b) read only by r = RELU(y) and by RELU_BWD(dy, y)
 * nodes (the ReLU's own gradient, reading y as its mask), the convolution
 * writes relu(y) as it leaves its blocked layout (iattr[4] = 1), r becomes a
 * view of it, and the RELU_BWD nodes read relu(y). That is exact: relu(y) > 0
 * exactly where y > 0 (NaN and -0 included), so every mask is unchanged, and
 * relu(relu(y)) = relu(y). What it saves: the ReLU's pass over the whole
 * activation (wide_cnn: 11 and 19 MB per step at batch 128) and one
 * activation-sized buffer.
 * Is not: fusion of other activations, of ReLUs after pooling or batch norm,
 * or of bf16 convolutions (their kernels keep the plain contract).
 * Runs before elementwise fusion, which then no longer sees the ReLU.
 */
#include <stdlib.h>

#include "engine/plan.h"

/* Is node c only read as described above, and the value not fetched or
 * assigned? Sets *relu to the one ReLU reading it. */
static int only_relu_reads(const xt_plan *p, const uint8_t *live, int c, int *relu) {
    *relu = -1;
    for (int i = 0; i < p->nassign; i++)
        if (p->assigns[i].t == c) return 0;
    for (int i = 0; i < p->nfetch; i++)
        if (p->fetch_nodes[i] == c) return 0;
    for (int i = c + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i]) continue;
        for (int k = 0; k < n->nin; k++) {
            if (p->operands[n->in_off + k] != c) continue;
            if (n->op == XT_OP_RELU && *relu < 0) *relu = i;
            else if (n->op == XT_OP_RELU_BWD && k == 1 && p->operands[n->in_off] != c) continue;
            else return 0;
        }
    }
    return *relu >= 0;
}

int xt_pass_conv_relu(xt_plan *p, const uint8_t *live) {
    for (int c = 0; c < p->nnodes; c++) {
        xt_node *n = &p->nodes[c];
        if (!live[c] || n->op != XT_OP_CONV2D || n->dtype != XT_F32) continue;
        if (p->nodes[p->operands[n->in_off]].dtype != XT_F32) continue; /* bf16 operands */
        int r;
        if (!only_relu_reads(p, live, c, &r)) continue;
        n->iattr[4] = 1;
        xt_node *v = &p->nodes[r];
        v->op = XT_OP_VIEW;
        for (int k = 0; k < 6; k++) v->iattr[k] = 0;
    }
    return 0;
}
