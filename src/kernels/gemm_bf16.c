/* gemm_bf16.c — GEMM with bf16 operands and fp32 accumulation: packing, the
 * AVX512-BF16 (vdpbf16ps) kernel, k_gemm_bf16's two paths and the twin.
 *
 * Is: the packed GEMM of gemm_bf16.h; k_gemm_bf16, which runs it on CPUs with
 * AVX512-BF16 and otherwise widens the operands to fp32 (exact) and calls
 * OpenBLAS's sgemm (the reference path); k_gemm_bf16_ref, the plain loops.
 * Is not: a convolution (conv_bf16.c) or the rounding of fp32 to bf16 (bf16.c).
 *
 * The kernel: an 8 x 32 block of C in 16 zmm accumulators; per k pair, two
 * 16-column loads of packed B, 8 broadcasts of a packed A pair and 16
 * vdpbf16ps (each 32 multiply-adds). K is blocked by KC so one 32-column
 * panel of B (KC x 32 bf16 = 24 KB) stays in L1 while every row block of A
 * passes over it.
 *
 * Numbers: each vdpbf16ps lane adds two exact products (a bf16 x bf16 product
 * fits in fp32's 24-bit significand) to an fp32 accumulator, so the kernel
 * differs from the exact sum of the rounded operands only by fp32 rounding of
 * the running sums, at most about K * 2^-24 * sum|a||b| (and by vdpbf16ps
 * treating denormal inputs and results as zero, below 2^-126 per term).
 *
 * AMX-BF16 (Intel Sapphire Rapids and later) is not implemented: no machine
 * here has AMX to run and test it on. It would be a third path beside this
 * one: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) once per process
 * (falling back to this path when refused), a 16 x 32 bf16 tile layout for B
 * (the same k pairs as k_bf16_pack_b, 16 rows of 64 bytes) and tdpbf16ps
 * on 16 x 16 fp32 C tiles.
 */
#include "kernels/gemm_bf16.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,prfchw")))
#define HAVE_BF16_KERNEL 1

/* o[c] = (r0[c], r1[c]) for 16 columns: two rows interleaved in one permute */
TGT static void interleave16(uint32_t *o, const k_bf16 *r0, const k_bf16 *r1) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)r0)),
                                    _mm256_loadu_si256((const void *)r1), 1);
    _mm512_storeu_si512(o, _mm512_permutexvar_epi16(idx, ab));
}
#endif

#define MR 8       /* rows of C per kernel call */
#define NR 32      /* columns of C per kernel call: two 16-lane panels */
#define KC 384     /* k per block (even) */

static int round_up(int v, int m) { return (v + m - 1) / m * m; }

size_t k_bf16_pack_a_bytes(int M, int K) { return k_bf16_lines((size_t)round_up(M, MR) * round_up(K, 2) * 2); }
size_t k_bf16_pack_b_bytes(int K, int N) { return k_bf16_lines((size_t)round_up(N, NR) * round_up(K, 2) * 2); }

static inline uint32_t pair(k_bf16 lo, k_bf16 hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

/* A matrix whose k pairs are 32-bit words: row (or column) i of X at
 * X + i*stride, contiguous in k, 4-byte aligned, K even (k_bf16 units). */
static int pairs_are_words(const k_bf16 *X, ptrdiff_t stride, ptrdiff_t along_k, int K) {
    return along_k == 1 && stride % 2 == 0 && K % 2 == 0 && ((uintptr_t)X & 3) == 0;
}

#ifdef HAVE_BF16_KERNEL
#include "kernels/transpose16.h"
/* 16 lines of 32-bit k-pair words (line c at w + c*stride words) transposed
 * 16 pairs at a time: out(kk, c) for kk in [0, kh16) whole blocks of 16. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) static void transpose_pairs16(const uint32_t *w, ptrdiff_t stride, int kh16, uint32_t *o, ptrdiff_t o_kk,
                                  int halves) {
    for (int kk = 0; kk < kh16; kk += 16) {
        __m512 r[16];
        for (int c = 0; c < 16; c++) r[c] = _mm512_castsi512_ps(_mm512_loadu_si512(w + c * stride + kk));
        transpose_avx512(r);
        for (int t = 0; t < 16; t++) {
            __m512i v = _mm512_castps_si512(r[t]);
            if (!halves) {
                _mm512_storeu_si512(o + (size_t)(kk + t) * o_kk, v);
                continue;
            } /* rows 0..7 to the first block of 8, rows 8..15 to the next (halves words further on) */
            _mm256_storeu_si256((void *)(o + (size_t)(kk + t) * o_kk), _mm512_castsi512_si256(v));
            _mm256_storeu_si256((void *)(o + (size_t)(kk + t) * o_kk + halves), _mm512_extracti64x4_epi64(v, 1));
        }
    }
}
#endif

/* Ap32[(ib*Kh + kk)*MR + r] = (A[ib*MR+r][2kk], A[ib*MR+r][2kk+1]), zeros outside A. */
void k_bf16_pack_a(int M, int K, const k_bf16 *A, ptrdiff_t rs, ptrdiff_t cs, void *Ap) {
    uint32_t *out = Ap;
    int Kh = round_up(K, 2) / 2, Mp = round_up(M, MR);
    for (int ib = 0; ib < Mp / MR; ib++) {
        int kk0 = 0;
#ifdef HAVE_BF16_KERNEL
        /* row-major A: two blocks of 8 rows at once, 16x16 transposes of pair words */
        if (ib % 2 == 0 && (ib + 2) * MR <= M && pairs_are_words(A, rs, cs, K)) {
            kk0 = Kh / 16 * 16;
            transpose_pairs16((const uint32_t *)(const void *)(A + (size_t)ib * MR * rs), rs / 2, kk0,
                              out + (size_t)ib * Kh * MR, MR, Kh * MR);
            for (int r = 0; r < 2 * MR; r++) /* the last kh % 16 pairs */
                for (int kk = kk0; kk < Kh; kk++)
                    out[((size_t)(ib + r / MR) * Kh + kk) * MR + r % MR] =
                        ((const uint32_t *)(const void *)(A + (size_t)(ib * MR + r) * rs))[kk];
            ib++;
            continue;
        }
#endif
        uint32_t *o = out + (size_t)ib * Kh * MR;
        for (int kk = kk0; kk < Kh; kk++)
            for (int r = 0; r < MR; r++) {
                int i = ib * MR + r, k = 2 * kk;
                k_bf16 lo = 0, hi = 0;
                if (i < M) {
                    lo = A[i * rs + k * cs];
                    if (k + 1 < K) hi = A[i * rs + (k + 1) * cs];
                }
                *o++ = pair(lo, hi);
            }
    }
}

/* Bp32[(jb*Kh + kk)*16 + c] = (B[2kk][jb*16+c], B[2kk+1][jb*16+c]), zeros outside B. */
void k_bf16_pack_b(int K, int N, const k_bf16 *B, ptrdiff_t rs, ptrdiff_t cs, void *Bp) {
    int Kh = round_up(K, 2) / 2, Np = round_up(N, NR);
    for (int jb = 0; jb < Np / 16; jb++) {
        int j0 = jb * 16, jn = N - j0 < 16 ? (N - j0 > 0 ? N - j0 : 0) : 16, kk = 0;
        uint32_t *o = (uint32_t *)Bp + (size_t)jb * Kh * 16;
#ifdef HAVE_BF16_KERNEL
        /* B read down its columns (B^T row-major, e.g. x . W^T): a column's k pair is one word */
        if (jn == 16 && pairs_are_words(B, cs, rs, K)) {
            kk = Kh / 16 * 16;
            transpose_pairs16((const uint32_t *)(const void *)(B + (size_t)j0 * cs), cs / 2, kk, o, 16, 0);
            o += (size_t)kk * 16;
        }
#endif
        for (; kk < Kh; kk++) {
            int k = 2 * kk;
            const k_bf16 *r0 = B + k * rs + j0 * cs, *r1 = r0 + rs;
            int odd = k + 1 >= K;
#ifdef HAVE_BF16_KERNEL
            if (cs == 1 && !odd && jn == 16) { /* packing runs on the AVX512-BF16 path only */
                interleave16(o, r0, r1);
                o += 16;
                continue;
            }
#endif
            if (cs == 1 && !odd)
                for (int c = 0; c < jn; c++) o[c] = pair(r0[c], r1[c]);
            else
                for (int c = 0; c < jn; c++) o[c] = pair(r0[c * cs], odd ? 0 : r1[c * cs]);
            for (int c = jn; c < 16; c++) o[c] = 0;
            o += 16;
        }
    }
}

#ifdef HAVE_BF16_KERNEL
/* Where the kernel reads A: the k pair kk of row r is a[r * rs + kk * ks]
 * (32-bit units). Packed: rs = 1, ks = MR. Row-major bf16 with an even row
 * length: rs = lda / 2, ks = 1, read in place. */
typedef struct a_view { const uint32_t *a; ptrdiff_t rs, ks; } a_view;

/* C[0..mr) x [0..nr) (+)= A rows x B-panels over kh k pairs. Rows past mr
 * read row mr-1 again (never stored), so no row outside A is touched. */
TGT static void kernel_8x32(int kh, a_view av, const uint32_t *b0, const uint32_t *b1, float *C, int ldc, int mr, int nr,
                            int acc) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 c0[MR], c1[MR];
    const uint32_t *ar[MR];
    /* the tile's C lines, asked for now for writing (sgemm.c's kernel says
     * why: C is often a cold gradient, and each store would wait for its line) */
    if (!acc)
        for (int r = 0; r < mr; r++) {
            __builtin_prefetch(C + (size_t)r * ldc, 1, 3);
            __builtin_prefetch(C + (size_t)r * ldc + nr - 1, 1, 3);
        }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        ar[r] = av.a + (r < mr ? r : mr - 1) * av.rs;
        c0[r] = acc && r < mr ? _mm512_maskz_loadu_ps(m0, C + (size_t)r * ldc) : _mm512_setzero_ps();
        c1[r] = acc && r < mr ? _mm512_maskz_loadu_ps(m1, C + (size_t)r * ldc + 16) : _mm512_setzero_ps();
    }
    for (int kk = 0; kk < kh; kk++) {
        __m512bh B0 = (__m512bh)_mm512_loadu_si512(b0 + (size_t)kk * 16);
        __m512bh B1 = (__m512bh)_mm512_loadu_si512(b1 + (size_t)kk * 16);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            __m512bh A = (__m512bh)_mm512_set1_epi32((int)ar[r][kk * av.ks]);
            c0[r] = _mm512_dpbf16_ps(c0[r], A, B0);
            c1[r] = _mm512_dpbf16_ps(c1[r], A, B1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        if (r < mr) {
            _mm512_mask_storeu_ps(C + (size_t)r * ldc, m0, c0[r]);
            if (m1) _mm512_mask_storeu_ps(C + (size_t)r * ldc + 16, m1, c1[r]);
        }
}

/* C (+)= A B over row blocks, column panels and K blocks; A packed or read in place. */
static void gemm_blocks(int M, int N, int K, int packed_a, const uint32_t *A32, ptrdiff_t a_rs, const void *Bp,
                        int accumulate, float *C, int ldc) {
    const uint32_t *B32 = Bp;
    int Kh = round_up(K, 2) / 2, kch = KC / 2;
    if (M <= 0 || N <= 0) return;
    if (Kh == 0) { /* no products: C = 0 (or unchanged) */
        for (int i = 0; i < M && !accumulate; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    for (int k0 = 0; k0 < Kh; k0 += kch) {
        int kh = Kh - k0 < kch ? Kh - k0 : kch, acc = accumulate || k0 > 0;
        for (int j0 = 0; j0 < N; j0 += NR) {
            const uint32_t *b0 = B32 + ((size_t)(j0 / 16) * Kh + k0) * 16, *b1 = b0 + (size_t)Kh * 16;
            int nr = N - j0 < NR ? N - j0 : NR;
            for (int i0 = 0; i0 < M; i0 += MR) {
                a_view av = packed_a ? (a_view){A32 + ((size_t)(i0 / MR) * Kh + k0) * MR, 1, MR}
                                     : (a_view){A32 + i0 * a_rs + k0, a_rs, 1};
                kernel_8x32(kh, av, b0, b1, C + (size_t)i0 * ldc + j0, ldc, M - i0 < MR ? M - i0 : MR, nr, acc);
            }
        }
    }
}

void k_bf16_gemm_packed(int M, int N, int K, const void *Ap, const void *Bp, int accumulate, float *C, int ldc) {
    gemm_blocks(M, N, K, 1, Ap, 0, Bp, accumulate, C, ldc);
}

void k_bf16_gemm_rows(int M, int N, int K, const k_bf16 *A, int lda, const void *Bp, int accumulate, float *C, int ldc) {
    gemm_blocks(M, N, K, 0, (const uint32_t *)(const void *)A, lda / 2, Bp, accumulate, C, ldc);
}
#else
void k_bf16_gemm_packed(int M, int N, int K, const void *Ap, const void *Bp, int accumulate, float *C, int ldc) {
    (void)M, (void)N, (void)K, (void)Ap, (void)Bp, (void)accumulate, (void)C, (void)ldc;
}
void k_bf16_gemm_rows(int M, int N, int K, const k_bf16 *A, int lda, const void *Bp, int accumulate, float *C, int ldc) {
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)Bp, (void)accumulate, (void)C, (void)ldc;
}
#endif

/* ---- k_gemm_bf16: the two paths ------------------------------------------ */

static size_t fast_bytes(int M, int N, int K) { return k_bf16_pack_a_bytes(M, K) + k_bf16_pack_b_bytes(K, N); }
/* the reference path: op(A) and op(B) widened into dense fp32 matrices */
static size_t ref_bytes(int M, int N, int K) {
    return k_bf16_lines((size_t)M * K * sizeof(float)) + k_bf16_lines((size_t)K * N * sizeof(float));
}

size_t k_gemm_bf16_scratch(int M, int N, int K) {
    size_t a = fast_bytes(M, N, K), b = ref_bytes(M, N, K);
    return a > b ? a : b;
}

/* dense fp32 copy of the (rows x cols) matrix whose (i, j) is X[i*rs + j*cs] */
static void widen(int rows, int cols, const k_bf16 *X, ptrdiff_t rs, ptrdiff_t cs, float *out) {
    for (int i = 0; i < rows; i++) {
        if (cs == 1) k_bf16_expand((size_t)cols, out + (size_t)i * cols, X + i * rs);
        else
            for (int j = 0; j < cols; j++) out[(size_t)i * cols + j] = k_bf16_to_f32(X[i * rs + j * cs]);
    }
}

void k_gemm_bf16(int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B, int ldb,
                 int accumulate, float *C, int ldc, void *scratch) {
    /* DIRECT names a conv method: the GEMM is the same */
    k_gemm_bf16_m(k_bf16_path() != K_BF16_REF, transA, transB, M, N, K, A, lda, B, ldb, accumulate, C, ldc, scratch);
}

void k_gemm_bf16_m(int fast, int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B,
                   int ldb, int accumulate, float *C, int ldc, void *scratch) {
    if (M <= 0 || N <= 0) return;
    ptrdiff_t ars = transA ? 1 : lda, acs = transA ? lda : 1, brs = transB ? 1 : ldb, bcs = transB ? ldb : 1;
    if (fast) {
        char *Ap = scratch, *Bp = Ap + k_bf16_pack_a_bytes(M, K);
        k_bf16_pack_a(M, K, A, ars, acs, Ap);
        k_bf16_pack_b(K, N, B, brs, bcs, Bp);
        k_bf16_gemm_packed(M, N, K, Ap, Bp, accumulate, C, ldc);
        return;
    }
    float *Af = scratch, *Bf = (float *)((char *)scratch + k_bf16_lines((size_t)M * K * sizeof(float)));
    widen(M, K, A, ars, acs, Af);
    widen(K, N, B, brs, bcs, Bf);
    k_gemm(0, 0, M, N, K, 1.0f, Af, K, Bf, N, accumulate ? 1.0f : 0.0f, C, ldc);
}

void k_gemm_bf16_ref(int transA, int transB, int M, int N, int K, const k_bf16 *A, int lda, const k_bf16 *B,
                     int ldb, int accumulate, float *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = accumulate ? C[(size_t)i * ldc + j] : 0.0;
            for (int k = 0; k < K; k++) {
                double a = k_bf16_to_f32(transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
                double b = k_bf16_to_f32(transB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                acc += a * b;
            }
            C[(size_t)i * ldc + j] = (float)acc;
        }
}
