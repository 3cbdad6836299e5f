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
 * The addend a product. In a residual net u is the direct path's
 * dy * (gamma * rstd), u = MUL(g, f) with f per channel, read by s alone:
 * a batch-sized value written only to be read once, in the next stretch
 * (the statistics gradient waits for the whole batch's sums). Then t takes
 * g and f instead of u (f at operand 3, iattr[2] = 1) and makes the product
 * itself, rounded as the MUL did; u is not made at all. That is a
 * batch-sized write (with its read for ownership) and read fewer per batch
 * norm: 14 of ResNet-20's 19.
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

/* f holds one value per channel of t (N, C, H, W): shaped [C, 1, 1] or [1, C, 1, 1], fp32, made before t */
static int per_channel(const xt_plan *p, int f, int t) {
    const xt_node *a = &p->nodes[f], *b = &p->nodes[t];
    if (f >= t || a->dtype != XT_F32 || b->rank != 4 || a->rank < 3 || a->rank > 4) return 0;
    return xt_numel(a) == b->shape[1] && a->shape[a->rank - 3] == b->shape[1];
}

/* u = MUL(g, f) or MUL(f, g), g as t and f per channel, read by s alone: its operands (*g, *f), 1; else 0 */
static int product_of(const xt_plan *p, const uint8_t *live, int u, int s, int t, int *g, int *f) {
    const xt_node *un = &p->nodes[u];
    if (un->op != XT_OP_MUL || un->nin != 2 || xt_plan_escapes(p, u) || xt_plan_sole_reader(p, live, u) != s) return 0;
    for (int k = 0; k < 2; k++) {
        int a = xt_plan_operand(p, u, k), b = xt_plan_operand(p, u, 1 - k);
        if (fits(p, a, t) && per_channel(p, b, t)) {
            *g = a, *f = b;
            return 1;
        }
    }
    return 0;
}

/* node r becomes a view of t, whole */
static int view_of(xt_plan *p, int r, int32_t t) {
    if (xt_plan_set_operands(p, r, &t, 1)) return -1;
    p->nodes[r].op = XT_OP_VIEW;
    for (int k = 0; k < 6; k++) p->nodes[r].iattr[k] = 0;
    return 0;
}

int xt_pass_bn_bwd(xt_plan *p, uint8_t *live, int *products) {
    int taken = 0;
    *products = 0;
    for (int t = 0; t < p->nnodes; t++) {
        const xt_node *tn = &p->nodes[t];
        if (!live[t] || tn->op != XT_OP_BN_STATS_BWD || tn->nin != 3 || tn->dtype != XT_F32 || tn->rank != 4) continue;
        if (xt_plan_escapes(p, t)) continue;
        int s = xt_plan_sole_reader(p, live, t);
        if (s < 0 || p->nodes[s].op != XT_OP_ADD || p->nodes[s].nin != 2 || xt_plan_escapes(p, s)) continue;
        int first = xt_plan_operand(p, s, 0) != t, u = xt_plan_operand(p, s, first ? 0 : 1);
        if (u == t || !fits(p, u, t) || !like(p, s, t)) continue;
        int32_t ops[6] = {xt_plan_operand(p, t, 0), xt_plan_operand(p, t, 1), xt_plan_operand(p, t, 2)};
        int nops = 3, r = xt_plan_sole_reader(p, live, s), m = -1, g = -1, f = -1;
        if (r >= 0 && p->nodes[r].op == XT_OP_RELU_BWD && p->nodes[r].nin == 2 && xt_plan_operand(p, r, 0) == s) {
            m = xt_plan_operand(p, r, 1);
            if (m == s || m == u || !fits(p, m, t)) m = -1;
        }
        int product = product_of(p, live, u, s, t, &g, &f);
        if (product) ops[nops++] = f;
        ops[nops++] = product ? g : u;
        if (m >= 0) ops[nops++] = m;
        if (xt_plan_set_operands(p, t, ops, nops)) return -1;
        p->nodes[t].iattr[0] = first ? 2 : 1;
        p->nodes[t].iattr[1] = m >= 0;
        p->nodes[t].iattr[2] = product;
        if (product) live[u] = 0, ++*products;
        if (view_of(p, s, t)) return -1;
        if (m >= 0 && view_of(p, r, t)) return -1;
        taken++;
    }
    return taken;
}
