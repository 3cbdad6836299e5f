/* exec_ops.c — one kernel per KERNEL op of ops.def (kern_NAME), its scratch
 * size where it needs scratch (scratch_NAME), and the tables that dispatch
 * to them, generated from ops.def. Each kernel adapts the node's shapes and
 * attributes to the numeric kernels in src/kernels/. Not here: elementwise
 * ops (they run in fused groups, ew.c) and the loop that runs a plan
 * (exec.c). */
#include <math.h>
#include <string.h>

#include "engine/plan.h"
#include "util/check.h"
#include "kernels/bf16.h"
#include "kernels/impl.h"
#include "kernels/kernels.h"

#define IN(k) (&p->nodes[p->operands[n->in_off + (k)]])

/* KERNEL(NAME) { body } defines kern_NAME for the table; the body sees the
 * plan p, the node n, operand pointers in[], the output, the scratch and
 * the call kc (for a micro-batch tile: kc->rows samples from kc->row0 of
 * kc->batch; the per-sample pointers already start at row0). */
#define KERNEL(name)                                                                              \
    static void body_##name(const xt_plan *p, const xt_node *n, void *const *in, void *out, void *scratch, \
                            const xt_kcall *kc);                                                  \
    static int kern_##name(const xt_kcall *k) {                                                   \
        body_##name(k->p, k->n, k->in, k->out, k->scratch, k);                                     \
        return 0;                                                                                 \
    }                                                                                             \
    static void body_##name(const xt_plan *p, const xt_node *n, void *const *in, void *out, void *scratch, \
                            const xt_kcall *kc)

/* Samples this call computes: the tile's, or the node's whole batch. Only
 * the ops pass_tile.c allows tiling use it. */
#define ROWS(whole) (kc->rows ? kc->rows : (whole))

KERNEL(VIEW_GRAD) {
    const xt_node *dy = IN(0);
    memset(out, 0, (size_t)xt_numel(n) * sizeof(float));
    memcpy((float *)out + n->iattr[0], in[0], (size_t)xt_numel(dy) * sizeof(float));
}

/* Sum over the dims where the output (right-aligned) has size 1. */
/* Tiled (pass_tile.c), it sums away the batch dim tile by tile: each tile
 * adds its samples in order, as the whole batch would, and only the first
 * clears y. */
KERNEL(SUM_TO) {
    const xt_node *x = IN(0);
    int32_t X[4] = {1, 1, 1, 1}, Y[4] = {1, 1, 1, 1};
    for (int d = 0; d < x->rank; d++) X[4 - x->rank + d] = x->shape[d];
    if (x->rank) X[4 - x->rank] = ROWS(x->shape[0]);
    for (int d = 0; d < n->rank; d++) Y[4 - n->rank + d] = n->shape[d];
    int64_t ys[4], st = 1;
    for (int d = 3; d >= 0; d--) { ys[d] = Y[d] == 1 ? 0 : st; st *= Y[d]; }
    float *y = out;
    const float *xv = in[0];
    if (kc->row0 == 0) memset(y, 0, (size_t)xt_numel(n) * sizeof(float));
    /* inner run: the trailing dims that are all reduced or all kept */
    int d0 = 3, red = ys[3] == 0;
    while (d0 > 0 && (X[d0 - 1] == 1 || (ys[d0 - 1] == 0) == red)) d0--;
    int64_t inner = 1, outer = 1;
    for (int d = d0; d < 4; d++) inner *= X[d];
    for (int d = 0; d < d0; d++) outer *= X[d];
    int idx[4] = {0, 0, 0, 0};
    int64_t yo = 0; /* sum of idx[d] * ys[d], kept as idx steps */
    /* reduced runs are summed a block at a time (k_sum_runs: the same bits as
     * one by one), then added to y in run order, as before */
    enum { BLOCK = 256 };
    double sums[BLOCK];
    for (int64_t o0 = 0; o0 < outer; o0 += BLOCK) {
        int64_t nb = outer - o0 < BLOCK ? outer - o0 : BLOCK;
        if (red) k_sum_runs(xv + o0 * inner, nb, inner, sums);
        for (int64_t j = 0; j < nb; j++) {
            if (red) y[yo] += (float)sums[j];
            else k_add_run(y + yo, xv + (o0 + j) * inner, inner);
            for (int d = d0 - 1; d >= 0; d--) {
                yo += ys[d];
                if (++idx[d] < X[d]) break;
                yo -= X[d] * ys[d];
                idx[d] = 0;
            }
        }
    }
}

/* Operands are bf16 when the precision pass rounded them (pass_precision.c).
 * Every matrix product and convolution pass runs the implementation chosen
 * for its node when the plan compiled (pass_choose.c, kernels/impl.h). */
static void run_chosen(const xt_kcall *kc, const k_op_desc *d, const k_op_args *a) {
    int impl = kc->p->choice[kc->n - kc->p->nodes].impl;
    XT_CHECK(impl > 0 && impl < K_IMPL_COUNT);
    k_op_args told = *a;
    told.scratch_cap = kc->scratch_bytes;
    k_impls[impl].run(impl, d, &told);
}

KERNEL(MATMUL) {
    const xt_node *A = IN(0), *B = IN(1);
    k_op_desc d;
    xt_node_op_desc(p, n, &d);
    run_chosen(kc, &d, &(k_op_args){.out = out, .x = in[0], .w = in[1], .lda = A->shape[1], .ldb = B->shape[1], .scratch = scratch});
}

/* tiled (a run's rows of a per-sample value): those rows only */
KERNEL(CAST_BF16) {
    int64_t rows = n->rank ? n->shape[0] : 1;
    k_bf16_cast((size_t)(xt_numel(n) / rows * ROWS(rows)), out, in[0]);
}

/* conv geometry from (x shape, w shape, attrs) */
static k_conv_shape conv_shape(const int32_t *xs, const int32_t *ws, const int32_t *attr) {
    k_conv_shape s = {.N = xs[0], .Ci = xs[1], .H = xs[2], .W = xs[3], .Co = ws[0], .kh = ws[2], .kw = ws[3],
                      .sh = attr[0], .sw = attr[1], .ph = attr[2], .pw = attr[3]};
    k_conv_shape_infer(&s);
    return s;
}

/* A tiled convolution's packed weights live in its state (xt_kernel_tile_state_bytes):
 * packed on the step's first tile, read by the rest. Untiled: state NULL, packed per call. */
static k_conv_packed packed_in(const xt_kcall *kc) {
    return (k_conv_packed){kc->state, kc->row0 == 0};
}

/* iattr[5] 1: x is read through batch norm's apply, 2: and a ReLU; the scale
 * and the shift are the last two operands (pass_conv_prologue.c, fp32 only). */
static k_conv_prologue prologue_of(const xt_node *n, void *const *in) {
    if (!n->iattr[5]) return K_CONV_NO_PROLOGUE;
    return (k_conv_prologue){in[n->nin - 2], in[n->nin - 1], n->iattr[5] == 2};
}
/* A forward convolution's bias: the operand after (x, w), before any prologue operands. */
static const float *conv_bias(const xt_node *n, void *const *in) {
    return n->nin - (n->iattr[5] ? 2 : 0) > 2 ? in[2] : NULL;
}

/* The node as its kernel is called: the whole batch (a tile sets d.s.N to its rows). */
int xt_node_op_desc(const xt_plan *p, const xt_node *n, k_op_desc *d) {
    memset(d, 0, sizeof *d);
    switch (n->op) {
    case XT_OP_CONV2D:
    case XT_OP_CONV2D_POOL2:
        d->kind = n->op == XT_OP_CONV2D ? K_OP_CONV_FWD : K_OP_CONV_FWD_POOL2;
        d->s = conv_shape(IN(0)->shape, IN(1)->shape, n->iattr);
        d->bf16 = IN(0)->dtype == XT_BF16;
        d->relu = n->iattr[4];
        d->prologue = n->iattr[5];
        return 1;
    case XT_OP_CONV2D_BWD_DATA: /* (dy, w) -> dx shaped like x */
        d->kind = K_OP_CONV_BWD_DATA;
        d->s = conv_shape(n->shape, IN(1)->shape, n->iattr);
        d->bf16 = IN(0)->dtype == XT_BF16;
        d->relu = n->iattr[4];
        d->ddst_block = xt_plan_layout(p, xt_plan_operand(p, (int)(n - p->nodes), 0));
        return 1;
    case XT_OP_CONV2D_BWD_DATA_UNPOOL2: /* (g, argmax, w) -> dx shaped like x */
        d->kind = K_OP_CONV_BWD_DATA_UNPOOL2;
        d->s = conv_shape(n->shape, IN(2)->shape, n->iattr);
        d->bf16 = IN(2)->dtype == XT_BF16;
        d->relu = n->iattr[4];
        return 1;
    case XT_OP_CONV2D_BWD_WEIGHT:
    case XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2: /* (x, dy) or (x, g, argmax) -> dw shaped like w */
        d->kind = n->op == XT_OP_CONV2D_BWD_WEIGHT ? K_OP_CONV_BWD_WEIGHT : K_OP_CONV_BWD_WEIGHT_UNPOOL2;
        d->s = conv_shape(IN(0)->shape, n->shape, n->iattr);
        d->bf16 = IN(0)->dtype == XT_BF16;
        d->prologue = n->iattr[5];
        if (n->op == XT_OP_CONV2D_BWD_WEIGHT) d->ddst_block = xt_plan_layout(p, xt_plan_operand(p, (int)(n - p->nodes), 1));
        return 1;
    case XT_OP_MATMUL:
        d->kind = K_OP_MATMUL;
        d->tA = n->iattr[0];
        d->tB = n->iattr[1];
        d->M = n->shape[0];
        d->N = n->shape[1];
        d->K = d->tA ? IN(0)->shape[0] : IN(0)->shape[1];
        d->bf16 = IN(0)->dtype == XT_BF16;
        return 1;
    default: return 0;
    }
}

/* The node's description for this call: a tile's rows of samples. */
static k_op_desc desc_of(const xt_plan *p, const xt_node *n, const xt_kcall *kc) {
    k_op_desc d;
    xt_node_op_desc(p, n, &d);
    d.s.N = ROWS(d.s.N);
    return d;
}

KERNEL(CONV2D) {
    k_op_desc d = desc_of(p, n, kc);
    run_chosen(kc, &d, &(k_op_args){.out = out, .x = in[0], .w = in[1], .bias = conv_bias(n, in), .scratch = scratch,
                                      .pk = packed_in(kc), .pro = prologue_of(n, in)});
}
/* CONV2D then a 2x2/2 max pool, pooled in the conv's epilogue (pass_conv_epilogue.c);
 * the output is MAXPOOL2D's [values | argmax bytes], each batch-major. */
/* A tile's argmax bytes in pool output n (batch B), whose value rows start at
 * y: y points row0 rows into the values, the argmax follows the whole batch's
 * values, and its rows are a quarter of theirs. */
static uint8_t *tile_argmax(const xt_kcall *kc, const xt_node *n, float *y, int32_t B) {
    int64_t values = xt_maxpool_values(n), per_row = values / B;
    return (uint8_t *)(y - kc->row0 * per_row + values) + kc->row0 * per_row;
}
KERNEL(CONV2D_POOL2) {
    float *y = out; /* out is void *: index it as floats */
    uint8_t *argmax = tile_argmax(kc, n, y, IN(0)->shape[0]);
    k_op_desc d = desc_of(p, n, kc);
    run_chosen(kc, &d, &(k_op_args){.out = y, .argmax = argmax, .x = in[0], .w = in[1], .bias = conv_bias(n, in),
                                      .scratch = scratch, .pk = packed_in(kc), .pro = prologue_of(n, in)});
}
/* iattr[4]: the ReLU's backward in the epilogue, its mask the last operand (fp32 only) */
KERNEL(CONV2D_BWD_DATA) {
    k_op_desc d = desc_of(p, n, kc);
    run_chosen(kc, &d, &(k_op_args){.out = out, .dy = in[0], .w = in[1], .relu_mask = n->iattr[4] ? in[2] : NULL,
                                      .scratch = scratch, .pk = packed_in(kc)});
}
/* Tiled, the sum over the batch runs on across tiles in kc->state (untiled:
 * one part, the whole batch; state NULL: the sums live in scratch). */
KERNEL(CONV2D_BWD_WEIGHT) {
    k_op_desc d = desc_of(p, n, kc);
    int first = kc->row0 == 0, last = !kc->rows || kc->row0 + kc->rows == kc->batch;
    run_chosen(kc, &d, &(k_op_args){.out = out, .x = in[0], .dy = in[1], .scratch = scratch, .acc = kc->state,
                                      .first = first, .last = last, .pro = prologue_of(n, in)});
}

/* The same two with dy given as a 2x2/2 max pool's gradient and argmax,
 * scattered as the kernel packs it (pass_conv_unpool.c); g is fp32 under
 * either precision, the other operand says which (bf16: g rounded as it is
 * scattered). */
KERNEL(CONV2D_BWD_DATA_UNPOOL2) {
    k_op_desc d = desc_of(p, n, kc);
    run_chosen(kc, &d, &(k_op_args){.out = out, .up = {in[0], in[1], kc->share}, .w = in[2],
                                      .relu_mask = n->iattr[4] ? in[3] : NULL, .scratch = scratch, .pk = packed_in(kc)});
}
KERNEL(CONV2D_BWD_WEIGHT_UNPOOL2) {
    k_op_desc d = desc_of(p, n, kc);
    int first = kc->row0 == 0, last = !kc->rows || kc->row0 + kc->rows == kc->batch;
    run_chosen(kc, &d, &(k_op_args){.out = out, .x = in[0], .up = {in[1], in[2], kc->share}, .scratch = scratch,
                                      .acc = kc->state, .first = first, .last = last, .pro = prologue_of(n, in)});
}

static k_pool_shape pool_shape(const int32_t *xs, const int32_t *a) {
    k_pool_shape s = {.N = xs[0], .C = xs[1], .H = xs[2], .W = xs[3], .kh = a[0], .kw = a[1], .sh = a[2], .sw = a[3], .ph = a[4], .pw = a[5]};
    k_pool_shape_infer(&s);
    return s;
}
/* The output packs [values | argmax] for the whole batch (tile_argmax). */
KERNEL(MAXPOOL2D) {
    k_pool_shape s = pool_shape(IN(0)->shape, n->iattr);
    float *y = out;
    uint8_t *argmax = tile_argmax(kc, n, y, s.N);
    s.N = ROWS(s.N);
    k_maxpool2d_fwd(&s, y, argmax, in[0]);
}
/* (dy, argmax) -> dx shaped like x; fp32, or made in bf16 (pass_bf16_out.c) */
KERNEL(MAXPOOL2D_BWD) {
    k_pool_shape s = pool_shape(n->shape, n->iattr);
    s.N = ROWS(s.N);
    if (n->dtype == XT_BF16)
        k_maxpool2d_bwd_bf16(&s, out, in[0], in[1], scratch);
    else
        k_maxpool2d_bwd(&s, out, in[0], in[1]);
}
static size_t scratch_MAXPOOL2D_BWD(const xt_plan *p, const xt_node *n) {
    (void)p;
    k_pool_shape s = pool_shape(n->shape, n->iattr);
    return n->dtype == XT_BF16 ? k_maxpool2d_bwd_bf16_scratch_floats(&s) * sizeof(float) : 0;
}
KERNEL(AVGPOOL2D) {
    k_pool_shape s = pool_shape(IN(0)->shape, n->iattr);
    s.N = ROWS(s.N);
    k_avgpool2d_fwd(&s, out, in[0]);
}
KERNEL(AVGPOOL2D_BWD) {
    k_pool_shape s = pool_shape(n->shape, n->iattr);
    s.N = ROWS(s.N);
    k_avgpool2d_bwd(&s, out, in[0]);
}

/* Tiled, the statistics gather tile by tile in kc->state (whole chunks of
 * samples; the same bits as untiled, where the sums live in scratch). */
KERNEL(BN_STATS) {
    const xt_node *x = IN(0);
    int C = x->shape[1];
    double *acc = kc->state ? kc->state : scratch;
    if (kc->row0 == 0) k_bn_stats_begin(C, acc);
    k_bn_stats_add(ROWS(x->shape[0]), C, x->shape[2] * x->shape[3], acc, in[0]);
    if (!kc->rows || kc->row0 + kc->rows == kc->batch) k_bn_stats_end(C, acc, out, (float *)out + C);
}
static size_t scratch_BN_STATS(const xt_plan *p, const xt_node *n) {
    return k_bn_stats_acc_doubles(IN(0)->shape[1]) * sizeof(double);
}

/* d/dx of (mean, biased var) over (N, H, W) per channel; tiled, the
 * statistics are still the whole batch's. With the ADD and the ReLU's
 * backward that read it folded in (pass_bn_bwd.c): iattr[0] 1 the addend
 * after it (ADD(u, dx): 2, u first), iattr[1] the mask after that; iattr[2]
 * 1: the addend is a product u * f[c] (where each is: xt_bn_bwd_layout). */
/* Blocked (pass_layout.c: its readers want dy in nChw{B}c), through B planes of scratch. */
KERNEL(BN_STATS_BWD) {
    int HW = n->shape[2] * n->shape[3], B = xt_plan_layout(p, (int)(n - p->nodes));
    xt_bn_bwd_operands o = xt_bn_bwd_layout(n);
    const float *uf = o.f >= 0 ? in[o.f] : NULL, *u = o.u >= 0 ? in[o.u] : NULL, *m = o.m >= 0 ? in[o.m] : NULL;
    if (B)
        k_bn_stats_bwd_fused_blocked(ROWS(n->shape[0]), n->shape[1], HW, B, (int64_t)n->shape[0] * HW, out, in[0], in[1],
                                     in[2], u, uf, n->iattr[0] == 2, m, scratch);
    else
        k_bn_stats_bwd_fused(ROWS(n->shape[0]), n->shape[1], HW, (int64_t)n->shape[0] * HW, out, in[0], in[1], in[2], u,
                             uf, n->iattr[0] == 2, m);
}
static size_t scratch_BN_STATS_BWD(const xt_plan *p, const xt_node *n) {
    int B = xt_plan_layout(p, (int)(n - p->nodes));
    return B ? k_bn_stats_bwd_blocked_floats(n->shape[2] * n->shape[3], B) * sizeof(float) : 0;
}
KERNEL(LOG_SOFTMAX) {
    k_log_softmax_fwd(ROWS(n->shape[0]), n->shape[1], out, in[0]);
}
KERNEL(LOG_SOFTMAX_BWD) {
    k_log_softmax_bwd(ROWS(n->shape[0]), n->shape[1], out, in[0], in[1]);
}

/* mean over the batch of -logp[i, t_i]; an out-of-range label gives NaN,
 * which the trainer reports as a failed step */
KERNEL(NLL_LOSS) {
    const xt_node *L = IN(0);
    int N = L->shape[0], C = L->shape[1];
    const float *lp = in[0];
    const int32_t *t = in[1];
    double acc = 0;
    for (int i = 0; i < N; i++) acc += (t[i] >= 0 && t[i] < C) ? -lp[(int64_t)i * C + t[i]] : NAN;
    *(float *)out = (float)(acc / N);
}
KERNEL(NLL_LOSS_BWD) {
    int N = ROWS(n->shape[0]), C = n->shape[1];
    float g = -*(const float *)in[0] / (float)n->shape[0]; /* the loss is the whole batch's mean */
    const int32_t *t = in[1];
    float *d = out;
    memset(d, 0, (size_t)N * C * sizeof(float));
    for (int i = 0; i < N; i++)
        if (t[i] >= 0 && t[i] < C) d[(int64_t)i * C + t[i]] = g;
}

KERNEL(ARGMAX) {
    const xt_node *x = IN(0);
    int N = ROWS(x->shape[0]), C = x->shape[1];
    const float *v = in[0];
    int32_t *o = out;
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int c = 1; c < C; c++)
            if (v[(int64_t)i * C + c] > v[(int64_t)i * C + best]) best = c;
        o[i] = best;
    }
}

/* The mask is a pure function of (seed, step, stream, index in the whole
 * batch), so backward recomputes it instead of storing it, and a tile
 * draws the same mask as the whole batch would. Keeping the mask as a byte
 * per element was tried and not kept: the backward gained little (it waits
 * on fc1's dx, a batch-sized value read from memory, more than on the
 * draws) and the forward lost more writing the bytes (wide_cnn's dropout
 * rows in make bench's kernel table, train_bench --kernels). */
static void dropout_apply(const xt_node *n, const xt_kcall *kc, void *y, const float *x, const void *step,
                          float *scratch) {
    float pdrop = n->fattr[0];
    uint64_t seed = (uint64_t)(uint32_t)n->iattr[1] | (uint64_t)(uint32_t)n->iattr[2] << 32;
    uint64_t counter = (uint64_t)(uint32_t)*(const int32_t *)step << 16 | (uint64_t)(uint16_t)n->iattr[0];
    int64_t per_row = n->rank ? xt_numel(n) / n->shape[0] : 1, rows = n->rank ? ROWS(n->shape[0]) : 1;
    uint64_t index0 = (uint64_t)kc->row0 * (uint64_t)per_row;
    size_t total = (size_t)(rows * per_row);
    if (n->dtype == XT_BF16) /* made in bf16 (pass_bf16_out.c) */
        k_dropout_bf16(total, y, x, pdrop, seed, counter, index0, scratch);
    else
        k_dropout(total, y, x, pdrop, seed, counter, index0);
}
KERNEL(DROPOUT) { dropout_apply(n, kc, out, in[0], in[1], scratch); }
KERNEL(DROPOUT_BWD) { dropout_apply(n, kc, out, in[0], in[1], scratch); } /* same mask, applied to dy */
static size_t scratch_DROPOUT(const xt_plan *p, const xt_node *n) {
    (void)p;
    return n->dtype == XT_BF16 ? K_BF16_PIECE_FLOATS * sizeof(float) : 0;
}
static size_t scratch_DROPOUT_BWD(const xt_plan *p, const xt_node *n) { return scratch_DROPOUT(p, n); }

/* The gradients, packed into 64-byte aligned pieces (a gradient the memory
 * plan already produced in its piece is not copied), then averaged over
 * the replicas by the collective; the padding is zeroed because it joins
 * the sum. Read in place (XT_LOC_COLLECTIVE_RESULT), the output is where
 * the collective leaves the mean: the pieces go to the row it reads. */
static int kern_ALLREDUCE(const xt_kcall *k) {
    const xt_plan *p = k->p;
    const xt_node *n = k->n;
    int in_place = p->loc[n - p->nodes].kind == XT_LOC_COLLECTIVE_RESULT;
    float *out = in_place ? k->ctx->collective : k->out;
    int64_t off = 0;
    for (int i = 0; i < n->nin; i++) {
        int64_t cnt = xt_numel(IN(i)), padded = xt_line_floats(cnt);
        if (k->in[i] != out + off) memcpy(out + off, k->in[i], (size_t)cnt * sizeof(float));
        memset(out + off + cnt, 0, (size_t)(padded - cnt) * sizeof(float));
        off += padded;
    }
    if (in_place) return k->ctx->allreduce_row(k->ctx->allreduce_ctx, (size_t)off, k->e);
    if (k->ctx->allreduce) return k->ctx->allreduce(k->ctx->allreduce_ctx, out, (size_t)off, k->e);
    return 0;
}

/* A convolution pass's or a matrix product's scratch: what its chosen
 * implementation needs for the whole batch (kernels/impl.h). */
static size_t chosen_scratch(const xt_plan *p, const xt_node *n) {
    k_op_desc d;
    int impl = p->choice[n - p->nodes].impl;
    if (!xt_node_op_desc(p, n, &d) || !impl) return 0;
    return k_impls[impl].scratch(impl, &d);
}
static size_t scratch_CONV2D(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_CONV2D_POOL2(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_CONV2D_BWD_DATA(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_CONV2D_BWD_WEIGHT(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_CONV2D_BWD_DATA_UNPOOL2(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_CONV2D_BWD_WEIGHT_UNPOOL2(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }
static size_t scratch_MATMUL(const xt_plan *p, const xt_node *n) { return chosen_scratch(p, n); }

#define XT_KERNEL_FOR_FREE(name) NULL
#define XT_KERNEL_FOR_EW(name) NULL
#define XT_KERNEL_FOR_KERNEL(name) kern_##name
const xt_kernel_fn xt_kernel_table[XT_OP_COUNT] = {
#define XT_OP(name, arity, kind, grad, scratch, cls) [XT_OP_##name] = XT_KERNEL_FOR_##kind(name),
#include "engine/ops.def"
};

typedef size_t (*scratch_fn)(const xt_plan *p, const xt_node *n);
#define XT_SCRATCH_FOR_S(name) scratch_##name
#define XT_SCRATCH_FOR_0(name) NULL
static const scratch_fn scratch_table[XT_OP_COUNT] = {
#define XT_OP(name, arity, kind, grad, scratch, cls) [XT_OP_##name] = XT_SCRATCH_FOR_##scratch(name),
#include "engine/ops.def"
};

size_t xt_kernel_scratch_bytes(const xt_plan *p, const xt_node *n) {
    return scratch_table[n->op] ? scratch_table[n->op](p, n) : 0;
}

/* multiply-adds of a convolution pass or a matrix product, with the operand
 * roles the kernels above read them by; 0 for any other op */
double xt_kernel_macs(const xt_plan *p, const xt_node *n) {
    k_conv_shape s;
    switch (n->op) {
    case XT_OP_CONV2D:
    case XT_OP_CONV2D_POOL2: s = conv_shape(IN(0)->shape, IN(1)->shape, n->iattr); break;
    case XT_OP_CONV2D_BWD_DATA: s = conv_shape(n->shape, IN(1)->shape, n->iattr); break;
    case XT_OP_CONV2D_BWD_DATA_UNPOOL2: s = conv_shape(n->shape, IN(2)->shape, n->iattr); break;
    case XT_OP_CONV2D_BWD_WEIGHT:
    case XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2: s = conv_shape(IN(0)->shape, n->shape, n->iattr); break;
    case XT_OP_MATMUL: return (double)n->shape[0] * n->shape[1] * (n->iattr[0] ? IN(0)->shape[0] : IN(0)->shape[1]);
    default: return 0.0;
    }
    return (double)s.N * s.Co * s.Ho * s.Wo * s.Ci * s.kh * s.kw;
}

double xt_kernel_macs_executed(const xt_plan *p, const xt_node *n) {
    k_op_desc d;
    int impl = p->choice ? p->choice[n - p->nodes].impl : 0;
    if (!xt_node_op_desc(p, n, &d) || !impl) return xt_kernel_macs(p, n);
    return k_impl_macs_executed(impl, &d);
}

size_t xt_kernel_unpool2_share_bytes(const xt_plan *p, const xt_node *n, const xt_node *wg, int32_t rows) {
    if (n->op != XT_OP_CONV2D_BWD_DATA_UNPOOL2 || wg->op != XT_OP_CONV2D_BWD_WEIGHT_UNPOOL2) return 0;
    const int32_t *ops = p->operands;
    int32_t g = ops[n->in_off], am = ops[n->in_off + 1], w = ops[n->in_off + 2], wx = ops[wg->in_off];
    if (ops[wg->in_off + 1] != g || ops[wg->in_off + 2] != am) return 0;        /* not the same gradient */
    if (p->nodes[w].dtype != XT_F32 || p->nodes[wx].dtype != XT_F32) return 0; /* the bf16 kernels keep their own */
    if (memcmp(n->shape, p->nodes[wx].shape, 4 * sizeof *n->shape) || /* dx shaped as the x, w as the dw */
        memcmp(p->nodes[w].shape, wg->shape, 4 * sizeof *wg->shape) || memcmp(n->iattr, wg->iattr, 4 * sizeof *n->iattr))
        return 0; /* not the same convolution */
    k_conv_shape s = conv_shape(n->shape, p->nodes[w].shape, n->iattr);
    s.N = rows;
    return k_impl_unpool2_share_floats(&s, p->choice[n - p->nodes].impl, p->choice[wg - p->nodes].impl) * sizeof(float);
}

size_t xt_kernel_tile_state_bytes(const xt_plan *p, const xt_node *n) {
    k_op_desc d;
    int impl = p->choice[n - p->nodes].impl;
    if (n->op == XT_OP_BN_STATS) /* the per-channel (n, mean, M2) */
        return k_bn_stats_acc_doubles(IN(0)->shape[1]) * sizeof(double);
    if (!xt_node_op_desc(p, n, &d) || !impl) return 0;
    return k_impls[impl].state(impl, &d); /* a weight gradient's sums, or the weights packed once per step */
}
