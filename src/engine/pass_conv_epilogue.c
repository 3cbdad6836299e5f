/* pass_conv_epilogue.c — what follows a convolution runs in its epilogue,
 * while the output is still in the kernel's blocked layout.
 *
 * ReLU (xt_pass_conv_relu): for y = CONV2D(x, w, b) read only by r = RELU(y) and by RELU_BWD(dy, y)
 * nodes (the ReLU's own gradient, reading y as its mask), the convolution
 * writes relu(y) as it leaves its blocked layout (iattr[4] = 1), r becomes a
 * view of it, and the RELU_BWD nodes read relu(y). That is exact: relu(y) > 0
 * exactly where y > 0 (NaN and -0 included), so every mask is unchanged, and
 * relu(relu(y)) = relu(y). What it saves: the ReLU's pass over the whole
 * activation (wide_cnn: 11 and 19 MB per step at batch 128) and one
 * activation-sized buffer.
 *
 * The same ReLU after such a pool (the seed CNN's conv -> pool -> ReLU): the
 * kernel applies it before pooling. The pooled values are the same bits
 * (max(relu(x)) = relu(max(x)), and both give +0 for a window of no positive
 * value or a NaN), the mask likewise; only the index of a window with no
 * positive value may differ, and no gradient reaches it: the pool's backward
 * is fed only through the ReLU's mask, which is 0 there (checked below).
 *
 * Max pooling (xt_pass_conv_pool): for y = CONV2D(x, w, b) read only by
 * m = MAXPOOL2D(y) with a 2x2 window and stride 2 (the seed CNN's conv ->
 * pool), m becomes CONV2D_POOL2(x, w, b): the kernel pools each block of
 * images in registers and writes only the pooled values and indices, the
 * same bits as pooling the written output (kernels/conv.c), and y is never
 * computed as a value of its own. Saves the conv output's write and read
 * (seed conv1: 2.9 MB per step at batch 128) and the pooling pass.
 *
 * ReLU then max pooling (xt_pass_conv_relu_pool; wide_cnn's conv2 -> ReLU ->
 * pool, the VGG order): for y = CONV2D(x, w, b), r = RELU(y) read only by
 * m = MAXPOOL2D(r) (2x2, stride 2), and y read otherwise only as the mask
 * of RELU_BWD(MAXPOOL2D_BWD(g, idx(m)), y) nodes: m becomes
 * CONV2D_POOL2(x, w, b) with the ReLU in its epilogue (it pools relu(y): the
 * same values and indices as m), and each backward pair is swapped into
 * MAXPOOL2D_BWD(RELU_BWD(g, values(m)), idx(m)). That is exact: the windows
 * do not overlap, so the pool's backward puts g[w] at idx[w] and 0 elsewhere,
 * and y[idx[w]] > 0 exactly when values(m)[w] = relu(y)[idx[w]] > 0; masking
 * before or after the scatter gives the same bits (the other cells are 0
 * either way). So y is never needed: neither its write and read (wide_cnn
 * conv2: 19 MB per step at batch 128) nor the pooling pass, and the ReLU's
 * backward runs on the pooled size, a quarter of the elements.
 *
 * Both with bf16 operands too (the precision pass's casts): the bf16
 * kernels have the same epilogues (kernels/conv_bf16.c).
 *
 * The ReLU's backward after a backward-data pass (xt_pass_conv_relu_bwd;
 * wide_cnn's conv2 backward-data, whose dx is the gradient of conv1's
 * ReLU): for d = CONV2D_BWD_DATA (or its _UNPOOL2 form, pass_conv_unpool.c)
 * read only by r = RELU_BWD(d, m) as its gradient, the kernel applies
 * m > 0 ? dx : 0 to each plane as dx leaves its blocked layout (m appended
 * as its last operand, iattr[4] = 1), and r becomes a view of d. The same
 * bits, without the ReLU backward's own pass over dx (wide_cnn: 11 MB read
 * twice and written once per step at batch 128). fp32 only: under bf16 the
 * mask is the ReLU output's bf16 copy (pass_precision.c) and the backward
 * runs in the bf16 kernels, which have no such epilogue.
 *
 * Is not: fusion of other activations or pools, or of ReLUs after batch norm
 * (cifar_cnn's conv -> BN -> ReLU -> pool).
 * Runs before elementwise fusion, which then no longer sees them.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/plan.h"
#include "engine/plan_operands.h" /* xt_plan_set_operands */

/* A live convolution (fp32 output, fp32 or bf16 operands). */
static int is_conv(const xt_plan *p, const uint8_t *live, int c) {
    const xt_node *n = &p->nodes[c];
    return live[c] && n->op == XT_OP_CONV2D && n->dtype == XT_F32;
}

/* Is node c only read as described above, and the value not fetched or
 * assigned? Sets *relu to the one ReLU reading it. */
static int only_relu_reads(const xt_plan *p, const uint8_t *live, int c, int *relu) {
    *relu = -1;
    if (xt_plan_escapes(p, c)) return 0;
    for (int i = c + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i]) continue;
        for (int k = 0; k < n->nin; k++) {
            if (p->operands[n->in_off + k] != c) continue;
            if (n->op == XT_OP_RELU && *relu < 0) *relu = i;
            else if (n->op == XT_OP_RELU_BWD && k == 1 && p->operands[n->in_off] != c) continue;
            else return 0;
        }
    }
    return *relu >= 0;
}

/* For a CONV2D_POOL2 m: its values view v, when every other reader of m is
 * its indices view and every reader of that is a MAXPOOL2D_BWD whose
 * gradient is a RELU_BWD masked by v. Else -1. */
static int pool_values_view(const xt_plan *p, const uint8_t *live, int m) {
    int v = -1;
    int64_t values = xt_maxpool_values(&p->nodes[m]);
    for (int i = m + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i] || !n->nin || p->operands[n->in_off] != m) continue;
        if (n->op != XT_OP_VIEW) return -1;
        if (n->iattr[0] == 0 && n->dtype == XT_F32 && v < 0) {
            v = i;
            continue;
        }
        if (n->iattr[0] != values || n->dtype != XT_U8) return -1;
        for (int j = i + 1; j < p->nnodes; j++) { /* readers of the indices */
            const xt_node *r = &p->nodes[j];
            if (!live[j] || r->nin < 2 || p->operands[r->in_off + 1] != i) continue;
            const xt_node *dy = &p->nodes[p->operands[r->in_off]];
            if (r->op != XT_OP_MAXPOOL2D_BWD || dy->op != XT_OP_RELU_BWD) return -1;
            if (v < 0 || p->operands[dy->in_off + 1] != v) return -1;
        }
    }
    return v;
}

/* Node c (a CONV2D, or a CONV2D_POOL2's values view) takes its ReLU reader r
 * into the epilogue of `kernel`; r becomes a view. */
static void take_relu(xt_plan *p, xt_node *kernel, int r) {
    kernel->iattr[4] = 1;
    xt_node *v = &p->nodes[r];
    v->op = XT_OP_VIEW;
    for (int k = 0; k < 6; k++) v->iattr[k] = 0;
}

int xt_pass_conv_relu(xt_plan *p, const uint8_t *live) {
    for (int c = 0; c < p->nnodes; c++) {
        xt_node *n = &p->nodes[c];
        int r, v;
        if (is_conv(p, live, c) && only_relu_reads(p, live, c, &r)) take_relu(p, n, r);
        else if (live[c] && n->op == XT_OP_CONV2D_POOL2 && !n->iattr[4] && !xt_plan_escapes(p, c) &&
                 (v = pool_values_view(p, live, c)) >= 0 && only_relu_reads(p, live, v, &r))
            take_relu(p, n, r);
    }
    return 0;
}

/* The one live node reading c, when c has exactly one (and it reads c once). */
static int is_pool2(const xt_node *pool) {
    const int32_t *a = pool->iattr; /* kh kw sh sw ph pw */
    return pool->op == XT_OP_MAXPOOL2D && a[0] == 2 && a[1] == 2 && a[2] == 2 && a[3] == 2 && !a[4] && !a[5];
}

/* Pool m becomes CONV2D_POOL2 of conv c's operands (relu: with the ReLU in
 * its epilogue); c is no longer computed. */
static void pool_in_conv(xt_plan *p, uint8_t *live, int m, int c, int relu) {
    xt_node *pool = &p->nodes[m];
    const xt_node *conv = &p->nodes[c];
    pool->op = XT_OP_CONV2D_POOL2;
    pool->nin = conv->nin;
    pool->in_off = conv->in_off; /* the conv's operand list, shared */
    for (int k = 0; k < 6; k++) pool->iattr[k] = conv->iattr[k];
    pool->iattr[4] = relu;
    live[c] = 0;
}

int xt_pass_conv_pool(xt_plan *p, uint8_t *live) {
    for (int c = 0; c < p->nnodes; c++) {
        if (!is_conv(p, live, c) || xt_plan_escapes(p, c)) continue;
        int m = xt_plan_sole_reader(p, live, c);
        if (m >= 0 && is_pool2(&p->nodes[m])) pool_in_conv(p, live, m, c, 0);
    }
    return 0;
}

/* Is v a view of pool m's indices (the bytes after its values)? */
static int is_indices_view(const xt_plan *p, int v, int m) {
    const xt_node *n = &p->nodes[v];
    return n->op == XT_OP_VIEW && n->dtype == XT_U8 && xt_plan_operand(p, v, 0) == m &&
           n->iattr[0] == xt_maxpool_values(&p->nodes[m]);
}

/* For conv y, its ReLU r and r's pool m: m's values view (the mask the
 * swapped backward reads), when every RELU_BWD masked by y has the gradient
 * MAXPOOL2D_BWD(g, indices of m) with g shaped like that view, read only by
 * it, and every reader of m's indices is such a MAXPOOL2D_BWD. Else -1. */
static int swappable_values_view(const xt_plan *p, const uint8_t *live, int y, int m) {
    int v = -1;
    for (int i = m + 1; i < p->nnodes && v < 0; i++)
        if (live[i] && p->nodes[i].op == XT_OP_VIEW && p->nodes[i].dtype == XT_F32 && xt_plan_operand(p, i, 0) == m &&
            p->nodes[i].iattr[0] == 0)
            v = i;
    if (v < 0) return -1;
    const xt_node *vn = &p->nodes[v];
    for (int i = m + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i]) continue;
        if (n->op == XT_OP_RELU_BWD && xt_plan_operand(p, i, 1) == y) { /* y's mask readers (only_relu_reads checked the rest) */
            int M = xt_plan_operand(p, i, 0);
            if (p->nodes[M].op != XT_OP_MAXPOOL2D_BWD || !is_indices_view(p, xt_plan_operand(p, M, 1), m) ||
                xt_plan_sole_reader(p, live, M) != i || xt_plan_escapes(p, M))
                return -1;
            const xt_node *g = &p->nodes[xt_plan_operand(p, M, 0)];
            if (g->rank != vn->rank || memcmp(g->shape, vn->shape, sizeof(int32_t) * (size_t)g->rank)) return -1;
        }
        for (int k = 0; k < n->nin; k++) { /* readers of m's indices: only those pool backwards */
            int iv = xt_plan_operand(p, i, k);
            if (!is_indices_view(p, iv, m)) continue;
            if (n->op != XT_OP_MAXPOOL2D_BWD || k != 1) return -1;
            int R = xt_plan_sole_reader(p, live, i);
            if (R < 0 || p->nodes[R].op != XT_OP_RELU_BWD || xt_plan_operand(p, R, 0) != i || xt_plan_operand(p, R, 1) != y) return -1;
        }
    }
    return v;
}

/* RELU_BWD(MAXPOOL2D_BWD(g, idx), y) at nodes (M, R) -> MAXPOOL2D_BWD(RELU_BWD(g, v), idx): M takes
 * the pooled shape, R keeps its own (the readers of R see the same value). */
static void swap_backward(xt_plan *p, int M, int R, int v) {
    xt_node *mn = &p->nodes[M], *rn = &p->nodes[R];
    int32_t idx = xt_plan_operand(p, M, 1);
    const xt_node *g = &p->nodes[xt_plan_operand(p, M, 0)];
    for (int k = 0; k < 6; k++) rn->iattr[k] = mn->iattr[k], mn->iattr[k] = 0;
    mn->op = XT_OP_RELU_BWD;
    mn->rank = g->rank;
    memcpy(mn->shape, g->shape, sizeof mn->shape);
    p->operands[mn->in_off + 1] = v;
    rn->op = XT_OP_MAXPOOL2D_BWD;
    p->operands[rn->in_off + 1] = idx;
}

int xt_pass_conv_relu_pool(xt_plan *p, uint8_t *live) {
    for (int c = 0; c < p->nnodes; c++) {
        int r, m, v;
        if (!is_conv(p, live, c) || !only_relu_reads(p, live, c, &r) || xt_plan_escapes(p, r)) continue;
        if ((m = xt_plan_sole_reader(p, live, r)) < 0 || !is_pool2(&p->nodes[m]) || xt_plan_escapes(p, m)) continue;
        if ((v = swappable_values_view(p, live, c, m)) < 0) continue;
        for (int R = m + 1; R < p->nnodes; R++)
            if (live[R] && p->nodes[R].op == XT_OP_RELU_BWD && xt_plan_operand(p, R, 1) == c) swap_backward(p, xt_plan_operand(p, R, 0), R, v);
        pool_in_conv(p, live, m, c, 1); /* relu(y) pooled: what m pooled */
        live[r] = 0;
    }
    return 0;
}

static int is_backward_data(const xt_plan *p, const uint8_t *live, int d) {
    const xt_node *n = &p->nodes[d];
    if (!live[d] || n->dtype != XT_F32 || n->iattr[4]) return 0;
    if (n->op == XT_OP_CONV2D_BWD_DATA) return p->nodes[xt_plan_operand(p, d, 0)].dtype == XT_F32 && n->nin == 2;
    return n->op == XT_OP_CONV2D_BWD_DATA_UNPOOL2 && n->nin == 3 && p->nodes[xt_plan_operand(p, d, 2)].dtype == XT_F32;
}

int xt_pass_conv_relu_bwd(xt_plan *p, uint8_t *live) {
    int fused = 0;
    for (int r = 0; r < p->nnodes; r++) {
        xt_node *rn = &p->nodes[r];
        if (!live[r] || rn->op != XT_OP_RELU_BWD || rn->dtype != XT_F32 || rn->nin != 2) continue;
        int d = xt_plan_operand(p, r, 0), m = xt_plan_operand(p, r, 1);
        const xt_node *dn = &p->nodes[d], *mn = &p->nodes[m];
        /* m > d: the mask is made after the backward-data pass (a copy made again for the ReLU's backward,
         * pass_remat.c), too late for its epilogue */
        if (d == m || m > d || !is_backward_data(p, live, d) || xt_plan_escapes(p, d) || xt_plan_sole_reader(p, live, d) != r)
            continue;
        if (mn->dtype != XT_F32 || mn->rank != dn->rank || memcmp(mn->shape, dn->shape, sizeof(int32_t) * (size_t)dn->rank))
            continue;
        int32_t list[4]; /* d's operands (2 or 3), then the mask */
        for (int k = 0; k < dn->nin; k++) list[k] = xt_plan_operand(p, d, k);
        list[dn->nin] = m;
        if (xt_plan_set_operands(p, d, list, dn->nin + 1)) return -1;
        p->nodes[d].iattr[4] = 1;
        rn->op = XT_OP_VIEW; /* of d, whole: its first operand */
        rn->nin = 1;
        for (int k = 0; k < 6; k++) rn->iattr[k] = 0;
        fused++;
    }
    return fused;
}
