/* compile.c — from a traced graph to an executable plan: keep the traced
 * graph as the plan's cache key, lower a copy of it by the precision pass,
 * run the passes in a fixed order (live/DCE -> conv epilogues -> sums through
 * pools -> fusion -> micro-batch tiling -> hand-offs between kernel pairs ->
 * memory plan) and
 * size the arena the plan needs. The compile cache, and the one arena its
 * plans share, live in engine.c. */
#include <stdlib.h>
#include <string.h>

#include "engine/choice.h"
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
    free(p->choice);
    free(p->layout);
    free(p->key_map);
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
    p->choice = calloc((size_t)r->n + 1, sizeof *p->choice);
    if (!p->nodes || !p->operands || !p->assigns || !p->fetch_nodes || !p->loc || !p->group_of || !p->choice) return -1;
    for (int i = 0; i < p->nassign; i++) p->assigns[i].t = map ? map[p->assigns[i].t] : p->assigns[i].t;
    for (int i = 0; i < p->nfetch; i++) p->fetch_nodes[i] = map ? map[p->key.fetch_nodes[i]] : p->key.fetch_nodes[i];
    return 0;
}

/* Whether kernel node c runs convolution j with a 2x2 pool fused into its
 * epilogue (pass_conv_epilogue.c): the pool's node takes the convolution's
 * operands, and then (fp32) batch norm's apply may replace its input
 * (pass_conv_prologue.c), so the weight, never rewritten, names the
 * convolution; no other forward pass reads it. */
static int runs_pooled(const xt_plan *p, int c, int j) {
    const xt_node *n = &p->nodes[c], *conv = &p->nodes[j];
    if (n->in_off == conv->in_off) return 1;
    return n->op == XT_OP_CONV2D_POOL2 && conv->op == XT_OP_CONV2D && xt_plan_operand(p, c, 1) == xt_plan_operand(p, j, 1);
}

/* The time per step of the kernel that runs traced node i in p (us; < 0:
 * not known): its chosen candidate's time per call, times the calls a step
 * makes. A pool fused into the convolution's epilogue runs at the pool's
 * node (runs_pooled). */
static double node_step_us(const xt_plan *p, int i) {
    int j = p->key_map[i];
    if (j < 0 || j >= p->nnodes) return -1;
    if (!p->choice[j].impl)
        for (int k = 0; k < p->nkernels && !p->choice[j].impl; k++) {
            int c = p->kernels[k].node;
            if (p->kernels[k].group < 0 && p->choice[c].impl && runs_pooled(p, c, j)) j = c;
        }
    const xt_choice_rec *c = &p->choice[j];
    if (!c->impl) return -1;
    double best = -1;
    for (int k = 0; k < c->ncand; k++)
        if (c->cand[k] == c->impl) best = c->us[k];
    if (best < 0) return -1;
    int32_t batch = p->nodes[j].op == XT_OP_MATMUL ? c->rows : p->nodes[j].shape[0];
    if (p->nodes[j].op == XT_OP_CONV2D_BWD_WEIGHT || p->nodes[j].op == XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2)
        batch = p->nodes[p->operands[p->nodes[j].in_off]].shape[0];
    if (p->nodes[j].op == XT_OP_CONV2D || p->nodes[j].op == XT_OP_CONV2D_POOL2)
        batch = p->nodes[p->operands[p->nodes[j].in_off]].shape[0];
    return best * ((batch + c->rows - 1) / (c->rows > 0 ? c->rows : 1));
}

static int rounds_operands(int op) {
    return op == XT_OP_CONV2D || op == XT_OP_CONV2D_BWD_DATA || op == XT_OP_CONV2D_BWD_WEIGHT || op == XT_OP_MATMUL;
}

/* Under bf16 with measured choices: which traced convolutions and products
 * run faster in fp32 on this CPU (keep[i] = 1), from two probing compiles
 * of the graph, one at each precision, timed by the leader and agreed as
 * the kernel choices are (pass_choose.c). */
static int decide_precision(const xt_graph *g, const xt_compile_opts *o, uint8_t *keep, int *unknown, xt_err *e) {
    const xt_choose_opts *c = o->choose;
    int collective = 0, nbase = 0;
    for (int i = 0; i < g->n; i++) {
        collective |= g->nodes[i].op == XT_OP_ALLREDUCE;
        nbase += rounds_operands(g->nodes[i].op);
    }
    if (!nbase) return 0;
    int exchange = c->agree && collective, decide = !c->agree || (c->leader && collective);
    if (decide) {
        xt_choose_opts po = *c;
        po.probe = 1;
        xt_compile_opts o32 = *o, o16 = *o;
        o32.precision = XT_PREC_FP32;
        o32.choose = o16.choose = &po;
        xt_plan *p32 = xt_compile(g, &o32, e);
        xt_plan *p16 = p32 ? xt_compile(g, &o16, e) : NULL;
        if (!p32 || !p16) {
            xt_plan_free(p32);
            return e ? e->code : XT_ERUNTIME;
        }
        for (int i = 0; i < g->n; i++) {
            if (!rounds_operands(g->nodes[i].op)) continue;
            double t32 = node_step_us(p32, i), t16 = node_step_us(p16, i);
            keep[i] = t32 >= 0 && t16 >= 0 && t32 < t16;
            *unknown += t32 < 0 || t16 < 0;
        }
        xt_plan_free(p32);
        xt_plan_free(p16);
    }
    if (!exchange) return 0;
    double *v = calloc((size_t)nbase, sizeof *v);
    if (!v) return xt_fail(e, XT_ERUNTIME, "out of memory choosing kernels");
    for (int i = 0, m = 0; i < g->n; i++)
        if (rounds_operands(g->nodes[i].op)) v[m++] = c->leader ? keep[i] : 0;
    int rc = c->agree(c->agree_ctx, v, nbase, e);
    for (int i = 0, m = 0; !rc && i < g->n; i++)
        if (rounds_operands(g->nodes[i].op)) keep[i] = v[m++] > 0.5;
    free(v);
    return rc;
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
        uint8_t *keep = NULL;
        if (o->choose && o->choose->measured && !o->choose->probe) {
            if (!(keep = calloc((size_t)g->n + 1, 1))) goto oom;
            if (decide_precision(g, o, keep, &p->nprec_unknown, e)) {
                free(keep);
                goto fail;
            }
            for (int i = 0; i < g->n; i++) p->nkept_fp32 += keep[i];
        }
        if (!(map = malloc(((size_t)g->n + 1) * sizeof *map))) {
            free(keep);
            goto oom;
        }
        int rc = xt_pass_precision(g, o->precision, keep, &lowered, map);
        free(keep);
        if (rc) goto oom; /* pushes fail only for memory */
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
    if (!(p->key_map = malloc(((size_t)g->n + 1) * sizeof *p->key_map))) goto oom;
    for (int i = 0; i < g->n; i++) p->key_map[i] = map ? map[i] : i;

    xt_pass_live(p, live);
    if (o->fuse && o->output_masks && (p->relu_output_masks = xt_pass_relu_mask(p, live)) < 0) goto oom;
    if (o->fuse) xt_pass_conv_relu_pool(p, live);
    if (o->fuse) xt_pass_conv_pool(p, live);
    if (o->fuse) xt_pass_conv_relu(p, live);
    if (o->fuse && !o->literal_sums) p->sums_through_pool = xt_pass_sum_through_pool(p, live);
    if (o->fuse && (p->unpool_prologues = xt_pass_conv_unpool(p, live)) < 0) goto oom;
    if (o->fuse && (p->relu_bwd_epilogues = xt_pass_conv_relu_bwd(p, live)) < 0) goto oom;
    if (o->fuse && (p->made_in_bf16 = xt_pass_bf16_outputs(p, live)) < 0) goto oom;
    if (o->fuse && (p->conv_prologues = xt_pass_conv_prologue(p, live)) < 0) goto oom;
    if (o->fuse && (p->bn_bwd_epilogues = xt_pass_bn_bwd(p, live, &p->bn_bwd_products)) < 0) goto oom;
    if (xt_pass_fuse(p, live, o->fuse)) goto oom;
    if (xt_pass_tile(p, o->plan_memory ? o->tile_cache_bytes : 0)) goto oom;
    if (xt_pass_choose(p, live, o->choose, e)) goto fail;
    if (o->layout && (p->blocked_values = xt_pass_layout(p, live)) < 0) goto oom;
    xt_pass_tile_states(p);
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
    xt_fail(e, XT_ERUNTIME, "out of memory compiling a graph of %d nodes", g->n);
fail:
    free(live);
    free(map);
    xt_graph_destroy(&lowered);
    xt_graph_destroy(&remat);
    xt_plan_free(p);
    return NULL;
}
