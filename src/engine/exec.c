/* exec.c — run a plan: resolve each kernel's operand locations to pointers
 * and call it; then the all-reduce's collective, late assigns and fetches.
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
    case XT_LOC_CONST: return (void *)&p->nodes[node].fattr[0];
    default: XT_CHECK(!"a kernel operand has no location: a memory-plan bug"); return NULL;
    }
}

/* Run kernel k: resolve its operands into the plan's pointer list (sized
 * for the widest kernel when the plan was compiled) and call it. */
static int run_kernel(xt_plan *p, const xt_exec_ctx *c, const xt_kernel *kr, void *scratch, xt_err *e) {
    void **ptrs = p->operand_ptrs;
    if (kr->group >= 0) {
        const xt_ew_group *g = &p->groups[kr->group];
        void **outs = ptrs + g->ninputs;
        for (int i = 0; i < g->ninputs; i++) ptrs[i] = resolve(p, c, g->inputs[i]);
        for (int i = 0; i < g->noutputs; i++) outs[i] = resolve(p, c, g->outputs[i]);
        xt_ew_run(p, g, ptrs, outs, p->ew_scratch);
        return 0;
    }
    const xt_node *n = &p->nodes[kr->node];
    for (int i = 0; i < n->nin; i++) ptrs[i] = resolve(p, c, p->operands[n->in_off + i]);
    xt_kcall call = {.p = p, .n = n, .in = ptrs, .out = resolve(p, c, kr->node), .scratch = scratch, .ctx = c, .e = e};
    return xt_kernel_table[n->op](&call);
}

int xt_execute(xt_plan *p, const xt_exec_ctx *c, xt_fetch_rec *fetches, xt_err *e) {
    char *scratch = (char *)c->arena + ((p->arena_bytes + 63) & ~(size_t)63);
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        uint64_t t0 = c->profile ? xt_now_ns() : 0;
        int rc = run_kernel(p, c, kr, scratch, e);
        if (rc) return rc;
        if (c->profile) {
            const char *cls = kr->group >= 0 ? "Kernel.elementwise" : xt_op_table[p->nodes[kr->node].op].profile_class;
            xt_metric_add(cls, XT_UNIT_TIME_NS, (double)(xt_now_ns() - t0));
        }
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
