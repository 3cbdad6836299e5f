/* exec.c — run a plan: resolve each kernel's operand locations to pointers
 * and call it; then the all-reduce's collective, late assigns and fetches.
 * No allocation: the arena was allocated when the plan was compiled. */
#include <string.h>

#include "engine/plan.h"

static void *resolve(const xt_plan *p, const xt_exec_ctx *c, int32_t node) {
    const xt_loc *l = &p->loc[node];
    switch (l->kind) {
    case XT_LOC_ARENA: return (char *)p->arena + l->offset;
    case XT_LOC_SLOT: return (char *)c->store->slots[l->slot].data + l->offset;
    case XT_LOC_COLLECTIVE: return (char *)c->collective + l->offset;
    case XT_LOC_CONST: return (void *)&p->nodes[node].fattr[0];
    default: return NULL;
    }
}

static int run_allreduce(const xt_plan *p, const xt_exec_ctx *c, const xt_node *n, void *const *in, float *out, xt_err *e) {
    int64_t off = 0;
    for (int k = 0; k < n->nin; k++) {
        const xt_node *g = &p->nodes[p->operands[n->in_off + k]];
        int64_t cnt = xt_numel(g), padded = (cnt + 15) & ~(int64_t)15;
        if (in[k] != out + off) memcpy(out + off, in[k], (size_t)cnt * 4);
        memset(out + off + cnt, 0, (size_t)(padded - cnt) * 4); /* padding joins the sum: keep it finite */
        off += padded;
    }
    if (c->allreduce) return c->allreduce(c->allreduce_ctx, out, (size_t)off, e);
    return 0;
}

/* Kernel classes for the profile (the benchmark's time split). */
static const char *kernel_class(const xt_kernel *kr, int op) {
    if (kr->group >= 0) return "Kernel.elementwise";
    switch (op) {
    case XT_OP_CONV2D: case XT_OP_CONV2D_BWD_DATA: case XT_OP_CONV2D_BWD_WEIGHT: return "Kernel.conv";
    case XT_OP_MATMUL: return "Kernel.gemm";
    case XT_OP_MAXPOOL2D: case XT_OP_MAXPOOL2D_BWD: case XT_OP_AVGPOOL2D: case XT_OP_AVGPOOL2D_BWD: return "Kernel.pool";
    case XT_OP_BN_STATS: case XT_OP_BN_STATS_BWD: return "Kernel.norm";
    case XT_OP_ALLREDUCE: return "Kernel.allreduce";
    case XT_OP_SUM_TO: return "Kernel.reduce";
    default: return "Kernel.other";
    }
}

/* Run kernel k: resolve its operands and call it. */
static int run_kernel(xt_plan *p, const xt_exec_ctx *c, const xt_kernel *kr, void *scratch, xt_err *e) {
    void *ins[64], *outs[64];
    if (kr->group >= 0) {
        const xt_ew_group *g = &p->groups[kr->group];
        for (int i = 0; i < g->ninputs && i < 64; i++) ins[i] = resolve(p, c, g->inputs[i]);
        for (int i = 0; i < g->noutputs && i < 64; i++) outs[i] = resolve(p, c, g->outputs[i]);
        xt_ew_run(p, g, ins, outs);
        return 0;
    }
    const xt_node *n = &p->nodes[kr->node];
    for (int i = 0; i < n->nin && i < 64; i++) ins[i] = resolve(p, c, p->operands[n->in_off + i]);
    void *out = resolve(p, c, kr->node);
    if (n->op == XT_OP_ALLREDUCE) return run_allreduce(p, c, n, ins, out, e);
    xt_kernel_table[n->op](p, n, ins, out, scratch);
    return 0;
}

int xt_execute(xt_plan *p, const xt_exec_ctx *c, xt_fetch_rec *fetches, xt_err *e) {
    char *scratch = (char *)p->arena + ((p->arena_bytes + 63) & ~(size_t)63);
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        uint64_t t0 = c->profile ? xt_now_ns() : 0;
        int rc = run_kernel(p, c, kr, scratch, e);
        if (rc) return rc;
        if (c->profile) xt_metric_add(kernel_class(kr, p->nodes[kr->node].op), XT_UNIT_TIME_NS, (double)(xt_now_ns() - t0));
    }
    /* fetches read values before late assigns overwrite any slot they view */
    for (int i = 0; i < p->nfetch; i++) {
        const void *src = resolve(p, c, p->fetch_nodes[i]);
        if (src && fetches[i].host) memcpy(fetches[i].host, src, fetches[i].bytes);
    }
    for (int i = 0; i < p->nlate; i++) {
        const void *src = resolve(p, c, p->late_assigns[i].t);
        xt_slot *s = &c->store->slots[p->late_assigns[i].slot];
        if (src != s->data) memmove(s->data, src, (size_t)s->numel * 4);
    }
    return 0;
}
