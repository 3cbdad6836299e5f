/* internal.h — engine internals shared by graph, autodiff, passes, executor.
 * Not part of the public API (graph.h). */
#ifndef XT_ENGINE_INTERNAL_H
#define XT_ENGINE_INTERNAL_H

#include "engine/graph.h"
#include "engine/metrics.h"

typedef struct xt_assign_rec { int slot; xt_t t; } xt_assign_rec;
typedef struct xt_fetch_rec { xt_t t; void *host; size_t bytes; } xt_fetch_rec;

struct xt_graph {
    xt_node *nodes;
    int n, cap;
    int32_t *operands;          /* all nodes' operand lists, by in_off */
    int nops, ops_cap;
    int32_t *ht;                /* CSE table: node index + 1, open addressing */
    int ht_cap;
    xt_assign_rec *assigns;
    int nassign, assign_cap;
    xt_fetch_rec *fetches;
    int nfetch, fetch_cap;
    xt_store *store;
    int oom;
    char err[512];              /* first trace error ("" = none) */
    uint64_t trace_start_ns;    /* when this step's first node was recorded */
    /* autodiff's scratch: lives with the graph and only grows, so a traced
     * step allocates nothing once the first step has sized it */
    uint8_t *bw_requires_grad;  /* per node */
    xt_t *bw_grad;              /* per node: its accumulated gradient */
    int bw_cap;
    xt_t *bw_opnd;              /* one node's operands, gradients and targets (3 x nin) */
    int bw_opnd_cap;
};

/* One gradient rule's view of the node it differentiates (autodiff_rules.c). */
typedef struct xt_grad_args {
    xt_graph *g;
    xt_t i;                     /* the node */
    xt_node n;                  /* a copy of it: pushes may move the node array */
    const xt_t *in;             /* its operands (a copy, n.nin of them) */
    xt_t gy;                    /* the gradient arriving at it */
    const uint8_t *rg;          /* per node: does the loss's gradient need to reach it */
    xt_t *gin;                  /* out, per operand: its gradient piece, or XT_NONE */
    xt_t *tgt;                  /* out, per operand: the node gin[k] belongs to (preset to in[k]) */
} xt_grad_args;
/* A rule emits forward ops for its operands' gradients; returns 0, or -1
 * with the graph's error set. Indexed by op; NULL for ops marked N. */
typedef int (*xt_grad_rule)(xt_grad_args *a);
extern const xt_grad_rule xt_grad_rules[XT_OP_COUNT];

/* Append (or find, CSE) a node; `proto` has op/dtype/rank/shape/attrs set,
 * operands passed separately. Returns the index or XT_NONE on error. */
xt_t xt_graph_push(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin);
/* Append a node without CSE: a copy of a value computed again elsewhere
 * (pass_remat.c), which CSE would hand back as the original. */
xt_t xt_graph_push_copy(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin);
/* A zeroed node prototype (padding zeroed too: nodes are compared with memcmp). */
xt_node xt_proto(xt_op op, int dtype, int rank, const int32_t *shape);
xt_t xt_maxpool_argmax(xt_graph *g, xt_t pool_node, const xt_node *values);
/* A max pool's output packs [values | argmax]: `values` floats, then a byte
 * per value (the kept cell of its window, kernels.h's k_maxpool2d_fwd; so at
 * most K_POOL_MAX_CELLS cells a window), padded to whole floats. The packed
 * node is F32 [xt_maxpool_packed(values)]; xt_maxpool_values gives `values`
 * back from it (MAXPOOL2D, CONV2D_POOL2). */
static inline int64_t xt_maxpool_packed(int64_t values) { return values + (values + 3) / 4; }
static inline int64_t xt_maxpool_values(const xt_node *packed) { return xt_numel(packed) * 4 / 5; }
void xt_graph_init(xt_graph *g, xt_store *store);
void xt_graph_destroy(xt_graph *g);
/* Structural hash of the whole step (nodes + outputs). */
uint64_t xt_graph_hash(const xt_graph *g);
/* Human-readable shape "[128, 10, 24, 24]". */
const char *xt_shape_str(const xt_node *n, char *buf, size_t cap);
int xt_same_shape(const xt_node *a, const xt_node *b);

static inline const int32_t *xt_ins(const xt_graph *g, const xt_node *n) { return g->operands + n->in_off; }
static inline uint64_t xt_mix64(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

#endif
