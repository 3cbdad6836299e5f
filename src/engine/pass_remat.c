/* pass_remat.c — rematerialization: recompute a cheap pointwise activation
 * in the backward pass instead of keeping it from the forward.
 *
 * Why. Batch norm's apply, y = x * scale + shift, is an elementwise group
 * whose output feeds the next convolution (forward, inside a micro-batch
 * tile) and that convolution's weight gradient (backward, many layers
 * later). The second use forces a batch-sized buffer for y that lives from
 * the forward to the backward: the seed CNN at batch 1024 keeps 5.9 MB of it,
 * written once and read once through L3 or DRAM, although x (which batch
 * norm's own backward reads anyway) and the per-channel scale and shift are
 * all it takes to make y again. XLA's rematerialization pass and PyTorch's
 * activation checkpointing trade the same way: a few pointwise operations
 * for a buffer and its traffic.
 *
 * What. For a pointwise value v of more than REMAT_MIN_BYTES, each consumer
 * that is separated from v by a barrier (a kernel that
 * needs the whole batch: batch-norm statistics, a GEMM, the loss; it ends
 * any micro-batch stretch, so v could not stay a tile across it) reads a copy
 * of v made right in front of it instead of v. The copy recomputes v's cone:
 * v and the pointwise values it is made from, back to values whose originals
 * are alive at that consumer anyway (read there or later; a copied value's
 * original counts only up to its first barrier) or that hold at most one
 * sample's worth of v (a parameter, a statistic); at most MAX_CONE nodes.
 * ResNet's BN -> ReLU -> conv: the weight gradient's copy is
 * relu(x * scale + shift) from the conv output x, which batch norm's
 * backward keeps. Each consumer gets its own copy, read by it alone. A value
 * whose late consumers cannot all be served so is left alone (a copy helps
 * only if it lets the original die early), which can make another value's
 * leaf alive again: the choice is repeated until it is stable. Then the
 * original is read only inside the forward stretch, and pass_tile.c and
 * pass_memplan.c give it a tile-sized buffer; so does the copy, inside the
 * backward stretch.
 *
 * Same numbers. A copy is the same operations on the same operands, so it
 * has the same bits as the original; only where it is computed changes.
 *
 * The lowered graph is built by pushing the nodes again, in order, with the
 * copies in front of their consumers (as pass_precision.c does); copies are
 * pushed without CSE, which would hand back the original.
 *
 * Cheap convolutions. A convolution usually costs far more than the buffer
 * it would save; one of few multiply-adds per output (CHEAP_CONV_MACS: a
 * first layer, wide_cnn's conv1 with 9, whose ReLU'd output is the largest
 * value of its step, 11 MB at batch 128) does not. Such a y = CONV2D(x, w, b)
 * read by a ReLU v = RELU(y), with x, w, b alive where the copy goes, is a
 * kernel cone. (Not a convolution that batch norm reads, as a ResNet stem:
 * the copies of batch norm's apply are made from its output.) Its copy is
 * the convolution and the ReLU again, made once per backward stretch (the
 * nodes between two barriers) and read by every late consumer of y or v in
 * it (wide_cnn: the ReLU's backward reads y, conv2's weight gradient v),
 * placed at the stretch's start: before the convolution backward-data pass
 * whose epilogue takes the ReLU's mask from it (pass_conv_epilogue.c wants
 * the mask made before that pass). The forward original then lives only in
 * the forward tile: no batch-sized write of it (to lines not in cache, each
 * read for ownership first) and no reads of it from DRAM in the backward.
 *
 * Is not: the tiling or the buffer placement (pass_tile.c, pass_memplan.c);
 * recomputing anything but elementwise ops and cheap convolutions.
 */
#include <stdlib.h>

#include "engine/plan.h"
#include "engine/store.h"

/* A copy is an elementwise pass of its own unless a convolution takes it
 * into its packing (pass_conv_prologue.c): one more kernel call, a few
 * microseconds, which is what moving about 64 KB through memory costs. A
 * smaller value is cheaper to keep. (The threshold was the L2 size at
 * first: that left the seed CNN's bn1 output, 0.7 MB at batch 128, batch-
 * sized, and its convolution unable to take batch norm's apply.) */
#define REMAT_MIN_BYTES (64 * 1024)

/* The most nodes one copy recomputes: a pointwise chain of batch norm's
 * apply and an activation is 2-3 nodes; a longer cone means the value is
 * not cheap to make again. */
#define MAX_CONE 8

/* A convolution worth making again: at most this many multiply-adds per
 * output element (Ci*kh*kw: one channel's 3x3 is 9, an RGB 3x3 stem 27).
 * Keeping its output costs about 12 bytes of L3 or DRAM traffic per element
 * (a write with its read for ownership, a read per late reader); making it
 * again costs 2*Ci*kh*kw FLOPs, at the kernels' rate for so few channels
 * (about 60-125 GFLOP/s on Zen 5 for the direct kernel, 160 for the
 * one-channel rows method, kernel_bench "wide conv1"), a fraction of that
 * traffic's time up to a few tens of multiply-adds. */
#define CHEAP_CONV_MACS 27

typedef struct {
    const xt_graph *g;
    int32_t *nbar;        /* nbar[i]: barriers among nodes [0, i) */
    int32_t *last_use;    /* per node: its last consumer's index, or -1 */
    int32_t *kept_until;  /* per node: the last consumer that reads the original (a copied value: the last before a barrier) */
    int32_t *cons_off;    /* per node: its consumers cons[cons_off[v] .. cons_off[v+1]), ascending */
    int32_t *cons;
    uint8_t *remat;       /* per node: copied for its late consumers */
    xt_t *late;           /* per node: its latest copy in the lowered graph, or -1 */
    int32_t *late_at;     /* per node: the consumer that copy was made for (a kernel cone: its stretch's start) */
    uint8_t *kernel;      /* per node: in a kernel cone (a cheap convolution, or its ReLU), copied once per stretch */
    int32_t *start;       /* per node: the first node of its stretch (after the last barrier before it) */
    int32_t *kv;          /* the copied kernel cones' members, nk of them */
    int nk;
} remat;

static int64_t bytes_of(const xt_node *n) { return xt_numel(n) * (int64_t)xt_dtype_size(n->dtype); }
static int is_ew(const xt_node *n) { return xt_op_table[n->op].kind == XT_KIND_EW; }


/* A barrier strictly between nodes a and b (a < b). */
static int barrier_between(const remat *r, int a, int b) { return a + 1 < b && r->nbar[b] - r->nbar[a + 1] > 0; }

/* w holds at most one sample's worth of the value v it helps make (a
 * parameter, a statistic): keeping it alive costs nothing. */
static int small(const remat *r, xt_t w, xt_t v) {
    const xt_node *wn = &r->g->nodes[w], *vn = &r->g->nodes[v];
    return vn->rank >= 1 && xt_numel(wn) * vn->shape[0] <= xt_numel(vn);
}
/* w's original is still there at consumer i: read at or after i anyway (a
 * copied value's original only up to its first barrier), or small. */
static int available(const remat *r, xt_t w, xt_t v, int i) { return r->kept_until[w] >= i || small(r, w, v); }

/* Can v be made again in front of consumer i, within *budget nodes, from at
 * most one batch-sized value? A copy that reads two (ResNet's block output,
 * relu(bn(x) + shortcut), made from x and the shortcut's own cone) costs
 * more memory traffic than keeping v: one write and one read. */
static int cone_ok_from(const remat *r, xt_t v, int i, int *budget, int *big) {
    const xt_node *n = &r->g->nodes[v];
    if (!is_ew(n) || --*budget < 0) return 0;
    for (int k = 0; k < n->nin; k++) {
        xt_t w = xt_ins(r->g, n)[k];
        if (small(r, w, v)) continue;
        if (r->kept_until[w] >= i) {
            if (++*big > 1) return 0;
            continue;
        }
        if (!cone_ok_from(r, w, i, budget, big)) return 0;
    }
    return 1;
}
static int cone_ok(const remat *r, xt_t v, int i) {
    int budget = MAX_CONE, big = 0;
    return cone_ok_from(r, v, i, &budget, &big);
}

/* A copy serves the one consumer it was made for (which may read it twice,
 * or through two cones): each consumer gets its own, so a convolution's copy
 * is read by the convolution alone and pass_conv_prologue.c can take it,
 * and an elementwise consumer's copy fuses into the consumer's group. A
 * kernel cone's copy serves its whole stretch. */
static int late_valid(const remat *r, xt_t v, int i) {
    return r->late[v] >= 0 && r->late_at[v] == (r->kernel[v] ? r->start[i] : i);
}

/* y = CONV2D(x, w[, b]) with at most CHEAP_CONV_MACS multiply-adds per output. */
static int cheap_conv(const xt_graph *g, xt_t y) {
    const xt_node *c = &g->nodes[y];
    if (c->op != XT_OP_CONV2D || c->nin < 2 || c->nin > 3) return 0;
    const xt_node *w = &g->nodes[xt_ins(g, c)[1]];
    return w->rank == 4 && (int64_t)w->shape[1] * w->shape[2] * w->shape[3] <= CHEAP_CONV_MACS;
}
/* A kernel cone's convolution: y itself, or the input of the ReLU y. */
static xt_t cone_conv(const xt_graph *g, xt_t y) {
    return g->nodes[y].op == XT_OP_RELU ? xt_ins(g, &g->nodes[y])[0] : y;
}
/* y's ReLU among its consumers, or -1 */
static xt_t relu_of(const remat *r, xt_t y) {
    for (int c = r->cons_off[y]; c < r->cons_off[y + 1]; c++) {
        const xt_node *n = &r->g->nodes[r->cons[c]];
        if (n->op == XT_OP_RELU && n->nin == 1) return r->cons[c];
    }
    return -1;
}
/* The convolution's operands are there at the start s of the copy's stretch. */
static int kernel_cone_ok(const remat *r, xt_t v, int s) {
    xt_t y = cone_conv(r->g, v);
    const xt_node *c = &r->g->nodes[y];
    for (int k = 0; k < c->nin; k++)
        if (!available(r, xt_ins(r->g, c)[k], y, s)) return 0;
    return 1;
}
/* The kernel cone of v made again at its stretch start s: the convolution,
 * then its ReLU (if it has one); both serve the stretch. */
static int make_kernel_copy(remat *r, xt_graph *out, const int32_t *map, xt_t v, int s) {
    xt_t y = cone_conv(r->g, v), v2 = relu_of(r, y), ins[3];
    const xt_node *c = &r->g->nodes[y];
    for (int k = 0; k < c->nin; k++) ins[k] = map[xt_ins(r->g, c)[k]];
    if ((r->late[y] = xt_graph_push_copy(out, c, ins, c->nin)) == XT_NONE) return -1;
    r->late_at[y] = s;
    if (v2 < 0) return 0;
    if ((r->late[v2] = xt_graph_push_copy(out, &r->g->nodes[v2], &r->late[y], 1)) == XT_NONE) return -1;
    r->late_at[v2] = s;
    return 0;
}

/* v's copy in `out`, pushed in front of consumer i (cone_ok held). */
static xt_t make_copy(remat *r, xt_graph *out, const int32_t *map, xt_t v, int i) {
    const xt_node *n = &r->g->nodes[v];
    xt_t ins[2]; /* elementwise ops are unary or binary */
    if (n->nin > 2) return XT_NONE;
    for (int k = 0; k < n->nin; k++) {
        xt_t w = xt_ins(r->g, n)[k];
        if (late_valid(r, w, i)) ins[k] = r->late[w];
        else if (available(r, w, v, i)) ins[k] = map[w];
        else ins[k] = make_copy(r, out, map, w, i);
        if (ins[k] == XT_NONE) return XT_NONE;
    }
    r->late[v] = xt_graph_push_copy(out, n, ins, n->nin);
    r->late_at[v] = i;
    return r->late[v];
}

/* v = RELU of a convolution's output, or of its max pool's: the conv's
 * epilogue computes it into the conv's own buffer (pass_conv_epilogue.c),
 * so it costs no buffer to keep, and a copy would add a reader of the
 * conv output that stops the epilogue from taking it. (A cheap convolution's
 * ReLU is copied with the convolution: a kernel cone, above.) */
static int conv_epilogue_relu(const xt_graph *g, xt_t v) {
    if (g->nodes[v].op != XT_OP_RELU) return 0;
    xt_t y = xt_ins(g, &g->nodes[v])[0];
    while (g->nodes[y].op == XT_OP_VIEW) y = xt_ins(g, &g->nodes[y])[0];
    if (g->nodes[y].op == XT_OP_MAXPOOL2D) y = xt_ins(g, &g->nodes[y])[0];
    return g->nodes[y].op == XT_OP_CONV2D;
}

/* Which values get copies: pointwise, big enough, read past a barrier, and
 * every such reader can have a copy made from values alive there. Whether a
 * leaf is alive depends on which values are copied (a copied value's
 * original dies at its first barrier), so drop the values whose copies
 * cannot be made and look again until none is dropped. 1 if any is left. */
static int late_reader(const remat *r, xt_t v, int c) { return barrier_between(r, v, r->cons[c]); }
static void mark_kept(remat *r) {
    for (int v = 0; v < r->g->n; v++) {
        r->kept_until[v] = r->last_use[v];
        if (!r->remat[v]) continue;
        r->kept_until[v] = v;
        for (int c = r->cons_off[v]; c < r->cons_off[v + 1] && !late_reader(r, v, c); c++) r->kept_until[v] = r->cons[c];
    }
}
static int choose(remat *r) {
    const xt_graph *g = r->g;
    for (int v = 0; v < g->n; v++) {
        const xt_node *n = &g->nodes[v];
        xt_t y = cone_conv(g, v), relu = cheap_conv(g, y) ? relu_of(r, y) : -1;
        r->kernel[v] = (uint8_t)(relu >= 0 && (v == y || v == relu));
        int candidate = r->kernel[v] || (is_ew(n) && !conv_epilogue_relu(g, v));
        if (!candidate || bytes_of(n) <= REMAT_MIN_BYTES) continue;
        for (int c = r->cons_off[v]; c < r->cons_off[v + 1]; c++) r->remat[v] |= (uint8_t)late_reader(r, v, c);
    }
    for (int dropped = 1; dropped;) {
        dropped = 0;
        mark_kept(r);
        for (int v = 0; v < g->n; v++)
            for (int c = r->cons_off[v]; r->remat[v] && c < r->cons_off[v + 1]; c++) {
                int i = r->cons[c];
                if (late_reader(r, v, c) && !(r->kernel[v] ? kernel_cone_ok(r, v, r->start[i]) : cone_ok(r, v, i)))
                    r->remat[v] = 0, dropped = 1;
            }
    }
    int any = 0;
    for (int v = 0; v < g->n; v++) any |= r->remat[v];
    return any;
}

/* Barrier counts, each node's last consumer, and its consumers in order
 * (a node reading a value twice is one consumer). */
static int build_uses(remat *r) {
    const xt_graph *g = r->g;
    for (int i = 0, s = 0; i < g->n; i++) {
        r->start[i] = s;
        if (xt_node_is_barrier(&g->nodes[i])) s = i + 1;
        r->nbar[i + 1] = r->nbar[i] + xt_node_is_barrier(&g->nodes[i]);
        for (int k = 0; k < g->nodes[i].nin; k++) {
            xt_t u = xt_ins(g, &g->nodes[i])[k];
            if (r->last_use[u] != i) r->cons_off[u + 1]++;
            r->last_use[u] = i;
        }
    }
    for (int v = 0; v < g->n; v++) r->cons_off[v + 1] += r->cons_off[v];
    int32_t *fill = malloc(((size_t)g->n + 1) * sizeof *fill);
    if (!fill) return -1;
    for (int v = 0; v < g->n; v++) fill[v] = r->cons_off[v];
    for (int i = 0; i < g->n; i++)
        for (int k = 0; k < g->nodes[i].nin; k++) {
            xt_t u = xt_ins(g, &g->nodes[i])[k];
            if (fill[u] == r->cons_off[u] || r->cons[fill[u] - 1] != i) r->cons[fill[u]++] = i;
        }
    free(fill);
    return 0;
}

int xt_pass_remat(const xt_graph *g, xt_graph *out, int32_t *map) {
    size_t n1 = (size_t)g->n + 1;
    remat r = {.g = g};
    r.nbar = calloc(n1, sizeof *r.nbar);
    r.last_use = malloc(n1 * sizeof *r.last_use);
    r.kept_until = malloc(n1 * sizeof *r.kept_until);
    r.cons_off = calloc(n1 + 1, sizeof *r.cons_off);
    r.cons = malloc(((size_t)g->nops + 1) * sizeof *r.cons);
    r.remat = calloc(n1, 1);
    r.late = malloc(n1 * sizeof *r.late);
    r.late_at = malloc(n1 * sizeof *r.late_at);
    r.kernel = calloc(n1, 1);
    r.start = malloc(n1 * sizeof *r.start);
    r.kv = malloc(n1 * sizeof *r.kv);
    int rc = -1, copies = 0;
    if (!r.nbar || !r.last_use || !r.kept_until || !r.cons_off || !r.cons || !r.remat || !r.late || !r.late_at ||
        !r.kernel || !r.start || !r.kv)
        goto done;
    for (int v = 0; v < g->n; v++) r.last_use[v] = -1, r.late[v] = -1;
    if (build_uses(&r)) goto done;
    if (!choose(&r)) {
        rc = 0;
        goto done;
    }
    for (int v = 0; v < g->n; v++)
        if (r.remat[v] && r.kernel[v]) r.kv[r.nk++] = v;
    xt_t ins[64];
    for (int i = 0; i < g->n; i++) {
        const xt_node *n = &g->nodes[i];
        /* kernel cones read late in the stretch that starts here: their copies first */
        for (int j = 0; j < r.nk; j++)
            for (int v = r.kv[j], c = r.cons_off[v]; v < i && c < r.cons_off[v + 1]; c++)
                if (late_reader(&r, v, c) && r.start[r.cons[c]] == i && !late_valid(&r, v, i)) {
                    if (make_kernel_copy(&r, out, map, v, i)) goto done;
                    copies++;
                }
        xt_t *in = ins, *heap = NULL;
        if (n->nin > (int)(sizeof ins / sizeof *ins) && !(in = heap = malloc((size_t)n->nin * sizeof *in))) goto done;
        for (int k = 0; k < n->nin && in; k++) {
            xt_t u = xt_ins(g, n)[k];
            if (late_valid(&r, u, i)) in[k] = r.late[u];
            else if (r.remat[u] && barrier_between(&r, u, i)) /* choose() checked its cone */
                in[k] = make_copy(&r, out, map, u, i), copies++;
            else in[k] = map[u];
            if (in[k] == XT_NONE) in = NULL;
        }
        map[i] = in ? xt_graph_push(out, n, in, n->nin) : XT_NONE;
        free(heap);
        if (map[i] == XT_NONE) goto done;
    }
    rc = copies;
done:
    free(r.nbar);
    free(r.last_use);
    free(r.kept_until);
    free(r.cons_off);
    free(r.cons);
    free(r.remat);
    free(r.late);
    free(r.late_at);
    free(r.kernel);
    free(r.start);
    free(r.kv);
    return rc;
}
