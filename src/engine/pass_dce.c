/* pass_dce.c — dead-code elimination: a node is live when an assign or a
 * fetch needs it, directly or through its consumers. One reverse walk (call
 * order is topological). Dead nodes get no kernel and no memory.
 * Also the questions about a node's readers that the rewriting passes and
 * the memory plan share: does it escape the step (fetched, assigned), which
 * live node alone reads it, and is it a view that merely renames its operand. */
#include <string.h>

#include "engine/plan.h"

int xt_plan_escapes(const xt_plan *p, int c) {
    for (int i = 0; i < p->nassign; i++)
        if (p->assigns[i].t == c) return 1;
    for (int i = 0; i < p->nfetch; i++)
        if (p->fetch_nodes[i] == c) return 1;
    return 0;
}

int xt_plan_sole_reader(const xt_plan *p, const uint8_t *live, int c) {
    int who = -1;
    for (int i = c + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i]) continue;
        for (int k = 0; k < n->nin; k++)
            if (p->operands[n->in_off + k] == c) {
                if (who >= 0) return -1;
                who = i;
            }
    }
    return who;
}

int xt_plan_renames_whole(const xt_plan *p, int v) {
    const xt_node *n = &p->nodes[v];
    if (n->op != XT_OP_VIEW || n->iattr[0] != 0) return 0;
    const xt_node *b = &p->nodes[p->operands[n->in_off]];
    return n->dtype == b->dtype && xt_numel(n) == xt_numel(b);
}

int xt_pass_live(const xt_plan *p, uint8_t *live) {
    memset(live, 0, (size_t)p->nnodes);
    for (int i = 0; i < p->nassign; i++) live[p->assigns[i].t] = 1;
    for (int i = 0; i < p->nfetch; i++) live[p->fetch_nodes[i]] = 1;
    int count = 0;
    for (int i = p->nnodes - 1; i >= 0; i--) {
        if (!live[i]) continue;
        count++;
        const xt_node *n = &p->nodes[i];
        for (int k = 0; k < n->nin; k++) live[p->operands[n->in_off + k]] = 1;
    }
    return count;
}
