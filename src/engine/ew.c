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
 * A chunk holds as many whole rows as fit when the runs are short (the
 * seed CNN's 144- and 16-element planes), and a binary op takes a constant
 * operand as one value per row (ew_rows_fn), so the per-channel factors of
 * batch norm cost no copies. This replaced 256-element chunks filled with
 * copies of the factor: one value per row, the rows walked by increments
 * and 1024-element chunks (CHUNK) cut the interpreter's share of the step,
 * at batch 128 and 1024 and on ResNet-20 (the seed CNN's bn1 apply in make
 * bench's kernel table, train_bench --kernels).
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
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "util/check.h"

#define CHUNK 1024

typedef void (*ew_fn)(float *d, const float *pa, const float *pb, int n);
/* A binary op with one operand constant along each of `rows` rows of
 * `inner` elements (a per-channel factor over planes): the row's value
 * s[r] is passed, not a chunk of copies of it, so no chunk buffer is
 * filled with copies. */
typedef void (*ew_rows_fn)(float *d, const float *pv, const float *s, int rows, int inner);

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

/* b (EW2B) or a (EW2A) the row's constant s[r]; the same expression per
 * element. */
#define EW2B_FN(fn, attr, expr)                                                          \
    static attr void fn(float *d, const float *pa, const float *s, int rows, int inner) { \
        for (int r = 0; r < rows; r++, d += inner, pa += inner) {                        \
            const float b = s[r];                                                         \
            for (int i = 0; i < inner; i++) {                                            \
                float a = pa[i];                                                          \
                d[i] = (expr);                                                            \
            }                                                                            \
        }                                                                                \
    }
#define EW2A_FN(fn, attr, expr)                                                          \
    static attr void fn(float *d, const float *pb, const float *s, int rows, int inner) { \
        for (int r = 0; r < rows; r++, d += inner, pb += inner) {                        \
            const float a = s[r];                                                         \
            for (int i = 0; i < inner; i++) {                                            \
                float b = pb[i];                                                          \
                d[i] = (expr);                                                            \
            }                                                                            \
        }                                                                                \
    }
#define EW2_ALL(prefix, attr, name, expr)                  \
    EW2_FN(prefix##name, attr, expr)                       \
    EW2B_FN(prefix##b_##name, attr, expr)                  \
    EW2A_FN(prefix##a_##name, attr, expr)

#define XT_EW1(name, grad, expr) EW1_FN(ew_##name, , expr)
#define XT_EW2(name, grad, expr) EW2_ALL(ew_, , name, expr)
#include "engine/ops.def"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EW_WIDE 1
#define EW_AVX2 __attribute__((target("avx2,fma")))
#define EW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define XT_EW1(name, grad, expr) EW1_FN(ew_avx2_##name, EW_AVX2, expr)
#define XT_EW2(name, grad, expr) EW2_ALL(ew_avx2_, EW_AVX2, name, expr)
#include "engine/ops.def"
#define XT_EW1(name, grad, expr) EW1_FN(ew_avx512_##name, EW_AVX512, expr)
#define XT_EW2(name, grad, expr) EW2_ALL(ew_avx512_, EW_AVX512, name, expr)
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

/* The binary ops with a row-constant operand, per SIMD level: [op][0] when
 * b is the constant, [op][1] when a is. */
static const ew_rows_fn ew_rows_tables[3][XT_OP_COUNT][2] = {
    [K_SIMD_GENERIC] = {
#define XT_EW1(name, grad, expr)
#define XT_EW2(name, grad, expr) [XT_OP_##name] = {ew_b_##name, ew_a_##name},
#include "engine/ops.def"
    },
#if EW_WIDE
    [K_SIMD_AVX2] = {
#define XT_EW1(name, grad, expr)
#define XT_EW2(name, grad, expr) [XT_OP_##name] = {ew_avx2_b_##name, ew_avx2_a_##name},
#include "engine/ops.def"
    },
    [K_SIMD_AVX512] = {
#define XT_EW1(name, grad, expr)
#define XT_EW2(name, grad, expr) [XT_OP_##name] = {ew_avx512_b_##name, ew_avx512_a_##name},
#include "engine/ops.def"
    },
#endif
};

/* The interpreter's state for one group, carved from the plan's
 * ew_scratch (sized at compile time for the widest group): per input its
 * strides, broadcast flag, bf16 flag, source pointer, the values of a
 * broadcast input for the chunk's rows (it is constant along each row: see
 * inner_run) and a chunk buffer (a bf16 input's chunk widened, or a
 * broadcast input's values repeated along the rows, filled only when an
 * instruction needs it as a chunk: `filled`); the registers. */
typedef struct {
    int64_t (*stride)[4];
    int *pattern, *bcast, *bf16, *filled;
    int64_t *off;
    const char **src;
    float (*vals)[CHUNK];
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
    CARVE(vals, nin * CHUNK * sizeof(float));
    CARVE(stride, nin * 4 * sizeof(int64_t));
    CARVE(off, nin * sizeof(int64_t));
    CARVE(pattern, nin * sizeof(int));
    CARVE(bcast, nin * sizeof(int));
    CARVE(bf16, nin * sizeof(int));
    CARVE(filled, nin * sizeof(int));
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
 * broadcast); size-1 dims never break a run, and it stops at min_d0 (a
 * group with sums: its rows are the (n, c) planes). Returns its first dim. */
static int inner_run(const xt_ew_group *grp, const int32_t *S, ew_state *st, int min_d0) {
    int nin = grp->ninputs;
    for (int k = 0; k < nin; k++) st->pattern[k] = -1;
    int d0 = 4;
    while (d0 > min_d0) {
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

/* A chunk: `rows` rows of `len` elements each, back to back (several whole
 * rows of a short inner run, or one piece of a long one). */
typedef struct {
    int rows, len;
} ew_chunk;

/* An operand as a chunk: a register; a streamed fp32 input straight from
 * memory at inner offset c; a widened bf16 one's buffer; a broadcast one's
 * buffer, filled with its row values now if no instruction of this chunk
 * has filled it yet. */
static const float *operand_chunk(ew_state *st, int kind, int i, int64_t c, ew_chunk ch) {
    if (kind == XT_OPND_REG) return st->regs[i];
    if (st->bcast[i]) {
        if (!st->filled[i]) {
            float *f = st->fill[i];
            for (int r = 0; r < ch.rows; r++, f += ch.len)
                for (int e = 0; e < ch.len; e++) f[e] = st->vals[i][r];
            st->filled[i] = 1;
        }
        return st->fill[i];
    }
    return st->bf16[i] ? st->fill[i] : (const float *)st->src[i] + c;
}

static int is_bcast(const ew_state *st, int kind, int i) { return kind == XT_OPND_INPUT && st->bcast[i]; }

/* Run the group's program over one chunk at inner offset c of outer row o,
 * with the loops of SIMD level lvl. A binary op with one broadcast operand
 * takes that operand's row values (ew_rows_tables). */
static void run_chunk(int lvl, const xt_ew_group *grp, ew_state *st, void *const *out, int64_t o, int64_t inner,
                      int64_t c, ew_chunk ch) {
    int m = ch.rows * ch.len;
    for (int k = 0; k < grp->ninputs; k++) {
        st->filled[k] = 0;
        if (st->bf16[k] && !st->bcast[k]) k_bf16_expand((size_t)m, st->fill[k], (const k_bf16 *)st->src[k] + c);
    }
    for (int j = 0; j < grp->ninstr; j++) {
        const xt_ew_instr *ins = &grp->instr[j];
        float *dst = ins->dst >= 0 ? st->regs[ins->dst] : (float *)out[-1 - ins->dst] + o * inner + c;
        if (xt_op_table[ins->op].arity == 2) {
            if (is_bcast(st, ins->bkind, ins->b)) {
                const float *a = operand_chunk(st, ins->akind, ins->a, c, ch);
                ew_rows_tables[lvl][ins->op][0](dst, a, st->vals[ins->b], ch.rows, ch.len);
                continue;
            }
            if (is_bcast(st, ins->akind, ins->a)) {
                const float *b = operand_chunk(st, ins->bkind, ins->b, c, ch);
                ew_rows_tables[lvl][ins->op][1](dst, b, st->vals[ins->a], ch.rows, ch.len);
                continue;
            }
        }
        const float *a = operand_chunk(st, ins->akind, ins->a, c, ch);
        const float *b = xt_op_table[ins->op].arity == 2 ? operand_chunk(st, ins->bkind, ins->b, c, ch) : NULL;
        ew_tables[lvl][ins->op](dst, a, b, m);
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

/* The walk over the outer rows: the multi-index of the next row and, per
 * input, that row's element offset, kept incrementally (a row costs a few
 * adds, not a dot product per input: bn2's rows are 16 elements long). */
typedef struct {
    int idx[4];
    int64_t *off; /* ninputs, in the state's scratch */
} ew_walk;

static void walk_next(ew_walk *w, const ew_state *st, int nin, const int32_t *S, int d0) {
    for (int d = d0 - 1; d >= 0; d--) {
        if (++w->idx[d] < S[d]) {
            for (int k = 0; k < nin; k++) w->off[k] += st->stride[k][d];
            return;
        }
        w->idx[d] = 0;
        for (int k = 0; k < nin; k++) w->off[k] -= (int64_t)(S[d] - 1) * st->stride[k][d];
    }
}

/* Point the inputs at `rows` outer rows from the walk's position (advanced
 * past them): streamed inputs at the first row; broadcast ones give their
 * value for each row. */
static void load_rows(const xt_ew_group *grp, ew_state *st, void *const *in, ew_walk *w, const int32_t *S, int d0,
                      int rows) {
    int nin = grp->ninputs;
    for (int k = 0; k < nin; k++)
        if (!st->bcast[k]) st->src[k] = (const char *)in[k] + w->off[k] * (st->bf16[k] ? 2 : 4);
    for (int r = 0; r < rows; r++, walk_next(w, st, nin, S, d0))
        for (int k = 0; k < nin; k++) {
            if (!st->bcast[k]) continue;
            const char *src = (const char *)in[k] + w->off[k] * (st->bf16[k] ? 2 : 4);
            st->vals[k][r] = st->bf16[k] ? k_bf16_to_f32(*(const k_bf16 *)src) : *(const float *)src;
        }
}

int xt_ew_max_sum_plane(void) { return CHUNK; }

/* The group's per-channel sums over the chunk just computed: `ch.rows`
 * whole planes from outer row o (o = n*C + c: the rows are planes, see
 * xt_ew_run). Each plane's sum is k_sum_run's, added to its channel's
 * float in row order: SUM_TO's kernel (exec_ops.c) adds the same values in
 * the same order, so the bits are that kernel's. A plane's sum is a chain
 * of dependent adds, so every (sum, plane) pair of the chunk is taken at
 * once (k_sum_runs_at), then added in row order per sum. */
enum { SUM_BATCH = 64 };
static void flush_sums(const float *const *v, float *const *y, int *nv, int len) {
    double t[SUM_BATCH];
    k_sum_runs_at(v, *nv, len, t);
    for (int k = 0; k < *nv; k++) *y[k] += (float)t[k]; /* in the order taken: row order per sum */
    *nv = 0;
}

static void add_sums(const xt_ew_group *grp, ew_state *st, void *const *out, int64_t o, int32_t C, ew_chunk ch) {
    const float *v[SUM_BATCH];
    float *y[SUM_BATCH]; /* where each run's sum goes */
    int nv = 0;
    for (int s = 0; s < grp->nsums; s++) {
        const float *base = operand_chunk(st, grp->sums[s].kind, grp->sums[s].src, 0, ch);
        for (int r = 0; r < ch.rows; r++) {
            v[nv] = base + (int64_t)r * ch.len;
            y[nv++] = (float *)out[grp->sums[s].out] + (o + r) % C;
            if (nv == SUM_BATCH) flush_sums(v, y, &nv, ch.len);
        }
    }
    if (nv) flush_sums(v, y, &nv, ch.len);
}

void xt_ew_run(const xt_plan *p, const xt_ew_group *grp, void *const *in, void *const *out, void *scratch, int32_t row0,
               int32_t rows) {
    ew_state st;
    carve(grp, scratch, &st);
    int32_t S[4] = {1, 1, 1, 1};
    for (int d = 0; d < grp->rank; d++) S[4 - grp->rank + d] = grp->shape[d];
    if (rows > 0) S[4 - grp->rank] = rows;
    int lvl = EW_WIDE ? k_simd_level() : K_SIMD_GENERIC;
    input_strides(p, grp, S, rows, &st);
    /* sums (pass_fuse.c admits them only on [N, C, H, W] groups with H*W
     * at most a chunk): rows are planes, so each chunk holds whole ones */
    int d0 = inner_run(grp, S, &st, grp->nsums ? 2 : 0);
    XT_CHECK(!grp->nsums || (grp->rank == 4 && S[2] * S[3] <= CHUNK));
    if (row0 == 0)
        for (int s = 0; s < grp->nsums; s++) memset(out[grp->sums[s].out], 0, (size_t)S[1] * sizeof(float));
    int64_t inner = 1, outer = 1;
    for (int d = d0; d < 4; d++) inner *= S[d];
    for (int d = 0; d < d0; d++) outer *= S[d];
    /* A short inner run (a per-channel factor over a 4x4 plane in the seed
     * CNN's bn2) would run the program for a handful of elements at a time:
     * where the streams allow, one chunk takes several outer rows. Each
     * element still sees the same operations, so results do not change. */
    int per_chunk = inner < CHUNK && streams_are_full(grp, S, &st) ? (int)(CHUNK / inner) : 1;
    ew_walk walk = {{0, 0, 0, 0}, st.off};
    for (int k = 0; k < grp->ninputs; k++) walk.off[k] = 0;
    for (int64_t o = 0; o < outer; o += per_chunk) {
        int r = outer - o < per_chunk ? (int)(outer - o) : per_chunk;
        load_rows(grp, &st, in, &walk, S, d0, r);
        if (r > 1) {
            run_chunk(lvl, grp, &st, out, o, inner, 0, (ew_chunk){r, (int)inner});
            if (grp->nsums) add_sums(grp, &st, out, o, S[1], (ew_chunk){r, (int)inner});
            continue;
        }
        for (int64_t c = 0; c < inner; c += CHUNK) {
            int m = inner - c < CHUNK ? (int)(inner - c) : CHUNK;
            run_chunk(lvl, grp, &st, out, o, inner, c, (ew_chunk){1, m});
            if (grp->nsums) add_sums(grp, &st, out, o, S[1], (ew_chunk){1, m}); /* m == inner: one plane */
        }
    }
}
