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
 * Is not: fusion of other activations or pools, of ReLUs after batch norm,
 * or of a pool after a bf16 convolution (its kernels take the ReLU only).
 * Runs before elementwise fusion, which then no longer sees them.
 */
#include <stdlib.h>

#include "engine/plan.h"

/* Is node c a value the step hands out (fetched or assigned)? */
static int escapes(const xt_plan *p, int c) {
    for (int i = 0; i < p->nassign; i++)
        if (p->assigns[i].t == c) return 1;
    for (int i = 0; i < p->nfetch; i++)
        if (p->fetch_nodes[i] == c) return 1;
    return 0;
}

/* A live convolution (fp32 output), with fp32 operands unless bf16 ones are
 * allowed: the bf16 kernels take a ReLU epilogue, not the pool one. */
static int is_conv(const xt_plan *p, const uint8_t *live, int c, int bf16_ok) {
    const xt_node *n = &p->nodes[c];
    return live[c] && n->op == XT_OP_CONV2D && n->dtype == XT_F32 &&
           (bf16_ok || p->nodes[p->operands[n->in_off]].dtype == XT_F32);
}

/* Is node c only read as described above, and the value not fetched or
 * assigned? Sets *relu to the one ReLU reading it. */
static int only_relu_reads(const xt_plan *p, const uint8_t *live, int c, int *relu) {
    *relu = -1;
    if (escapes(p, c)) return 0;
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
    int64_t values = xt_numel(&p->nodes[m]) / 2;
    for (int i = m + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i] || !n->nin || p->operands[n->in_off] != m) continue;
        if (n->op != XT_OP_VIEW) return -1;
        if (n->iattr[0] == 0 && n->dtype == XT_F32 && v < 0) {
            v = i;
            continue;
        }
        if (n->iattr[0] != values || n->dtype != XT_I32) return -1;
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
        if (is_conv(p, live, c, 1) && only_relu_reads(p, live, c, &r)) take_relu(p, n, r);
        else if (live[c] && n->op == XT_OP_CONV2D_POOL2 && !n->iattr[4] && !escapes(p, c) &&
                 (v = pool_values_view(p, live, c)) >= 0 && only_relu_reads(p, live, v, &r))
            take_relu(p, n, r);
    }
    return 0;
}

/* The one live node reading c, when c has exactly one (and it reads c once). */
static int sole_reader(const xt_plan *p, const uint8_t *live, int c) {
    int who = -1;
    for (int i = c + 1; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        if (!live[i]) continue;
        for (int k = 0; k < n->nin; k++)
            if (p->operands[n->in_off + k] == c) {
                if (who >= 0) return -1;
                who = i;
            }
    }
    return who;
}

int xt_pass_conv_pool(xt_plan *p, uint8_t *live) {
    for (int c = 0; c < p->nnodes; c++) {
        if (!is_conv(p, live, c, 0) || escapes(p, c)) continue;
        int m = sole_reader(p, live, c);
        if (m < 0) continue;
        xt_node *pool = &p->nodes[m];
        const int32_t *a = pool->iattr; /* kh kw sh sw ph pw */
        if (pool->op != XT_OP_MAXPOOL2D || a[0] != 2 || a[1] != 2 || a[2] != 2 || a[3] != 2 || a[4] || a[5]) continue;
        const xt_node *conv = &p->nodes[c];
        pool->op = XT_OP_CONV2D_POOL2;
        pool->nin = conv->nin;
        pool->in_off = conv->in_off; /* the conv's operand list, shared */
        for (int k = 0; k < 6; k++) pool->iattr[k] = conv->iattr[k];
        live[c] = 0;
    }
    return 0;
}
