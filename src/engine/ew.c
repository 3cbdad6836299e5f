/* ew.c — the fused elementwise interpreter.
 *
 * A group's program runs over its output in chunks of CHUNK elements: each
 * instruction is one tight loop over a chunk (vectorized by the compiler),
 * reading registers (chunk buffers that stay in L1), inputs straight from
 * memory, or broadcast values; outputs are written straight to memory. So a
 * chain like `v = m*v + g; w -= lr*v` makes one pass over its data, and
 * intermediates never reach memory. The loops are generated from the
 * expressions in ops.def.
 *
 * Broadcasting: the output is split into an outer part and the longest
 * inner run over which every input is either contiguous or constant, e.g.
 * (N, C, H, W) with a per-channel (1, C, 1, 1) input runs H*W at a time.
 */
#include <math.h>
#include <string.h>

#include "engine/plan.h"

#define CHUNK 256

typedef void (*ew_fn)(float *d, const float *pa, const float *pb, int n);

#define XT_EW1(name, expr)                                                 \
    static void ew_##name(float *d, const float *pa, const float *pb, int n) { \
        (void)pb;                                                          \
        for (int i = 0; i < n; i++) {                                      \
            float a = pa[i];                                               \
            d[i] = (expr);                                                 \
        }                                                                  \
    }
#define XT_EW2(name, expr)                                                 \
    static void ew_##name(float *d, const float *pa, const float *pb, int n) { \
        for (int i = 0; i < n; i++) {                                      \
            float a = pa[i], b = pb[i];                                    \
            d[i] = (expr);                                                 \
        }                                                                  \
    }
#include "engine/ops.def"

static const ew_fn ew_table[XT_OP_COUNT] = {
#define XT_EW1(name, expr) [XT_OP_##name] = ew_##name,
#define XT_EW2(name, expr) [XT_OP_##name] = ew_##name,
#include "engine/ops.def"
};

#define MAX_IN 40

void xt_ew_run(const xt_plan *p, const xt_ew_group *grp, void *const *in, void *const *out) {
    int32_t S[4] = {1, 1, 1, 1};
    for (int d = 0; d < grp->rank; d++) S[4 - grp->rank + d] = grp->shape[d];
    int nin = grp->ninputs < MAX_IN ? grp->ninputs : MAX_IN;
    int64_t stride[MAX_IN][4];
    for (int k = 0; k < nin; k++) {
        const xt_node *x = &p->nodes[grp->inputs[k]];
        int32_t X[4] = {1, 1, 1, 1};
        for (int d = 0; d < x->rank; d++) X[4 - x->rank + d] = x->shape[d];
        int64_t st = 1;
        for (int d = 3; d >= 0; d--) {
            stride[k][d] = (X[d] == S[d] && S[d] != 1) ? st : 0;
            st *= X[d];
        }
    }
    /* inner run: extend outward from the last dim while every input keeps
     * one pattern over the run's non-trivial dims (all contiguous, or all
     * broadcast); size-1 dims never break a run */
    int pattern[MAX_IN];
    for (int k = 0; k < nin; k++) pattern[k] = -1;
    int d0 = 4;
    while (d0 > 0) {
        int d = d0 - 1, ok = 1;
        if (S[d] != 1)
            for (int k = 0; k < nin && ok; k++) {
                int bc = stride[k][d] == 0;
                if (pattern[k] != -1 && pattern[k] != bc) ok = 0;
            }
        if (!ok) break;
        if (S[d] != 1)
            for (int k = 0; k < nin; k++) pattern[k] = stride[k][d] == 0;
        d0 = d;
    }
    int64_t inner = 1;
    for (int d = d0; d < 4; d++) inner *= S[d];
    int bcast[MAX_IN];
    for (int k = 0; k < nin; k++) {
        int b = 1;
        for (int d = d0; d < 4; d++)
            if (stride[k][d] != 0) b = 0;
        bcast[k] = b;
    }

    float regs[XT_EW_MAX_REGS][CHUNK] __attribute__((aligned(64)));
    float fill[MAX_IN][CHUNK] __attribute__((aligned(64)));
    const float *src[MAX_IN];
    int64_t outer = 1;
    for (int d = 0; d < d0; d++) outer *= S[d];
    int idx[4] = {0, 0, 0, 0};
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < nin; k++) {
            int64_t off = 0;
            for (int d = 0; d < d0; d++) off += idx[d] * stride[k][d];
            src[k] = (const float *)in[k] + off;
            if (bcast[k]) {
                float v = src[k][0];
                int m = inner < CHUNK ? (int)inner : CHUNK;
                for (int i = 0; i < m; i++) fill[k][i] = v;
            }
        }
        for (int64_t c = 0; c < inner; c += CHUNK) {
            int m = inner - c < CHUNK ? (int)(inner - c) : CHUNK;
            for (int j = 0; j < grp->ninstr; j++) {
                const xt_ew_instr *ins = &grp->instr[j];
                const float *a, *b = NULL;
                a = ins->akind == XT_OPND_REG ? regs[ins->a] : bcast[ins->a] ? fill[ins->a] : src[ins->a] + c;
                if (xt_op_table[ins->op].arity == 2)
                    b = ins->bkind == XT_OPND_REG ? regs[ins->b] : bcast[ins->b] ? fill[ins->b] : src[ins->b] + c;
                float *dst = ins->dst >= 0 ? regs[ins->dst] : (float *)out[-1 - ins->dst] + o * inner + c;
                ew_table[ins->op](dst, a, b, m);
            }
        }
        for (int d = d0 - 1; d >= 0; d--) { /* next outer multi-index */
            if (++idx[d] < S[d]) break;
            idx[d] = 0;
        }
    }
}
