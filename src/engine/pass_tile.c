/* pass_tile.c — micro-batch tiling: which stretches of kernels run a few
 * samples at a time, how many samples, and each operand's row size.
 *
 * Why. The plan runs layer by layer over the whole batch. At batch 1024 the
 * seed CNN's first convolution writes 23.6 MB, which the pooling then reads
 * back from memory, and so on down the net: past a few hundred samples the
 * memory-bound kernels between the convolutions stream every activation
 * through DRAM and samples/s falls with the batch. Run conv -> pool -> ReLU
 * (and their backward twins) over tiles of samples that fit in the core's
 * L2 instead, and each kernel reads what the previous one just wrote while
 * it is still in cache; a value made and used only inside the stretch needs
 * a tile-sized buffer, never the batch-sized one (pass_memplan.c).
 *
 * Which kernels. Those that compute sample i of their output from sample i
 * of their batched operands alone: the allow-list in batched_operands().
 * An op not listed there is never tiled, so a new op runs on the whole batch
 * until someone states which of its operands are per sample. Sums over the
 * batch (weight gradients, SUM_TO, the BN statistics) join a run as
 * ACCUMULATES: they gather tile by tile, and what reads their result comes
 * after the run. Other reductions (the loss, GEMMs) end a run; they read in
 * full what the run wrote. Elementwise groups
 * are pointwise, so any group splits along its leading dim, with inputs
 * that span it split alike and the rest broadcast.
 *
 * Same numbers as the untiled plan. Every tiled kernel computes a sample
 * with the same instructions whatever the batch: the direct convolution
 * keeps one image per vector lane, im2col runs one image per GEMM, pooling,
 * BN-apply and the elementwise groups are per element, dropout's mask is a
 * function of the element's index in the whole batch (row0 passes it). So
 * tiling changes when a sample's rows are computed, never how; a test
 * compares whole training runs bit for bit with tiling off
 * (XLATRAIN_NO_TILING=1).
 *
 * Is not: executing the tiles (exec.c) or placing the buffers (pass_memplan.c).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"
#include "kernels/kernels.h"
#include "util/check.h"

/* The tile is a multiple of this many samples: the widest direct-conv
 * block (16 images in AVX-512 lanes), so no tile leaves a block part full. */
#define TILE_QUANTUM 16
/* and the BN statistics gather whole chunks (k_bn_stats_add) */
_Static_assert(TILE_QUANTUM % K_BN_CHUNK == 0, "a tile must hold whole BN statistics chunks");

/* Bit k set: operand k is per sample (split along its leading dim); the
 * output is too, unless ACCUMULATES: then it is whole, a sum over the batch
 * that each tile adds to in sample order (the kernel starts it on the first
 * tile and finishes it on the last), so it is complete only after the run.
 * 0: the op is not tiled. */
#define ACCUMULATES (1u << 31)
static uint32_t batched_operands(int op) {
    switch (op) {
    case XT_OP_CONV2D_BWD_WEIGHT: return 3u | ACCUMULATES; /* (x, dy) -> dw */
    case XT_OP_SUM_TO:          return 1u | ACCUMULATES;   /* when it sums over the batch (node_batch checks) */
    case XT_OP_CONV2D:          return 1u;      /* x; weights and bias whole */
    case XT_OP_CONV2D_POOL2:    return 1u;
    case XT_OP_CONV2D_BWD_DATA: return 5u;      /* dy[, relu mask]; weights whole */
    case XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2: return 7u | ACCUMULATES; /* (x, g, argmax) -> dw */
    case XT_OP_CONV2D_BWD_DATA_UNPOOL2: return 11u; /* g, argmax[, relu mask]; weights whole */
    case XT_OP_MAXPOOL2D:       return 1u;
    case XT_OP_MAXPOOL2D_BWD:   return 3u;      /* dy, argmax */
    case XT_OP_AVGPOOL2D:       return 1u;
    case XT_OP_AVGPOOL2D_BWD:   return 1u;
    case XT_OP_BN_STATS:        return 1u | ACCUMULATES;   /* x -> (mean, var), gathered chunk by chunk */
    case XT_OP_BN_STATS_BWD:    return 26u;     /* x[, addend][, mask]; dstats and stats whole (per node: node_batched_operands) */
    case XT_OP_LOG_SOFTMAX:     return 1u;
    case XT_OP_LOG_SOFTMAX_BWD: return 3u;
    case XT_OP_NLL_LOSS_BWD:    return 2u;      /* targets; the scalar gradient whole */
    case XT_OP_ARGMAX:          return 1u;
    case XT_OP_DROPOUT:         return 1u;      /* x; the step counter whole */
    case XT_OP_DROPOUT_BWD:     return 1u;
    case XT_OP_CAST_BF16:       return 1u;      /* pointwise (pass_precision.c's roundings) */
    default:                    return 0u;
    }
}

int xt_op_tiles(int op) { return batched_operands(op) != 0; }

/* The node's own list: a statistics gradient reads x, its addend and its
 * mask per sample wherever pass_bn_bwd.c put them (xt_bn_bwd_layout), and an
 * addend's per-channel factor whole. */
static uint32_t node_batched_operands(const xt_node *n) {
    if (n->op != XT_OP_BN_STATS_BWD) return batched_operands(n->op);
    xt_bn_bwd_operands o = xt_bn_bwd_layout(n);
    return 2u | (o.u >= 0 ? 1u << o.u : 0) | (o.m >= 0 ? 1u << o.m : 0);
}

/* The BN statistics join a stretch, but batch norm's apply reads them
 * whole right after (reads_fit_run ends the stretch there): a value made
 * before them cannot stay a tile past them. */
int xt_op_ends_stretch(int op) { return !xt_op_tiles(op) || op == XT_OP_BN_STATS; }

static int64_t node_bytes(const xt_node *n) { return xt_numel(n) * (int64_t)xt_dtype_size(n->dtype); }

/* Row size of a per-sample value of a batch of B, or -1 when its leading
 * dim is not the batch. */
static int64_t row_of(const xt_node *n, int32_t B) {
    return n->rank >= 1 && n->shape[0] == B ? node_bytes(n) / B : -1;
}

/* Where a kernel writes its output's rows: one segment, or two for max
 * pooling, whose output packs [values | argmax bytes], each batch-major. */
typedef struct { int64_t off, row; } segment;
static int packs_pool_output(const xt_node *n) { return n->op == XT_OP_MAXPOOL2D || n->op == XT_OP_CONV2D_POOL2; }
static int output_segments(const xt_node *n, int32_t B, segment *s) {
    if (packs_pool_output(n)) {
        int64_t values = xt_maxpool_values(n);
        s[0] = (segment){0, values * (int64_t)sizeof(float) / B};
        s[1] = (segment){values * (int64_t)sizeof(float), values / B};
        return 2;
    }
    s[0] = (segment){0, node_bytes(n) / B};
    return 1;
}

typedef struct {
    xt_plan *p;
    int32_t *kernel_of;   /* per node: the kernel that writes it, or -1 */
    int32_t *batch;       /* per kernel: B, or 0 when it cannot be tiled */
    int64_t *rows;        /* per kernel operand slot (offsets in slot_off) */
    int32_t *slot_off;    /* per kernel: its first slot */
    int32_t *slots;       /* one kernel's operand nodes (sized for the widest) */
} tiler;

/* A kernel's operand slots: a group's inputs then outputs, a node's
 * operands then itself. */
static int kernel_slots(const xt_plan *p, int k, int32_t *nodes_out) {
    const xt_kernel *kr = &p->kernels[k];
    int c = 0;
    if (kr->group >= 0) {
        const xt_ew_group *g = &p->groups[kr->group];
        for (int i = 0; i < g->ninputs; i++) nodes_out[c++] = g->inputs[i];
        for (int i = 0; i < g->noutputs; i++) nodes_out[c++] = g->outputs[i];
        return c;
    }
    const xt_node *n = &p->nodes[kr->node];
    for (int i = 0; i < n->nin; i++) nodes_out[c++] = p->operands[n->in_off + i];
    nodes_out[c++] = kr->node;
    return c;
}

static int slot_count(const xt_plan *p, int k) {
    const xt_kernel *kr = &p->kernels[k];
    if (kr->group >= 0) return p->groups[kr->group].ninputs + p->groups[kr->group].noutputs;
    return p->nodes[kr->node].nin + 1;
}

/* An elementwise group splits along its leading dim B: inputs that span it
 * are per sample, the rest broadcast over it; its per-channel sums gather
 * tile by tile, as an ACCUMULATES kernel's output. */
static int32_t group_batch(const xt_plan *p, const xt_ew_group *g, const int32_t *slots, int64_t *rows) {
    int32_t B = g->shape[0];
    if (g->rank < 2 || B < 2) return 0;
    for (int i = 0; i < g->ninputs; i++) {
        const xt_node *x = &p->nodes[slots[i]];
        if (x->rank == g->rank && x->shape[0] == B) rows[i] = node_bytes(x) / B;
        else if (x->rank < g->rank || x->shape[0] == 1) rows[i] = 0;
        else return 0;
    }
    for (int i = 0; i < g->noutputs; i++) rows[g->ninputs + i] = node_bytes(&p->nodes[slots[g->ninputs + i]]) / B;
    for (int s = 0; s < g->nsums; s++) rows[g->ninputs + g->sums[s].out] = 0; /* sums over the batch: whole, as SUM_TO's */
    return B;
}

/* A kernel op on the allow-list: B from its first per-sample operand, which
 * every per-sample operand and the output must share. */
static int32_t node_batch(const xt_plan *p, const xt_node *n, const int32_t *slots, int64_t *rows) {
    uint32_t mask = node_batched_operands(n);
    if (!mask) return 0;
    int32_t B = 0;
    for (int i = 0; i < n->nin && !B; i++)
        if (mask >> i & 1) B = p->nodes[slots[i]].rank ? p->nodes[slots[i]].shape[0] : 0;
    if (B < 2) return 0;
    for (int i = 0; i < n->nin; i++) {
        rows[i] = 0;
        if (!(mask >> i & 1)) continue;
        if ((rows[i] = row_of(&p->nodes[slots[i]], B)) <= 0) return 0;
    }
    if (mask & ACCUMULATES) {
        const xt_node *x = &p->nodes[slots[0]];
        /* SUM_TO: the batch dim must be summed away (absent, or 1, in the output) */
        if (n->op == XT_OP_SUM_TO && n->rank == x->rank && n->shape[0] != 1) return 0;
        rows[n->nin] = 0;
        return B;
    }
    segment s[2];
    output_segments(n, B, s);
    if (!packs_pool_output(n) && row_of(n, B) <= 0) return 0;
    rows[n->nin] = s[0].row;
    return B;
}

/* Does kernel k read everything that kernels [first, k) write per sample,
 * at the rows they write? A value read whole (weights, statistics) or a
 * view that does not line up with the writer's rows must be complete first. */
static int reads_fit_run(const tiler *t, int k, int first) {
    const xt_plan *p = t->p;
    int32_t *slots = t->slots;
    int ns = kernel_slots(p, k, slots), nin = ns - (p->kernels[k].group >= 0 ? p->groups[p->kernels[k].group].noutputs : 1);
    int ok = 1;
    for (int i = 0; i < nin && ok; i++) {
        int32_t v = slots[i];
        int64_t off = 0;
        while (p->nodes[v].op == XT_OP_VIEW) {
            int32_t b = p->operands[p->nodes[v].in_off];
            off += (int64_t)p->nodes[v].iattr[0] * xt_dtype_size(p->nodes[b].dtype);
            v = b;
        }
        int w = t->kernel_of[v];
        if (w < first || w >= k) continue; /* written before the run: complete */
        int64_t row = t->rows[t->slot_off[k] + i];
        segment s[2];
        int nseg = output_segments(&p->nodes[v], t->batch[w], s), hit = 0;
        for (int j = 0; j < nseg; j++) hit |= row > 0 && s[j].off == off && s[j].row == row;
        ok = hit;
    }
    return ok;
}

/* Samples per tile: what the run touches per sample (each value once)
 * times the tile must fit half the cache, in whole direct-conv blocks. */
static int32_t tile_rows(const tiler *t, const xt_tile_run *r, size_t cache_bytes, uint8_t *seen) {
    const xt_plan *p = t->p;
    int64_t per_sample = 0;
    for (int k = r->first; k <= r->last; k++) {
        int ns = kernel_slots(p, k, t->slots);
        for (int i = 0; i < ns; i++) {
            int64_t row = t->rows[t->slot_off[k] + i];
            if (row > 0 && !seen[t->slots[i]]) { seen[t->slots[i]] = 1; per_sample += row; }
        }
    }
    memset(seen, 0, (size_t)p->nnodes);
    int64_t rows = per_sample > 0 ? (int64_t)(cache_bytes / 2) / per_sample : r->batch;
    rows = rows / TILE_QUANTUM * TILE_QUANTUM;
    if (rows < TILE_QUANTUM) rows = TILE_QUANTUM;
    return rows >= r->batch ? r->batch : (int32_t)rows;
}

/* A kernel that carries a partial sum from tile to tile (the direct
 * convolution's per-lane weight-gradient sums) gets its own piece of the
 * plan's state area: the scratch every kernel shares would not keep it. */
static void assign_state(xt_plan *p, int k) {
    size_t b = p->kernels[k].group < 0 ? xt_kernel_tile_state_bytes(p, &p->nodes[p->kernels[k].node]) : 0;
    if (!b) return;
    p->kernels[k].state_off = (int64_t)p->state_bytes;
    p->state_bytes += (b + 63) & ~(size_t)63;
}

/* Runs: maximal stretches of tileable kernels of one batch whose reads fit;
 * kept when they have two kernels or more and the batch exceeds a tile. */
static int form_runs(tiler *t, size_t cache_bytes) {
    xt_plan *p = t->p;
    uint8_t *seen = calloc((size_t)p->nnodes + 1, 1);
    p->runs = malloc(((size_t)p->nkernels + 1) * sizeof *p->runs);
    if (!seen || !p->runs) { free(seen); return -1; }
    p->nruns = 0;
    int first = -1;
    for (int k = 0; k <= p->nkernels; k++) {
        int fits = k < p->nkernels && t->batch[k] &&
                   (first < 0 || (t->batch[k] == t->batch[first] && reads_fit_run(t, k, first)));
        if (fits && first < 0) first = k;
        if (fits) continue;
        if (first >= 0 && k - first >= 2) {
            xt_tile_run r = {.first = first, .last = k - 1, .batch = t->batch[first]};
            r.rows = tile_rows(t, &r, cache_bytes, seen);
            if (r.rows < r.batch) {
                for (int j = r.first; j <= r.last; j++) p->kernels[j].run = p->nruns;
                p->runs[p->nruns++] = r;
            }
        }
        first = k < p->nkernels && t->batch[k] ? k : -1;
    }
    free(seen);
    return 0;
}

/* After the choice of implementations (pass_choose.c), which sizes the state. */
void xt_pass_tile_states(xt_plan *p) {
    p->state_bytes = 0;
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].run >= 0) assign_state(p, k);
}

int xt_pass_tile(xt_plan *p, size_t cache_bytes) {
    tiler t = {.p = p};
    int64_t nslots = 0;
    int widest = 1;
    for (int k = 0; k < p->nkernels; k++) {
        p->kernels[k].run = -1;
        p->kernels[k].state_off = -1;
        p->kernels[k].row_off = (int32_t)nslots;
        int ns = slot_count(p, k);
        nslots += ns;
        if (ns > widest) widest = ns;
    }
    p->nruns = 0;
    p->state_bytes = 0;
    p->row_bytes = calloc((size_t)nslots + 1, sizeof *p->row_bytes);
    if (!p->row_bytes) return -1;
    if (!cache_bytes) return 0;
    t.kernel_of = malloc(((size_t)p->nnodes + 1) * sizeof *t.kernel_of);
    t.batch = calloc((size_t)p->nkernels + 1, sizeof *t.batch);
    t.slot_off = malloc(((size_t)p->nkernels + 1) * sizeof *t.slot_off);
    int32_t *slots = t.slots = malloc((size_t)widest * sizeof *slots);
    int rc = -1;
    if (!t.kernel_of || !t.batch || !t.slot_off || !slots) goto out;
    t.rows = p->row_bytes;
    for (int i = 0; i < p->nnodes; i++) t.kernel_of[i] = -1;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        t.slot_off[k] = kr->row_off;
        int ns = kernel_slots(p, k, slots);
        for (int i = ns - (kr->group >= 0 ? p->groups[kr->group].noutputs : 1); i < ns; i++) t.kernel_of[slots[i]] = k;
        int64_t *rows = t.rows + kr->row_off;
        t.batch[k] = kr->group >= 0 ? group_batch(p, &p->groups[kr->group], slots, rows)
                                    : node_batch(p, &p->nodes[kr->node], slots, rows);
        if (!t.batch[k]) memset(rows, 0, (size_t)ns * sizeof *rows);
    }
    rc = form_runs(&t, cache_bytes);
out:
    free(t.kernel_of);
    free(t.batch);
    free(t.slot_off);
    free(slots);
    return rc;
}
