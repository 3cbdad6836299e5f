/* compile.c — from a traced graph to an executable plan: copy the graph,
 * run the passes in a fixed order (live/DCE -> fusion -> micro-batch
 * tiling -> memory plan) and
 * size the arena the plan needs. The compile cache, and the one arena its
 * plans share, live in engine.c. */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"
#include "util/check.h"

void xt_plan_free(xt_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->ngroups; i++) {
        free(p->groups[i].inputs);
        free(p->groups[i].outputs);
        free(p->groups[i].instr);
    }
    free(p->groups);
    free(p->nodes);
    free(p->operands);
    free(p->assigns);
    free(p->fetch_nodes);
    free(p->loc);
    free(p->group_of);
    free(p->kernels);
    free(p->late_assigns);
    free(p->runs);
    free(p->row_bytes);
    free(p->operand_ptrs);
    free(p->ew_scratch);
    free(p);
}

int xt_plan_matches(const xt_plan *p, const xt_graph *g) {
    if (p->nnodes != g->n || p->nops != g->nops || p->nassign != g->nassign || p->nfetch != g->nfetch) return 0;
    if (memcmp(p->nodes, g->nodes, (size_t)g->n * sizeof *g->nodes)) return 0;
    if (memcmp(p->operands, g->operands, (size_t)g->nops * sizeof *g->operands)) return 0;
    if (g->nassign && memcmp(p->assigns, g->assigns, (size_t)g->nassign * sizeof *g->assigns)) return 0;
    for (int i = 0; i < g->nfetch; i++)
        if (p->fetch_nodes[i] != g->fetches[i].t) return 0;
    return 1;
}

static void *dup(const void *src, size_t bytes) {
    void *d = malloc(bytes ? bytes : 1);
    if (d && bytes) memcpy(d, src, bytes);
    return d;
}

/* Size and allocate what running the plan needs beyond the arena: the
 * operand pointer list of the widest kernel and the fused interpreter's
 * scratch for the widest group. Also checks that every kernel the plan
 * runs has an entry in the kernel table. */
static int alloc_exec_scratch(xt_plan *p) {
    int widest = 1;
    size_t ew = 64;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        if (kr->group >= 0) {
            const xt_ew_group *g = &p->groups[kr->group];
            if (g->ninputs + g->noutputs > widest) widest = g->ninputs + g->noutputs;
            size_t b = xt_ew_scratch_bytes(g);
            if (b > ew) ew = b;
        } else {
            const xt_node *n = &p->nodes[kr->node];
            XT_CHECK(xt_kernel_table[n->op] != NULL);
            if (n->nin > widest) widest = n->nin;
        }
    }
    p->operand_ptrs_len = widest;
    p->operand_ptrs = calloc((size_t)widest, sizeof *p->operand_ptrs);
    p->ew_scratch_bytes = ew;
    p->ew_scratch = aligned_alloc(64, ew);
    return p->operand_ptrs && p->ew_scratch ? 0 : -1;
}

xt_plan *xt_compile(const xt_graph *g, const xt_compile_opts *o, xt_err *e) {
    xt_plan *p = calloc(1, sizeof *p);
    uint8_t *live = NULL;
    if (!p) goto oom;
    p->hash = xt_graph_hash(g);
    p->nnodes = g->n;
    p->nops = g->nops;
    p->nassign = g->nassign;
    p->nfetch = g->nfetch;
    p->nodes = dup(g->nodes, (size_t)g->n * sizeof *g->nodes);
    p->operands = dup(g->operands, (size_t)g->nops * sizeof *g->operands);
    p->assigns = dup(g->assigns, (size_t)g->nassign * sizeof *g->assigns);
    p->fetch_nodes = malloc(((size_t)g->nfetch + 1) * sizeof *p->fetch_nodes);
    p->loc = calloc((size_t)g->n + 1, sizeof *p->loc);
    p->group_of = malloc(((size_t)g->n + 1) * sizeof *p->group_of);
    live = malloc((size_t)g->n + 1);
    if (!p->nodes || !p->operands || !p->assigns || !p->fetch_nodes || !p->loc || !p->group_of || !live) goto oom;
    for (int i = 0; i < g->nfetch; i++) p->fetch_nodes[i] = g->fetches[i].t;

    xt_pass_live(p, live);
    if (xt_pass_fuse(p, live, o->fuse)) goto oom;
    if (xt_pass_tile(p, o->plan_memory ? o->tile_cache_bytes : 0)) goto oom;
    if (xt_pass_memplan(p, live, o->plan_memory, o->have_collective)) goto oom;
    if (alloc_exec_scratch(p)) goto oom;
    free(live);
    return p;
oom:
    free(live);
    xt_plan_free(p);
    xt_fail(e, XT_ERUNTIME, "out of memory compiling a graph of %d nodes", g->n);
    return NULL;
}
