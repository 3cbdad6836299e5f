/* compile.c — from a traced graph to an executable plan: keep the traced
 * graph as the plan's cache key, lower a copy of it by the precision pass,
 * run the passes in a fixed order (live/DCE -> conv epilogues -> sums through
 * pools -> fusion -> micro-batch tiling -> hand-offs between kernel pairs ->
 * memory plan) and
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
        free(p->groups[i].sums);
    }
    free(p->groups);
    free(p->key.nodes);
    free(p->key.operands);
    free(p->key.assigns);
    free(p->key.fetch_nodes);
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
    free(p->kernel_ns);
    free(p);
}

int xt_plan_matches(const xt_plan *p, const xt_graph *g, int precision) {
    const xt_plan_key *k = &p->key;
    if (k->precision != precision) return 0;
    if (k->nnodes != g->n || k->nops != g->nops || k->nassign != g->nassign || k->nfetch != g->nfetch) return 0;
    if (memcmp(k->nodes, g->nodes, (size_t)g->n * sizeof *g->nodes)) return 0;
    if (memcmp(k->operands, g->operands, (size_t)g->nops * sizeof *g->operands)) return 0;
    if (g->nassign && memcmp(k->assigns, g->assigns, (size_t)g->nassign * sizeof *g->assigns)) return 0;
    for (int i = 0; i < g->nfetch; i++)
        if (k->fetch_nodes[i] != g->fetches[i].t) return 0;
    return 1;
}

uint64_t xt_plan_key_hash(const xt_graph *g, int precision) {
    uint64_t h = xt_graph_hash(g);
    return precision == XT_PREC_FP32 ? h : xt_mix64(h, 0xbf16000000000000ULL | (uint64_t)precision);
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
    p->kernel_ns = calloc((size_t)p->nkernels + 1, sizeof *p->kernel_ns);
    return p->operand_ptrs && p->ew_scratch && p->kernel_ns ? 0 : -1;
}

/* The plan's key: the traced graph, as traced. */
static int copy_key(xt_plan_key *k, const xt_graph *g, int precision) {
    k->precision = precision;
    k->nnodes = g->n;
    k->nops = g->nops;
    k->nassign = g->nassign;
    k->nfetch = g->nfetch;
    k->nodes = dup(g->nodes, (size_t)g->n * sizeof *g->nodes);
    k->operands = dup(g->operands, (size_t)g->nops * sizeof *g->operands);
    k->assigns = dup(g->assigns, (size_t)g->nassign * sizeof *g->assigns);
    k->fetch_nodes = malloc(((size_t)g->nfetch + 1) * sizeof *k->fetch_nodes);
    if (!k->nodes || !k->operands || !k->assigns || !k->fetch_nodes) return -1;
    for (int i = 0; i < g->nfetch; i++) k->fetch_nodes[i] = g->fetches[i].t;
    return 0;
}

/* The graph the plan runs: r (the lowered graph) with the key's outputs
 * renamed through map (NULL: r is the traced graph itself). */
static int copy_run_graph(xt_plan *p, const xt_graph *r, const int32_t *map) {
    p->nnodes = r->n;
    p->nops = r->nops;
    p->nassign = p->key.nassign;
    p->nfetch = p->key.nfetch;
    p->nodes = dup(r->nodes, (size_t)r->n * sizeof *r->nodes);
    p->operands = dup(r->operands, (size_t)r->nops * sizeof *r->operands);
    p->assigns = dup(p->key.assigns, (size_t)p->nassign * sizeof *p->assigns);
    p->fetch_nodes = malloc(((size_t)p->nfetch + 1) * sizeof *p->fetch_nodes);
    p->loc = calloc((size_t)r->n + 1, sizeof *p->loc);
    p->group_of = malloc(((size_t)r->n + 1) * sizeof *p->group_of);
    if (!p->nodes || !p->operands || !p->assigns || !p->fetch_nodes || !p->loc || !p->group_of) return -1;
    for (int i = 0; i < p->nassign; i++) p->assigns[i].t = map ? map[p->assigns[i].t] : p->assigns[i].t;
    for (int i = 0; i < p->nfetch; i++) p->fetch_nodes[i] = map ? map[p->key.fetch_nodes[i]] : p->key.fetch_nodes[i];
    return 0;
}

xt_plan *xt_compile(const xt_graph *g, const xt_compile_opts *o, xt_err *e) {
    xt_plan *p = calloc(1, sizeof *p);
    uint8_t *live = NULL;
    int32_t *map = NULL;
    xt_graph lowered, remat;
    xt_graph_init(&lowered, g->store);
    xt_graph_init(&remat, g->store);
    const xt_graph *run = g;
    if (!p || copy_key(&p->key, g, o->precision)) goto oom;
    p->hash = xt_plan_key_hash(g, o->precision);
    if (o->precision != XT_PREC_FP32) {
        if (!(map = malloc(((size_t)g->n + 1) * sizeof *map))) goto oom;
        if (xt_pass_precision(g, o->precision, &lowered, map)) goto oom; /* pushes fail only for memory */
        run = &lowered;
    }
    /* Copies of big pointwise values for their backward consumers: only
     * where tiles can then hold the originals (tiling on). */
    if (o->remat && o->fuse && o->plan_memory && o->tile_cache_bytes) {
        int32_t *map2 = malloc(((size_t)run->n + 1) * sizeof *map2);
        if (!map2) goto oom;
        int copies = xt_pass_remat(run, &remat, map2);
        if (copies < 0) {
            free(map2);
            goto oom;
        }
        p->remat_copies = copies;
        if (copies > 0) {
            if (!map && !(map = malloc(((size_t)g->n + 1) * sizeof *map))) {
                free(map2);
                goto oom;
            }
            for (int i = 0; i < g->n; i++) map[i] = map2[run == g ? i : map[i]];
            run = &remat;
        }
        free(map2);
    }
    if (copy_run_graph(p, run, map) || !(live = malloc((size_t)run->n + 1))) goto oom;

    xt_pass_live(p, live);
    if (o->fuse) xt_pass_conv_relu_pool(p, live);
    if (o->fuse) xt_pass_conv_pool(p, live);
    if (o->fuse) xt_pass_conv_relu(p, live);
    if (o->fuse && !o->literal_sums) p->sums_through_pool = xt_pass_sum_through_pool(p, live);
    if (o->fuse && (p->unpool_prologues = xt_pass_conv_unpool(p, live)) < 0) goto oom;
    if (o->fuse && (p->relu_bwd_epilogues = xt_pass_conv_relu_bwd(p, live)) < 0) goto oom;
    if (o->fuse && (p->made_in_bf16 = xt_pass_bf16_outputs(p, live)) < 0) goto oom;
    if (o->fuse && (p->conv_prologues = xt_pass_conv_prologue(p, live)) < 0) goto oom;
    if (o->fuse && (p->bn_bwd_epilogues = xt_pass_bn_bwd(p, live)) < 0) goto oom;
    if (xt_pass_fuse(p, live, o->fuse)) goto oom;
    if (xt_pass_tile(p, o->plan_memory ? o->tile_cache_bytes : 0)) goto oom;
    if (o->fuse) p->shared_pairs = xt_pass_share(p);
    if (xt_pass_memplan(p, live, o->plan_memory, o->have_collective)) goto oom;
    if (alloc_exec_scratch(p)) goto oom;
    for (int k = 0; k < p->nkernels; k++) /* the bench's FLOP counts: fixed by the plan, so counted once */
        if (p->kernels[k].group < 0) {
            p->macs += xt_kernel_macs(p, &p->nodes[p->kernels[k].node]);
            p->macs_executed += xt_kernel_macs_executed(p, &p->nodes[p->kernels[k].node]);
        }
    free(live);
    free(map);
    xt_graph_destroy(&lowered);
    xt_graph_destroy(&remat);
    return p;
oom:
    free(live);
    free(map);
    xt_graph_destroy(&lowered);
    xt_graph_destroy(&remat);
    xt_plan_free(p);
    xt_fail(e, XT_ERUNTIME, "out of memory compiling a graph of %d nodes", g->n);
    return NULL;
}
