/* pass_memplan.c — static memory planning: every value gets a location
 * before the first step runs, so a step allocates nothing.
 *
 * 1. Roots. Leaves live in their store slot, constants in the plan, views
 *    share their base's root at an offset. A gradient whose only reader is
 *    the all-reduce is written straight into its piece of the all-reduce's
 *    packed buffer (no copy). A value assigned to a slot is written into the
 *    slot itself (in-place update, as XLA's buffer donation) when no later
 *    kernel still reads the slot's old contents; otherwise it is copied at
 *    the end of the step.
 * 2. Liveness. Each arena root lives from the first kernel that writes any
 *    of its aliases to the last kernel that reads one (fetched and late-
 *    assigned values to the end of the step).
 * 3. Placement. Greedy by size (largest first), each at the lowest
 *    64-byte-aligned offset that does not overlap a placed root whose
 *    lifetime overlaps (as TFLite's and ggml-alloc's planners).
 * Conv scratch is one area after the arena, sized to the largest need.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"

typedef struct {
    int kind;        /* xt_loc_kind */
    int slot;
    int64_t size;    /* bytes */
    int first, last; /* kernel indices */
    int64_t offset;  /* placed arena offset */
} root;

typedef struct {
    xt_plan *p;
    root *roots;
    int nroots;
    int32_t *root_of;   /* per node: root index or -1 */
    int64_t *off_of;    /* per node: byte offset inside the root */
    int32_t *kernel_of; /* per node: kernel index that produces it, or -1 */
} mp;

static int new_root(mp *m, int kind, int slot) {
    root *r = &m->roots[m->nroots];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->slot = slot;
    r->first = 1 << 30;
    r->last = -1;
    return m->nroots++;
}

/* Reads of slot s's old contents: leaf s or a view of it. */
static int old_slot_of(const xt_plan *p, int32_t node) {
    const xt_node *n = &p->nodes[node];
    if (n->op == XT_OP_VIEW) n = &p->nodes[p->operands[n->in_off]];
    return n->op == XT_OP_LEAF ? n->iattr[0] : -1;
}

/* Kernel-local operand list: a group's inputs or a node's operands. */
static int kernel_reads(const xt_plan *p, int k, const int32_t **list) {
    const xt_kernel *kr = &p->kernels[k];
    if (kr->group >= 0) {
        *list = p->groups[kr->group].inputs;
        return p->groups[kr->group].ninputs;
    }
    const xt_node *n = &p->nodes[kr->node];
    *list = p->operands + n->in_off;
    return n->nin;
}

/* Index (within its group's program) of the instruction computing node v,
 * and the last instruction reading slot s's old value; for in-place checks. */
static int group_instr_of(const xt_plan *p, const xt_ew_group *g, int32_t v) {
    int out = -1;
    for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == v) out = k;
    for (int j = 0; j < g->ninstr; j++)
        if (g->instr[j].dst == -1 - out) return j;
    return -1;
}
static int group_last_read_of_slot(const xt_plan *p, const xt_ew_group *g, int s) {
    int last = -1;
    for (int j = 0; j < g->ninstr; j++) {
        const xt_ew_instr *in = &g->instr[j];
        if (in->akind == XT_OPND_INPUT && old_slot_of(p, g->inputs[in->a]) == s) last = j;
        if (xt_op_table[in->op].arity == 2 && in->bkind == XT_OPND_INPUT && old_slot_of(p, g->inputs[in->b]) == s) last = j;
    }
    return last;
}

int xt_pass_memplan(xt_plan *p, const uint8_t *live, int have_collective) {
    int n = p->nnodes, rc = -1;
    mp m = {.p = p};
    m.roots = calloc((size_t)n + (size_t)p->nassign + 2, sizeof *m.roots);
    m.root_of = malloc((size_t)n * sizeof *m.root_of);
    m.off_of = calloc((size_t)n, sizeof *m.off_of);
    m.kernel_of = malloc((size_t)n * sizeof *m.kernel_of);
    int32_t *last_old_read = NULL;
    int ns = 0;
    for (int i = 0; i < p->nassign; i++)
        if (p->assigns[i].slot + 1 > ns) ns = p->assigns[i].slot + 1;
    for (int i = 0; i < n; i++)
        if (p->nodes[i].op == XT_OP_LEAF && p->nodes[i].iattr[0] + 1 > ns) ns = p->nodes[i].iattr[0] + 1;
    last_old_read = malloc(((size_t)ns + 1) * sizeof *last_old_read);
    p->late_assigns = malloc(((size_t)p->nassign + 1) * sizeof *p->late_assigns);
    if (!m.roots || !m.root_of || !m.off_of || !m.kernel_of || !last_old_read || !p->late_assigns) goto out;
    for (int i = 0; i < n; i++) m.root_of[i] = m.kernel_of[i] = -1;
    for (int i = 0; i < ns; i++) last_old_read[i] = -1;

    /* which kernel produces each node */
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        if (kr->group >= 0) {
            const xt_ew_group *g = &p->groups[kr->group];
            for (int j = 0; j < g->noutputs; j++) m.kernel_of[g->outputs[j]] = k;
        } else {
            m.kernel_of[kr->node] = k;
        }
    }
    /* reads of old slot contents, by kernel; fetches and slot-valued assigns read at the end */
    for (int k = 0; k < p->nkernels; k++) {
        const int32_t *list;
        int cnt = kernel_reads(p, k, &list);
        for (int j = 0; j < cnt; j++) {
            int s = old_slot_of(p, list[j]);
            if (s >= 0 && k > last_old_read[s]) last_old_read[s] = k;
        }
    }
    for (int i = 0; i < p->nfetch; i++) {
        int s = old_slot_of(p, p->fetch_nodes[i]);
        if (s >= 0) last_old_read[s] = p->nkernels;
    }
    for (int i = 0; i < p->nassign; i++) {
        int s = old_slot_of(p, p->assigns[i].t);
        if (s >= 0) last_old_read[s] = p->nkernels;
    }

    /* 1a. in-place assigns */
    uint8_t *fetched = calloc((size_t)n, 1);
    if (!fetched) goto out;
    for (int i = 0; i < p->nfetch; i++) fetched[p->fetch_nodes[i]] = 1;
    p->nlate = 0;
    for (int i = 0; i < p->nassign; i++) {
        int s = p->assigns[i].slot;
        int32_t v = p->assigns[i].t;
        int k = m.kernel_of[v];
        int ok = k >= 0 && m.root_of[v] < 0 && !fetched[v] && p->nodes[v].op != XT_OP_ALLREDUCE;
        for (int j = 0; ok && j < i; j++) ok = p->assigns[j].slot != s && p->assigns[j].t != v;
        if (ok) {
            if (last_old_read[s] > k) ok = 0;
            else if (last_old_read[s] == k) {
                const xt_kernel *kr = &p->kernels[k];
                ok = kr->group >= 0 &&
                     group_last_read_of_slot(p, &p->groups[kr->group], s) <= group_instr_of(p, &p->groups[kr->group], v);
            }
        }
        if (ok) {
            int r = new_root(&m, XT_LOC_SLOT, s);
            m.root_of[v] = r;
        } else {
            p->late_assigns[p->nlate++] = p->assigns[i];
        }
    }
    free(fetched);

    /* 1b. roots for everything else, in order (views after their base) */
    for (int i = 0; i < n; i++) {
        if (!live[i] || m.root_of[i] >= 0) continue;
        const xt_node *nd = &p->nodes[i];
        if (nd->op == XT_OP_LEAF) {
            m.root_of[i] = new_root(&m, XT_LOC_SLOT, nd->iattr[0]);
        } else if (nd->op == XT_OP_CONST) {
            m.root_of[i] = new_root(&m, XT_LOC_CONST, 0);
        } else if (nd->op == XT_OP_VIEW) {
            int32_t b = p->operands[nd->in_off];
            m.root_of[i] = m.root_of[b];
            m.off_of[i] = m.off_of[b] + (int64_t)nd->iattr[0] * 4;
        } else if (m.kernel_of[i] >= 0) {
            int r = new_root(&m, nd->op == XT_OP_ALLREDUCE && have_collective ? XT_LOC_COLLECTIVE : XT_LOC_ARENA, 0);
            m.root_of[i] = r;
            if (nd->op == XT_OP_ALLREDUCE) {
                /* gradients read only here are produced inside its buffer */
                int64_t off = 0;
                for (int k = 0; k < nd->nin; k++) {
                    int32_t gk = p->operands[nd->in_off + k];
                    int consumers = 0;
                    for (int j = gk + 1; j < n; j++) {
                        if (!live[j]) continue;
                        const xt_node *c = &p->nodes[j];
                        for (int q = 0; q < c->nin; q++) consumers += p->operands[c->in_off + q] == gk;
                    }
                    for (int q = 0; q < p->nassign; q++) consumers += p->assigns[q].t == gk;
                    for (int q = 0; q < p->nfetch; q++) consumers += p->fetch_nodes[q] == gk;
                    /* (its own arena root, created above, is left empty and never placed) */
                    if (consumers == 1 && m.kernel_of[gk] >= 0 && m.root_of[gk] >= 0 &&
                        m.roots[m.root_of[gk]].kind == XT_LOC_ARENA) {
                        m.root_of[gk] = r;
                        m.off_of[gk] = off * 4;
                    }
                    off += (xt_numel(&p->nodes[gk]) + 15) & ~(int64_t)15;
                }
            }
        }
    }

    /* 2. sizes and lifetimes of arena roots */
    for (int i = 0; i < n; i++) {
        if (m.root_of[i] < 0 || !live[i]) continue;
        root *r = &m.roots[m.root_of[i]];
        int64_t end = m.off_of[i] + xt_numel(&p->nodes[i]) * 4;
        if (end > r->size) r->size = end;
        if (m.kernel_of[i] >= 0) {
            if (m.kernel_of[i] < r->first) r->first = m.kernel_of[i];
            if (m.kernel_of[i] > r->last) r->last = m.kernel_of[i];
        }
    }
    for (int k = 0; k < p->nkernels; k++) {
        const int32_t *list;
        int cnt = kernel_reads(p, k, &list);
        for (int j = 0; j < cnt; j++) {
            int ri = m.root_of[list[j]];
            if (ri < 0) continue;
            if (k > m.roots[ri].last) m.roots[ri].last = k;
            if (k < m.roots[ri].first) m.roots[ri].first = k;
        }
    }
    for (int i = 0; i < p->nfetch; i++)
        if (m.root_of[p->fetch_nodes[i]] >= 0) m.roots[m.root_of[p->fetch_nodes[i]]].last = p->nkernels;
    for (int i = 0; i < p->nlate; i++)
        if (m.root_of[p->late_assigns[i].t] >= 0) m.roots[m.root_of[p->late_assigns[i].t]].last = p->nkernels;

    /* 3. greedy placement, largest first */
    int *order = malloc(((size_t)m.nroots + 1) * sizeof *order);
    if (!order) { rc = -1; goto out; }
    int no = 0;
    p->intermediate_bytes = 0;
    for (int i = 0; i < m.nroots; i++)
        if (m.roots[i].kind == XT_LOC_ARENA && m.roots[i].size > 0) {
            order[no++] = i;
            m.roots[i].size = (m.roots[i].size + 63) & ~(int64_t)63;
            p->intermediate_bytes += (size_t)m.roots[i].size;
        }
    for (int a = 1; a < no; a++) /* insertion sort: a few hundred roots at most */
        for (int b = a; b > 0 && m.roots[order[b]].size > m.roots[order[b - 1]].size; b--) {
            int t = order[b]; order[b] = order[b - 1]; order[b - 1] = t;
        }
    int64_t arena = 0;
    for (int a = 0; a < no; a++) {
        root *r = &m.roots[order[a]];
        int64_t off = 0;
        for (int moved = 1; moved;) { /* first fit: bump past every conflict until none is left */
            moved = 0;
            for (int b = 0; b < a; b++) {
                const root *q = &m.roots[order[b]];
                int overlap_t = !(q->last < r->first || r->last < q->first);
                int overlap_m = off < q->offset + q->size && q->offset < off + r->size;
                if (overlap_t && overlap_m) { off = q->offset + q->size; moved = 1; }
            }
        }
        r->offset = off;
        if (off + r->size > arena) arena = off + r->size;
    }
    free(order);
    p->arena_bytes = (size_t)arena;
    p->scratch_bytes = 0;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].group < 0) {
            size_t sb = xt_kernel_scratch_bytes(p, &p->nodes[p->kernels[k].node]);
            if (sb > p->scratch_bytes) p->scratch_bytes = sb;
        }

    /* 4. locations */
    for (int i = 0; i < n; i++) {
        xt_loc *l = &p->loc[i];
        memset(l, 0, sizeof *l);
        if (m.root_of[i] < 0 || !live[i]) continue;
        const root *r = &m.roots[m.root_of[i]];
        l->kind = (int8_t)r->kind;
        l->slot = r->slot;
        l->offset = m.off_of[i] + (r->kind == XT_LOC_ARENA ? r->offset : 0);
    }
    rc = 0;
out:
    free(m.roots);
    free(m.root_of);
    free(m.off_of);
    free(m.kernel_of);
    free(last_old_read);
    return rc;
}
