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
 * behind the pool's by pass_conv_epilogue.c). fp32 only: under bf16 the
 * convolutions read d through a cast, or d is made in bf16 (pass_bf16_out.c).
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


static int is_unpool2(const xt_plan *p, const uint8_t *live, int d) {
    const xt_node *n = &p->nodes[d];
    const int32_t *a = n->iattr; /* kh kw sh sw ph pw */
    if (!live[d] || n->op != XT_OP_MAXPOOL2D_BWD || n->dtype != XT_F32 || n->rank != 4) return 0;
    if (a[0] != 2 || a[1] != 2 || a[2] != 2 || a[3] != 2 || a[4] || a[5]) return 0;
    return p->nodes[xt_plan_operand(p, d, 0)].dtype == XT_F32 && !xt_plan_escapes(p, d);
}

/* Does reader r take d as its dy, and nothing else from it, with fp32 operands? */
static int reads_as_dy(const xt_plan *p, int r, int d) {
    const xt_node *n = &p->nodes[r];
    if (n->nin != 2 || n->dtype != XT_F32) return 0;
    int dy = n->op == XT_OP_CONV2D_BWD_DATA ? 0 : n->op == XT_OP_CONV2D_BWD_WEIGHT ? 1 : -1;
    if (dy < 0 || xt_plan_operand(p, r, dy) != d || xt_plan_operand(p, r, 1 - dy) == d) return 0;
    return p->nodes[xt_plan_operand(p, r, 1 - dy)].dtype == XT_F32;
}

/* d's live readers, when every one reads it as described; else 0. */
static int conv_readers(const xt_plan *p, const uint8_t *live, int d, int32_t *out) {
    int n = 0;
    for (int i = d + 1; i < p->nnodes; i++) {
        if (!live[i]) continue;
        int reads = 0;
        for (int k = 0; k < p->nodes[i].nin; k++) reads |= xt_plan_operand(p, i, k) == d;
        if (!reads) continue;
        if (!reads_as_dy(p, i, d)) return 0;
        out[n++] = i;
    }
    return n;
}

/* Reader r of d = MAXPOOL2D_BWD(g, idx) reads (g, idx) in its place. */
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
        int n = conv_readers(p, live, d, readers);
        for (int i = 0; i < n; i++)
            if (rewrite(p, readers[i], d)) {
                free(readers);
                return -1;
            }
        if (n) live[d] = 0;
        fused += n;
    }
    free(readers);
    return fused;
}
