/* graph.h — the lazy-graph engine's public API: tensors are IR nodes.
 *
 *   xt_engine *en = xt_engine_new(store, &opts);
 *   xt_graph *g = xt_engine_graph(en);
 *   xt_t x = xt_leaf(g, SLOT_X), w = xt_leaf(g, SLOT_W);
 *   xt_t y = xt_relu(g, xt_matmul(g, x, w, 0, 1));   // nothing computed yet
 *   xt_t loss = xt_sum_all(g, y);
 *   xt_t gw;  xt_backward(g, loss, &w, 1, &gw);       // more graph, still nothing computed
 *   xt_assign(g, SLOT_W, xt_sub(g, w, xt_mul(g, xt_const(g, 0.1f), gw)));
 *   float l; xt_fetch(g, loss, &l, sizeof l);
 *   xt_mark_step(en, &err);   // hash -> cache hit, or compile once -> execute
 *
 * A tensor (xt_t) is the index of a node in the step's graph: op, dtype,
 * shape, operand indices and attributes, plain data. Nodes are appended in
 * call order (a valid topological order) and hashed on insert from (op,
 * attributes, dtype, shape, operand hashes); an identical node is reused
 * instead of appended (CSE). Leaves hash their slot, shape and dtype — never
 * their data — so a new batch, new weights or a new learning rate hit the
 * compile cache.
 *
 * Handles are valid until the step's barrier (xt_mark_step or xt_item). What
 * survives a step is device data: the store's slots, updated in place by
 * xt_assign (input/output aliasing, as XLA's buffer donation).
 *
 * Errors while tracing (shape mismatches) are sticky: the op returns
 * XT_NONE, later ops given XT_NONE return XT_NONE, and xt_mark_step reports
 * the first error, naming the op that caused it.
 */
#ifndef XT_GRAPH_H
#define XT_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/node.h"
#include "engine/store.h"
#include "util/err.h"

typedef int32_t xt_t;
#define XT_NONE ((xt_t)-1)

typedef enum {
#define XT_OP(name, arity, kind, grad, scratch, cls) XT_OP_##name,
#include "engine/ops.def"
    XT_OP_COUNT
} xt_op;

/* An op's kind (ops.def): FREE ops need no kernel, EW ops run in fused
 * elementwise groups, KERNEL ops have a kernel of their own. */
typedef enum { XT_KIND_FREE, XT_KIND_EW, XT_KIND_KERNEL } xt_op_kind;

typedef struct xt_op_info {
    const char *name;
    int arity;                  /* -1 = variadic */
    xt_op_kind kind;
    int differentiable;         /* has a gradient rule */
    const char *profile_class;  /* "Kernel.conv", ...: the metric its time goes to */
} xt_op_info;
extern const xt_op_info xt_op_table[XT_OP_COUNT];

typedef struct xt_graph xt_graph;
typedef struct xt_engine xt_engine;

/* ---- shapes ---- (xt_numel: node.h) */
const xt_node *xt_node_of(const xt_graph *g, xt_t t);
int xt_operand(const xt_graph *g, const xt_node *n, int i);

/* ---- leaves and constants ---- */
xt_t xt_leaf(xt_graph *g, int slot);
xt_t xt_const(xt_graph *g, float value);          /* scalar, broadcasts */
xt_t xt_reshape(xt_graph *g, xt_t x, int rank, const int32_t *shape);  /* view; numel must match */
/* A contiguous window of x's elements starting at `offset`, with its own shape. */
xt_t xt_view(xt_graph *g, xt_t x, int64_t offset, int rank, const int32_t *shape);

/* ---- elementwise (numpy broadcasting) ---- */
xt_t xt_neg(xt_graph *g, xt_t a);
xt_t xt_relu(xt_graph *g, xt_t a);
xt_t xt_exp(xt_graph *g, xt_t a);
xt_t xt_log(xt_graph *g, xt_t a);
xt_t xt_sqrt(xt_graph *g, xt_t a);
xt_t xt_rsqrt(xt_graph *g, xt_t a);
xt_t xt_square(xt_graph *g, xt_t a);
xt_t xt_add(xt_graph *g, xt_t a, xt_t b);
xt_t xt_sub(xt_graph *g, xt_t a, xt_t b);
xt_t xt_mul(xt_graph *g, xt_t a, xt_t b);
xt_t xt_div(xt_graph *g, xt_t a, xt_t b);
xt_t xt_relu_bwd(xt_graph *g, xt_t dy, xt_t x);
xt_t xt_ew(xt_graph *g, xt_op op, xt_t a, xt_t b);
xt_t xt_broadcast_to(xt_graph *g, xt_t x, int rank, const int32_t *shape);  /* any elementwise op by id (b ignored if unary) */

/* ---- reductions ---- */
xt_t xt_sum_to(xt_graph *g, xt_t x, int rank, const int32_t *shape);  /* sum down to a broadcastable shape */
xt_t xt_sum_all(xt_graph *g, xt_t x);
xt_t xt_mean_all(xt_graph *g, xt_t x);

/* ---- structured ops ---- */
xt_t xt_matmul(xt_graph *g, xt_t a, xt_t b, int transA, int transB);
xt_t xt_conv2d(xt_graph *g, xt_t x, xt_t w, xt_t b /* or XT_NONE */, int sh, int sw, int ph, int pw);
xt_t xt_max_pool2d(xt_graph *g, xt_t x, int kh, int kw, int sh, int sw, int ph, int pw);
xt_t xt_avg_pool2d(xt_graph *g, xt_t x, int kh, int kw, int sh, int sw, int ph, int pw);
/* Batch statistics (2, C): row 0 mean, row 1 biased variance. */
xt_t xt_bn_stats(xt_graph *g, xt_t x);
xt_t xt_log_softmax(xt_graph *g, xt_t x);
xt_t xt_nll_loss(xt_graph *g, xt_t logp, xt_t target);
xt_t xt_argmax(xt_graph *g, xt_t x);
/* Inverted dropout with a counter-based mask from (seed, step, stream, index);
 * `step` is a scalar leaf holding the step counter (data, not hashed). */
xt_t xt_dropout(xt_graph *g, xt_t x, xt_t step, float p, int stream, uint64_t seed);
/* Mean over the replicas of each gradient (identity with one process). */
void xt_all_reduce(xt_graph *g, xt_t *grads, int n);

/* ---- autodiff ---- */
/* Append the gradient graph of scalar `loss` w.r.t. each wrt[i] (leaves or
 * any node); grads[i] = XT_NONE when loss does not depend on wrt[i]. */
int xt_backward(xt_graph *g, xt_t loss, const xt_t *wrt, int n, xt_t *grads);

/* ---- step outputs ---- */
/* At the barrier, write t into slot's buffer (in place where safe). */
void xt_assign(xt_graph *g, int slot, xt_t t);
/* At the barrier, copy t to host memory (bytes must equal its size). */
void xt_fetch(xt_graph *g, xt_t t, void *host, size_t bytes);

/* ---- precision ---- */
/* fp32: every op in float32. bf16: mixed precision (XLA_USE_BF16): the
 * operands of convolutions and matrix products rounded to bfloat16, products
 * accumulated in fp32; everything else fp32 (engine/pass_precision.c). */
typedef enum { XT_PREC_FP32 = 0, XT_PREC_BF16 = 1 } xt_precision;
/* "fp32", "bf16". Inline beside the type, not in engine.c, so that what
 * names a plan's precision (dump.c, kernel_report.c) need not call up into
 * the engine that calls them. */
static inline const char *xt_precision_name(int precision) { return precision == XT_PREC_BF16 ? "bf16" : "fp32"; }

/* ---- the engine: compile cache + executor ---- */
typedef struct xt_engine_opts {
    const char *save_graphs_dir;   /* NULL/"" = off (else text + .dot dumps per new graph) */
    int fuse;                      /* 1 = elementwise fusion (default); 0 for tests */
    int literal_sums;              /* 1 = every SUM_TO sums what was traced (pass_sum_pool.c off): tests
                                      compare the other passes bit for bit with an unfused plan */
    int no_memory_planner;         /* 1 = every value its own buffer, no in-place updates (as tinygrad's
                                      NO_MEMORY_PLANNER; also XLATRAIN_NO_MEMORY_PLANNER=1): bisects planner bugs */
    int no_tiling;                 /* 1 = run every kernel over the whole batch, no micro-batch tiles
                                      (also XLATRAIN_NO_TILING=1): bisects tiling bugs, measures what tiling buys */
    int no_remat;                  /* 1 = keep every forward value for its backward readers, no copies made
                                      again (pass_remat.c; also XLATRAIN_NO_REMAT=1): bisects, measures */
    int no_layout;                 /* 1 = every value NCHW between kernels, none blocked for the library rows
                                      that read it (pass_layout.c; also XLATRAIN_NO_LAYOUT=1): bisects, measures */
    int no_output_masks;           /* 1 = a ReLU's backward reads the ReLU's input as its mask even where its
                                      output is kept anyway (pass_relu_mask.c off): tests, measures */
    size_t tile_cache_bytes;       /* the cache a micro-batch tile is sized for; 0 = this CPU's L2 (tests set it
                                      so that tiling does not depend on the machine) */
    int recompile_warn;            /* warn after this many distinct graphs (default 6) */
    int profile;                   /* time kernels by class into metrics (Kernel.conv, ...) */
    int precision;                 /* xt_precision: a compile pass applies it; part of the cache key */
    int max_compiles;              /* fail (XT_ECOMPILE) rather than compile graph N+1; 0 = no limit (--max-compiles) */
    /* The collective: called by ALLREDUCE with the packed gradient block
     * (which lives in collective_buf when given). NULL = single process. */
    int (*allreduce)(void *ctx, float *buf, size_t n, xt_err *e);
    void *allreduce_ctx;
    float *collective_buf;         /* optional external block for ALLREDUCE output */
    size_t collective_floats;
    /* Zero-copy (with collective_buf): ALLREDUCE calls allreduce_row on the
     * first n floats of collective_buf instead, which leaves the mean at
     * collective_result (the shared sum block), and the step's readers of the
     * mean (the optimizer) read it there: no copy of it back into the row.
     * The mean stays valid until the next all-reduce. */
    int (*allreduce_row)(void *ctx, size_t n, xt_err *e);
    const float *collective_result;
    /* Kernel choices (pass_choose.c): 0 today's fixed rules (the engine's
     * default), 1 measured when a graph compiles. With several workers,
     * choice_agree sums a vector over them in rank order (NULL: one process),
     * choice_leader marks the one that times (worker 0 of host 0);
     * choice_skew (tests) gives synthetic times, 1: the leader preferring the
     * last candidate and the others the first, 2: all the last;
     * choice_log prints the choices of each compile on stderr. */
    int kernel_choice;
    int (*choice_agree)(void *ctx, double *v, int n, xt_err *e);
    void *choice_ctx;
    int choice_leader;
    int choice_skew;
    int choice_log;
} xt_engine_opts;

xt_engine *xt_engine_new(xt_store *store, const xt_engine_opts *opts);
void xt_engine_free(xt_engine *en);
xt_graph *xt_engine_graph(xt_engine *en);
/* Name the graphs traced from now on ("training step", "evaluation"): the
 * --max-compiles message lists each compiled graph by it. `label` must
 * outlive the engine (a string literal). */
void xt_engine_set_label(xt_engine *en, const char *label);
/* Trace and compile the graphs from now on at this precision (xt_precision).
 * Graphs compiled at another one stay cached apart, under their own key. */
void xt_engine_set_precision(xt_engine *en, int precision);
/* The barrier: cut, hash, look up / compile, execute, apply assigns and
 * fetches, reset the graph. Returns 0 or an error code (trace errors included). */
int xt_mark_step(xt_engine *en, xt_err *e);
/* Barrier that also returns t's value (a scalar or the first element). */
float xt_item(xt_engine *en, xt_t t, xt_err *e);
/* Drop the pending graph without executing it. */
void xt_graph_reset(xt_graph *g);
/* Record a trace error (the first one wins) and return XT_NONE; for
 * composite builders that detect a problem themselves. */
xt_t xt_graph_fail(xt_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The first trace error, or NULL. */
const char *xt_graph_error(const xt_graph *g);

/* Statistics of the most recent step's executable (for tests/bench). */
typedef struct xt_exec_stats {
    uint64_t graph_hash;
    int ir_nodes;            /* nodes in the traced graph */
    int kernels;             /* kernels the plan executes (fused groups count once) */
    int fused_kernels;       /* of which fused elementwise groups */
    size_t arena_bytes;      /* planned arena size */
    size_t intermediate_bytes; /* sum of all materialized intermediate sizes */
    int cache_hit;
    int distinct_graphs;     /* executables in the cache */
    int tile_runs;           /* stretches of kernels run in micro-batch tiles */
    int tiled_kernels;       /* kernels in them */
    int tile_rows;           /* samples per tile, fewest over the runs (0: none) */
    int tile_rows_max;       /* ... and most */
    double macs;             /* multiply-adds of the step's convolutions and GEMMs, counted dense */
    double macs_executed;    /* ... as executed: without the work a pass skips as zero */
    int precision;           /* xt_precision the executable was compiled at */
    int bf16_casts;          /* CAST_BF16 kernels it runs per step */
    int relu_epilogues;      /* convolutions that apply their ReLU as they write (pass_conv_epilogue.c) */
    int pool_epilogues;      /* convolutions that write only their 2x2 max pool (pass_conv_epilogue.c) */
    int sums_through_pool;   /* per-channel sums of a pool's backward that read its gradient (pass_sum_pool.c) */
    int relu_bwd_epilogues;  /* backward-data passes that apply the ReLU's backward as they write (pass_conv_epilogue.c) */
    int bn_bwd_epilogues;    /* batch norm's statistics gradients that add and mask as they write (pass_bn_bwd.c) */
    int bn_bwd_products;     /* ... of which make their addend, a per-channel product, themselves (pass_bn_bwd.c) */
    int remat_copies;        /* forward values made again for their backward readers (pass_remat.c) */
    int conv_prologues;      /* convolutions that make batch norm's apply as they pack x (pass_conv_prologue.c) */
    int unpool_prologues;    /* conv backward passes that scatter a max pool's backward themselves (pass_conv_unpool.c) */
    int shared_pairs;        /* backward convolution pairs that scatter their pooled gradient once (pass_share.c) */
    int blocked_values;      /* values written in the channel-blocked layout their readers want (pass_layout.c) */
    int relu_output_masks;   /* ReLU backwards masked by the ReLU's kept output, not its input (pass_relu_mask.c) */
    int made_in_bf16;        /* values their kernel writes in bf16 instead of a cast (pass_bf16_out.c) */
    int choice_timed;        /* kernel candidates timed when it compiled (pass_choose.c) */
    int kept_fp32;           /* bf16: convolutions and products kept fp32, faster so on this CPU */
    int prec_unknown;        /* bf16: convolutions and products with no time at one precision (left bf16) */
} xt_exec_stats;
void xt_engine_last_stats(const xt_engine *en, xt_exec_stats *s);

/* The per-kernel profile (engine/kernel_report.c): for every cached
 * executable that ran with `profile` on, a table of its kernels in execution
 * order: op or fused group, output shape, micro-batch run, microseconds per
 * step, share of the step's kernel time, GFLOP/s of convolutions and GEMMs.
 * Reset forgets the times so far (a warm-up's, a compile step's). */
void xt_engine_kernel_report(const xt_engine *en, FILE *f);
/* The kernel choices every worker runs (checkpoints: "key=impl;..."; malloc'd,
 * NULL when out of memory), and choices read back (--resume: they are taken
 * without timing); returns how many, or -1 if the text is not such a list. */
char *xt_engine_choices_text(const xt_engine *en);
int xt_engine_load_choices(xt_engine *en, const char *text);
/* The instruction set (ISA cap, bf16 path) kernel choices are made and keyed
 * at now, e.g. "avx512+avx512bf16" or "avx2": checkpoints record it beside
 * their choices, since a choice made at another one is never taken. */
void xt_engine_choice_isa(char *buf, size_t cap);
/* One line per convolution pass or product of every cached plan: its
 * description, the candidates' times and the winner (results.json); malloc'd. */
char *xt_engine_choice_lines(const xt_engine *en);
void xt_engine_kernel_profile_reset(xt_engine *en);

#endif
