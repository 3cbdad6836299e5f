/* exec.c — run a plan: resolve each kernel's operand locations to pointers
 * and call it; then the all-reduce's collective, late assigns and fetches.
 * A micro-batch run (pass_tile.c) is called tile by tile: each kernel of the
 * run on rows [row0, row0 + rows), its per-sample operands offset to row0.
 * No allocation: the engine's arena was sized when the plan was compiled. */
#include <string.h>

#include "engine/plan.h"
#include "util/check.h"

static void *resolve(const xt_plan *p, const xt_exec_ctx *c, int32_t node) {
    const xt_loc *l = &p->loc[node];
    switch (l->kind) {
    case XT_LOC_ARENA: return (char *)c->arena + l->offset;
    case XT_LOC_SLOT: return (char *)c->store->slots[l->slot].data + l->offset;
    case XT_LOC_COLLECTIVE: return (char *)c->collective + l->offset;
    case XT_LOC_COLLECTIVE_RESULT: return (char *)c->collective_result + l->offset;
    case XT_LOC_CONST: return (void *)&p->nodes[node].fattr[0];
    default: XT_CHECK(!"a kernel operand has no location: a memory-plan bug"); return NULL;
    }
}

/* A tile's rows of operand slot `slot` of kernel kr: row0 rows in, unless
 * it is read whole or its buffer holds only the tile. */
static void *tile_ptr(const xt_plan *p, const xt_exec_ctx *c, const xt_kernel *kr, int slot, int32_t node, int32_t row0) {
    char *base = resolve(p, c, node);
    int64_t row = kr->run >= 0 ? p->row_bytes[kr->row_off + slot] : 0;
    return row && !p->loc[node].tile_local ? base + row0 * row : base;
}

/* Run kernel k on rows [row0, row0 + rows) (rows 0: the whole batch):
 * resolve its operands into the plan's pointer list (sized for the widest
 * kernel when the plan was compiled) and call it. */
static int run_kernel(xt_plan *p, const xt_exec_ctx *c, const xt_kernel *kr, void *scratch, int32_t row0, int32_t rows,
                      xt_err *e) {
    void **ptrs = p->operand_ptrs;
    if (kr->group >= 0) {
        const xt_ew_group *g = &p->groups[kr->group];
        void **outs = ptrs + g->ninputs;
        for (int i = 0; i < g->ninputs; i++) ptrs[i] = tile_ptr(p, c, kr, i, g->inputs[i], row0);
        for (int i = 0; i < g->noutputs; i++) outs[i] = tile_ptr(p, c, kr, g->ninputs + i, g->outputs[i], row0);
        xt_ew_run(p, g, ptrs, outs, p->ew_scratch, row0, rows);
        return 0;
    }
    const xt_node *n = &p->nodes[kr->node];
    for (int i = 0; i < n->nin; i++) ptrs[i] = tile_ptr(p, c, kr, i, p->operands[n->in_off + i], row0);
    char *states = (char *)scratch + ((p->scratch_bytes + 63) & ~(size_t)63);
    xt_kcall call = {.p = p, .n = n, .in = ptrs, .out = tile_ptr(p, c, kr, n->nin, kr->node, row0), .scratch = scratch,
                     .scratch_bytes = p->scratch_bytes, .ctx = c, .e = e, .row0 = row0, .rows = rows,
                     .batch = kr->run >= 0 ? p->runs[kr->run].batch : 0,
                     .state = kr->state_off >= 0 ? states + kr->state_off : NULL,
                     .share = kr->share_off >= 0 ? states + kr->share_off : NULL};
    return xt_kernel_table[n->op](&call);
}

static int run_timed(xt_plan *p, const xt_exec_ctx *c, int k, void *scratch, int32_t row0, int32_t rows, xt_err *e) {
    const xt_kernel *kr = &p->kernels[k];
    uint64_t t0 = c->profile ? xt_now_ns() : 0;
    int rc = run_kernel(p, c, kr, scratch, row0, rows, e);
    if (c->profile) {
        const char *cls = kr->group >= 0 ? "Kernel.elementwise" : xt_op_table[p->nodes[kr->node].op].profile_class;
        double ns = (double)(xt_now_ns() - t0);
        xt_metric_add(cls, XT_UNIT_TIME_NS, ns);
        p->kernel_ns[k] += ns;
    }
    return rc;
}

int xt_execute(xt_plan *p, const xt_exec_ctx *c, xt_fetch_rec *fetches, xt_err *e) {
    char *scratch = (char *)c->arena + ((p->arena_bytes + 63) & ~(size_t)63);
    p->profiled_steps += c->profile != 0;
    for (int k = 0; k < p->nkernels; k++) {
        int rc = 0;
        if (p->kernels[k].run < 0) {
            rc = run_timed(p, c, k, scratch, 0, 0, e);
        } else {
            const xt_tile_run *r = &p->runs[p->kernels[k].run];
            for (int32_t row0 = 0; row0 < r->batch && !rc; row0 += r->rows) {
                int32_t rows = r->batch - row0 < r->rows ? r->batch - row0 : r->rows;
                for (int j = r->first; j <= r->last && !rc; j++) rc = run_timed(p, c, j, scratch, row0, rows, e);
            }
            k = r->last;
        }
        if (rc) return rc;
    }
    /* fetches read values before late assigns overwrite any slot they view */
    for (int i = 0; i < p->nfetch; i++) {
        const void *src = resolve(p, c, p->fetch_nodes[i]);
        if (src && fetches[i].host) memcpy(fetches[i].host, src, fetches[i].bytes);
    }
    for (int i = 0; i < p->nlate; i++) {
        const void *src = resolve(p, c, p->late_assigns[i].t);
        xt_slot *s = &c->store->slots[p->late_assigns[i].slot];
        if (src != s->data) memmove(s->data, src, (size_t)s->numel * xt_dtype_size(s->dtype));
    }
    return 0;
}
