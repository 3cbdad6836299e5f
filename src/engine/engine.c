/* engine.c — the barrier: cut the pending graph, hash it, look it up in the
 * compile cache (confirming equality, never trusting the 64-bit hash alone),
 * compile on a miss, execute, reset. Also the metrics the barrier records
 * and the recompilation warning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/choice.h"
#include "engine/plan.h"
#include "kernels/impl.h"
#include "kernels/cache.h"

#define CACHE_MAX 64

/* Why a graph was compiled, for the --max-compiles message. */
typedef struct compile_note {
    const char *label;      /* the caller's name for it */
    int nodes;
    char why[160];
} compile_note;

struct xt_engine {
    xt_graph g;
    xt_store *store;
    xt_engine_opts opts;
    xt_plan *cache[CACHE_MAX];
    int ncache;
    /* One arena for every cached plan (the largest one's size): plans never
     * run at once and no arena value outlives its step, so the training
     * plan and the evaluation plan need not each hold their own. */
    void *arena;
    size_t arena_cap;
    int warned;
    xt_exec_stats last;
    const char *label;              /* of the graphs traced now (xt_engine_set_label) */
    compile_note *notes;            /* (nnotes) one per compile, grown as graphs compile */
    int nnotes;
    xt_choices choices;             /* kernel choices so far (pass_choose.c, choice.c) */
    xt_choose_opts choose;
};

/* The arena is mapped from the OS, not taken from malloc. glibc serves a
 * block of tens of MB from its heap once its dynamic mmap threshold has risen
 * past that size (any earlier free of a large mapped block raises it), and a
 * heap block stays resident after free(): when the arena grows (the
 * evaluation plan after the training one), the old one stayed in the
 * process, and peak RSS depended on the order of unrelated frees (wide_cnn:
 * 50 or 78 MB per worker for the same run, depending on whether stderr was a
 * file). A mapping goes back to the OS when it is replaced. Under
 * AddressSanitizer it stays a malloc block, so a write past its end is caught. */
#if defined(__SANITIZE_ADDRESS__)
#define XT_ARENA_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XT_ARENA_MALLOC 1
#endif
#endif
static void *arena_alloc(size_t bytes) {
#ifdef XT_ARENA_MALLOC
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
#else
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* page-aligned: 64-byte aligned */
#endif
}
static void arena_free(void *p, size_t bytes) {
#ifdef XT_ARENA_MALLOC
    (void)bytes;
    free(p);
#else
    if (p) munmap(p, bytes);
#endif
}

xt_engine *xt_engine_new(xt_store *store, const xt_engine_opts *opts) {
    xt_engine *en = calloc(1, sizeof *en);
    if (!en) return NULL;
    xt_graph_init(&en->g, store);
    en->store = store;
    if (opts) en->opts = *opts;
    else en->opts.fuse = 1;
    if (!en->opts.recompile_warn) en->opts.recompile_warn = 6;
    const char *dir = getenv("XLATRAIN_SAVE_GRAPHS");
    if ((!en->opts.save_graphs_dir || !*en->opts.save_graphs_dir) && dir && *dir) en->opts.save_graphs_dir = dir;
    const char *nmp = getenv("XLATRAIN_NO_MEMORY_PLANNER");
    if (nmp && *nmp && strcmp(nmp, "0")) en->opts.no_memory_planner = 1;
    const char *nt = getenv("XLATRAIN_NO_TILING");
    if (nt && *nt && strcmp(nt, "0")) en->opts.no_tiling = 1;
    const char *nr = getenv("XLATRAIN_NO_REMAT");
    if (nr && *nr && strcmp(nr, "0")) en->opts.no_remat = 1;
    const char *nl = getenv("XLATRAIN_NO_LAYOUT");
    if (nl && *nl && strcmp(nl, "0")) en->opts.no_layout = 1;
    en->choose = (xt_choose_opts){.measured = en->opts.kernel_choice == 1, .table = &en->choices,
                                  .agree = en->opts.choice_agree, .agree_ctx = en->opts.choice_ctx,
                                  .leader = en->opts.choice_agree ? en->opts.choice_leader : 1,
                                  .skew = en->opts.choice_skew, .quiet = !en->opts.choice_log};
    return en;
}

void xt_engine_free(xt_engine *en) {
    if (!en) return;
    for (int i = 0; i < en->ncache; i++) xt_plan_free(en->cache[i]);
    arena_free(en->arena, en->arena_cap);
    free(en->notes);
    free(en->choices.cached);
    xt_choices_free(&en->choices);
    xt_graph_destroy(&en->g);
    free(en);
}

void xt_engine_set_label(xt_engine *en, const char *label) { en->label = label; }

void xt_engine_set_precision(xt_engine *en, int precision) { en->opts.precision = precision; }

xt_graph *xt_engine_graph(xt_engine *en) { return &en->g; }

void xt_engine_last_stats(const xt_engine *en, xt_exec_stats *s) { *s = en->last; }

void xt_engine_kernel_report(const xt_engine *en, FILE *f) {
    for (int i = 0; i < en->ncache; i++) xt_plan_kernel_report(en->cache[i], f);
}

void xt_engine_kernel_profile_reset(xt_engine *en) {
    for (int i = 0; i < en->ncache; i++) {
        xt_plan *p = en->cache[i];
        memset(p->kernel_ns, 0, (size_t)p->nkernels * sizeof *p->kernel_ns);
        p->profiled_steps = 0;
    }
}

/* Name what differs between a new graph and the most similar cached one:
 * the thing PyTorch/XLA users most need when a run keeps recompiling. */
static void describe_new_graph(const xt_engine *en, const xt_graph *g, char *what, size_t cap) {
    const xt_plan *best = NULL;
    int best_common = -1, at = 0;
    for (int i = 0; i < en->ncache; i++) {
        const xt_plan *p = en->cache[i];
        int k = 0;
        while (k < p->key.nnodes && k < g->n && p->key.nodes[k].hash == g->nodes[k].hash) k++;
        if (k >= best_common) { best_common = k; best = p; at = k; } /* ties: the latest */
    }
    snprintf(what, cap, "%s", best ? "the graph's outputs differ" : "the first graph");
    if (best && at < g->n && at < best->key.nnodes) {
        const xt_node *a = &best->key.nodes[at], *b = &g->nodes[at];
        char sa[64], sb[64];
        if (a->op != b->op)
            snprintf(what, cap, "node %d is %s instead of %s", at, xt_op_table[b->op].name, xt_op_table[a->op].name);
        else
            snprintf(what, cap, "node %d (%s) has shape %s instead of %s", at, xt_op_table[b->op].name,
                     xt_shape_str(b, sb, sizeof sb), xt_shape_str(a, sa, sizeof sa));
    } else if (best && g->n != best->key.nnodes) {
        snprintf(what, cap, "the graph has %d nodes instead of %d", g->n, best->key.nnodes);
    } else if (best && best->key.precision != en->opts.precision) {
        snprintf(what, cap, "precision %s instead of %s", xt_precision_name(en->opts.precision),
                 xt_precision_name(best->key.precision));
    }
}

static void warn_recompile(const xt_engine *en, const char *what) {
    fprintf(stderr, "xlatrain: warning: %d distinct graphs compiled; each new one costs a compile: %s (vary shapes less, e.g. drop_last: true)\n",
            en->ncache + 1, what);
}

/* Graph N+1 under --max-compiles N: refused, naming every graph compiled so
 * far, this one, and why each was compiled. */
static int too_many_compiles(const xt_engine *en, const xt_graph *g, const char *why, xt_err *e) {
    char list[900];
    size_t o = 0;
    for (int i = 0; i < en->nnotes && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%d '%s' (%d nodes): %s; ", i + 1, en->notes[i].label ? en->notes[i].label : "graph",
                              en->notes[i].nodes, en->notes[i].why);
    if (o < sizeof list)
        snprintf(list + o, sizeof list - o, "then %d '%s' (%d nodes): %s", en->nnotes + 1, en->label ? en->label : "graph", g->n, why);
    return xt_fail(e, XT_ECOMPILE, "more than %d graphs compiled (--max-compiles %d): %s; keep shapes fixed (drop_last: true, a test set "
                   "that test_batch_size divides) or raise --max-compiles", en->opts.max_compiles, en->opts.max_compiles, list);
}

/* Keep why graph number nnotes+1 was compiled. */
static int note_compile(xt_engine *en, const xt_graph *g, const char *why, xt_err *e) {
    compile_note *n = realloc(en->notes, (size_t)(en->nnotes + 1) * sizeof *n);
    if (!n) return xt_fail(e, XT_ERUNTIME, "out of memory");
    en->notes = n;
    n[en->nnotes].label = en->label;
    n[en->nnotes].nodes = g->n;
    snprintf(n[en->nnotes].why, sizeof n->why, "%s", why);
    en->nnotes++;
    return 0;
}

/* The log's account of a compile's kernel choices: first how many nodes run
 * in bf16 and in fp32 on which ISA and what was timed, then (when something
 * was timed) a line per node with the candidates' times and the winner. */
/* "3 on AMX-BF16, 2 on AVX512-BF16" for the nodes of one precision (or "0"). */
static void isa_counts(const xt_plan *p, int bf16, char *buf, size_t cap) {
    const char *isa[16];
    int count[16], n = 0, total = 0;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_choice_rec *c = &p->choice[p->kernels[k].node];
        if (p->kernels[k].group >= 0 || !c->impl || k_impls[c->impl].bf16 != bf16) continue;
        k_op_desc d;
        xt_choice_op_desc(p, p->kernels[k].node, &d);
        const char *name = k_impl_node_isa(c->impl, &d);
        int j = 0;
        while (j < n && strcmp(isa[j], name)) j++;
        if (j == n && n < 16) isa[n] = name, count[n++] = 0;
        if (j < n) count[j]++;
        total++;
    }
    size_t o = (size_t)snprintf(buf, cap, "%d", total);
    for (int j = 0; j < n && o < cap; j++) o += (size_t)snprintf(buf + o, cap - o, "%s%d on %s", j ? ", " : " (", count[j], isa[j]);
    if (n && o < cap) snprintf(buf + o, cap - o, ")");
}

/* The log's account of a compile's kernel choices: first how many nodes run
 * in bf16 and in fp32 on which ISA (what each node's implementation was
 * generated for: AMX-BF16 shows that oneDNN used the tiles) and what was
 * timed, then (when something was timed) a line per node with the
 * candidates' times and the winner. */
static void log_choices(const xt_engine *en, const xt_plan *p, int timed0, int hits0) {
    int multi = 0;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_choice_rec *c = &p->choice[p->kernels[k].node];
        if (p->kernels[k].group < 0 && c->impl) multi += c->ncand > 1;
    }
    char bf[160], fp[160];
    isa_counts(p, 1, bf, sizeof bf);
    isa_counts(p, 0, fp, sizeof fp);
    int timed = en->choices.timed_candidates - timed0, hits = en->choices.cache_hits - hits0;
    char unknown[96] = "";
    if (p->nprec_unknown)
        snprintf(unknown, sizeof unknown, " (%d left bf16 without a time at both precisions)", p->nprec_unknown);
    fprintf(stderr, "xlatrain: kernel choice %s (%s graph): nodes run bf16: %s%s; fp32: %s%s; %d with a "
            "choice, %d candidates timed, %d from the cache%s%s\n",
            en->choose.measured ? "measured" : "fixed", en->label ? en->label : "a", bf, unknown, fp,
            p->nkept_fp32 ? " (kept fp32 where faster)" : "", multi, timed, hits,
            en->choices.cache_state == 1 ? " in " : "", en->choices.cache_state == 1 ? en->choices.cache_path : "");
    if (!timed) return;
    for (int k = 0; k < p->nkernels; k++) {
        int i = p->kernels[k].node;
        if (p->kernels[k].group >= 0 || p->choice[i].ncand <= 1) continue;
        char line[600];
        xt_choice_line(p, i, line, sizeof line);
        fprintf(stderr, "xlatrain: kernel choice: %s\n", line);
    }
}

char *xt_engine_choices_text(const xt_engine *en) { return xt_choices_text(&en->choices); }

int xt_engine_load_choices(xt_engine *en, const char *text) { return xt_choices_load_text(&en->choices, text); }

void xt_engine_choice_isa(char *buf, size_t cap) { xt_choice_isa_name(buf, cap); }

char *xt_engine_choice_lines(const xt_engine *en) {
    size_t cap = 1, o = 0;
    for (int i = 0; i < en->ncache; i++) cap += (size_t)en->cache[i]->nkernels * 600;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (int i = 0; i < en->ncache; i++) {
        const xt_plan *p = en->cache[i];
        for (int k = 0; k < p->nkernels && o + 600 < cap; k++) {
            int n = p->kernels[k].node;
            if (p->kernels[k].group >= 0 || !p->choice[n].impl) continue;
            xt_choice_line(p, n, s + o, cap - o - 1);
            o += strlen(s + o);
            s[o++] = '\n';
            s[o] = 0;
        }
    }
    return s;
}

static int find_or_compile(xt_engine *en, xt_plan **out, xt_err *e) {
    xt_graph *g = &en->g;
    uint64_t h = xt_plan_key_hash(g, en->opts.precision);
    xt_plan *hit = NULL;
    for (int i = 0; i < en->ncache && !hit; i++)
        if (en->cache[i]->hash == h && xt_plan_matches(en->cache[i], g, en->opts.precision)) hit = en->cache[i];
    /* from the step's first recorded node to the end of the lookup; a
     * compile is timed apart, from there (CompileTime) */
    uint64_t t_lookup = xt_now_ns();
    xt_metric_add("TraceHashLookupTime", XT_UNIT_TIME_NS, (double)(t_lookup - g->trace_start_ns));
    if (hit) {
        xt_counter_add("CachedCompile", 1);
        *out = hit;
        en->last.cache_hit = 1;
        return 0;
    }
    char why[160];
    int seen = 0; /* a graph of a kind not compiled before needs no comparison */
    for (int i = 0; i < en->nnotes && !seen; i++) seen = en->notes[i].label && en->label && !strcmp(en->notes[i].label, en->label);
    if (seen || !en->label) describe_new_graph(en, g, why, sizeof why);
    else snprintf(why, sizeof why, "the first %s graph", en->label);
    if (en->opts.max_compiles > 0 && en->nnotes >= en->opts.max_compiles) return too_many_compiles(en, g, why, e);
    if (en->ncache + 1 >= en->opts.recompile_warn && !en->warned) {
        warn_recompile(en, why);
        en->warned = 1;
    }
    if (note_compile(en, g, why, e)) return e->code;
    xt_compile_opts co = {.precision = en->opts.precision, .fuse = en->opts.fuse, .literal_sums = en->opts.literal_sums,
                          .plan_memory = !en->opts.no_memory_planner, .remat = !en->opts.no_remat, .layout = !en->opts.no_layout, .output_masks = !en->opts.no_output_masks, .have_collective = !en->opts.collective_buf ? 0 : en->opts.collective_result && en->opts.allreduce_row ? XT_COLLECTIVE_RESULT : XT_COLLECTIVE_IN_ROW,
                          .tile_cache_bytes = en->opts.no_tiling          ? 0
                                              : en->opts.tile_cache_bytes ? en->opts.tile_cache_bytes
                                                                          : k_cache_l2_bytes(),
                          .choose = &en->choose};
    int timed0 = en->choices.timed_candidates, hits0 = en->choices.cache_hits;
    xt_plan *p = xt_compile(g, &co, e);
    if (!p) return e ? e->code : XT_ERUNTIME;
    if (en->opts.choice_log && en->choose.leader) log_choices(en, p, timed0, hits0);
    if (xt_plan_arena_bytes(p) > en->arena_cap) { /* grows on a compile only: a cached step allocates nothing */
        size_t cap = xt_plan_arena_bytes(p);
        void *a = arena_alloc(cap);
        if (!a) {
            xt_plan_free(p);
            return xt_fail(e, XT_ERUNTIME, "out of memory: a %zu-byte arena for a graph of %d nodes", cap, g->n);
        }
        arena_free(en->arena, en->arena_cap);
        en->arena = a;
        en->arena_cap = cap;
    }
    xt_counter_add("UncachedCompile", 1);
    xt_metric_add("CompileTime", XT_UNIT_TIME_NS, (double)(xt_now_ns() - t_lookup));
    xt_metric_add("IrNodes", XT_UNIT_COUNT, g->n);
    xt_metric_add("FusedKernels", XT_UNIT_COUNT, p->fused_kernels);
    xt_metric_add("ArenaBytes", XT_UNIT_BYTES, (double)p->arena_bytes);
    if (en->opts.save_graphs_dir && *en->opts.save_graphs_dir) xt_dump_plan(p, en->opts.save_graphs_dir, "compiled");
    if (en->ncache == CACHE_MAX) { /* evict the oldest */
        xt_plan_free(en->cache[0]);
        memmove(en->cache, en->cache + 1, (CACHE_MAX - 1) * sizeof *en->cache);
        en->ncache--;
    }
    en->cache[en->ncache++] = p;
    en->last.cache_hit = 0;
    *out = p;
    return 0;
}

int xt_mark_step(xt_engine *en, xt_err *e) {
    xt_graph *g = &en->g;
    int rc = 0;
    if (g->err[0]) {
        rc = xt_fail(e, XT_ERUNTIME, "graph error: %s", g->err);
        goto done;
    }
    if (g->nassign == 0 && g->nfetch == 0) goto done; /* nothing asked for: nothing to run */
    xt_plan *p = NULL;
    if ((rc = find_or_compile(en, &p, e))) goto done;
    xt_exec_ctx ctx = {.store = en->store, .arena = en->arena, .collective = en->opts.collective_buf,
                       .collective_result = en->opts.collective_result, .allreduce = en->opts.allreduce,
                       .allreduce_row = en->opts.allreduce_row, .allreduce_ctx = en->opts.allreduce_ctx,
                       .profile = en->opts.profile};
    uint64_t t0 = xt_now_ns();
    rc = xt_execute(p, &ctx, g->fetches, e);
    xt_metric_add("ExecuteTime", XT_UNIT_TIME_NS, (double)(xt_now_ns() - t0));
    size_t from = 0;
    for (int i = 0; i < g->nfetch; i++) from += g->fetches[i].bytes;
    xt_counter_add("TransferFromDeviceBytes", (int64_t)from);
    xt_counter_add("TransferToDeviceBytes", (int64_t)en->store->bytes_to_device);
    en->store->bytes_to_device = 0;
    en->last.graph_hash = p->hash;
    en->last.ir_nodes = p->nnodes;
    en->last.kernels = p->nkernels;
    en->last.fused_kernels = p->fused_kernels;
    en->last.arena_bytes = p->arena_bytes;
    en->last.intermediate_bytes = p->intermediate_bytes;
    en->last.distinct_graphs = en->ncache;
    en->last.tile_runs = p->nruns;
    en->last.tiled_kernels = 0;
    for (int r = 0; r < p->nruns; r++) en->last.tiled_kernels += p->runs[r].last - p->runs[r].first + 1;
    en->last.tile_rows = en->last.tile_rows_max = 0;
    for (int r = 0; r < p->nruns; r++) {
        if (!en->last.tile_rows || p->runs[r].rows < en->last.tile_rows) en->last.tile_rows = p->runs[r].rows;
        if (p->runs[r].rows > en->last.tile_rows_max) en->last.tile_rows_max = p->runs[r].rows;
    }
    en->last.macs = p->macs;
    en->last.macs_executed = p->macs_executed;
    en->last.precision = p->key.precision;
    en->last.bf16_casts = en->last.relu_epilogues = en->last.pool_epilogues = 0;
    en->last.sums_through_pool = p->sums_through_pool;
    en->last.made_in_bf16 = p->made_in_bf16;
    en->last.choice_timed = p->choice_timed;
    en->last.kept_fp32 = p->nkept_fp32;
    en->last.prec_unknown = p->nprec_unknown;
    en->last.unpool_prologues = p->unpool_prologues;
    en->last.shared_pairs = p->shared_pairs;
    en->last.blocked_values = p->blocked_values;
    en->last.relu_output_masks = p->relu_output_masks;
    en->last.remat_copies = p->remat_copies;
    en->last.conv_prologues = p->conv_prologues;
    en->last.relu_bwd_epilogues = p->relu_bwd_epilogues;
    en->last.bn_bwd_epilogues = p->bn_bwd_epilogues;
    en->last.bn_bwd_products = p->bn_bwd_products;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_node *n = &p->nodes[p->kernels[k].node];
        en->last.bf16_casts += n->op == XT_OP_CAST_BF16;
        en->last.relu_epilogues += (n->op == XT_OP_CONV2D || n->op == XT_OP_CONV2D_POOL2) && n->iattr[4];
        en->last.pool_epilogues += n->op == XT_OP_CONV2D_POOL2;
    }
done:
    xt_graph_reset(g);
    return rc;
}

float xt_item(xt_engine *en, xt_t t, xt_err *e) {
    float v = 0.0f;
    const xt_node *n = xt_node_of(&en->g, t);
    if (n && xt_numel(n) == 1) xt_fetch(&en->g, t, &v, sizeof v);
    else if (n) xt_graph_fail(&en->g, "item: tensor has %lld elements, not 1", (long long)xt_numel(n));
    if (xt_mark_step(en, e)) return (float)NAN;
    return v;
}
