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
 *
 * Micro-batch tiles (pass_tile.c). A run of tiled kernels executes tile by
 * tile, so the kernel that last reads a value for one tile runs again after
 * later kernels of the run wrote theirs: every root a run touches lives for
 * the whole run. A value written and read only inside one run (no view of
 * it, not fetched or assigned) holds one tile, not the batch: tile-local.
 * Values a run writes are never assigned in place.
 *
 * With planning off (xt_engine_opts.no_memory_planner, or the environment's
 * XLATRAIN_NO_MEMORY_PLANNER=1, as tinygrad's NO_MEMORY_PLANNER) every value
 * gets a buffer of its own: no reuse, no in-place assign, no gradient
 * produced inside the all-reduce's buffer. Only views still alias, because
 * that is what a view means. A planner bug is then bisected by comparing
 * the two.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"
#include "util/check.h"

typedef struct {
    int kind;        /* xt_loc_kind */
    int slot;
    int tile_local;  /* holds one tile of the rows of run tile_run */
    int tile_run;
    int64_t size;    /* bytes */
    int first, last; /* kernel indices */
    int64_t offset;  /* placed arena offset */
} root;

typedef struct {
    xt_plan *p;
    const uint8_t *live;
    int plan;           /* 0: every value its own buffer */
    int have_collective;
    root *roots;
    int nroots;
    int32_t *root_of;   /* per node: root index or -1 */
    int64_t *off_of;    /* per node: byte offset inside the root */
    int32_t *kernel_of; /* per node: kernel index that produces it, or -1 */
    int32_t *readers;   /* per node: live consumers, assigns and fetches that read it */
    uint8_t *fetched;   /* per node */
    int nslots;
    int32_t *last_old_read; /* per slot: last kernel reading its old contents (nkernels = at the end) */
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

static int mp_init(mp *m, xt_plan *p, const uint8_t *live, int plan, int have_collective) {
    int n = p->nnodes;
    memset(m, 0, sizeof *m);
    m->p = p;
    m->live = live;
    m->plan = plan;
    m->have_collective = have_collective;
    for (int i = 0; i < p->nassign; i++)
        if (p->assigns[i].slot + 1 > m->nslots) m->nslots = p->assigns[i].slot + 1;
    for (int i = 0; i < n; i++)
        if (p->nodes[i].op == XT_OP_LEAF && p->nodes[i].iattr[0] + 1 > m->nslots) m->nslots = p->nodes[i].iattr[0] + 1;
    size_t nar = 0; /* an all-reduce read in place has a second root: its packed inputs' */
    for (int i = 0; i < n; i++) nar += p->nodes[i].op == XT_OP_ALLREDUCE;
    m->roots = calloc((size_t)n + (size_t)p->nassign + nar + 2, sizeof *m->roots);
    m->root_of = malloc(((size_t)n + 1) * sizeof *m->root_of);
    m->off_of = calloc((size_t)n + 1, sizeof *m->off_of);
    m->kernel_of = malloc(((size_t)n + 1) * sizeof *m->kernel_of);
    m->readers = calloc((size_t)n + 1, sizeof *m->readers);
    m->fetched = calloc((size_t)n + 1, 1);
    m->last_old_read = malloc(((size_t)m->nslots + 1) * sizeof *m->last_old_read);
    p->late_assigns = malloc(((size_t)p->nassign + 1) * sizeof *p->late_assigns);
    if (!m->roots || !m->root_of || !m->off_of || !m->kernel_of || !m->readers || !m->fetched || !m->last_old_read ||
        !p->late_assigns)
        return -1;
    for (int i = 0; i < n; i++) m->root_of[i] = m->kernel_of[i] = -1;
    for (int i = 0; i < m->nslots; i++) m->last_old_read[i] = -1;
    return 0;
}

static void mp_free(mp *m) {
    free(m->roots);
    free(m->root_of);
    free(m->off_of);
    free(m->kernel_of);
    free(m->readers);
    free(m->fetched);
    free(m->last_old_read);
}

/* Which kernel produces each node, and who reads each node. */
static void find_producers_and_readers(mp *m) {
    const xt_plan *p = m->p;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        if (kr->group >= 0) {
            const xt_ew_group *g = &p->groups[kr->group];
            for (int j = 0; j < g->noutputs; j++) m->kernel_of[g->outputs[j]] = k;
        } else {
            m->kernel_of[kr->node] = k;
        }
    }
    for (int j = 0; j < p->nnodes; j++) {
        if (!m->live[j]) continue;
        const xt_node *c = &p->nodes[j];
        for (int q = 0; q < c->nin; q++) m->readers[p->operands[c->in_off + q]]++;
    }
    for (int q = 0; q < p->nassign; q++) m->readers[p->assigns[q].t]++;
    for (int q = 0; q < p->nfetch; q++) {
        m->readers[p->fetch_nodes[q]]++;
        m->fetched[p->fetch_nodes[q]] = 1;
    }
}

/* The last kernel that reads each slot's old contents; fetches and
 * slot-valued assigns read at the end of the step. */
static void find_last_old_reads(mp *m) {
    const xt_plan *p = m->p;
    for (int k = 0; k < p->nkernels; k++) {
        const int32_t *list;
        int cnt = kernel_reads(p, k, &list);
        for (int j = 0; j < cnt; j++) {
            int s = old_slot_of(p, list[j]);
            if (s >= 0 && k > m->last_old_read[s]) m->last_old_read[s] = k;
        }
    }
    for (int i = 0; i < p->nfetch; i++) {
        int s = old_slot_of(p, p->fetch_nodes[i]);
        if (s >= 0) m->last_old_read[s] = p->nkernels;
    }
    for (int i = 0; i < p->nassign; i++) {
        int s = old_slot_of(p, p->assigns[i].t);
        if (s >= 0) m->last_old_read[s] = p->nkernels;
    }
}

/* Inside a fused group, may v be written into slot s while the group still
 * reads s's old contents? The group runs chunk by chunk, instruction by
 * instruction, so it may when every read of s is of the same element it is
 * about to overwrite (the whole slot, unbroadcast, at offset 0: the group's
 * own shape) and comes no later than v's instruction. A read through a view
 * at an offset, or a broadcast read, may reach an element an earlier chunk
 * already overwrote. */
static int group_may_write_slot_in_place(const xt_plan *p, const xt_ew_group *g, int s, int32_t v) {
    int out = -1, write_at = -1;
    for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == v) out = k;
    for (int j = 0; j < g->ninstr; j++)
        if (g->instr[j].dst == -1 - out) write_at = j;
    XT_CHECK(out >= 0 && write_at >= 0);
    for (int j = 0; j < g->ninstr; j++) {
        const xt_ew_instr *in = &g->instr[j];
        for (int opnd = 0; opnd < xt_op_table[in->op].arity; opnd++) {
            int kind = opnd ? in->bkind : in->akind, idx = opnd ? in->b : in->a;
            if (kind != XT_OPND_INPUT) continue;
            const xt_node *x = &p->nodes[g->inputs[idx]];
            if (old_slot_of(p, g->inputs[idx]) != s) continue;
            int aligned = (x->op == XT_OP_LEAF || x->iattr[0] == 0) && x->rank == g->rank &&
                          !memcmp(x->shape, g->shape, (size_t)g->rank * sizeof *x->shape);
            if (!aligned || j > write_at) return 0;
        }
    }
    return 1;
}

/* Step 1a: each assign is written into its slot in place where that is
 * safe, else recorded as a late copy at the end of the step. */
static void place_assigns(mp *m) {
    xt_plan *p = m->p;
    p->nlate = 0;
    for (int i = 0; i < p->nassign; i++) {
        int s = p->assigns[i].slot;
        int32_t v = p->assigns[i].t;
        int k = m->kernel_of[v];
        int ok = m->plan && k >= 0 && p->kernels[k].run < 0 && m->root_of[v] < 0 && !m->fetched[v] &&
                 p->nodes[v].op != XT_OP_ALLREDUCE;
        for (int j = 0; ok && j < i; j++) ok = p->assigns[j].slot != s && p->assigns[j].t != v;
        if (ok && m->last_old_read[s] > k) ok = 0;
        if (ok && m->last_old_read[s] == k) {
            const xt_kernel *kr = &p->kernels[k];
            ok = kr->group >= 0 && group_may_write_slot_in_place(p, &p->groups[kr->group], s, v);
        }
        if (ok) m->root_of[v] = new_root(m, XT_LOC_SLOT, s);
        else p->late_assigns[p->nlate++] = p->assigns[i];
    }
}

/* Gradients read only by the all-reduce are produced inside its packed
 * buffer, at their piece's offset, instead of being copied there. */
static void pack_gradients_into_allreduce(mp *m, const xt_node *ar, int r) {
    const xt_plan *p = m->p;
    int64_t off = 0;
    for (int k = 0; k < ar->nin; k++) {
        int32_t gk = p->operands[ar->in_off + k];
        /* (its own arena root, created earlier, is left empty and never placed) */
        if (m->readers[gk] == 1 && m->kernel_of[gk] >= 0 && m->root_of[gk] >= 0 &&
            m->roots[m->root_of[gk]].kind == XT_LOC_ARENA) {
            m->root_of[gk] = r;
            m->off_of[gk] = off * (int64_t)sizeof(float);
        }
        off += xt_line_floats(xt_numel(&p->nodes[gk]));
    }
}

/* Step 1b: roots for everything else, in order (views after their base). */
static void assign_roots(mp *m) {
    const xt_plan *p = m->p;
    for (int i = 0; i < p->nnodes; i++) {
        if (!m->live[i] || m->root_of[i] >= 0) continue;
        const xt_node *nd = &p->nodes[i];
        if (nd->op == XT_OP_LEAF) {
            m->root_of[i] = new_root(m, XT_LOC_SLOT, nd->iattr[0]);
        } else if (nd->op == XT_OP_CONST) {
            m->root_of[i] = new_root(m, XT_LOC_CONST, 0);
        } else if (nd->op == XT_OP_VIEW) {
            int32_t b = p->operands[nd->in_off];
            m->root_of[i] = m->root_of[b];
            m->off_of[i] = m->off_of[b] + (int64_t)nd->iattr[0] * (int64_t)xt_dtype_size(p->nodes[b].dtype);
        } else if (m->kernel_of[i] >= 0) {
            int collective = nd->op == XT_OP_ALLREDUCE && m->have_collective;
            int r = new_root(m, collective ? XT_LOC_COLLECTIVE : XT_LOC_ARENA, 0);
            m->root_of[i] = r;
            if (nd->op == XT_OP_ALLREDUCE && m->plan) pack_gradients_into_allreduce(m, nd, r);
            /* the mean read where the collective leaves it: the node and its
             * views there; the gradients stay packed in the row (r) */
            if (collective && m->have_collective == XT_COLLECTIVE_RESULT)
                m->root_of[i] = new_root(m, XT_LOC_COLLECTIVE_RESULT, 0);
        }
    }
}

/* Step 2: sizes and lifetimes of the roots. */
static void compute_lifetimes(mp *m) {
    const xt_plan *p = m->p;
    for (int i = 0; i < p->nnodes; i++) {
        if (m->root_of[i] < 0 || !m->live[i]) continue;
        root *r = &m->roots[m->root_of[i]];
        int64_t end = m->off_of[i] + xt_numel(&p->nodes[i]) * (int64_t)xt_dtype_size(p->nodes[i].dtype);
        if (r->tile_local) { /* the value, or a view renaming it whole */
            const xt_tile_run *run = &p->runs[r->tile_run];
            end = end / run->batch * run->rows;
        }
        if (end > r->size) r->size = end;
        if (m->kernel_of[i] >= 0) {
            if (m->kernel_of[i] < r->first) r->first = m->kernel_of[i];
            if (m->kernel_of[i] > r->last) r->last = m->kernel_of[i];
        }
    }
    for (int k = 0; k < p->nkernels; k++) {
        const int32_t *list;
        int cnt = kernel_reads(p, k, &list);
        for (int j = 0; j < cnt; j++) {
            int ri = m->root_of[list[j]];
            if (ri < 0) continue;
            if (k > m->roots[ri].last) m->roots[ri].last = k;
            if (k < m->roots[ri].first) m->roots[ri].first = k;
        }
    }
    for (int i = 0; i < p->nfetch; i++)
        if (m->root_of[p->fetch_nodes[i]] >= 0) m->roots[m->root_of[p->fetch_nodes[i]]].last = p->nkernels;
    for (int i = 0; i < p->nlate; i++)
        if (m->root_of[p->late_assigns[i].t] >= 0) m->roots[m->root_of[p->late_assigns[i].t]].last = p->nkernels;
}

/* The kernel that runs node j: its own, or its fused group's; -1 for
 * kernel-less nodes (views, leaves, constants). */
static int running_kernel(const mp *m, const int32_t *group_kernel, int32_t j) {
    int g = m->p->group_of[j];
    return g >= 0 ? group_kernel[g] : m->kernel_of[j];
}

/* A value written by a tiled kernel whose every reader runs in the same
 * run, neither fetched nor assigned, needs one tile of rows: a buffer of
 * rows * (bytes per sample). A view that renames it whole
 * (xt_plan_renames_whole: a ReLU a conv epilogue absorbed, a flatten)
 * passes its readers, fetches and assigns through; any other view (a packed
 * pool output's values and indices) keeps it whole, because its readers
 * address the batch-sized layout. */
static int mark_tile_local(mp *m) {
    xt_plan *p = m->p;
    if (!p->nruns || !m->plan) return 0;
    int32_t *group_kernel = malloc(((size_t)p->ngroups + 1) * sizeof *group_kernel);
    uint8_t *outside = calloc((size_t)p->nnodes + 1, 1); /* read from outside its writer's run */
    if (!group_kernel || !outside) { free(group_kernel); free(outside); return -1; }
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].group >= 0) group_kernel[p->kernels[k].group] = k;
    for (int j = 0; j < p->nnodes; j++) {
        if (!m->live[j]) continue;
        int rk = running_kernel(m, group_kernel, j);
        if (rk < 0 && xt_plan_renames_whole(p, j)) { /* its readers decide, as readers of its operand */
            if (m->fetched[j]) outside[p->operands[p->nodes[j].in_off]] = 1;
            continue;
        }
        for (int q = 0; q < p->nodes[j].nin; q++) {
            int32_t v = p->operands[p->nodes[j].in_off + q];
            while (xt_plan_renames_whole(p, v)) v = p->operands[p->nodes[v].in_off];
            int wk = m->kernel_of[v];
            if (wk < 0 || rk < 0 || p->kernels[wk].run < 0 || p->kernels[rk].run != p->kernels[wk].run) outside[v] = 1;
        }
    }
    for (int i = 0; i < p->nnodes; i++) {
        int k = m->kernel_of[i], r = m->root_of[i];
        if (!m->live[i] || k < 0 || r < 0 || p->kernels[k].run < 0 || outside[i] || m->fetched[i]) continue;
        if (m->readers[i] == 0 || m->roots[r].kind != XT_LOC_ARENA || m->off_of[i] != 0) continue;
        if (p->kernels[k].group < 0 && p->row_bytes[p->kernels[k].row_off + p->nodes[i].nin] == 0) continue; /* a sum over the batch */
        if (p->kernels[k].group >= 0 && p->nodes[i].op == XT_OP_SUM_TO) continue; /* a group's sum: the same */
        int assigned = 0;
        for (int q = 0; q < p->nassign; q++) {
            int32_t t = p->assigns[q].t;
            while (xt_plan_renames_whole(p, t)) t = p->operands[p->nodes[t].in_off];
            assigned |= t == i;
        }
        if (!assigned) {
            m->roots[r].tile_local = 1;
            m->roots[r].tile_run = p->kernels[k].run;
        }
    }
    free(group_kernel);
    free(outside);
    return 0;
}

/* Every root a run touches lives from the run's first kernel to its last. */
static void stretch_lifetimes_over_runs(mp *m) {
    const xt_plan *p = m->p;
    for (int i = 0; i < m->nroots; i++) {
        root *r = &m->roots[i];
        for (int changed = 1; changed && r->last >= 0;) {
            changed = 0;
            for (int q = 0; q < p->nruns; q++) {
                const xt_tile_run *run = &p->runs[q];
                if (r->last < run->first || run->last < r->first) continue;
                if (run->first < r->first) { r->first = run->first; changed = 1; }
                if (run->last > r->last) { r->last = run->last; changed = 1; }
            }
        }
    }
}

/* The lowest offset at which root r overlaps no placed root that is alive
 * at the same time: bump past every conflict until none is left. */
static int64_t first_fit(const mp *m, const int *placed, int nplaced, const root *r) {
    int64_t off = 0;
    for (int moved = 1; moved;) {
        moved = 0;
        for (int b = 0; b < nplaced; b++) {
            const root *q = &m->roots[placed[b]];
            int overlap_t = !(q->last < r->first || r->last < q->first);
            int overlap_m = off < q->offset + q->size && q->offset < off + r->size;
            if (overlap_t && overlap_m) { off = q->offset + q->size; moved = 1; }
        }
    }
    return off;
}

/* Step 3: arena offsets, largest root first; with planning off, one after
 * the other. */
static int place_roots(mp *m) {
    xt_plan *p = m->p;
    int *order = malloc(((size_t)m->nroots + 1) * sizeof *order);
    if (!order) return -1;
    int no = 0;
    p->intermediate_bytes = 0;
    for (int i = 0; i < m->nroots; i++)
        if (m->roots[i].kind == XT_LOC_ARENA && m->roots[i].size > 0) {
            order[no++] = i;
            m->roots[i].size = (m->roots[i].size + 63) & ~(int64_t)63;
            p->intermediate_bytes += (size_t)m->roots[i].size;
        }
    for (int a = 1; a < no; a++) /* insertion sort, stable: a few hundred roots */
        for (int b = a; b > 0 && m->roots[order[b]].size > m->roots[order[b - 1]].size; b--) {
            int t = order[b]; order[b] = order[b - 1]; order[b - 1] = t;
        }
    int64_t arena = 0;
    for (int a = 0; a < no; a++) {
        root *r = &m->roots[order[a]];
        r->offset = m->plan ? first_fit(m, order, a, r) : arena;
        if (r->offset + r->size > arena) arena = r->offset + r->size;
    }
    free(order);
    p->arena_bytes = (size_t)arena;
    return 0;
}

/* Conv scratch: one area after the arena, sized to the largest need. */
static void size_scratch(xt_plan *p) {
    p->scratch_bytes = 0;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].group < 0) {
            size_t sb = xt_kernel_scratch_bytes(p, &p->nodes[p->kernels[k].node]);
            if (sb > p->scratch_bytes) p->scratch_bytes = sb;
        }
}

/* Step 4: every live node's location. */
static void write_locations(const mp *m) {
    xt_plan *p = m->p;
    for (int i = 0; i < p->nnodes; i++) {
        xt_loc *l = &p->loc[i];
        memset(l, 0, sizeof *l);
        if (m->root_of[i] < 0 || !m->live[i]) continue;
        const root *r = &m->roots[m->root_of[i]];
        l->kind = (int8_t)r->kind;
        l->tile_local = (int8_t)r->tile_local;
        l->slot = r->slot;
        l->offset = m->off_of[i] + (r->kind == XT_LOC_ARENA ? r->offset : 0);
    }
}

int xt_pass_memplan(xt_plan *p, const uint8_t *live, int plan, int have_collective) {
    mp m;
    int rc = -1;
    if (mp_init(&m, p, live, plan, have_collective)) goto out;
    find_producers_and_readers(&m);
    find_last_old_reads(&m);
    place_assigns(&m);
    assign_roots(&m);
    if (mark_tile_local(&m)) goto out;
    compute_lifetimes(&m);
    stretch_lifetimes_over_runs(&m);
    if (place_roots(&m)) goto out;
    size_scratch(p);
    write_locations(&m);
    rc = 0;
out:
    mp_free(&m);
    return rc;
}
