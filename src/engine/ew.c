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
 *
 * Inputs may be bf16 (a value pass_precision.c rounded for a convolution,
 * read again by a ReLU's backward): each chunk of one is widened into that
 * input's chunk buffer first, exactly (bf16 -> fp32 is a shift), so the
 * programs only ever see fp32. Outputs are fp32.
 */
#include <math.h>
#include <string.h>

#include "engine/plan.h"
#include "kernels/bf16.h"
#include "kernels/simd.h"
#include "util/check.h"

#define CHUNK 256

typedef void (*ew_fn)(float *d, const float *pa, const float *pb, int n);

/* Each op's chunk loop is compiled for the baseline the binary targets
 * (x86-64-v2: 4 lanes), for AVX2 (8) and for AVX-512 (16); the table of the
 * SIMD level the CPU has (kernels/simd.h; tests force each) runs. Results do
 * not depend on the width: each element is one operation on its operands. */
#define EW1_FN(fn, attr, expr)                                        \
    static attr void fn(float *d, const float *pa, const float *pb, int n) { \
        (void)pb;                                                     \
        for (int i = 0; i < n; i++) {                                 \
            float a = pa[i];                                          \
            d[i] = (expr);                                            \
        }                                                             \
    }
#define EW2_FN(fn, attr, expr)                                        \
    static attr void fn(float *d, const float *pa, const float *pb, int n) { \
        for (int i = 0; i < n; i++) {                                 \
            float a = pa[i], b = pb[i];                               \
            d[i] = (expr);                                            \
        }                                                             \
    }

#define XT_EW1(name, grad, expr) EW1_FN(ew_##name, , expr)
#define XT_EW2(name, grad, expr) EW2_FN(ew_##name, , expr)
#include "engine/ops.def"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EW_WIDE 1
#define EW_AVX2 __attribute__((target("avx2,fma")))
#define EW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define XT_EW1(name, grad, expr) EW1_FN(ew_avx2_##name, EW_AVX2, expr)
#define XT_EW2(name, grad, expr) EW2_FN(ew_avx2_##name, EW_AVX2, expr)
#include "engine/ops.def"
#define XT_EW1(name, grad, expr) EW1_FN(ew_avx512_##name, EW_AVX512, expr)
#define XT_EW2(name, grad, expr) EW2_FN(ew_avx512_##name, EW_AVX512, expr)
#include "engine/ops.def"
#else
#define EW_WIDE 0
#endif

static const ew_fn ew_tables[3][XT_OP_COUNT] = {
    [K_SIMD_GENERIC] = {
#define XT_EW1(name, grad, expr) [XT_OP_##name] = ew_##name,
#define XT_EW2(name, grad, expr) [XT_OP_##name] = ew_##name,
#include "engine/ops.def"
    },
#if EW_WIDE
    [K_SIMD_AVX2] = {
#define XT_EW1(name, grad, expr) [XT_OP_##name] = ew_avx2_##name,
#define XT_EW2(name, grad, expr) [XT_OP_##name] = ew_avx2_##name,
#include "engine/ops.def"
    },
    [K_SIMD_AVX512] = {
#define XT_EW1(name, grad, expr) [XT_OP_##name] = ew_avx512_##name,
#define XT_EW2(name, grad, expr) [XT_OP_##name] = ew_avx512_##name,
#include "engine/ops.def"
    },
#endif
};

/* The interpreter's state for one group, carved from the plan's
 * ew_scratch (sized at compile time for the widest group): per input its
 * strides, broadcast flag, bf16 flag, source pointer and a chunk buffer
 * (the broadcast value repeated, or a bf16 input's chunk widened); the
 * registers. */
typedef struct {
    int64_t (*stride)[4];
    int *pattern, *bcast, *bf16;
    const char **src;
    float (*fill)[CHUNK];
    float (*regs)[CHUNK];
} ew_state;

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t carve(const xt_ew_group *grp, char *base, ew_state *st) {
    size_t nin = (size_t)grp->ninputs, o = 0;
#define CARVE(field, bytes)                                  \
    do {                                                     \
        if (st) st->field = (void *)(base + o);              \
        o += up64(bytes);                                    \
    } while (0)
    CARVE(fill, nin * CHUNK * sizeof(float));
    CARVE(regs, (size_t)grp->nregs * CHUNK * sizeof(float));
    CARVE(stride, nin * 4 * sizeof(int64_t));
    CARVE(pattern, nin * sizeof(int));
    CARVE(bcast, nin * sizeof(int));
    CARVE(bf16, nin * sizeof(int));
    CARVE(src, nin * sizeof(const char *));
#undef CARVE
    return o;
}

size_t xt_ew_scratch_bytes(const xt_ew_group *grp) { return carve(grp, NULL, NULL); }

/* Per input: its stride per (right-aligned, 4-D) dim of the group's shape;
 * 0 where it is broadcast. For a micro-batch tile (rows > 0) an input that
 * spans the group's leading dim has `rows` rows, as the group has. */
static void input_strides(const xt_plan *p, const xt_ew_group *grp, const int32_t *S, int32_t rows, ew_state *st) {
    for (int k = 0; k < grp->ninputs; k++) {
        const xt_node *x = &p->nodes[grp->inputs[k]];
        XT_CHECK(x->dtype == XT_F32 || x->dtype == XT_BF16);
        st->bf16[k] = x->dtype == XT_BF16;
        int32_t X[4] = {1, 1, 1, 1};
        for (int d = 0; d < x->rank; d++) X[4 - x->rank + d] = x->shape[d];
        if (rows > 0 && x->rank == grp->rank && x->shape[0] == grp->shape[0]) X[4 - x->rank] = rows;
        int64_t sz = 1;
        for (int d = 3; d >= 0; d--) {
            st->stride[k][d] = (X[d] == S[d] && S[d] != 1) ? sz : 0;
            sz *= X[d];
        }
    }
}

/* The inner run: extend outward from the last dim while every input keeps
 * one pattern over the run's non-trivial dims (all contiguous, or all
 * broadcast); size-1 dims never break a run. Returns its first dim. */
static int inner_run(const xt_ew_group *grp, const int32_t *S, ew_state *st) {
    int nin = grp->ninputs;
    for (int k = 0; k < nin; k++) st->pattern[k] = -1;
    int d0 = 4;
    while (d0 > 0) {
        int d = d0 - 1, ok = 1;
        if (S[d] != 1)
            for (int k = 0; k < nin && ok; k++) {
                int bc = st->stride[k][d] == 0;
                if (st->pattern[k] != -1 && st->pattern[k] != bc) ok = 0;
            }
        if (!ok) break;
        if (S[d] != 1)
            for (int k = 0; k < nin; k++) st->pattern[k] = st->stride[k][d] == 0;
        d0 = d;
    }
    for (int k = 0; k < nin; k++) {
        int b = 1;
        for (int d = d0; d < 4; d++)
            if (st->stride[k][d] != 0) b = 0;
        st->bcast[k] = b;
    }
    return d0;
}

/* Where an instruction reads input k's chunk at inner offset c: fp32 straight
 * from memory; a broadcast or widened bf16 input from its chunk buffer. */
static const float *input_chunk(const ew_state *st, int k, int64_t c) {
    return st->bcast[k] || st->bf16[k] ? st->fill[k] : (const float *)st->src[k] + c;
}

/* Run the group's program over one chunk of m elements at inner offset c
 * of outer row o. */
static void run_chunk(const ew_fn *ew_table, const xt_ew_group *grp, const ew_state *st, void *const *out, int64_t o,
                      int64_t inner, int64_t c, int m) {
    for (int k = 0; k < grp->ninputs; k++)
        if (st->bf16[k] && !st->bcast[k]) k_bf16_expand((size_t)m, st->fill[k], (const k_bf16 *)st->src[k] + c);
    for (int j = 0; j < grp->ninstr; j++) {
        const xt_ew_instr *ins = &grp->instr[j];
        const float *a, *b = NULL;
        a = ins->akind == XT_OPND_REG ? st->regs[ins->a] : input_chunk(st, ins->a, c);
        if (xt_op_table[ins->op].arity == 2) b = ins->bkind == XT_OPND_REG ? st->regs[ins->b] : input_chunk(st, ins->b, c);
        float *dst = ins->dst >= 0 ? st->regs[ins->dst] : (float *)out[-1 - ins->dst] + o * inner + c;
        ew_table[ins->op](dst, a, b, m);
    }
}

/* Does every input that is not broadcast over the inner run span the group's
 * whole shape (a stride in every dim the group has)? Then consecutive outer
 * rows lie back to back in each of them, as they do in the outputs. */
static int streams_are_full(const xt_ew_group *grp, const int32_t *S, const ew_state *st) {
    for (int k = 0; k < grp->ninputs; k++) {
        if (st->bcast[k]) continue;
        for (int d = 0; d < 4; d++)
            if (S[d] != 1 && st->stride[k][d] == 0) return 0;
    }
    return 1;
}

/* next outer multi-index */
static void next_index(int *idx, const int32_t *S, int d0) {
    for (int d = d0 - 1; d >= 0; d--) {
        if (++idx[d] < S[d]) break;
        idx[d] = 0;
    }
}

/* Point the inputs at `rows` outer rows from multi-index idx (advanced past
 * them): streamed inputs at the first row, broadcast ones filled with their
 * value for each row, `inner` copies per row. */
static void load_rows(const xt_ew_group *grp, ew_state *st, void *const *in, int *idx, const int32_t *S, int d0,
                      int64_t inner, int rows) {
    int nin = grp->ninputs;
    for (int r = 0; r < rows; r++, next_index(idx, S, d0))
        for (int k = 0; k < nin; k++) {
            if (r && !st->bcast[k]) continue;
            int64_t off = 0;
            for (int d = 0; d < d0; d++) off += idx[d] * st->stride[k][d];
            const char *src = (const char *)in[k] + off * (st->bf16[k] ? 2 : 4);
            if (!r) st->src[k] = src;
            if (st->bcast[k]) {
                float v = st->bf16[k] ? k_bf16_to_f32(*(const k_bf16 *)src) : *(const float *)src, *f = st->fill[k] + r * inner;
                int m = inner < CHUNK ? (int)inner : CHUNK;
                for (int i = 0; i < m; i++) f[i] = v;
            }
        }
}

void xt_ew_run(const xt_plan *p, const xt_ew_group *grp, void *const *in, void *const *out, void *scratch, int32_t rows) {
    ew_state st;
    carve(grp, scratch, &st);
    int32_t S[4] = {1, 1, 1, 1};
    for (int d = 0; d < grp->rank; d++) S[4 - grp->rank + d] = grp->shape[d];
    if (rows > 0) S[4 - grp->rank] = rows;
    int lvl = EW_WIDE ? k_simd_level() : K_SIMD_GENERIC;
    const ew_fn *table = ew_tables[lvl];
    input_strides(p, grp, S, rows, &st);
    int d0 = inner_run(grp, S, &st);
    int64_t inner = 1, outer = 1;
    for (int d = d0; d < 4; d++) inner *= S[d];
    for (int d = 0; d < d0; d++) outer *= S[d];
    /* A short inner run (a per-channel factor over a 4x4 plane in the seed
     * CNN's bn2) would run the program for a handful of elements at a time:
     * where the streams allow, one chunk takes several outer rows. Each
     * element still sees the same operations, so results do not change. */
    int per_chunk = inner < CHUNK && streams_are_full(grp, S, &st) ? (int)(CHUNK / inner) : 1;
    int idx[4] = {0, 0, 0, 0};
    for (int64_t o = 0; o < outer; o += per_chunk) {
        int r = outer - o < per_chunk ? (int)(outer - o) : per_chunk;
        load_rows(grp, &st, in, idx, S, d0, inner, r);
        if (r > 1) {
            run_chunk(table, grp, &st, out, o, inner, 0, (int)(r * inner));
            continue;
        }
        for (int64_t c = 0; c < inner; c += CHUNK) {
            int m = inner - c < CHUNK ? (int)(inner - c) : CHUNK;
            run_chunk(table, grp, &st, out, o, inner, c, m);
        }
    }
}
