/* kernels.h — the numeric kernels the engine's executor calls.
 *
 * Plain functions over float32 NCHW arrays: outputs first, inputs next, sizes
 * in a shape struct. No allocation: any scratch memory is passed in, sized by
 * the matching *_scratch() function (the memory planner reserves it once).
 * Every fast kernel has a *_ref twin — the obvious loops, kept as the
 * algorithmic reference the tests compare against.
 *
 * Kernels are single-threaded by design: xlatrain gets parallelism from one
 * worker process per core (data parallel), as PyTorch/XLA does per TPU core.
 */
#ifndef XT_KERNELS_H
#define XT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* ---- GEMM (row-major: OpenBLAS cblas_sgemm, and our own AVX-512 kernel) -----
 * C(M,N) = alpha * op(A) * op(B) + beta * C; op(X) = X or X^T (trans flags). */
void k_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
            const float *B, int ldb, float beta, float *C, int ldc);
void k_gemm_ref(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);
/* C(M,N) = op(A) op(B) through our own packed AVX-512 kernel where k_sgemm_own
 * says so, else k_gemm (sgemm.c). scratch: k_sgemm_scratch_bytes(M, N, K). */
size_t k_sgemm_scratch_bytes(int M, int N, int K);
/* The same with the kernel given (own: ours, else OpenBLAS), chosen when the graph compiled (impl.h). */
void k_sgemm_m(int own, int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float *C, int ldc, void *scratch);
int k_sgemm_own(int M, int N, int K);
const char *k_sgemm_path_name(int M, int N, int K);
void k_sgemm(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
             int ldc, void *scratch);

/* ---- 2-D convolution (cross-correlation, as torch.nn.Conv2d, groups=1) ---- */
typedef struct k_conv_shape {
    int N, Ci, H, W;    /* input  x: (N, Ci, H, W) */
    int Co, kh, kw;     /* weight w: (Co, Ci, kh, kw) */
    int sh, sw, ph, pw; /* stride, zero padding */
    int Ho, Wo;         /* output y: (N, Co, Ho, Wo); Ho = (H + 2ph - kh)/sh + 1 */
} k_conv_shape;

/* Fill Ho/Wo from the rest; returns 0, or -1 if the output would be empty. */
int k_conv_shape_infer(k_conv_shape *s);
/* Scratch floats needed by the fast fwd / bwd_data / bwd_weight kernels (max of the three). */
/* The kinds of node a convolution pass or matrix product is (impl.h chooses per kind). */
enum k_op_kind {
    K_OP_CONV_FWD,                 /* y = conv(x, w) + b, ReLU epilogue, batch-norm prologue (fp32) */
    K_OP_CONV_FWD_POOL2,           /* the same, then a 2x2/2 max pool: values and argmax bytes */
    K_OP_CONV_BWD_DATA,            /* dx = conv^T(dy, w), masked by a ReLU (fp32) */
    K_OP_CONV_BWD_DATA_UNPOOL2,    /* the same with dy a 2x2 pool's (g, argmax) */
    K_OP_CONV_BWD_WEIGHT,          /* dw over the batch, part by part */
    K_OP_CONV_BWD_WEIGHT_UNPOOL2,  /* the same with dy a 2x2 pool's (g, argmax) */
    K_OP_MATMUL,                   /* C = op(A) op(B) */
    K_OP_KINDS
};

size_t k_conv2d_scratch(const k_conv_shape *s);

/* y = conv(x, w) + b; b may be NULL. */
void k_conv2d_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, float *scratch);
/* x = relu(x) in place (act.c): x > 0 ? x : 0, as the engine's RELU */
void k_relu_inplace(float *x, size_t n);
/* dy = x > 0 ? dy : 0 in place (act.c), as the engine's RELU_BWD(dy, x) */
void k_relu_bwd_inplace(float *dy, const float *x, size_t n);
/* The weights a direct convolution packs for its register tiles, kept from
 * one call to the next across the micro-batch tiles of one step (the engine
 * gives each tiled convolution such a buffer, as it gives the weight
 * gradient its running sums): buf holds the pass's k_conv2d_*_packed_floats(s)
 * floats; fresh 1 packs w into it (the step's first tile), 0 uses what the
 * fresh call left there and does not read w's values. buf NULL: packed into
 * scratch on every call (K_CONV_PACK_PER_CALL). The weights are the same
 * between the calls, so the results are the same bits either way. */
typedef struct k_conv_packed {
    float *buf;
    int fresh;
} k_conv_packed;
#define K_CONV_PACK_PER_CALL ((k_conv_packed){NULL, 1})
/* A convolution's input read through batch norm's apply and, when relu is 1,
 * a ReLU: channel c of x counts as relu?(x * scale[c] + shift[c]), made as
 * the kernel packs x (pass_conv_prologue.c) instead of read from a tensor an
 * elementwise pass wrote. The product and the sum are each rounded to fp32
 * (never one FMA) and the ReLU is x > 0 ? x : 0, so the values are those
 * bits of the elementwise ops it stands for. scale NULL: x as it is. */
typedef struct k_conv_prologue {
    const float *scale, *shift;
    int relu;
} k_conv_prologue;
#define K_CONV_NO_PROLOGUE ((k_conv_prologue){NULL, NULL, 0})
size_t k_conv2d_fwd_packed_floats(const k_conv_shape *s);       /* 0 where the method packs nothing */
size_t k_conv2d_bwd_data_packed_floats(const k_conv_shape *s);  /* the same for backward-data */
size_t k_conv2d_bwd_data_unpool2_packed_floats(const k_conv_shape *s); /* and for its _unpool2 form */
/* vals, argmax = the 2x2, stride-2 max pool (as k_maxpool2d_fwd) of
 * conv(x, w) + b (relu'd when relu is 1), without writing the conv output
 * where the direct method runs (else one image at a time through scratch).
 * scratch: k_conv2d_pool2_scratch(s) floats. */
size_t k_conv2d_pool2_scratch(const k_conv_shape *s);
void k_conv2d_fwd_pool2(const k_conv_shape *s, float *vals, uint8_t *argmax, const float *x, const float *w,
                        const float *b, int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro);
/* The same, y = relu(conv(x, w) + b) when relu is 1 (applied as the output is written). */
void k_conv2d_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                      float *scratch, k_conv_packed pk, k_conv_prologue pro);
/* dx = conv_transpose(dy, w) (overwrites dx). */
void k_conv2d_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch);
/* dw = sum_n corr(x, dy) (overwrites dw); db = sum over n,h,w of dy when db != NULL. */
void k_conv2d_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy, float *scratch);
/* The same over consecutive parts of the batch, in order (the engine's
 * micro-batch tiles): first starts the sum, last writes dw; `acc`
 * (k_conv2d_bwd_weight_acc_floats floats) carries it between calls and must
 * not be touched in between. Bit-identical to k_conv2d_bwd_weight over the
 * whole batch when every part but the last is a multiple of 16 images. */
size_t k_conv2d_bwd_weight_acc_floats(const k_conv_shape *s);
void k_conv2d_bwd_weight_part(const k_conv_shape *s, float *dw, const float *x, const float *dy, float *scratch,
                              float *acc, int first, int last, k_conv_prologue pro);
/* The gradient dy of a conv output that a 2x2, stride-2 max pool without
 * padding read, not yet scattered: the pool's gradient g (N, Co, Ho/2, Wo/2)
 * and its argmax (the kept cell of each window, 0-3 row-major, as
 * k_maxpool2d_fwd writes). dy is k_maxpool2d_bwd(g, argmax); the _unpool2 passes below
 * scatter it block by block as they pack it, so the (N, Co, Ho, Wo) dy is
 * never written: the same bits as the pool's backward then the plain pass.
 * scratch: k_conv2d_unpool2_scratch(s) floats. */
typedef struct k_unpool2 {
    const float *g;
    const uint8_t *argmax;
    /* Optional (NULL: none), for a backward-data and a weight-gradient pass
     * over the same (g, argmax) called one after the other: backward-data
     * leaves the last block of images' scattered dy here in its blocked
     * layout, and the weight gradient takes that block from it instead of
     * scattering it again (k_conv2d_unpool2_share_floats floats; the same
     * bits either way). The weight gradient uses it once, then marks it spent. */
    float *share;
} k_unpool2;
size_t k_conv2d_unpool2_scratch(const k_conv_shape *s);
/* Floats of k_unpool2.share for s, or 0 when the pair's kernels on this CPU
 * cannot share a block (then there is nothing to gain from passing one). */
size_t k_conv2d_unpool2_share_floats(const k_conv_shape *s);
void k_conv2d_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 dy, const float *w, float *scratch);
/* Backward-data with the ReLU's backward in its epilogue: dx = relu_mask > 0 ?
 * conv_transpose(dy, w) : 0, as RELU_BWD(dx, relu_mask) would give it; the
 * mask (shaped like dx) is applied channel by channel as dx leaves the blocked
 * layout (relu_mask NULL: no mask). dy plain (dy != NULL) or unpooled
 * (up.g != NULL, as above). */
void k_conv2d_bwd_data_masked(const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up, const float *w,
                              const float *relu_mask, float *scratch, k_conv_packed pk);
void k_conv2d_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy, float *scratch,
                                      float *acc, int first, int last, k_conv_prologue pro);
/* The multiply-adds that pass executes for s on this CPU: where it visits
 * only the pixels the pool kept (conv_sparse.c), a quarter of the
 * N*Co*Ho*Wo*Ci*kh*kw a dense pass does. */
double k_conv2d_bwd_weight_unpool2_macs(const k_conv_shape *s);
/* The same for backward-data (conv_sparse_data.c: an upper bound, the zero
 * gradients it skips not counted). */
double k_conv2d_bwd_data_unpool2_macs(const k_conv_shape *s);

void k_conv2d_fwd_ref(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b);
void k_conv2d_bwd_data_ref(const k_conv_shape *s, float *dx, const float *dy, const float *w);
void k_conv2d_bwd_weight_ref(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy);

/* ---- pooling (as F.max_pool2d / F.avg_pool2d, floor mode) --------------- */
typedef struct k_pool_shape {
    int N, C, H, W;     /* input (N, C, H, W) */
    int kh, kw, sh, sw, ph, pw;
    int Ho, Wo;         /* output (N, C, Ho, Wo) */
} k_pool_shape;

int k_pool_shape_infer(k_pool_shape *s);
/* y = max over each window (ties: the first in row-major order, as PyTorch;
 * padding is -inf); argmax[i] = the winner's cell in its window, i*kw + j for
 * window row i and column j, one byte (so a window has at most
 * K_POOL_MAX_CELLS cells). Not PyTorch's flat index h*W + w in the plane: the
 * backward passes read the argmax of every pooled value back, and at a large
 * batch that traffic crosses DRAM (seed CNN, batch 1024: 5.9 MB of int32
 * indices written and read again per step, 1.5 MB of bytes). */
#define K_POOL_MAX_CELLS 256
void k_maxpool2d_fwd(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x);
/* dx = 0, then dx[argmax] += dy (overwrites dx). */
void k_maxpool2d_bwd(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax);
/* The same, each element rounded to bf16 (k_bf16_from_f32) as it is
 * written: a 2x2 pool's AVX-512 path stores bf16 itself, any other runs
 * k_maxpool2d_bwd a few planes at a time (about K_BF16_PIECE_FLOATS) into
 * scratch (k_maxpool2d_bwd_bf16_scratch_floats floats) and rounds them. */
size_t k_maxpool2d_bwd_bf16_scratch_floats(const k_pool_shape *s);
void k_maxpool2d_bwd_bf16(const k_pool_shape *s, uint16_t *dx, const float *dy, const uint8_t *argmax, float *scratch);
/* avg pool with count_include_pad=True (PyTorch's default). */
void k_avgpool2d_fwd(const k_pool_shape *s, float *y, const float *x);
void k_avgpool2d_bwd(const k_pool_shape *s, float *dx, const float *dy);

void k_maxpool2d_fwd_ref(const k_pool_shape *s, float *y, uint8_t *argmax, const float *x);
/* The zero-then-scatter loop k_maxpool2d_bwd is checked against. */
void k_maxpool2d_bwd_ref(const k_pool_shape *s, float *dx, const float *dy, const uint8_t *argmax);

/* ---- batch norm over (N, H*W) per channel C ------------------------------
 * Training: mean and biased variance of the batch; y = (x-mean)*invstd*gamma + beta,
 * invstd = 1/sqrt(var + eps). var_unbiased = var * n/(n-1) feeds the running
 * stats (the engine does that update as ordinary elementwise nodes). */
void k_bn_stats(int N, int C, int HW, float *mean, float *var, const float *x);
/* The same, a part of the batch at a time (micro-batch tiles): begin, then
 * add each part in sample order (every part but the last a multiple of
 * K_BN_CHUNK samples), then end; acc holds k_bn_stats_acc_doubles(C). Same
 * bits as one k_bn_stats over the whole batch. */
#define K_BN_CHUNK 16
size_t k_bn_stats_acc_doubles(int C);
void k_bn_stats_begin(int C, double *acc);
void k_bn_stats_add(int N, int C, int HW, double *acc, const float *x);
void k_bn_stats_end(int C, const double *acc, float *mean, float *var);
/* SUM_TO's runs (reduce.c): the sum of n floats in 16 float lanes folded in
 * double (the same bits at every SIMD width), and y[i] += x[i]. */
double k_sum_run(const float *x, int64_t n);
/* sums[r] = k_sum_run(x + r*n, n) for r < runs, bit for bit, several runs at once */
void k_sum_runs(const float *x, int64_t runs, int64_t n, double *sums);
/* sums[r] = k_sum_run(xp[r], n) for r < runs, bit for bit, a few runs at a time */
void k_sum_runs_at(const float *const *xp, int64_t runs, int64_t n, double *sums);
void k_add_run(float *y, const float *x, int64_t n);
/* The weight gradients' last step: out[v] = (float)t with t = 0.0, then
 * t += x[v*lanes + l] for l = 0..lanes-1 in double, for each of nvec
 * vectors of `lanes` floats (a vector accumulator's lanes, one image block
 * each). out may be x itself (the sums are compacted in place, a group's
 * vectors read before its sums are written); otherwise they must not overlap. */
void k_lane_sums(const float *x, int64_t nvec, int lanes, float *out);
/* Gradient of (mean, biased variance) of `count` values per channel, for N
 * samples of x (N, C, HW): dx = ds[c] / count + 2 ds[C + c] (x - st[c]) / count.
 * count is the whole batch's N*HW when N is a micro-batch tile of it. */
void k_bn_stats_bwd(int N, int C, int HW, int64_t count, float *dx, const float *ds, const float *x, const float *st);
/* The same with what reads dx next folded in (engine/pass_bn_bwd.c), each
 * step the one IEEE operation the separate elementwise op makes, so the bits
 * are theirs: u (laid out as x, or NULL) is added, u + dx when u_first, else
 * dx + u (the ADD's operand order), then m (as x, or NULL) masks as a ReLU's
 * backward does: m > 0 ? value : +0 (NaN masks to +0). With uf (C floats, or
 * NULL) the addend is u * uf[c], rounded as the MUL that made it was. */
void k_bn_stats_bwd_fused(int N, int C, int HW, int64_t count, float *dx, const float *ds, const float *x,
                          const float *st, const float *u, const float *uf, int u_first, const float *m);
/* The same values with dx in nChw{B}c ([N][C/B][HW][B], C % B == 0; the
 * engine's layout pass), through `planes`: k_bn_stats_bwd_blocked_floats. */
size_t k_bn_stats_bwd_blocked_floats(int HW, int B);
void k_bn_stats_bwd_fused_blocked(int N, int C, int HW, int B, int64_t count, float *dx, const float *ds,
                                  const float *x, const float *st, const float *u, const float *uf, int u_first,
                                  const float *m, float *planes);

void k_bn_stats_ref(int N, int C, int HW, float *mean, float *var, const float *x);

/* ---- row-wise softmax family (rows x cols, contiguous rows) -------------- */
void k_log_softmax_fwd(int rows, int cols, float *y, const float *x);
/* dx = dy - exp(y) * sum_row(dy) */
void k_log_softmax_bwd(int rows, int cols, float *dx, const float *dy, const float *y);

/* ---- counter-based RNG (dropout) ------------------------------------------
 * Uniform [0,1) float for element `i` of the stream (seed, counter): a pure
 * function, so a replay with the same (seed, step, index) gives the same mask. */
float k_rng_uniform(uint64_t seed, uint64_t counter, uint64_t i);
/* The Philox-4x32-10 block function under k_rng_uniform (Random123's
 * philox4x32_R(10, ctr, key)): four 32-bit words per call, for kernels that want
 * several draws per counter. */
void k_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]);
/* out[j] = k_rng_uniform(seed, counter, i0 + j) for j < n: the same values, ~10x
 * faster than a loop of single calls (16 Philox blocks of 4 values per AVX-512 step). */
void k_rng_uniform_fill(uint64_t seed, uint64_t counter, uint64_t i0, size_t n, float *out);
/* Dropout, forward and (applied to dy) backward alike:
 * y[i] = k_rng_uniform(seed, counter, index0 + i) < p ? 0 : x[i] * (1.0f / (1.0f - p)), i < n. y may be x.
 * index0: where x starts in the whole tensor (a micro-batch tile's offset). */
void k_dropout(size_t n, float *y, const float *x, float p, uint64_t seed, uint64_t counter, uint64_t index0);
/* The same, y rounded to bf16 (k_bf16_from_f32): k_dropout on pieces of
 * K_BF16_PIECE_FLOATS into scratch (that many floats), each rounded as it
 * leaves; the mask is a function of the index, so the pieces draw it as one
 * call would. */
void k_dropout_bf16(size_t n, uint16_t *y, const float *x, float p, uint64_t seed, uint64_t counter, uint64_t index0,
                    float *scratch);

/* A kernel that writes a bf16 output by rounding its own fp32 loop's
 * results computes that many at a time into scratch: 32 KB, in L1 on the
 * CPUs here (48 KB), so the rounding reads them back from L1. */
#define K_BF16_PIECE_FLOATS 8192

#endif
