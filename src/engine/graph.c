/* graph.c — capture: appending IR nodes with hash-on-insert CSE, and the
 * shape-checked constructors of every op. Computes nothing. */
#include "engine/internal.h"
#include "kernels/kernels.h" /* K_POOL_MAX_CELLS */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XT_DIFF_D 1
#define XT_DIFF_N 0
const xt_op_info xt_op_table[XT_OP_COUNT] = {
#define XT_OP(name, arity, kind, grad, scratch, cls) \
    [XT_OP_##name] = {#name, arity, XT_KIND_##kind, XT_DIFF_##grad, "Kernel." #cls},
#include "engine/ops.def"
};

const xt_node *xt_node_of(const xt_graph *g, xt_t t) { return (t >= 0 && t < g->n) ? &g->nodes[t] : NULL; }
int xt_operand(const xt_graph *g, const xt_node *n, int i) { return g->operands[n->in_off + i]; }

const char *xt_shape_str(const xt_node *n, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n->rank && o < cap; i++) o += (size_t)snprintf(buf + o, cap - o, i ? ", %d" : "%d", n->shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

int xt_same_shape(const xt_node *a, const xt_node *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

void xt_graph_init(xt_graph *g, xt_store *store) {
    memset(g, 0, sizeof *g);
    g->store = store;
}

void xt_graph_destroy(xt_graph *g) {
    free(g->nodes);
    free(g->operands);
    free(g->ht);
    free(g->assigns);
    free(g->fetches);
    free(g->bw_requires_grad);
    free(g->bw_grad);
    free(g->bw_opnd);
    memset(g, 0, sizeof *g);
}

void xt_graph_reset(xt_graph *g) {
    g->n = g->nops = g->nassign = g->nfetch = 0;
    g->oom = 0;
    g->err[0] = 0;
    if (g->ht) memset(g->ht, 0, (size_t)g->ht_cap * sizeof *g->ht);
}

const char *xt_graph_error(const xt_graph *g) { return g->err[0] ? g->err : NULL; }

xt_t xt_graph_fail(xt_graph *g, const char *fmt, ...) {
    if (!g->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->err, sizeof g->err, fmt, ap);
        va_end(ap);
    }
    return XT_NONE;
}

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The node's structure: its own fields packed into 64-bit words, each
 * scrambled with its own odd multiplier and summed, then one full mix, then
 * the operands' hashes chained in order. The words are independent, so the
 * core overlaps their multiplies; one xt_mix64 per field (~10 cycles each,
 * about 17 in a chain per node) was 3.7% of the seed CNN's step at batch 16.
 * Equal fields give equal hashes (shape past rank counts as 0); the hash only
 * has to spread nodes over the CSE table and the plan cache, both of which
 * compare the nodes themselves on a match. */
static inline uint64_t word_scramble(uint64_t w, uint64_t k) {
    w = (w + 0x9e3779b97f4a7c15ULL) * k;
    return w ^ (w >> 29);
}
static uint64_t node_hash(const xt_graph *g, const xt_node *n, const xt_t *ins) {
    static const uint64_t K[8] = {0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL, 0xd6e8feb86659fd93ULL,
                                  0xa0761d6478bd642fULL, 0xe7037ed1a0b428dbULL, 0x8ebc6af09c88c6e3ULL,
                                  0x589965cc75374cc3ULL, 0x1d8e4e27c47d124fULL};
    uint32_t f[2];
    memcpy(f, n->fattr, sizeof f);
    uint64_t h = word_scramble((uint64_t)(uint16_t)n->op | (uint64_t)(uint8_t)n->dtype << 16 |
                                   (uint64_t)(uint8_t)n->rank << 24 | (uint64_t)(uint32_t)n->nin << 32, K[0]);
    h += word_scramble((uint64_t)f[0] | (uint64_t)f[1] << 32, K[1]);
    for (int i = 0; i < 6; i += 2)
        h += word_scramble((uint64_t)(uint32_t)n->iattr[i] | (uint64_t)(uint32_t)n->iattr[i + 1] << 32, K[2 + i / 2]);
    for (int i = 0; i < XT_MAX_RANK; i += 2) {
        uint64_t a = i < n->rank ? (uint32_t)n->shape[i] : 0, b = i + 1 < n->rank ? (uint32_t)n->shape[i + 1] : 0;
        h += word_scramble(a | b << 32, K[(5 + i / 2) & 7]);
    }
    h = xt_mix64(0x6a09e667f3bcc908ULL, h);
    for (int i = 0; i < n->nin; i++) h = xt_mix64(h, g->nodes[ins[i]].hash);
    return h;
}

static int same_node(const xt_graph *g, const xt_node *a, const xt_node *b, const xt_t *bins) {
    if (a->hash != b->hash || a->op != b->op || a->dtype != b->dtype || a->nin != b->nin || !xt_same_shape(a, b) ||
        memcmp(a->iattr, b->iattr, sizeof a->iattr) || memcmp(a->fattr, b->fattr, sizeof a->fattr))
        return 0;
    return a->nin == 0 || !memcmp(g->operands + a->in_off, bins, (size_t)a->nin * sizeof *bins);
}

static int ht_rehash(xt_graph *g, int cap) {
    int32_t *t = calloc((size_t)cap, sizeof *t);
    if (!t) return -1;
    for (int i = 0; i < g->n; i++) {
        unsigned k = (unsigned)(g->nodes[i].hash & (uint64_t)(cap - 1));
        while (t[k]) k = (k + 1) & (unsigned)(cap - 1);
        t[k] = i + 1;
    }
    free(g->ht);
    g->ht = t;
    g->ht_cap = cap;
    return 0;
}

static xt_t push(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin, int cse);
xt_t xt_graph_push(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin) { return push(g, proto, ins, nin, 1); }
xt_t xt_graph_push_copy(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin) {
    return push(g, proto, ins, nin, 0);
}

static xt_t push(xt_graph *g, const xt_node *proto, const xt_t *ins, int nin, int cse) {
    if (g->err[0]) return XT_NONE;
    for (int i = 0; i < nin; i++)
        if (ins[i] < 0 || ins[i] >= g->n) return xt_graph_fail(g, "%s: invalid operand %d", xt_op_table[proto->op].name, i);
    if (g->n == 0) g->trace_start_ns = xt_now_ns(); /* the step's trace begins (TraceHashLookupTime) */
    xt_node n = *proto;
    n.nin = nin;
    n.hash = node_hash(g, &n, ins);
    if (g->n * 2 >= g->ht_cap && ht_rehash(g, g->ht_cap ? g->ht_cap * 2 : 256)) goto oom;
    unsigned mask = (unsigned)(g->ht_cap - 1), k = (unsigned)(n.hash & mask);
    for (; g->ht[k]; k = (k + 1) & mask) {
        const xt_node *m = &g->nodes[g->ht[k] - 1];
        if (cse && same_node(g, m, &n, ins)) return g->ht[k] - 1; /* CSE: reuse the identical node */
    }
    if (grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes) ||
        grow((void **)&g->operands, &g->ops_cap, g->nops + nin + 1, sizeof *g->operands))
        goto oom;
    n.in_off = g->nops;
    if (nin) memcpy(g->operands + g->nops, ins, (size_t)nin * sizeof *ins);
    g->nops += nin;
    g->nodes[g->n] = n;
    g->ht[k] = g->n + 1;
    return g->n++;
oom:
    g->oom = 1;
    return xt_graph_fail(g, "out of memory recording the graph");
}

xt_node xt_proto(xt_op op, int dtype, int rank, const int32_t *shape) {
    xt_node n;
    memset(&n, 0, sizeof n); /* zero padding too: nodes are compared with memcmp */
    n.op = (int16_t)op;
    n.dtype = (int8_t)dtype;
    n.rank = (int8_t)rank;
    for (int i = 0; i < rank; i++) n.shape[i] = shape[i];
    return n;
}

#define CHECK_IN(t) \
    do { if ((t) < 0 || (t) >= g->n) return XT_NONE; } while (0)
#define SHAPE(t, buf) xt_shape_str(&g->nodes[t], buf, sizeof buf)

/* ---- leaves ---- */

xt_t xt_leaf(xt_graph *g, int slot) {
    if (!g->store || slot < 0 || slot >= g->store->n) return xt_graph_fail(g, "leaf: no slot %d", slot);
    const xt_slot *s = &g->store->slots[slot];
    xt_node n = xt_proto(XT_OP_LEAF, s->dtype, s->rank, s->shape);
    n.iattr[0] = slot;
    return xt_graph_push(g, &n, NULL, 0);
}

xt_t xt_const(xt_graph *g, float value) {
    xt_node n = xt_proto(XT_OP_CONST, XT_F32, 0, NULL);
    n.fattr[0] = value;
    return xt_graph_push(g, &n, NULL, 0);
}

static xt_t view(xt_graph *g, xt_t x, int64_t offset, int dtype, int rank, const int32_t *shape) {
    CHECK_IN(x);
    xt_node n = xt_proto(XT_OP_VIEW, dtype, rank, shape);
    /* a view of a view is a view of the root: keeps the planner's alias chains flat */
    if (g->nodes[x].op == XT_OP_VIEW) {
        offset += g->nodes[x].iattr[0];
        x = g->operands[g->nodes[x].in_off];
    }
    if (offset > INT32_MAX) /* the offset is a node attribute (int32): never truncate it */
        return xt_graph_fail(g, "view: element offset %lld exceeds the engine's limit of %d elements per tensor", (long long)offset, INT32_MAX);
    n.iattr[0] = (int32_t)offset;
    return xt_graph_push(g, &n, &x, 1);
}

xt_t xt_view(xt_graph *g, xt_t x, int64_t offset, int rank, const int32_t *shape) {
    CHECK_IN(x);
    xt_node n = xt_proto(XT_OP_VIEW, g->nodes[x].dtype, rank, shape);
    if (rank < 0 || rank > XT_MAX_RANK || offset < 0 || offset + xt_numel(&n) > xt_numel(&g->nodes[x])) {
        char a[64];
        return xt_graph_fail(g, "view: %lld elements at offset %lld do not fit in %s", (long long)xt_numel(&n), (long long)offset, SHAPE(x, a));
    }
    return view(g, x, offset, g->nodes[x].dtype, rank, shape);
}

xt_t xt_reshape(xt_graph *g, xt_t x, int rank, const int32_t *shape) {
    CHECK_IN(x);
    xt_node n = xt_proto(XT_OP_VIEW, g->nodes[x].dtype, rank, shape);
    if (rank < 0 || rank > XT_MAX_RANK || xt_numel(&n) != xt_numel(&g->nodes[x])) {
        char a[64];
        return xt_graph_fail(g, "reshape: cannot view %s as a rank-%d shape with %lld elements", SHAPE(x, a), rank,
                             (long long)xt_numel(&n));
    }
    if (xt_same_shape(&n, &g->nodes[x])) return x;
    return view(g, x, 0, g->nodes[x].dtype, rank, shape);
}

/* ---- elementwise ---- */

/* numpy broadcasting: right-align; each dim equal or 1. */
static int broadcast_shape(const xt_node *a, const xt_node *b, int *rank, int32_t *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1) return -1;
        out[i] = da == 1 ? db : da;
    }
    *rank = r;
    return 0;
}

xt_t xt_ew(xt_graph *g, xt_op op, xt_t a, xt_t b) {
    CHECK_IN(a);
    if (xt_op_table[op].kind != XT_KIND_EW) return xt_graph_fail(g, "%s is not elementwise", xt_op_table[op].name);
    if (xt_op_table[op].arity == 1) {
        xt_node n = xt_proto(op, XT_F32, g->nodes[a].rank, g->nodes[a].shape);
        return xt_graph_push(g, &n, &a, 1);
    }
    CHECK_IN(b);
    int rank;
    int32_t shape[XT_MAX_RANK];
    if (broadcast_shape(&g->nodes[a], &g->nodes[b], &rank, shape)) {
        char sa[64], sb[64];
        return xt_graph_fail(g, "%s: shapes %s and %s do not broadcast", xt_op_table[op].name, SHAPE(a, sa), SHAPE(b, sb));
    }
    xt_node n = xt_proto(op, XT_F32, rank, shape);
    xt_t ins[2] = {a, b};
    return xt_graph_push(g, &n, ins, 2);
}

xt_t xt_neg(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_NEG, a, XT_NONE); }
xt_t xt_relu(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_RELU, a, XT_NONE); }
xt_t xt_exp(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_EXP, a, XT_NONE); }
xt_t xt_log(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_LOG, a, XT_NONE); }
xt_t xt_sqrt(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_SQRT, a, XT_NONE); }
xt_t xt_rsqrt(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_RSQRT, a, XT_NONE); }
xt_t xt_square(xt_graph *g, xt_t a) { return xt_ew(g, XT_OP_SQUARE, a, XT_NONE); }
xt_t xt_add(xt_graph *g, xt_t a, xt_t b) { return xt_ew(g, XT_OP_ADD, a, b); }
xt_t xt_sub(xt_graph *g, xt_t a, xt_t b) { return xt_ew(g, XT_OP_SUB, a, b); }
xt_t xt_mul(xt_graph *g, xt_t a, xt_t b) { return xt_ew(g, XT_OP_MUL, a, b); }
xt_t xt_div(xt_graph *g, xt_t a, xt_t b) { return xt_ew(g, XT_OP_DIV, a, b); }
xt_t xt_relu_bwd(xt_graph *g, xt_t dy, xt_t x) { return xt_ew(g, XT_OP_RELU_BWD, dy, x); }

xt_t xt_broadcast_to(xt_graph *g, xt_t x, int rank, const int32_t *shape) {
    CHECK_IN(x);
    xt_node n = xt_proto(XT_OP_BROADCAST, XT_F32, rank, shape);
    int32_t b[XT_MAX_RANK];
    int br;
    if (broadcast_shape(&g->nodes[x], &n, &br, b) || br != rank) {
        char sa[64], sb[64];
        return xt_graph_fail(g, "broadcast: cannot expand %s to %s", SHAPE(x, sa), xt_shape_str(&n, sb, sizeof sb));
    }
    if (xt_same_shape(&n, &g->nodes[x])) return x;
    return xt_graph_push(g, &n, &x, 1);
}

/* ---- reductions ---- */

xt_t xt_sum_to(xt_graph *g, xt_t x, int rank, const int32_t *shape) {
    CHECK_IN(x);
    const xt_node *in = &g->nodes[x];
    xt_node n = xt_proto(XT_OP_SUM_TO, XT_F32, rank, shape);
    int32_t b[XT_MAX_RANK];
    int br;
    if (rank > in->rank || broadcast_shape(in, &n, &br, b) || !xt_same_shape(&(xt_node){.rank = (int8_t)br,
            .shape = {b[0], b[1], b[2], b[3]}}, in)) {
        char sa[64], sb[64];
        return xt_graph_fail(g, "sum_to: cannot reduce %s to %s", SHAPE(x, sa), xt_shape_str(&n, sb, sizeof sb));
    }
    if (xt_same_shape(&n, in)) return x;
    return xt_graph_push(g, &n, &x, 1);
}

xt_t xt_sum_all(xt_graph *g, xt_t x) { return xt_sum_to(g, x, 0, NULL); }

xt_t xt_mean_all(xt_graph *g, xt_t x) {
    CHECK_IN(x);
    return xt_mul(g, xt_sum_all(g, x), xt_const(g, 1.0f / (float)xt_numel(&g->nodes[x])));
}

/* ---- structured ops ---- */

xt_t xt_matmul(xt_graph *g, xt_t a, xt_t b, int transA, int transB) {
    CHECK_IN(a);
    CHECK_IN(b);
    const xt_node *A = &g->nodes[a], *B = &g->nodes[b];
    char sa[64], sb[64];
    if (A->rank != 2 || B->rank != 2) return xt_graph_fail(g, "matmul: needs 2-D operands, got %s and %s", SHAPE(a, sa), SHAPE(b, sb));
    int M = transA ? A->shape[1] : A->shape[0], K = transA ? A->shape[0] : A->shape[1];
    int K2 = transB ? B->shape[1] : B->shape[0], N = transB ? B->shape[0] : B->shape[1];
    if (K != K2) return xt_graph_fail(g, "matmul: inner sizes differ: %s%s x %s%s", SHAPE(a, sa), transA ? "^T" : "", SHAPE(b, sb), transB ? "^T" : "");
    xt_node n = xt_proto(XT_OP_MATMUL, XT_F32, 2, (int32_t[]){M, N});
    n.iattr[0] = transA;
    n.iattr[1] = transB;
    xt_t ins[2] = {a, b};
    return xt_graph_push(g, &n, ins, 2);
}

xt_t xt_conv2d(xt_graph *g, xt_t x, xt_t w, xt_t b, int sh, int sw, int ph, int pw) {
    CHECK_IN(x);
    CHECK_IN(w);
    const xt_node *X = &g->nodes[x], *W = &g->nodes[w];
    char sx[64], sw_[64];
    if (X->rank != 4 || W->rank != 4 || X->shape[1] != W->shape[1])
        return xt_graph_fail(g, "conv2d: input %s and weight %s do not match (need (N,C,H,W) and (O,C,kh,kw))", SHAPE(x, sx), SHAPE(w, sw_));
    int Ho = (X->shape[2] + 2 * ph - W->shape[2]) / sh + 1, Wo = (X->shape[3] + 2 * pw - W->shape[3]) / sw + 1;
    if (sh < 1 || sw < 1 || Ho < 1 || Wo < 1 || X->shape[2] + 2 * ph < W->shape[2] || X->shape[3] + 2 * pw < W->shape[3])
        return xt_graph_fail(g, "conv2d: kernel %dx%d does not fit input %s with padding %d,%d", W->shape[2], W->shape[3], SHAPE(x, sx), ph, pw);
    xt_node n = xt_proto(XT_OP_CONV2D, XT_F32, 4, (int32_t[]){X->shape[0], W->shape[0], Ho, Wo});
    n.iattr[0] = sh; n.iattr[1] = sw; n.iattr[2] = ph; n.iattr[3] = pw;
    xt_t ins[3] = {x, w, b};
    if (b != XT_NONE) {
        CHECK_IN(b);
        if (g->nodes[b].rank != 1 || g->nodes[b].shape[0] != W->shape[0]) return xt_graph_fail(g, "conv2d: bias must be (%d)", W->shape[0]);
    }
    return xt_graph_push(g, &n, ins, b != XT_NONE ? 3 : 2);
}

static xt_t pool(xt_graph *g, xt_op op, xt_t x, int kh, int kw, int sh, int sw, int ph, int pw) {
    CHECK_IN(x);
    const xt_node *X = &g->nodes[x];
    char sx[64];
    if (X->rank != 4) return xt_graph_fail(g, "%s: needs (N,C,H,W), got %s", xt_op_table[op].name, SHAPE(x, sx));
    int Ho = (X->shape[2] + 2 * ph - kh) / sh + 1, Wo = (X->shape[3] + 2 * pw - kw) / sw + 1;
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || Ho < 1 || Wo < 1 || ph * 2 > kh || pw * 2 > kw)
        return xt_graph_fail(g, "%s: window %dx%d stride %d,%d padding %d,%d does not fit %s", xt_op_table[op].name, kh, kw, sh, sw, ph, pw, SHAPE(x, sx));
    if (op == XT_OP_MAXPOOL2D && (int64_t)kh * kw > K_POOL_MAX_CELLS)
        return xt_graph_fail(g, "%s: a %dx%d window has more than %d cells; use a smaller kernel", xt_op_table[op].name, kh, kw,
                             K_POOL_MAX_CELLS);
    int32_t oshape[4] = {X->shape[0], X->shape[1], Ho, Wo};
    int64_t on = (int64_t)oshape[0] * oshape[1] * Ho * Wo;
    xt_node n = op == XT_OP_MAXPOOL2D ? xt_proto(op, XT_F32, 1, (int32_t[]){(int32_t)xt_maxpool_packed(on)})
                                      : xt_proto(op, XT_F32, 4, oshape);
    n.iattr[0] = kh; n.iattr[1] = kw; n.iattr[2] = sh; n.iattr[3] = sw; n.iattr[4] = ph; n.iattr[5] = pw;
    xt_t p = xt_graph_push(g, &n, &x, 1);
    if (op != XT_OP_MAXPOOL2D) return p;
    /* packed [values | argmax]: the values are the op's result; the argmax
     * view is found again by the gradient rule (same offsets, CSE'd). */
    return view(g, p, 0, XT_F32, 4, oshape);
}

xt_t xt_max_pool2d(xt_graph *g, xt_t x, int kh, int kw, int sh, int sw, int ph, int pw) {
    return pool(g, XT_OP_MAXPOOL2D, x, kh, kw, sh, sw, ph, pw);
}
xt_t xt_avg_pool2d(xt_graph *g, xt_t x, int kh, int kw, int sh, int sw, int ph, int pw) {
    return pool(g, XT_OP_AVGPOOL2D, x, kh, kw, sh, sw, ph, pw);
}

/* The argmax bytes of a MAXPOOL2D's packed output (used by autodiff). */
xt_t xt_maxpool_argmax(xt_graph *g, xt_t pool_node, const xt_node *values) {
    return view(g, pool_node, xt_numel(values), XT_U8, values->rank, values->shape);
}

xt_t xt_bn_stats(xt_graph *g, xt_t x) {
    CHECK_IN(x);
    char sx[64];
    if (g->nodes[x].rank != 4) return xt_graph_fail(g, "batch_norm: needs (N,C,H,W), got %s", SHAPE(x, sx));
    xt_node n = xt_proto(XT_OP_BN_STATS, XT_F32, 2, (int32_t[]){2, g->nodes[x].shape[1]});
    return xt_graph_push(g, &n, &x, 1);
}

xt_t xt_log_softmax(xt_graph *g, xt_t x) {
    CHECK_IN(x);
    char sx[64];
    if (g->nodes[x].rank != 2) return xt_graph_fail(g, "log_softmax: needs (N, classes), got %s", SHAPE(x, sx));
    xt_node n = xt_proto(XT_OP_LOG_SOFTMAX, XT_F32, 2, g->nodes[x].shape);
    return xt_graph_push(g, &n, &x, 1);
}

xt_t xt_nll_loss(xt_graph *g, xt_t logp, xt_t target) {
    CHECK_IN(logp);
    CHECK_IN(target);
    const xt_node *L = &g->nodes[logp], *T = &g->nodes[target];
    char sa[64], sb[64];
    if (L->rank != 2 || T->rank != 1 || T->dtype != XT_I32 || T->shape[0] != L->shape[0])
        return xt_graph_fail(g, "nll_loss: needs log-probabilities (N, C) and int32 targets (N), got %s and %s", SHAPE(logp, sa), SHAPE(target, sb));
    xt_node n = xt_proto(XT_OP_NLL_LOSS, XT_F32, 0, NULL);
    xt_t ins[2] = {logp, target};
    return xt_graph_push(g, &n, ins, 2);
}

xt_t xt_argmax(xt_graph *g, xt_t x) {
    CHECK_IN(x);
    char sx[64];
    if (g->nodes[x].rank != 2) return xt_graph_fail(g, "argmax: needs (N, classes), got %s", SHAPE(x, sx));
    xt_node n = xt_proto(XT_OP_ARGMAX, XT_I32, 1, g->nodes[x].shape);
    return xt_graph_push(g, &n, &x, 1);
}

xt_t xt_dropout(xt_graph *g, xt_t x, xt_t step, float p, int stream, uint64_t seed) {
    CHECK_IN(x);
    CHECK_IN(step);
    if (!(p >= 0.0f && p < 1.0f)) return xt_graph_fail(g, "dropout: p=%g must be in [0, 1)", p);
    if (p == 0.0f) return x;
    xt_node n = xt_proto(XT_OP_DROPOUT, XT_F32, g->nodes[x].rank, g->nodes[x].shape);
    n.fattr[0] = p;
    n.iattr[0] = stream;
    n.iattr[1] = (int32_t)(uint32_t)seed;
    n.iattr[2] = (int32_t)(uint32_t)(seed >> 32);
    xt_t ins[2] = {x, step};
    return xt_graph_push(g, &n, ins, 2);
}

void xt_all_reduce(xt_graph *g, xt_t *grads, int n) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (grads[i] < 0 || grads[i] >= g->n) {
            xt_graph_fail(g, "all_reduce: gradient %d is missing", i);
            return;
        }
        total += xt_line_floats(xt_numel(&g->nodes[grads[i]]));  /* 64-byte aligned pieces */
    }
    if (total > INT32_MAX) {
        xt_graph_fail(g, "all_reduce: %lld gradient elements exceed the engine's limit of %d elements per tensor", (long long)total, INT32_MAX);
        return;
    }
    xt_node p = xt_proto(XT_OP_ALLREDUCE, XT_F32, 1, (int32_t[]){(int32_t)total});
    xt_t r = xt_graph_push(g, &p, grads, n);
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        const xt_node *gi = &g->nodes[grads[i]];
        xt_node copy = *gi;
        grads[i] = view(g, r, off, XT_F32, copy.rank, copy.shape);
        off += xt_line_floats(xt_numel(&copy));
    }
}

/* ---- outputs ---- */

void xt_assign(xt_graph *g, int slot, xt_t t) {
    if (t < 0 || t >= g->n) { xt_graph_fail(g, "assign: invalid tensor for slot %d", slot); return; }
    const xt_slot *s = &g->store->slots[slot];
    const xt_node *n = &g->nodes[t];
    xt_node want = xt_proto(XT_OP_LEAF, s->dtype, s->rank, s->shape);
    if (!xt_same_shape(n, &want) || n->dtype != s->dtype) {
        char a[64], b[64];
        xt_graph_fail(g, "assign: value %s does not fit slot '%s' %s", xt_shape_str(n, a, sizeof a), s->name, xt_shape_str(&want, b, sizeof b));
        return;
    }
    if (grow((void **)&g->assigns, &g->assign_cap, g->nassign + 1, sizeof *g->assigns)) { g->oom = 1; return; }
    g->assigns[g->nassign++] = (xt_assign_rec){slot, t};
}

void xt_fetch(xt_graph *g, xt_t t, void *host, size_t bytes) {
    if (t < 0 || t >= g->n) { xt_graph_fail(g, "fetch: invalid tensor"); return; }
    if ((size_t)xt_numel(&g->nodes[t]) * xt_dtype_size(g->nodes[t].dtype) != bytes) {
        xt_graph_fail(g, "fetch: %zu bytes requested for a tensor of %lld elements", bytes, (long long)xt_numel(&g->nodes[t]));
        return;
    }
    if (grow((void **)&g->fetches, &g->fetch_cap, g->nfetch + 1, sizeof *g->fetches)) { g->oom = 1; return; }
    g->fetches[g->nfetch++] = (xt_fetch_rec){t, host, bytes};
}

uint64_t xt_graph_hash(const xt_graph *g) {
    uint64_t h = xt_mix64(0x3c6ef372fe94f82bULL, (uint64_t)g->n);
    for (int i = 0; i < g->n; i++) h = xt_mix64(h, g->nodes[i].hash);
    for (int i = 0; i < g->nassign; i++) h = xt_mix64(xt_mix64(h, (uint64_t)g->assigns[i].slot), (uint64_t)g->assigns[i].t);
    for (int i = 0; i < g->nfetch; i++) h = xt_mix64(xt_mix64(h, 0xfe7c4ULL), (uint64_t)g->fetches[i].t);
    return h;
}
