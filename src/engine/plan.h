/* plan.h — a compiled executable: what the passes produce and exec runs.
 *
 * The plan owns a private copy of the graph it was compiled from (its key:
 * the traced nodes, operands and outputs, and the precision) so a cache hit
 * can be confirmed by comparing node arrays, and a copy of the graph it runs
 * (the key's graph after the precision pass: bf16 casts inserted), so
 * execution never depends on the pending trace.
 *
 * Every value-carrying node has a location: a root (arena offset, store
 * slot, the collective block, or a constant) plus a byte offset. Views,
 * gradients packed for the all-reduce and parameters updated in place are
 * all just locations that share a root. Values that live only inside a
 * fused elementwise group have no location: they exist in chunk registers.
 */
#ifndef XT_PLAN_H
#define XT_PLAN_H

#include "engine/choice.h"
#include "engine/internal.h"
#include "kernels/impl.h"

/* XT_LOC_COLLECTIVE: the all-reduce's input row (gradients packed there);
 * XT_LOC_COLLECTIVE_RESULT: where the collective leaves the mean, when it is
 * read in place (xt_engine_opts.collective_result) */
typedef enum { XT_LOC_NONE, XT_LOC_ARENA, XT_LOC_SLOT, XT_LOC_COLLECTIVE, XT_LOC_COLLECTIVE_RESULT, XT_LOC_CONST } xt_loc_kind;

typedef struct xt_loc {
    int8_t kind;        /* xt_loc_kind */
    int8_t tile_local;  /* XT_LOC_ARENA holding one micro-batch tile of rows, not the whole batch */
    int32_t slot;       /* XT_LOC_SLOT */
    int64_t offset;     /* bytes (arena, slot, collective) */
} xt_loc;

/* A fused elementwise group: a straight-line program run chunk by chunk. */
typedef enum { XT_OPND_REG, XT_OPND_INPUT } xt_opnd_kind;
typedef struct xt_ew_instr {
    int16_t op;            /* elementwise xt_op */
    int16_t dst;           /* register, or -1 - k: writes group output k directly */
    int8_t akind, bkind;   /* xt_opnd_kind */
    int16_t a, b;          /* register index or group input index (int16: XT_FUSE_MAX_MEMBERS bounds both) */
} xt_ew_instr;

/* A per-channel sum the group computes as it goes (pass_fuse.c): a SUM_TO
 * down to [1, C, 1, 1] of a member, or of a value the group reads, added
 * plane by plane from the chunk that holds the values, so a member need not
 * be written to memory for it, nor anything read back by a SUM_TO kernel. */
typedef struct xt_ew_sum {
    int8_t kind;           /* xt_opnd_kind of the summed values */
    int16_t src;           /* their register or group input index */
    int16_t out;           /* the group output (a [1, C, 1, 1] node) that receives the sums */
} xt_ew_sum;

typedef struct xt_ew_group {
    int rank;
    int32_t shape[XT_MAX_RANK];   /* every member's shape */
    int ninputs, noutputs, ninstr, nregs, nsums;
    int32_t *inputs;              /* node ids read from memory (incl. constants) */
    int32_t *outputs;             /* node ids written to memory: members, and the sums' nodes */
    xt_ew_instr *instr;
    xt_ew_sum *sums;
} xt_ew_group;

typedef struct xt_kernel {
    int32_t node;          /* the op's node (for a group: its last member) */
    int32_t group;         /* index into plan->groups, or -1 */
    int32_t run;           /* index into plan->runs, or -1: not tiled */
    int32_t row_off;       /* tiled: its operands' row bytes start at plan->row_bytes[row_off] */
    int64_t state_off;     /* tiled and carrying a sum between tiles: its piece of the state area; else -1 */
    int64_t share_off;     /* a pair's hand-off in the state area (pass_share.c); else -1 */
} xt_kernel;

/* Micro-batch tiling (pass_tile.c). A run is a stretch of consecutive
 * kernels [first, last] that each compute sample i of their outputs from
 * sample i of their batched operands alone (convolutions, pooling,
 * elementwise groups, ...). The executor runs the whole stretch `rows`
 * samples at a time, so what one kernel writes is still in cache when the
 * next reads it, instead of streaming the whole batch through memory
 * between layers. Per kernel, each operand (a group's inputs, then its
 * outputs; a node's operands, then its output) has a row size in bytes:
 * the pointer of tile t0 is the operand's + t0 * row, or the operand's
 * own when it is read whole (row 0: weights, statistics) or lives in a
 * tile-local buffer. */
typedef struct xt_tile_run {
    int32_t first, last;   /* kernel indices */
    int32_t batch;         /* samples in the step */
    int32_t rows;          /* samples per tile */
} xt_tile_run;

/* What a traced graph must equal to reuse a plan: the graph as traced and
 * the precision it was compiled at. */
typedef struct xt_plan_key {
    int precision;            /* xt_precision */
    xt_node *nodes;
    int nnodes;
    int32_t *operands;
    int nops;
    xt_assign_rec *assigns;
    int nassign;
    int32_t *fetch_nodes;
    int nfetch;
} xt_plan_key;

/* Which implementation a convolution pass or matrix product runs
 * (kernels/impl.h), decided when the plan compiles (pass_choose.c), and the
 * candidates' times behind it for the kernel report and --dry-run. */
#define XT_CHOICE_MAX_CANDS (K_IMPL_COUNT - 1) /* every row of the table could be valid at once */
typedef struct xt_choice_rec {
    uint8_t impl;             /* K_IMPL_*; 0: the node has no choice */
    uint8_t how;              /* enum xt_chose */
    uint8_t ncand;
    uint8_t cand[XT_CHOICE_MAX_CANDS];
    int32_t rows;             /* samples per call it was chosen at */
    float us[XT_CHOICE_MAX_CANDS]; /* per call, per candidate (< 0: not timed) */
} xt_choice_rec;

typedef struct xt_plan {
    uint64_t hash;            /* xt_plan_key_hash of the key */
    xt_plan_key key;
    /* the graph this plan runs (the key's, lowered by the precision pass) */
    xt_node *nodes;
    int nnodes;
    int32_t *operands;
    int nops;
    xt_assign_rec *assigns;
    int nassign;
    int32_t *fetch_nodes;
    int nfetch;

    xt_loc *loc;           /* per node */
    int32_t *group_of;     /* per node: fused group index or -1 */
    xt_choice_rec *choice;   /* per node (pass_choose.c) */
    int8_t *layout;          /* per node: B when its value is laid out nChw{B}c (pass_layout.c), 0 when as its
                                shape says; NULL: no value blocked (xt_plan_layout) */
    int32_t *key_map;        /* per traced node (the key's): its node here */
    int choice_timed;        /* candidates timed when it compiled (0: all from the table or the cache) */
    int nkept_fp32;          /* bf16: convolutions and products kept fp32, their fp32 kernel the faster here */
    int nprec_unknown;       /* bf16: of those compared, how many lacked a time at one precision (left bf16) */
    xt_kernel *kernels;
    int nkernels;
    xt_ew_group *groups;
    int ngroups;
    xt_tile_run *runs;
    int nruns;
    int64_t *row_bytes;    /* per tiled kernel operand (xt_kernel.row_off) */
    /* assigns not done in place: copy loc(node) -> slot at the end */
    xt_assign_rec *late_assigns;
    int nlate;

    size_t arena_bytes;       /* planned peak of intermediates */
    size_t scratch_bytes;     /* conv scratch, shared by all conv kernels */
    size_t state_bytes;       /* what tiled kernels carry from tile to tile (after the scratch) */
    size_t intermediate_bytes;/* sum of materialized intermediates (what a naive allocator would use) */
    /* the arena itself is the engine's, shared by every cached plan: plans
     * run one at a time and nothing in an arena outlives its step */
    int fused_kernels;
    int sums_through_pool;    /* SUM_TOs that read a pool's gradient, not its backward (pass_sum_pool.c) */
    int relu_bwd_epilogues;   /* backward-data passes that apply the ReLU's backward as they write (pass_conv_epilogue.c) */
    int bn_bwd_epilogues;     /* batch norm's statistics gradients that add and mask as they write (pass_bn_bwd.c) */
    int bn_bwd_products;      /* ... of which make their addend, a per-channel product, themselves (pass_bn_bwd.c) */
    int remat_copies;         /* values made again for their backward readers (pass_remat.c) */
    int conv_prologues;       /* convolutions that make batch norm's apply as they pack x (pass_conv_prologue.c) */
    int unpool_prologues;     /* conv backward passes that scatter a pool's backward as they pack it (pass_conv_unpool.c) */
    int made_in_bf16;         /* values their kernel writes in bf16, a cast fewer each (pass_bf16_out.c) */
    int shared_pairs;         /* kernel pairs given a hand-off in the state area (pass_share.c) */
    int blocked_values;       /* values written in a channel-blocked layout (pass_layout.c) */
    int relu_output_masks;    /* ReLU backwards that take their mask from the ReLU's kept output (pass_relu_mask.c) */
    double macs, macs_executed; /* the kernels' multiply-adds per step, dense and as executed (xt_kernel_macs*) */
    /* execution scratch, sized when the plan is compiled so that running it
     * allocates nothing and has no fixed cap */
    void **operand_ptrs;      /* the widest kernel's operand (and group output) pointers */
    int operand_ptrs_len;
    void *ew_scratch;         /* the fused interpreter's registers and input state (ew.c) */
    size_t ew_scratch_bytes;
    /* the per-kernel profile (kernel_report.c): wall time of each kernel,
     * summed over the steps run with the engine's `profile` option on */
    double *kernel_ns;        /* per kernel */
    int64_t profiled_steps;
} xt_plan;

/* Passes (each in its own file). */
/* pass_precision.c: push g's nodes into `out` (an empty graph) with the casts
 * `precision` asks for; map[i] = node i's index in out. 0, or -1 (out->err). */
int xt_pass_precision(const xt_graph *g, int precision, const uint8_t *keep_fp32, xt_graph *out, int32_t *map);
/* pass_remat.c: push g's nodes into `out` (an empty graph) with copies of
 * big pointwise values made again in front of their
 * backward consumers; map[i] = node i's index in out. The values copied
 * (0: out and map untouched, use g), or -1 (out->err). */
int xt_pass_remat(const xt_graph *g, xt_graph *out, int32_t *map);
/* pass_tile.c: can a kernel of this op run on part of the batch at a time? */
int xt_op_tiles(int op);
/* ... and does a kernel of this op end every stretch it is in (pass_remat.c's barriers)? */
int xt_op_ends_stretch(int op);
/* A barrier: a kernel that reads or writes its operands whole (pass_remat.c, pass_relu_mask.c). */
static inline int xt_node_is_barrier(const xt_node *n) {
    return xt_op_table[n->op].kind == XT_KIND_KERNEL && xt_op_ends_stretch(n->op);
}
/* BN_STATS_BWD's operands as pass_bn_bwd.c lays them out, (dstats, x, stats[, f][, u][, m]): the index of the
 * addend's per-channel factor f (iattr[2]), the addend u (iattr[0]) and the mask m (iattr[1]); -1 when absent. */
typedef struct {
    int f, u, m;
} xt_bn_bwd_operands;
static inline xt_bn_bwd_operands xt_bn_bwd_layout(const xt_node *n) {
    int k = 3;
    xt_bn_bwd_operands o;
    o.f = n->iattr[2] ? k++ : -1;
    o.u = n->iattr[0] ? k++ : -1;
    o.m = n->iattr[1] ? k++ : -1;
    return o;
}
int xt_pass_live(const xt_plan *p, uint8_t *live);                  /* pass_dce.c */
int xt_plan_escapes(const xt_plan *p, int c);                       /* pass_dce.c: node c fetched or assigned? */
/* pass_dce.c: the one live node that reads node c (once), or -1 (none, or more than one read). */
int xt_plan_sole_reader(const xt_plan *p, const uint8_t *live, int c);
/* The channel block of node's value (nChw{B}c), 0: laid out as its shape says. */
static inline int xt_plan_layout(const xt_plan *p, int node) { return p->layout ? p->layout[node] : 0; }
/* pass_layout.c: the values written blocked for the library rows that read them; -1: out of memory */
int xt_pass_layout(xt_plan *p, const uint8_t *live);
/* pass_relu_mask.c: the ReLU backwards given their ReLU's output, stored anyway, as the mask; -1: out of memory */
int xt_pass_relu_mask(xt_plan *p, const uint8_t *live);
/* Operand k of node `node`. */
static inline int32_t xt_plan_operand(const xt_plan *p, int node, int k) { return p->operands[p->nodes[node].in_off + k]; }
/* A new operand list for a node: plan_operands.h. */
/* pass_dce.c: is node v a view that renames its operand whole (offset 0, same dtype and element count: a ReLU a
 * conv epilogue absorbed, a flatten), so that whoever reads v reads the operand's elements where they are? */
int xt_plan_renames_whole(const xt_plan *p, int v);
int xt_pass_conv_relu(xt_plan *p, const uint8_t *live);             /* pass_conv_epilogue.c */
int xt_pass_conv_pool(xt_plan *p, uint8_t *live);                   /* pass_conv_epilogue.c */
int xt_pass_conv_relu_pool(xt_plan *p, uint8_t *live);              /* pass_conv_epilogue.c */
int xt_pass_sum_through_pool(xt_plan *p, uint8_t *live);            /* pass_sum_pool.c; returns the sums rewritten */
int xt_pass_conv_unpool(xt_plan *p, uint8_t *live);                 /* pass_conv_unpool.c; the passes rewritten, or -1 */
int xt_pass_conv_relu_bwd(xt_plan *p, uint8_t *live);               /* pass_conv_epilogue.c; the ReLU backwards taken, or -1 */
int xt_pass_bf16_outputs(xt_plan *p, const uint8_t *live);           /* pass_bf16_out.c; values made in bf16, or -1 */
int xt_pass_conv_prologue(xt_plan *p, uint8_t *live);               /* pass_conv_prologue.c; the chains taken, or -1 */
/* pass_bn_bwd.c; the gradients given an epilogue (*products of them making a per-channel product addend), or -1 */
int xt_pass_bn_bwd(xt_plan *p, uint8_t *live, int *products);
int xt_pass_fuse(xt_plan *p, const uint8_t *live, int fuse);         /* pass_fuse.c */
int xt_pass_tile(xt_plan *p, size_t cache_bytes);                       /* pass_tile.c; cache_bytes 0 = no tiling */
/* pass_choose.c: fills p->choice for every kernel with a choice; 0, or an error code in e. */
int xt_pass_choose(xt_plan *p, const uint8_t *live, const xt_choose_opts *o, xt_err *e);
/* pass_choose.c: "conv_fwd fp32 N32 ...: cand 1.0us, ... -> winner (how)" for node's choice */
void xt_choice_line(const xt_plan *p, int node, char *buf, size_t cap);
/* The node as its choice was made: a convolution at the rows it was timed at. */
void xt_choice_op_desc(const xt_plan *p, int node, struct k_op_desc *d);
/* pass_tile.c: the tile state of each tiled kernel, sized by the implementation chosen for it */
void xt_pass_tile_states(xt_plan *p);
int xt_pass_share(xt_plan *p);                                       /* pass_share.c; the pairs given a hand-off */
/* pass_memplan.c; have_collective: 0 none, XT_COLLECTIVE_IN_ROW (the mean
 * copied back into the row), XT_COLLECTIVE_RESULT (read where it lands) */
enum { XT_COLLECTIVE_IN_ROW = 1, XT_COLLECTIVE_RESULT = 2 };
int xt_pass_memplan(xt_plan *p, const uint8_t *live, int plan, int have_collective);

/* compile.c */
typedef struct xt_compile_opts {
    int precision;         /* xt_precision */
    int fuse;              /* elementwise fusion */
    int literal_sums;      /* no pass_sum_pool.c rewrite */
    int plan_memory;       /* 0: every value its own buffer (bisecting planner bugs) */
    int have_collective;   /* the all-reduce writes into an external block: 0 or XT_COLLECTIVE_* */
    size_t tile_cache_bytes; /* the cache a micro-batch tile should fit (0: no tiling) */
    int remat;               /* copy big pointwise values for their backward readers (pass_remat.c) */
    int layout;              /* block values for the library rows that read them (pass_layout.c) */
    int output_masks;        /* ReLU backwards masked by the ReLU's kept output (pass_relu_mask.c) */
    const xt_choose_opts *choose; /* NULL: every implementation by today's rule */
} xt_compile_opts;
xt_plan *xt_compile(const xt_graph *g, const xt_compile_opts *o, xt_err *e);
void xt_plan_free(xt_plan *p);
int xt_plan_matches(const xt_plan *p, const xt_graph *g, int precision);
/* The compile cache's hash of a traced graph at a precision (fp32: the graph's own). */
uint64_t xt_plan_key_hash(const xt_graph *g, int precision);

/* exec.c */
typedef struct xt_exec_ctx {
    xt_store *store;
    void *arena;             /* xt_plan_arena_bytes(p) bytes, 64-byte aligned: intermediates, then scratch */
    float *collective;
    const float *collective_result;  /* set: the all-reduce leaves the mean there (allreduce_row) */
    int (*allreduce)(void *ctx, float *buf, size_t n, xt_err *e);
    int (*allreduce_row)(void *ctx, size_t n, xt_err *e);
    void *allreduce_ctx;
    int profile;             /* time each kernel into metrics Kernel.<class> */
} xt_exec_ctx;
int xt_execute(xt_plan *p, const xt_exec_ctx *c, xt_fetch_rec *fetches, xt_err *e);
/* The arena a plan runs in: its intermediates, its scratch area, then its
 * tile state. */
static inline size_t xt_plan_arena_bytes(const xt_plan *p) {
    return ((p->arena_bytes + 63) & ~(size_t)63) + ((p->scratch_bytes + 63) & ~(size_t)63) + p->state_bytes;
}

/* exec_ops.c: one kernel per KERNEL op of ops.def, dispatched by op id. */
typedef struct xt_kcall {
    const xt_plan *p;
    const xt_node *n;
    void *const *in;         /* operand pointers, n->nin of them */
    void *out;
    void *scratch;           /* the plan's scratch area (scratch_bytes) */
    size_t scratch_bytes;    /* its size (0: not told) */
    const xt_exec_ctx *ctx;
    xt_err *e;
    /* a micro-batch tile: rows samples from row0 of a batch of `batch`;
     * rows 0 = the whole batch, as the node's shapes say. Batched pointers
     * already point at row0. */
    int32_t row0, rows, batch;
    void *state;             /* the kernel's tile-to-tile state (xt_kernel_tile_state_bytes), or NULL */
    void *share;             /* the hand-off it shares with its pair (share_off, pass_share.c), or NULL */
} xt_kcall;
typedef int (*xt_kernel_fn)(const xt_kcall *k);
extern const xt_kernel_fn xt_kernel_table[XT_OP_COUNT];   /* NULL for FREE and EW ops */
size_t xt_kernel_scratch_bytes(const xt_plan *p, const xt_node *n);
/* The convolution pass or matrix product node n as its kernel runs it over
 * the whole batch (kernels/impl.h's k_op_desc); 0 for any other op. */
struct k_op_desc;
int xt_node_op_desc(const xt_plan *p, const xt_node *n, struct k_op_desc *d);
/* What a kernel that sums over the batch must keep between micro-batch
 * tiles outside its output (0: nothing). */
size_t xt_kernel_tile_state_bytes(const xt_plan *p, const xt_node *n);
/* Bytes of the hand-off a backward-data node n and the weight-gradient node
 * wg after it share (k_unpool2.share) when they unpool the same gradient of
 * the same convolution at fp32 on rows samples at a time; 0: they cannot. */
size_t xt_kernel_unpool2_share_bytes(const xt_plan *p, const xt_node *n, const xt_node *wg, int32_t rows);
/* Multiply-adds node n's kernel does (convolution passes and matrix
 * products; 0 for other ops): the per-kernel profile's GFLOP/s. */
double xt_kernel_macs(const xt_plan *p, const xt_node *n);
/* The same as the kernel executes them on this CPU: fewer where a pass skips
 * work that is known to be zero (the weight gradient under a max pool). */
double xt_kernel_macs_executed(const xt_plan *p, const xt_node *n);

/* ew.c: run one fused group; scratch holds xt_ew_scratch_bytes(grp). */
size_t xt_ew_scratch_bytes(const xt_ew_group *grp);
/* rows > 0: run over the first `rows` of the group's leading dim only, for
 * a micro-batch tile (batched inputs then have that many rows too); row0 is
 * the tile's first row: the group's sums start from zero on row 0 and add
 * the later tiles to it. */
void xt_ew_run(const xt_plan *p, const xt_ew_group *grp, void *const *in, void *const *out, void *scratch, int32_t row0,
               int32_t rows);
/* The largest plane (H*W) whose per-channel sum a group can take: one chunk. */
int xt_ew_max_sum_plane(void);

/* dump.c */
void xt_dump_plan(const xt_plan *p, const char *dir, const char *stage);

/* kernel_report.c: the plan's per-kernel profile table (nothing when no
 * step of it ran with `profile` on) */
void xt_plan_kernel_report(const xt_plan *p, FILE *f);

#endif
