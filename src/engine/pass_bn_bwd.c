/* pass_bn_bwd.c — batch norm's statistics gradient writes what reads it next.
 *
 * Batch norm's backward sends dx through two paths: the direct one
 * (dy * gamma * rstd, an elementwise product) and the one through the batch
 * statistics, t = BN_STATS_BWD(dstats, x, stats) = a + b (x - mean) per
 * channel. The two meet in an ADD, and when a ReLU came before the batch
 * norm (the seed CNN's conv -> pool -> ReLU -> BN) its backward masks the
 * sum: RELU_BWD(ADD(u, t), m). Separately that is a kernel writing t, then
 * an elementwise group reading t, u and m and writing the result: x and t
 * each read once more than needed, t written once in full. Here, for
 * t = BN_STATS_BWD read only by s = ADD(u, t) (or ADD(t, u)), u shaped as t
 * and made before it, t takes u as a fourth operand (iattr[0] = 1, or 2
 * when u is the ADD's first operand) and s becomes a view of t; and if s is
 * read only by r = RELU_BWD(s, m) as its gradient, m shaped as t and made
 * before it, t takes m too (iattr[1] = 1) and r becomes a view of t. The
 * kernel (k_bn_stats_bwd_fused) makes each element with the same IEEE
 * operations in the same order as the three ops did, so the bits are the
 * same (test_engine_tiling.c trains with and without it).
 *
 * Why: one pass over dy and x instead of two saves a read of both while they
 * still sit in cache; where they come from DRAM either way (large batches)
 * it neither gains nor loses. train_bench --kernels shows the two kernels
 * against the merged one (figures: tests/bench/HISTORY.md). Why not as
 * elementwise ops the fusion pass could take in (the statistics gradient
 * composed from SUB, MUL and ADD on per-channel views): the interpreter's
 * five chunk loops cost more than the kernel and the group they would
 * replace (HISTORY.md, "Measured and not kept").
 *
 * fp32 only (the precision pass leaves batch norm in fp32; a bf16 mask, the
 * copy a ReLU's output gets for a bf16 convolution, is not taken).
 * Is not: the batch norm forward, or gradients of other normalizations.
 * Runs before elementwise fusion, which then no longer sees the ADD and the
 * RELU_BWD.
 */
#include <string.h>

#include "engine/plan.h"
#include "engine/plan_operands.h" /* xt_plan_set_operands */

/* fp32 and shaped exactly as t (no broadcast) */
static int like(const xt_plan *p, int v, int t) {
    const xt_node *a = &p->nodes[v], *b = &p->nodes[t];
    return a->dtype == XT_F32 && a->rank == b->rank && !memcmp(a->shape, b->shape, sizeof(int32_t) * (size_t)b->rank);
}
/* ... and made before t, so there when t's kernel runs */
static int fits(const xt_plan *p, int v, int t) { return v < t && like(p, v, t); }

/* node r becomes a view of t, whole */
static int view_of(xt_plan *p, int r, int32_t t) {
    if (xt_plan_set_operands(p, r, &t, 1)) return -1;
    p->nodes[r].op = XT_OP_VIEW;
    for (int k = 0; k < 6; k++) p->nodes[r].iattr[k] = 0;
    return 0;
}

int xt_pass_bn_bwd(xt_plan *p, const uint8_t *live) {
    int taken = 0;
    for (int t = 0; t < p->nnodes; t++) {
        const xt_node *tn = &p->nodes[t];
        if (!live[t] || tn->op != XT_OP_BN_STATS_BWD || tn->nin != 3 || tn->dtype != XT_F32 || tn->rank != 4) continue;
        if (xt_plan_escapes(p, t)) continue;
        int s = xt_plan_sole_reader(p, live, t);
        if (s < 0 || p->nodes[s].op != XT_OP_ADD || p->nodes[s].nin != 2 || xt_plan_escapes(p, s)) continue;
        int first = xt_plan_operand(p, s, 0) != t, u = xt_plan_operand(p, s, first ? 0 : 1);
        if (u == t || !fits(p, u, t) || !like(p, s, t)) continue;
        int32_t ops[5] = {xt_plan_operand(p, t, 0), xt_plan_operand(p, t, 1), xt_plan_operand(p, t, 2), u, -1};
        int nops = 4, r = xt_plan_sole_reader(p, live, s), m = -1;
        if (r >= 0 && p->nodes[r].op == XT_OP_RELU_BWD && p->nodes[r].nin == 2 && xt_plan_operand(p, r, 0) == s) {
            m = xt_plan_operand(p, r, 1);
            if (m == s || m == u || !fits(p, m, t)) m = -1;
        }
        if (m >= 0) ops[nops++] = m;
        if (xt_plan_set_operands(p, t, ops, nops)) return -1;
        p->nodes[t].iattr[0] = first ? 2 : 1;
        p->nodes[t].iattr[1] = m >= 0;
        if (view_of(p, s, t)) return -1;
        if (m >= 0 && view_of(p, r, t)) return -1;
        taken++;
    }
    return taken;
}
