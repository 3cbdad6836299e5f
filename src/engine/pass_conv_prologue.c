/* pass_conv_prologue.c — batch norm's apply (and a ReLU after it) made by
 * the convolution that reads it, as the kernel packs its input.
 *
 * Why. y = x * scale + shift (per channel; nn/functional.c's batch norm),
 * optionally r = relu(y), is an elementwise group that writes a tensor the
 * next convolution only reads: its forward pass, and (pass_remat.c's copy)
 * its weight gradient. Each such group is a pass over the activation that
 * writes it and a read in the convolution: at batch 1024 the seed CNN's bn1
 * moves 5.9 MB twice a step for it, ResNet's conv -> BN -> ReLU -> conv
 * layers 8 MB per layer at batch 128. The direct convolution copies its input
 * into a blocked layout anyway (kernels/conv_direct.c, to_blocked); it can
 * apply the scale, the shift and the ReLU to each value as it goes.
 *
 * What. For a fp32 CONV2D, CONV2D_POOL2, CONV2D_BWD_WEIGHT or
 * CONV2D_BWD_WEIGHT_UNPOOL2 whose input is
 *     [RELU(] ADD(MUL(x0, scale), shift) [)]
 * with scale and shift [1, Ci, 1, 1] and every node of the chain read by the
 * next alone (and by nothing outside the step): the convolution reads x0,
 * takes scale and shift as its last two operands, iattr[5] = 1 (2 with the
 * ReLU), and the chain is dead. The kernels (k_conv_prologue) compute
 * x0 * scale, then + shift, each rounded to fp32, then x > 0 ? x : 0: the
 * bits of the elementwise ops, so training is unchanged bit for bit
 * (tests/test_engine_tiling.c compares with the pass off).
 *
 * Is not: the bf16 kernels (under bf16 the convolution reads the rounded
 * copy, a CAST_BF16 node, and this pass leaves it); backward-data (its input
 * is a gradient, never batch norm's output); other elementwise chains.
 * Runs after the other convolution rewrites and before elementwise fusion,
 * which then no longer sees the chain.
 */
#include <string.h>

#include "engine/plan.h"
#include "engine/plan_operands.h" /* xt_plan_set_operands */

static int is_f32(const xt_plan *p, int v) { return p->nodes[v].dtype == XT_F32; }

/* [1, C, 1, 1] fp32: a per-channel vector broadcast over an N x C x H x W value. */
static int per_channel(const xt_plan *p, int v, int C) {
    const xt_node *n = &p->nodes[v];
    return is_f32(p, v) && n->rank == 4 && n->shape[0] == 1 && n->shape[1] == C && n->shape[2] == 1 &&
           n->shape[3] == 1;
}

/* Node v is read by `reader` alone and stays inside the step. */
static int only_for(const xt_plan *p, const uint8_t *live, int v, int reader) {
    return xt_plan_sole_reader(p, live, v) == reader && !xt_plan_escapes(p, v);
}

static int takes_prologue(int op) {
    return op == XT_OP_CONV2D || op == XT_OP_CONV2D_POOL2 || op == XT_OP_CONV2D_BWD_WEIGHT ||
           op == XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2;
}

/* The chain under convolution c: fills x0, scale, shift and the dead nodes
 * (dead[0..*ndead)); returns 0 (none), 1 (affine) or 2 (affine + ReLU). */
static int match(const xt_plan *p, const uint8_t *live, int c, int32_t *x0, int32_t *scale, int32_t *shift,
                 int32_t *dead, int *ndead) {
    const xt_node *cn = &p->nodes[c];
    int a = xt_plan_operand(p, c, 0), relu = 0, reader = c;
    *ndead = 0;
    if (!live[c] || !takes_prologue(cn->op) || cn->iattr[5] || !is_f32(p, c) || !is_f32(p, a)) return 0;
    if (p->nodes[a].op == XT_OP_RELU) {
        if (!only_for(p, live, a, reader)) return 0;
        dead[(*ndead)++] = a;
        reader = a, relu = 1;
        a = xt_plan_operand(p, a, 0);
    }
    const xt_node *an = &p->nodes[a];
    if (an->op != XT_OP_ADD || !is_f32(p, a) || an->rank != 4 || !only_for(p, live, a, reader)) return 0;
    int C = an->shape[1];
    for (int k = 0; k < 2; k++) { /* ADD(MUL, shift) or ADD(shift, MUL): the same sum */
        int m = xt_plan_operand(p, a, k), h = xt_plan_operand(p, a, 1 - k);
        if (p->nodes[m].op != XT_OP_MUL || !per_channel(p, h, C) || !only_for(p, live, m, a)) continue;
        for (int j = 0; j < 2; j++) { /* MUL(x0, scale) or MUL(scale, x0): the same product */
            int x = xt_plan_operand(p, m, j), s = xt_plan_operand(p, m, 1 - j);
            if (!per_channel(p, s, C) || !xt_same_shape(&p->nodes[x], an) || !is_f32(p, x)) continue;
            *x0 = x, *scale = s, *shift = h;
            dead[(*ndead)++] = a;
            dead[(*ndead)++] = m;
            return 1 + relu;
        }
    }
    return 0;
}

int xt_pass_conv_prologue(xt_plan *p, uint8_t *live) {
    int taken = 0;
    for (int c = 0; c < p->nnodes; c++) {
        int32_t x0, scale, shift, dead[3];
        int ndead, kind = match(p, live, c, &x0, &scale, &shift, dead, &ndead);
        if (!kind) continue;
        const xt_node *cn = &p->nodes[c];
        int32_t list[8]; /* x0, the convolution's other operands (at most 3 more), scale, shift */
        if (cn->nin + 2 > (int)(sizeof list / sizeof *list)) continue;
        list[0] = x0;
        for (int k = 1; k < cn->nin; k++) list[k] = xt_plan_operand(p, c, k);
        list[cn->nin] = scale;
        list[cn->nin + 1] = shift;
        if (xt_plan_set_operands(p, c, list, cn->nin + 2)) return -1;
        p->nodes[c].iattr[5] = kind;
        for (int k = 0; k < ndead; k++) live[dead[k]] = 0;
        taken++;
    }
    return taken;
}
