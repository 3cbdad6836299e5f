/* pass_sum_pool.c — a per-channel sum of a max pool's backward reads the
 * pooled gradient instead.
 *
 * The bias gradient of a convolution that a max pool follows is
 * SUM_TO(MAXPOOL2D_BWD(g, idx)) over the batch and both spatial dims. The
 * pool's backward puts each g[n][c][w] in one cell of the same (n, c) plane
 * (idx[n][c][w]; overlapping windows add into a cell) and zeros elsewhere,
 * so the per-channel sum is the sum of g: a quarter of the elements for a
 * 2x2 pool, and wide_cnn's conv2 bias gradient no longer reads the 18.9 MB
 * backward whole (nor, under bf16, does anything but the cast to bf16).
 *
 * The numbers: the same terms less the zeros, in another order. SUM_TO adds
 * in double and rounds once (kernels/reduce.c), so the result is the sum of
 * the same floats rounded to float either way, except when the double sums
 * of the two orders round apart; -0 terms can come out as +0.
 *
 * Only sums that keep the channel alone (output [1, C, 1, 1]) or nothing
 * (one element): a sum keeping a spatial dim would see where the scatter
 * puts each term. Runs after the conv epilogues, whose ReLU swap makes the
 * pool's backward the value the bias gradient sums (pass_conv_epilogue.c);
 * off with fusion off or the engine's literal_sums (the tests that compare
 * the other passes bit for bit with an unfused plan).
 *
 * Is not: any other algebraic rewrite.
 */
#include "engine/plan.h"

static int sums_channels(const xt_node *sum, const xt_node *x) {
    if (xt_numel(sum) == 1) return 1;
    return x->rank == 4 && sum->rank == 4 && sum->shape[0] == 1 && sum->shape[1] == x->shape[1] &&
           sum->shape[2] == 1 && sum->shape[3] == 1;
}

/* Is node b fetched, assigned or read by a live node? */
static int still_needed(const xt_plan *p, const uint8_t *live, int b) {
    if (xt_plan_escapes(p, b)) return 1;
    for (int i = b + 1; i < p->nnodes; i++)
        if (live[i])
            for (int k = 0; k < p->nodes[i].nin; k++)
                if (p->operands[p->nodes[i].in_off + k] == b) return 1;
    return 0;
}

int xt_pass_sum_through_pool(xt_plan *p, uint8_t *live) {
    int rewritten = 0;
    for (int s = 0; s < p->nnodes; s++) {
        xt_node *sum = &p->nodes[s];
        if (!live[s] || sum->op != XT_OP_SUM_TO || sum->nin != 1) continue;
        int32_t *in = &p->operands[sum->in_off], b = *in;
        const xt_node *bwd = &p->nodes[b];
        if (bwd->op != XT_OP_MAXPOOL2D_BWD || !sums_channels(sum, bwd)) continue;
        int32_t g = p->operands[bwd->in_off]; /* the pooled gradient: the backward's N and C */
        if (p->nodes[g].dtype != XT_F32) continue;
        *in = g;
        rewritten++;
        if (!still_needed(p, live, b)) live[b] = 0; /* read by nothing else: not computed */
    }
    return rewritten;
}
