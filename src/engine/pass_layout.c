/* pass_layout.c — layout assignment: which values are written in a
 * channel-blocked layout (nChw8c / nChw16c) instead of NCHW, because every
 * kernel that reads them wants them so.
 *
 * A value is blocked when its producer can write the layout and each of its
 * readers reads that same layout without a reorder; then the reorder a
 * library row made on every call (oneDNN's, into its own layout) is gone, and
 * the producer pays only a transpose in cache. Everything else stays NCHW,
 * so a boundary never needs a reorder node: there is no value whose producer
 * and readers disagree.
 *
 * What is assigned today: the gradient at a convolution's output that batch
 * norm's statistics gradient writes (BN_STATS_BWD, plain or with its
 * epilogue), when it is read only by that convolution's backward-data and
 * weight-gradient passes and both run on a oneDNN row that wants dy in the
 * same nChw{B}c (k_impl_ddst_block). In ResNet that is the dy of every
 * convolution after a batch norm on a blocked row: two reorders of the same
 * tensor per convolution, gone. The pass runs after the kernel choice (the
 * layouts follow the chosen rows) and times nothing again.
 *
 * Why not more yet: a forward activation is read by BN_STATS, by the fused
 * elementwise groups (batch norm's apply, the residual) and by the next
 * convolution's prologue, so blocking it needs blocked forms of all of them
 * (src/engine/README.md, "Layout assignment": what is built and what is
 * left). The same decision rule extends to them: add the producer to
 * `writes_blocked` and the reader to `reads_blocked`.
 *
 * Values keep their bits: the producer computes the same values and only
 * places them differently, and a library row given dy in its own layout
 * computes what it computed after its reorder. XLATRAIN_NO_LAYOUT=1 turns
 * the pass off (the engine's no_layout) for bisecting and measuring.
 */
#include <stdlib.h>

#include "engine/plan.h"
#include "kernels/impl.h"

/* Can node v's kernel write its value blocked? */
static int writes_blocked(const xt_plan *p, int v) {
    const xt_node *n = &p->nodes[v];
    return n->op == XT_OP_BN_STATS_BWD && n->dtype == XT_F32 && n->rank == 4 && p->group_of[v] < 0;
}

/* The block in which reader r takes its operand k without a reorder, 0: NCHW only. */
static int reads_blocked(const xt_plan *p, int r, int k) {
    const xt_node *n = &p->nodes[r];
    int dy = n->op == XT_OP_CONV2D_BWD_DATA ? 0 : n->op == XT_OP_CONV2D_BWD_WEIGHT ? 1 : -1;
    if (k != dy || !p->choice[r].impl || p->group_of[r] >= 0) return 0;
    k_op_desc d;
    xt_choice_op_desc(p, r, &d);
    return k_impl_ddst_block(p->choice[r].impl, &d);
}

/* Is node r a view that renames its operand whole, with the same shape? Then
 * its readers read the operand's elements where they are, in its layout. */
static int renames_same_shape(const xt_plan *p, int r) {
    if (!xt_plan_renames_whole(p, r)) return 0;
    const xt_node *n = &p->nodes[r], *b = &p->nodes[xt_plan_operand(p, r, 0)];
    if (n->rank != b->rank) return 0;
    for (int d = 0; d < n->rank; d++)
        if (n->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* a merged with b: the block both agree on; 0 none asked yet; -1 NCHW */
static int agree(int a, int b) { return a < 0 || b < 0 ? -1 : !a ? b : !b || a == b ? a : -1; }

int xt_pass_layout(xt_plan *p, const uint8_t *live) {
    /* per node: the block its readers agree on (0 none yet, -1 some reader wants NCHW),
     * and for a renaming view, the value it renames (else -1) */
    int *want = calloc((size_t)p->nnodes + 1, sizeof *want), *base = malloc(((size_t)p->nnodes + 1) * sizeof *base);
    if (!want || !base) {
        free(want), free(base);
        return -1;
    }
    for (int r = 0; r < p->nnodes; r++) {
        base[r] = live[r] && renames_same_shape(p, r) ? xt_plan_operand(p, r, 0) : -1;
        if (!live[r] || base[r] >= 0) continue;
        const xt_node *n = &p->nodes[r];
        for (int k = 0; k < n->nin; k++) {
            int v = xt_plan_operand(p, r, k), b = reads_blocked(p, r, k);
            want[v] = agree(want[v], b ? b : -1);
        }
    }
    for (int v = 0; v < p->nnodes; v++)
        if (live[v] && xt_plan_escapes(p, v)) want[v] = -1; /* the host reads it NCHW */
    /* a view's readers are its value's (a view of a view folds first: it comes later) */
    for (int r = p->nnodes - 1; r >= 0; r--)
        if (base[r] >= 0) want[base[r]] = agree(want[base[r]], want[r]);
    int blocked = 0;
    for (int v = 0; v < p->nnodes; v++) {
        int b = v;
        while (base[b] >= 0) b = base[b];
        if (!live[v] || want[b] <= 0 || !writes_blocked(p, b) || p->nodes[b].shape[1] % want[b] != 0) continue;
        if (!p->layout && !(p->layout = calloc((size_t)p->nnodes, 1))) {
            free(want), free(base);
            return -1;
        }
        p->layout[v] = (int8_t)want[b];
        blocked += b == v;
    }
    free(want), free(base);
    return blocked;
}
