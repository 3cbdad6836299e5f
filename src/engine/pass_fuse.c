/* pass_fuse.c — elementwise fusion.
 *
 * A group is a maximal run of live elementwise nodes of one shape that are
 * consecutive in call order, ignoring dead nodes and nodes that need no
 * kernel (leaves, constants, views). This catches what matters in these
 * models because the layer and optimizer code emit each chain together:
 * bias add + ReLU, BN apply + ReLU, the SGD/Adam update of one parameter.
 *
 * Convexity. A group runs chunk by chunk, every member on elements [c, c+m)
 * before any member on the next chunk, so a member may only read another
 * member element for element. Call order is topological and every live
 * kernel between two members ends the run, so the only path that can leave
 * the group and come back passes through kernel-less nodes: a view of a
 * member (a window at an offset, or a broadcast of one element) read by a
 * later candidate would read elements of a later chunk that are not yet
 * written. The run therefore ends at a candidate that reaches a member of
 * the current group through any kernel-less node.
 *
 * Members that something outside the group reads (another kernel, a view, an
 * assign or a fetch) are the group's outputs and are written to memory; the
 * rest live only in chunk registers. Inputs are everything else the members
 * read, broadcast where their shape is smaller.
 *
 * Per-channel sums. Batch norm's backward sums g and g*x per channel
 * (SUM_TO to [1, C, 1, 1]) right where a group makes them; as kernels of
 * their own, each sum ended the group and read its operand back from memory,
 * and the product g*x was written only to be summed. A SUM_TO of a member
 * joins the group instead (absorbable_sum): the interpreter adds each plane
 * of the member's chunk to its channel as the chunk is done (ew.c), with
 * SUM_TO's bits, and the member stays in a register when nothing else needs
 * it. A sum of a value the group reads from memory (a convolution's output
 * gradient, which the group scales next) joins it too, so that value is
 * read once. A sum is complete only after the group's last chunk, so a
 * candidate that reads one (directly or through a view) starts a new group.
 * The gain shows in ResNet-20's backward, kernel by kernel (train_bench
 * models/resnet20.yaml --kernels 20); the design note is
 * src/engine/README.md ("Fusion by contiguous runs").
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"

#include "util/check.h"

/* A tuning choice, not a safety limit: longer groups need more chunk
 * registers (at most one per member), and 20 keeps them in L1. The
 * program's operand fields are int16, which this bound also keeps. */
#define XT_FUSE_MAX_MEMBERS 20
_Static_assert(2 * XT_FUSE_MAX_MEMBERS < INT16_MAX, "group operand indices are int16");

static int is_ew(const xt_node *n) { return xt_op_table[n->op].kind == XT_KIND_EW; }
static int is_free(const xt_node *n) { return xt_op_table[n->op].kind == XT_KIND_FREE; }

/* Does node i read a member of group `cur` through a kernel-less node (a
 * view, or a chain of them)? See "Convexity" above. */
static int reads_group_through_alias(const xt_plan *p, int i, int cur, const int32_t *group_of) {
    const xt_node *nd = &p->nodes[i];
    for (int k = 0; k < nd->nin; k++) {
        int32_t src = p->operands[nd->in_off + k];
        int through_alias = 0;
        while (is_free(&p->nodes[src]) && p->nodes[src].nin > 0) {
            src = p->operands[p->nodes[src].in_off];
            through_alias = 1;
        }
        if (through_alias && group_of[src] == cur) return 1;
    }
    return 0;
}

static int is_sum(const xt_node *n) { return n->op == XT_OP_SUM_TO; }

/* Does node i read a per-channel sum that group `cur` computes, directly or
 * through kernel-less nodes? It would read it before the group finished it. */
static int reads_group_sum(const xt_plan *p, int i, int cur, const int32_t *group_of) {
    const xt_node *nd = &p->nodes[i];
    for (int k = 0; k < nd->nin; k++) {
        int32_t src = p->operands[nd->in_off + k];
        for (;;) {
            if (group_of[src] == cur && is_sum(&p->nodes[src])) return 1;
            if (!is_free(&p->nodes[src]) || p->nodes[src].nin == 0) break;
            src = p->operands[p->nodes[src].in_off];
        }
    }
    return 0;
}

/* Is node i a SUM_TO a group of `shape`'s shape can take: over every dim
 * but the channel of an [N, C, H, W] fp32 value of that shape, whose planes
 * fit one interpreter chunk, and not written into a slot (an assign's
 * in-place check knows members only)? */
static int sum_fits(const xt_plan *p, int i, const xt_node *shape) {
    const xt_node *nd = &p->nodes[i];
    if (!is_sum(nd) || nd->nin != 1) return 0;
    const xt_node *x = &p->nodes[p->operands[nd->in_off]];
    const int32_t *S = shape->shape;
    if (shape->rank != 4 || nd->rank != 4 || S[1] < 2 || x->dtype != XT_F32 || !xt_same_shape(x, shape)) return 0;
    if (nd->shape[0] != 1 || nd->shape[1] != S[1] || nd->shape[2] != 1 || nd->shape[3] != 1) return 0;
    if ((int64_t)S[2] * S[3] > xt_ew_max_sum_plane()) return 0;
    for (int a = 0; a < p->nassign; a++)
        if (p->assigns[a].t == i) return 0;
    return 1;
}

/* May SUM_TO node i join the open group `cur`? When it fits and sums a
 * member, or a value of the group's shape made before the group (a kernel
 * between would have ended the group), not another sum. */
static int absorbable_sum(const xt_plan *p, int i, int cur, const xt_node *cur_shape, const int32_t *group_of) {
    if (cur < 0 || !sum_fits(p, i, cur_shape)) return 0;
    int32_t src = p->operands[p->nodes[i].in_off];
    return !(group_of[src] == cur && is_sum(&p->nodes[src]));
}

/* Where instruction j reads operand `src` from: the register of an earlier
 * member that lives only in registers, or else a group input (an external
 * value, or an earlier member already written to memory, read back like an
 * input; added to the input list on first use). */
static int16_t operand_of(xt_ew_group *grp, const int32_t *members, int j, const int *out_of, const int *reg_of,
                          int32_t src, int8_t *kind) {
    for (int q = j - 1; q >= 0; q--)
        if (members[q] == src && out_of[q] < 0) {
            *kind = XT_OPND_REG;
            return (int16_t)reg_of[q];
        }
    *kind = XT_OPND_INPUT;
    for (int t = 0; t < grp->ninputs; t++)
        if (grp->inputs[t] == src) return (int16_t)t;
    grp->inputs[grp->ninputs] = src;
    return (int16_t)grp->ninputs++;
}

/* Build the program of one group: members[0..m) in order; a member that
 * something outside reads (needed_outside) is written to memory, the rest
 * get a chunk register, freed after its last use. A sum member is no
 * instruction: it is an output the interpreter adds the summed member's
 * chunk into after the program ran on it, so that member's register is
 * never freed. */
static int build_group(xt_plan *p, xt_ew_group *grp, const int32_t *members, int m, const uint8_t *needed_outside) {
    XT_CHECK(m >= 1 && m <= XT_FUSE_MAX_MEMBERS);
    int f = 0;
    while (f < m - 1 && is_sum(&p->nodes[members[f]])) f++;
    const xt_node *first = &p->nodes[members[f]]; /* the first elementwise member: the group's shape */
    XT_CHECK(!is_sum(first));
    grp->rank = first->rank;
    memcpy(grp->shape, first->shape, sizeof grp->shape);
    grp->inputs = malloc((size_t)(2 * m) * sizeof *grp->inputs);
    grp->outputs = malloc((size_t)m * sizeof *grp->outputs);
    grp->instr = calloc((size_t)m, sizeof *grp->instr);
    grp->sums = calloc((size_t)m, sizeof *grp->sums);
    if (!grp->inputs || !grp->outputs || !grp->instr || !grp->sums) return -1;
    int last_use[XT_FUSE_MAX_MEMBERS], reg_of[XT_FUSE_MAX_MEMBERS], out_of[XT_FUSE_MAX_MEMBERS];
    int reg_busy[XT_FUSE_MAX_MEMBERS] = {0}; /* a register per member at most */
    for (int j = 0; j < m; j++) {
        const xt_node *n = &p->nodes[members[j]];
        last_use[j] = -1;
        out_of[j] = needed_outside[j] || is_sum(n) ? grp->noutputs++ : -1;
        if (out_of[j] >= 0) grp->outputs[out_of[j]] = members[j];
        for (int k = 0; k < n->nin; k++)
            for (int q = 0; q < j; q++)
                if (members[q] == p->operands[n->in_off + k] && last_use[q] < m) last_use[q] = is_sum(n) ? m : j;
    }
    for (int j = 0; j < m; j++) {
        const xt_node *n = &p->nodes[members[j]];
        if (is_sum(n)) {
            xt_ew_sum *sm = &grp->sums[grp->nsums++];
            sm->src = operand_of(grp, members, j, out_of, reg_of, p->operands[n->in_off], &sm->kind);
            sm->out = (int16_t)out_of[j];
            continue;
        }
        xt_ew_instr *ins = &grp->instr[grp->ninstr++];
        ins->op = n->op;
        ins->a = operand_of(grp, members, j, out_of, reg_of, p->operands[n->in_off], &ins->akind);
        if (n->nin > 1) ins->b = operand_of(grp, members, j, out_of, reg_of, p->operands[n->in_off + 1], &ins->bkind);
        for (int q = 0; q < j; q++) /* free registers whose value is dead after this instruction */
            if (out_of[q] < 0 && last_use[q] == j) reg_busy[reg_of[q]] = 0;
        if (out_of[j] >= 0) {
            ins->dst = (int16_t)(-1 - out_of[j]);
            continue;
        }
        int r = 0;
        while (reg_busy[r]) r++;
        XT_CHECK(r < m);
        reg_busy[r] = 1;
        reg_of[j] = r;
        ins->dst = (int16_t)r;
        if (r + 1 > grp->nregs) grp->nregs = r + 1;
    }
    return 0;
}

/* Step 1: assign live elementwise nodes to groups (group_of); returns the
 * number of groups. A SUM_TO that no group is open to take (its operand
 * made by the kernel just before, a convolution's backward, say) waits as
 * `pending`: if the next live node starts a group of its operand's shape
 * that does not read the sum, it is that group's first member, run at its
 * own place. */
static int form_runs(xt_plan *p, const uint8_t *live, int fuse) {
    int32_t *group_of = p->group_of;
    int ngroups = 0, cur = -1, cur_len = 0, pending = -1;
    const xt_node *cur_shape = NULL;
    for (int i = 0; i < p->nnodes; i++) {
        const xt_node *nd = &p->nodes[i];
        group_of[i] = -1;
        if (!live[i] || is_free(nd)) continue;
        if (fuse && cur_len < XT_FUSE_MAX_MEMBERS && absorbable_sum(p, i, cur, cur_shape, group_of)) {
            group_of[i] = cur;
            cur_len++;
            continue;
        }
        int waiting = pending;
        pending = -1;
        if (!is_ew(nd)) {
            cur = -1; /* a kernel ends the run */
            if (fuse && sum_fits(p, i, &p->nodes[p->operands[nd->in_off]])) pending = i;
            continue;
        }
        if (fuse && cur >= 0 && cur_len < XT_FUSE_MAX_MEMBERS && xt_same_shape(cur_shape, nd) &&
            !reads_group_through_alias(p, i, cur, group_of) && !reads_group_sum(p, i, cur, group_of)) {
            group_of[i] = cur;
            cur_len++;
            continue;
        }
        cur = ngroups++;
        cur_len = 1;
        cur_shape = nd;
        group_of[i] = cur;
        if (waiting >= 0 && xt_same_shape(&p->nodes[p->operands[p->nodes[waiting].in_off]], nd)) {
            group_of[waiting] = cur; /* the group's only sum so far: does its first member read it? */
            if (reads_group_sum(p, i, cur, group_of)) group_of[waiting] = -1;
            else cur_len++;
        }
    }
    return ngroups;
}

/* Does member list seg (of group g) read a value of the group's full shape
 * from outside group g that list pre reads too? Such a value is a stream
 * from memory both would read. */
static int shares_stream(const xt_plan *p, const int32_t *pre, int npre, const int32_t *seg, int nseg, int g,
                         const int32_t *group_of) {
    for (int a = 0; a < nseg; a++) {
        const xt_node *m = &p->nodes[seg[a]];
        for (int k = 0; k < m->nin; k++) {
            int32_t v = p->operands[m->in_off + k];
            if (group_of[v] == g || !xt_same_shape(&p->nodes[v], m)) continue;
            for (int b = 0; b < npre; b++) {
                const xt_node *q = &p->nodes[pre[b]];
                for (int j = 0; j < q->nin; j++)
                    if (p->operands[q->in_off + j] == v) return 1;
            }
        }
    }
    return 0;
}

/* Where a sum joined group g mid-way (members[k] a sum, an elementwise
 * member before it since the last cut and one after it), may the members
 * after it stay? Only if they, up to and with the next sum, read a
 * full-size value from memory that the members since the last cut read too:
 * then the group reads it once. Otherwise they start a group, as they did
 * when the sum was a kernel. Decided on group g's ids before any cut, so a
 * member read on both sides counts as the group's own, not as a stream.
 * Compared on ResNet-20 kernel by kernel (train_bench models/resnet20.yaml
 * --kernels 20): a block's BN backward, which re-reads the activation, is
 * faster merged (the activation is read once); the residual gradient's,
 * which shares nothing, is slower merged (more streams at once, no fewer
 * bytes from memory). */
static int cuts_after(const xt_plan *p, const int32_t *members, int m, int start, int k, int g, const int32_t *group_of) {
    if (!is_sum(&p->nodes[members[k]]) || k + 1 >= m || is_sum(&p->nodes[members[k + 1]])) return 0;
    int ew_before = 0;
    for (int j = start; j < k; j++) ew_before |= !is_sum(&p->nodes[members[j]]);
    if (!ew_before) return 0;
    int end = k + 1;
    while (end < m && !is_sum(&p->nodes[members[end]])) end++;
    if (end < m) end++;
    return !shares_stream(p, members + start, k - start, members + k + 1, end - (k + 1), g, group_of);
}

/* Step 1b: cut groups after sums (cuts_after). A group's members are
 * consecutive among the live kernel nodes (form_runs), so one walk finds
 * each group's list. */
static int split_after_sums(xt_plan *p, const uint8_t *live, int ngroups, int32_t *members, int32_t *cut_to) {
    int32_t *group_of = p->group_of;
    int m = 0;
    for (int i = 0; i <= p->nnodes; i++) {
        int g = i < p->nnodes && live[i] ? group_of[i] : -1;
        if (i < p->nnodes && (g < 0 || (m && group_of[members[0]] == g))) {
            if (g >= 0) members[m++] = i;
            continue;
        }
        if (m) { /* the list of group_of[members[0]] is complete */
            int g0 = group_of[members[0]], start = 0, n_cut = 0;
            for (int k = 0; k < m; k++)
                if (cuts_after(p, members, m, start, k, g0, group_of)) cut_to[n_cut++] = k + 1, start = k + 1;
            for (int c = 0; c < n_cut; c++) {
                int ng = ngroups++;
                for (int j = cut_to[c]; j < m; j++) group_of[members[j]] = ng;
            }
        }
        m = 0;
        if (i < p->nnodes) members[m++] = i;
    }
    return ngroups;
}

/* Step 2: a member is a group output when the step's outputs need it or a
 * live node outside its group reads it. */
static void mark_group_outputs(const xt_plan *p, const uint8_t *live, uint8_t *is_out) {
    for (int i = 0; i < p->nassign; i++) is_out[p->assigns[i].t] = 1;
    for (int i = 0; i < p->nfetch; i++) is_out[p->fetch_nodes[i]] = 1;
    for (int i = 0; i < p->nnodes; i++) {
        if (!live[i]) continue;
        const xt_node *nd = &p->nodes[i];
        for (int k = 0; k < nd->nin; k++) {
            int32_t src = p->operands[nd->in_off + k];
            if (p->group_of[src] >= 0 && p->group_of[src] != p->group_of[i]) is_out[src] = 1;
        }
    }
}

/* Step 3: kernels in order; each group's program is built at its first
 * member and runs at its last member's place. */
static int emit_kernels(xt_plan *p, const uint8_t *live, const uint8_t *is_out, int32_t *members) {
    p->nkernels = 0;
    for (int i = 0; i < p->nnodes; i++) {
        if (!live[i] || is_free(&p->nodes[i])) continue;
        int gi = p->group_of[i];
        if (gi < 0) {
            p->kernels[p->nkernels++] = (xt_kernel){.node = i, .group = -1, .run = -1, .state_off = -1, .share_off = -1};
            continue;
        }
        if (p->groups[gi].instr) continue; /* already emitted */
        int m = 0;
        uint8_t outside[XT_FUSE_MAX_MEMBERS];
        for (int j = i; j < p->nnodes; j++)
            if (p->group_of[j] == gi) {
                XT_CHECK(m < XT_FUSE_MAX_MEMBERS);
                outside[m] = is_out[j];
                members[m++] = j;
            }
        if (build_group(p, &p->groups[gi], members, m, outside)) return -1;
        int last = m - 1; /* the kernel's node: its last elementwise member (shape, name) */
        while (is_sum(&p->nodes[members[last]])) last--;
        p->kernels[p->nkernels++] = (xt_kernel){.node = members[last], .group = gi, .run = -1, .state_off = -1, .share_off = -1};
        if (m > 1) p->fused_kernels++;
    }
    return 0;
}

int xt_pass_fuse(xt_plan *p, const uint8_t *live, int fuse) {
    int n = p->nnodes;
    uint8_t *is_out = calloc((size_t)n + 1, 1);
    int32_t *members = malloc(((size_t)n + 1) * sizeof *members);
    p->kernels = malloc(((size_t)n + 1) * sizeof *p->kernels);
    p->groups = calloc((size_t)n + 1, sizeof *p->groups);
    if (!is_out || !members || !p->kernels || !p->groups) goto oom;
    p->ngroups = form_runs(p, live, fuse);
    int32_t *cut_to = malloc(((size_t)n + 1) * sizeof *cut_to);
    if (!cut_to) goto oom;
    p->ngroups = split_after_sums(p, live, p->ngroups, members, cut_to);
    free(cut_to);
    mark_group_outputs(p, live, is_out);
    if (emit_kernels(p, live, is_out, members)) goto oom;
    free(is_out);
    free(members);
    return 0;
oom:
    free(is_out);
    free(members);
    return -1;
}
