/* pass_relu_mask.c — a ReLU's backward takes its mask from the ReLU's
 * output when that output is kept anyway.
 *
 * Why. RELU_BWD(dy, x) passes dy where x > 0. A residual block ends in
 * r = RELU(x), x = bn(conv) + shortcut: r is read in the backward (the next
 * convolutions' weight gradients), and so was x, for the mask alone. Both
 * were batch-sized values written in the forward and kept to the backward:
 * in ResNet-20 at batch 128 that is 42 MB of x written (each line read for
 * ownership first) and read back from DRAM, for one bit per element that r
 * holds as well. pass_remat.c cannot make x again cheaply (its cone reads
 * two batch-sized values, the convolution's output and the shortcut).
 *
 * What. For RELU_BWD(dy, x) with x an elementwise value and r = RELU(x) a
 * live node before it, where r is read past a barrier (a kernel that needs
 * the whole batch: pass_remat.c's word), so it is stored batch-sized
 * anyway: the RELU_BWD reads r instead. x is then read only by r, inside
 * their forward group, and pass_fuse.c / pass_memplan.c keep it out of
 * memory. PyTorch does the same for an in-place ReLU (threshold_backward
 * on the result).
 *
 * Same bits. r > 0 exactly where x > 0: RELU (ops.def) gives x for x > 0
 * and +0 otherwise, NaN included (NaN > 0 is false, so both masks are 0).
 *
 * Is not: the ReLU after a convolution (pass_conv_epilogue.c moves that
 * mask itself, with the epilogue), nor a mask pass_remat.c copies (x is
 * then a copy no RELU reads, and is left alone), nor bf16 masks
 * (pass_precision.c gives those a rounded r).
 */
#include <stdlib.h>

#include "engine/plan.h"
#include "engine/plan_operands.h" /* xt_plan_set_operands */

int xt_pass_relu_mask(xt_plan *p, const uint8_t *live) {
    int n = p->nnodes, taken = 0;
    /* relu[x]: a live RELU of x; crosses[r]: r is read past a barrier after it */
    int32_t *relu = malloc(((size_t)n + 1) * sizeof *relu), *next_bar = malloc(((size_t)n + 1) * sizeof *next_bar);
    uint8_t *crosses = calloc((size_t)n + 1, 1);
    if (!relu || !next_bar || !crosses) {
        taken = -1;
        goto done;
    }
    for (int i = 0; i < n; i++) relu[i] = -1;
    /* next_bar[i]: the first barrier after node i (n: none) */
    for (int i = n - 1, b = n; i >= 0; i--) {
        next_bar[i] = b;
        if (live[i] && xt_node_is_barrier(&p->nodes[i])) b = i;
    }
    for (int i = 0; i < n; i++) {
        const xt_node *nd = &p->nodes[i];
        if (!live[i]) continue;
        if (nd->op == XT_OP_RELU && nd->nin == 1 && relu[xt_plan_operand(p, i, 0)] < 0) relu[xt_plan_operand(p, i, 0)] = i;
        for (int k = 0; k < nd->nin; k++) {
            int u = xt_plan_operand(p, i, k);
            if (i > next_bar[u]) crosses[u] = 1;
        }
    }
    for (int i = 0; i < n; i++) {
        const xt_node *nd = &p->nodes[i];
        if (!live[i] || nd->op != XT_OP_RELU_BWD || nd->nin != 2) continue;
        int x = xt_plan_operand(p, i, 1), r = relu[x];
        if (r < 0 || r >= i || !crosses[r] || xt_op_table[p->nodes[x].op].kind != XT_KIND_EW) continue;
        if (p->nodes[r].dtype != p->nodes[x].dtype) continue;
        int32_t ops[2] = {xt_plan_operand(p, i, 0), r};
        if (xt_plan_set_operands(p, i, ops, 2)) {
            taken = -1;
            goto done;
        }
        taken++;
    }
done:
    free(relu);
    free(next_bar);
    free(crosses);
    return taken;
}
