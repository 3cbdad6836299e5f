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

/* Build the program of one group: members[0..m) in order. */
static int build_group(xt_plan *p, xt_ew_group *grp, const int32_t *members, int m, const uint8_t *needed_outside) {
    const xt_node *first = &p->nodes[members[0]];
    grp->rank = first->rank;
    memcpy(grp->shape, first->shape, sizeof grp->shape);
    grp->inputs = malloc((size_t)(2 * m) * sizeof *grp->inputs);
    grp->outputs = malloc((size_t)m * sizeof *grp->outputs);
    grp->instr = malloc((size_t)m * sizeof *grp->instr);
    if (!grp->inputs || !grp->outputs || !grp->instr) return -1;

    XT_CHECK(m <= XT_FUSE_MAX_MEMBERS);
    /* last use (instruction index) of each member inside the group */
    int last_use[XT_FUSE_MAX_MEMBERS], reg_of[XT_FUSE_MAX_MEMBERS], out_of[XT_FUSE_MAX_MEMBERS];
    for (int j = 0; j < m; j++) {
        last_use[j] = -1;
        out_of[j] = needed_outside[j] ? grp->noutputs++ : -1;
        if (out_of[j] >= 0) grp->outputs[out_of[j]] = members[j];
    }
    for (int j = 0; j < m; j++) {
        const xt_node *n = &p->nodes[members[j]];
        for (int k = 0; k < n->nin; k++)
            for (int q = 0; q < j; q++)
                if (members[q] == p->operands[n->in_off + k]) last_use[q] = j;
    }
    int reg_busy[XT_FUSE_MAX_MEMBERS] = {0}; /* a register per member at most */
    for (int j = 0; j < m; j++) {
        const xt_node *n = &p->nodes[members[j]];
        xt_ew_instr *ins = &grp->instr[grp->ninstr++];
        memset(ins, 0, sizeof *ins);
        ins->op = n->op;
        for (int k = 0; k < n->nin && k < 2; k++) {
            int32_t src = p->operands[n->in_off + k];
            int q = -1;
            for (int t = 0; t < j; t++)
                if (members[t] == src) q = t;
            int8_t kind;
            int16_t idx;
            if (q >= 0 && out_of[q] < 0) {
                kind = XT_OPND_REG;
                idx = (int16_t)reg_of[q];
            } else {
                /* an external input — or an earlier member already written
                 * to memory, which is read back like an input */
                kind = XT_OPND_INPUT;
                int found = -1;
                for (int t = 0; t < grp->ninputs; t++)
                    if (grp->inputs[t] == src) found = t;
                if (found < 0) {
                    found = grp->ninputs++;
                    grp->inputs[found] = src;
                }
                idx = (int16_t)found;
            }
            if (k == 0) { ins->akind = kind; ins->a = idx; }
            else { ins->bkind = kind; ins->b = idx; }
        }
        /* free registers whose value is dead after this instruction */
        for (int q = 0; q < j; q++)
            if (out_of[q] < 0 && last_use[q] == j) reg_busy[reg_of[q]] = 0;
        if (out_of[j] >= 0) {
            ins->dst = (int16_t)(-1 - out_of[j]);
        } else {
            int r = 0;
            while (reg_busy[r]) r++;
            XT_CHECK(r < m);
            reg_busy[r] = 1;
            reg_of[j] = r;
            ins->dst = (int16_t)r;
            if (r + 1 > grp->nregs) grp->nregs = r + 1;
        }
    }
    return 0;
}

int xt_pass_fuse(xt_plan *p, const uint8_t *live, int fuse) {
    int n = p->nnodes;
    /* consumers outside a node's group are decided after grouping; first
     * count every live consumer, and mark nodes the step's outputs need */
    int32_t *group_of = p->group_of;
    for (int i = 0; i < n; i++) group_of[i] = -1;
    uint8_t *is_out = calloc((size_t)n, 1);
    int32_t *members = malloc((size_t)n * sizeof *members);
    p->kernels = malloc((size_t)(n + 1) * sizeof *p->kernels);
    p->groups = calloc((size_t)n + 1, sizeof *p->groups);
    if (!is_out || !members || !p->kernels || !p->groups) goto oom;
    for (int i = 0; i < p->nassign; i++) is_out[p->assigns[i].t] = 1;
    for (int i = 0; i < p->nfetch; i++) is_out[p->fetch_nodes[i]] = 1;

    /* 1. form runs */
    int ngroups = 0, cur = -1, cur_len = 0;
    const xt_node *cur_shape = NULL;
    for (int i = 0; i < n; i++) {
        const xt_node *nd = &p->nodes[i];
        if (!live[i] || is_free(nd)) continue;
        if (is_ew(nd)) {
            if (fuse && cur >= 0 && cur_len < XT_FUSE_MAX_MEMBERS && xt_same_shape(cur_shape, nd) &&
                !reads_group_through_alias(p, i, cur, group_of)) {
                group_of[i] = cur;
                cur_len++;
                continue;
            }
            cur = ngroups++;
            cur_len = 1;
            cur_shape = nd;
            group_of[i] = cur;
        } else {
            cur = -1;
        }
    }
    /* 2. a member is a group output when read outside its group */
    for (int i = 0; i < n; i++) {
        if (!live[i]) continue;
        const xt_node *nd = &p->nodes[i];
        for (int k = 0; k < nd->nin; k++) {
            int32_t src = p->operands[nd->in_off + k];
            if (group_of[src] >= 0 && group_of[src] != group_of[i]) is_out[src] = 1;
        }
    }
    /* 3. kernels in order; build each group's program at its first member */
    p->nkernels = 0;
    p->ngroups = ngroups;
    for (int i = 0; i < n; i++) {
        const xt_node *nd = &p->nodes[i];
        if (!live[i] || is_free(nd)) continue;
        int gi = group_of[i];
        if (gi < 0) {
            p->kernels[p->nkernels++] = (xt_kernel){i, -1};
            continue;
        }
        if (p->groups[gi].instr) continue; /* already emitted */
        int m = 0;
        uint8_t outside[XT_FUSE_MAX_MEMBERS];
        for (int j = i; j < n; j++)
            if (group_of[j] == gi) {
                XT_CHECK(m < XT_FUSE_MAX_MEMBERS);
                outside[m] = is_out[j];
                members[m++] = j;
            }
        if (build_group(p, &p->groups[gi], members, m, outside)) goto oom;
        p->kernels[p->nkernels++] = (xt_kernel){members[m - 1], gi};
        if (m > 1) p->fused_kernels++;
    }
    free(is_out);
    free(members);
    return 0;
oom:
    free(is_out);
    free(members);
    return -1;
}
