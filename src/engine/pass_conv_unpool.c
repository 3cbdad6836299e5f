/* pass_conv_unpool.c — a max pool's backward runs in the prologue of the
 * convolution backward passes that read it.
 *
 * For d = MAXPOOL2D_BWD(g, idx) of a 2x2, stride-2, unpadded pool (the
 * gradient of a conv output that such a pool read), read only as the dy of
 * CONV2D_BWD_DATA(d, w) and CONV2D_BWD_WEIGHT(x, d) nodes: each becomes
 * CONV2D_BWD_DATA_UNPOOL2(g, idx, w) or CONV2D_BWD_WEIGHT_UNPOOL2(x, g, idx),
 * and d is no longer computed. The kernels pack g and idx into their blocked
 * layout and scatter them there, block by block, as the pool's backward
 * would (kernels/conv_direct.c, dy_to_blocked): the same blocked dy, so the
 * same bits. What it saves: d's write and read (seed CNN conv1: 2.9 MB per
 * step at batch 128, 23.6 MB at 1024, where it streams through DRAM;
 * wide_cnn conv2: 18.9 MB at 128), the pool-backward pass, and packing
 * four times the values the pooled gradient holds.
 *
 * Which pools' backwards qualify: those of the seed order (conv -> pool ->
 * ReLU: the bias gradient reads the pooled gradient after pass_sum_pool.c)
 * and of the VGG order (conv -> ReLU -> pool: the ReLU's backward is swapped
 * behind the pool's by pass_conv_epilogue.c).
 *
 * Under bf16 the convolutions read d through its cast (pass_precision.c):
 * when that cast is d's only reader, the cast's readers are rewritten the
 * same way and both d and the cast go. The bf16 kernels round g as they
 * scatter it (k_conv2d_*_unpool2_bf16): a cell is g or +0, so rounding after
 * the scatter or before it gives the same bits. What it saves there: the
 * pool's backward pass made in bf16 (pass_bf16_out.c), which is 9% of the
 * seed CNN's bf16 step, and its output's write and read.
 *
 * d read by anything else (a literal bias sum, a fetch) keeps its kernel and
 * its readers stay as they are: d is computed anyway.
 *
 * Is not: fusion of other pools, or of the pool's backward into anything
 * but a convolution's backward.
 * Runs after the conv epilogues and the sums through pools, before
 * elementwise fusion and tiling (the new ops' operands are per sample:
 * pass_tile.c).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"
#include "engine/plan_operands.h" /* xt_plan_set_operands */


static int is_unpool2(const xt_plan *p, const uint8_t *live, int d) {
    const xt_node *n = &p->nodes[d];
    const int32_t *a = n->iattr; /* kh kw sh sw ph pw */
    if (!live[d] || n->op != XT_OP_MAXPOOL2D_BWD || n->dtype != XT_F32 || n->rank != 4) return 0;
    if (a[0] != 2 || a[1] != 2 || a[2] != 2 || a[3] != 2 || a[4] || a[5]) return 0;
    return p->nodes[xt_plan_operand(p, d, 0)].dtype == XT_F32 && !xt_plan_escapes(p, d);
}

/* Does reader r take d as its dy, and nothing else from it, its other
 * operand (w or x) of type t (the precision d is read in)? */
static int reads_as_dy(const xt_plan *p, int r, int d, int t) {
    const xt_node *n = &p->nodes[r];
    if (n->nin != 2 || n->dtype != XT_F32) return 0;
    int dy = n->op == XT_OP_CONV2D_BWD_DATA ? 0 : n->op == XT_OP_CONV2D_BWD_WEIGHT ? 1 : -1;
    if (dy < 0 || xt_plan_operand(p, r, dy) != d || xt_plan_operand(p, r, 1 - dy) == d) return 0;
    return p->nodes[xt_plan_operand(p, r, 1 - dy)].dtype == t;
}

/* d's live readers, when every one reads it as described; else 0. */
static int conv_readers(const xt_plan *p, const uint8_t *live, int d, int t, int32_t *out) {
    int n = 0;
    for (int i = d + 1; i < p->nnodes; i++) {
        if (!live[i]) continue;
        int reads = 0;
        for (int k = 0; k < p->nodes[i].nin; k++) reads |= xt_plan_operand(p, i, k) == d;
        if (!reads) continue;
        if (!reads_as_dy(p, i, d, t)) return 0;
        out[n++] = i;
    }
    return n;
}

/* Reader r of d = MAXPOOL2D_BWD(g, idx) (or of d's cast) reads (g, idx) in its place. */
static int rewrite(xt_plan *p, int r, int d) {
    int32_t g = xt_plan_operand(p, d, 0), idx = xt_plan_operand(p, d, 1);
    xt_node *n = &p->nodes[r];
    int data = n->op == XT_OP_CONV2D_BWD_DATA;
    int32_t list[3] = {data ? g : xt_plan_operand(p, r, 0), data ? idx : g, data ? xt_plan_operand(p, r, 1) : idx};
    n->op = data ? XT_OP_CONV2D_BWD_DATA_UNPOOL2 : XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2;
    return xt_plan_set_operands(p, r, list, 3);
}

int xt_pass_conv_unpool(xt_plan *p, uint8_t *live) {
    int fused = 0;
    int32_t *readers = malloc(sizeof *readers * ((size_t)p->nnodes + 1));
    if (!readers) return -1;
    for (int d = 0; d < p->nnodes; d++) {
        if (!is_unpool2(p, live, d)) continue;
        int c = xt_plan_sole_reader(p, live, d); /* bf16: the cast the convolutions read d through */
        int cast = c >= 0 && p->nodes[c].op == XT_OP_CAST_BF16 && p->nodes[c].dtype == XT_BF16 && !xt_plan_escapes(p, c);
        int n = cast ? conv_readers(p, live, c, XT_BF16, readers) : conv_readers(p, live, d, XT_F32, readers);
        for (int i = 0; i < n; i++)
            if (rewrite(p, readers[i], d)) {
                free(readers);
                return -1;
            }
        if (n) live[d] = 0;
        if (n && cast) live[c] = 0;
        fused += n;
    }
    free(readers);
    return fused;
}
