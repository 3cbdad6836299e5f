/* pass_share.c — hand-offs between pairs of kernels: a piece of the plan's
 * state area that one kernel fills and a later kernel of the same step reads
 * instead of computing the same thing again.
 *
 * The pair: a convolution's backward-data and weight gradient that unpool
 * the same pool gradient in one micro-batch run (k_unpool2.share): the
 * second takes the tile's scattered dy, in its blocked layout, from the
 * first. It computes from the same values, so the plan gives the same bits
 * with or without the hand-off; the kernels check that what they are
 * handed is the block they need (conv_direct.c).
 * Tried and not kept: a dropout keeping its mask for its backward (a byte
 * per element) instead of the backward drawing it again (exec_ops.c says
 * what it measured).
 *
 * The state area is not part of the memory plan: nothing else writes it
 * during a step, and a hand-off lives from its first kernel to its second,
 * within one tile.
 *
 * Is not: running the kernels (exec_ops.c) or sizing the buffer
 * (xt_kernel_unpool2_share_bytes).
 */
#include "engine/plan.h"

static void give(xt_plan *p, int a, size_t bytes) {
    p->kernels[a].share_off = (int64_t)p->state_bytes;
    p->state_bytes += (bytes + 63) & ~(size_t)63;
}

static const xt_node *node_of(const xt_plan *p, int k) {
    return p->kernels[k].group < 0 ? &p->nodes[p->kernels[k].node] : NULL;
}

/* Within each micro-batch run: backward-data, then the first weight
 * gradient after it that unpools the same gradient of the same convolution. */
static int pair_unpool2(xt_plan *p) {
    int pairs = 0;
    for (int r = 0; r < p->nruns; r++)
        for (int a = p->runs[r].first; a <= p->runs[r].last; a++) {
            const xt_node *na = node_of(p, a);
            if (!na || na->op != XT_OP_CONV2D_BWD_DATA_UNPOOL2) continue;
            for (int b = a + 1; b <= p->runs[r].last; b++) {
                const xt_node *nb = node_of(p, b);
                if (!nb || p->kernels[b].share_off >= 0) continue;
                size_t bytes = xt_kernel_unpool2_share_bytes(p, na, nb, p->runs[r].rows);
                if (!bytes) continue;
                give(p, a, bytes);
                p->kernels[b].share_off = p->kernels[a].share_off;
                pairs++;
                break;
            }
        }
    return pairs;
}

/* Every kernel's share_off is -1 when it is made (pass_fuse.c). */
int xt_pass_share(xt_plan *p) {
    return pair_unpool2(p);
}
