/* pass_bf16_out.c — a value that is only ever rounded to bf16 is made in
 * bf16 by the kernel that computes it.
 *
 * Under bf16 the precision pass rounds a convolution's operands through
 * CAST_BF16 nodes (pass_precision.c). Where the operand is made by a max
 * pool's backward or by dropout and nothing else reads it (wide_cnn:
 * dropout feeding fc1 through the flatten, and its backward), the kernel
 * now writes bf16 itself (k_maxpool2d_bwd_bf16, k_dropout_bf16: a 2x2
 * pool's AVX-512 loop stores bf16, the others compute an L1-sized piece of
 * their fp32 result at a time and round it as it leaves), and the cast
 * becomes a view. What it saves: the fp32 value's write and the cast's pass
 * reading it back (wide_cnn at batch 128: 4.7 MB per step per dropout). A 2x2
 * pool's backward read through its cast only by convolution backward passes
 * is not made at all: pass_conv_unpool.c, which runs first, has those
 * convolutions scatter it themselves.
 *
 * The numbers are the same bits: each element is rounded once, to nearest
 * even, from the same fp32 value the kernel would have written.
 *
 * Which values: MAXPOOL2D_BWD, DROPOUT and DROPOUT_BWD outputs, fp32, not
 * fetched or assigned, whose one reader is the cast, directly or through a
 * chain of views that rename the value whole (a flatten), each of those read
 * by the next alone. Runs after the passes that change who reads what (the
 * conv epilogues, pass_sum_pool.c) and before fusion, tiling and the memory
 * plan, which then size the value at 2 bytes per element.
 *
 * Is not: the precision choice (pass_precision.c) or the kernels.
 */
#include <stdlib.h>

#include "engine/plan.h"

static int makes_bf16(int op) { return op == XT_OP_MAXPOOL2D_BWD || op == XT_OP_DROPOUT || op == XT_OP_DROPOUT_BWD; }

int xt_pass_bf16_outputs(xt_plan *p, const uint8_t *live) {
    int32_t *readers = calloc((size_t)p->nnodes + 1, sizeof *readers);
    if (!readers) return -1;
    for (int i = 0; i < p->nnodes; i++)
        if (live[i])
            for (int k = 0; k < p->nodes[i].nin; k++) readers[p->operands[p->nodes[i].in_off + k]]++;
    int made = 0;
    for (int c = 0; c < p->nnodes; c++) {
        xt_node *cast = &p->nodes[c];
        if (!live[c] || cast->op != XT_OP_CAST_BF16) continue;
        int v = p->operands[cast->in_off], ok = 1;
        while (ok && p->nodes[v].op == XT_OP_VIEW) {
            ok = xt_plan_renames_whole(p, v) && readers[v] == 1 && !xt_plan_escapes(p, v);
            v = p->operands[p->nodes[v].in_off];
        }
        if (!ok || !makes_bf16(p->nodes[v].op) || p->nodes[v].dtype != XT_F32 || readers[v] != 1 ||
            xt_plan_escapes(p, v))
            continue;
        for (int u = p->operands[cast->in_off];; u = p->operands[p->nodes[u].in_off]) {
            p->nodes[u].dtype = XT_BF16; /* the views in between, then the value itself */
            if (u == v) break;
        }
        cast->op = XT_OP_VIEW; /* dtype and shape already the cast's; offset 0 */
        cast->iattr[0] = 0;
        made++;
    }
    free(readers);
    return made;
}
