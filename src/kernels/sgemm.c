/* sgemm.c — our own packed fp32 GEMM for AVX-512 CPUs, and the choice between
 * it and OpenBLAS (k_sgemm).
 *
 * Is: C(M,N) = op(A) op(B), row-major, blocked as BLIS does (Goto's loops):
 *   for each NC column block of B, for each KC slice of K: pack B (KC x NC) in
 *   32-column micro-panels; for each MC row block: pack A (MC x KC) in 12-row
 *   micro-panels; then a 12 x 32 register tile (24 zmm accumulators, two
 *   16-lane B loads and 12 broadcasts of A per k) over every micro-panel pair.
 *   KC keeps a B micro-panel in half the L1 data cache, MC keeps the A block
 *   in half of L2, NC keeps the B block within twice L2: all three come from
 *   the sizes the CPU reports (cache.h), not constants tuned on one machine.
 * Is not: used below AVX-512 (k_sgemm calls OpenBLAS there), nor by the im2col
 *   convolutions (they call k_gemm, OpenBLAS, without scratch); alpha/beta are
 *   not supported (the engine's MATMUL is C = op(A) op(B)).
 *
 * Why our own: Debian's OpenBLAS 0.3.21 picks its kernels from the CPU it
 * recognises, or from OPENBLAS_CORETYPE when that is set. Where that lands on
 * its AVX2 (Haswell) kernels on an AVX-512 CPU it runs at half the core's FMA
 * rate, and the linear layers of wide_cnn (9216 -> 128) then take a large
 * share of its step. tests/bench/kernel_bench.c's "matmul" rows (printed by
 * make bench) time this kernel beside OpenBLAS on the models' shapes; the
 * latest run per CPU kind is in tests/bench/README.md.
 *
 * Numbers: each C element is the fp32 sum of its K products, in k order
 * within a KC slice, slices added in order; a different order from OpenBLAS's,
 * so results differ from it by fp32 rounding (bounded by K * 2^-24 * sum|a||b|,
 * which the tests check against the double-precision twin k_gemm_ref).
 */
#include "kernels/cache.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

#define MR 12 /* rows of C per micro-tile */
#define NR 32 /* columns of C per micro-tile: two 16-lane vectors */

typedef struct blocking { int kc, mc, nc; } blocking;

static int round_down(int v, int m) { return v / m * m; }
static int round_up(int v, int m) { return (v + m - 1) / m * m; }
static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* KC: one B micro-panel (KC x NR floats) in half of L1; MC: the A block
 * (MC x KC) in half of L2; NC: the B block (KC x NC) within twice L2. */
static blocking blocking_now(void) {
    static blocking b;
    if (!b.kc) {
        int kc = clamp(round_down((int)(k_cache_l1d_bytes() / 2 / (NR * sizeof(float))), 16), 64, 512);
        int mc = clamp(round_down((int)(k_cache_l2_bytes() / 2 / ((size_t)kc * sizeof(float))), MR), MR, 1200);
        int nc = clamp(round_down((int)(k_cache_l2_bytes() * 2 / ((size_t)kc * sizeof(float))), NR), NR, 8192);
        b = (blocking){kc, mc, nc};
    }
    return b;
}

size_t k_sgemm_scratch_bytes(int M, int N, int K) {
    blocking b = blocking_now();
    int kc = K < b.kc ? (K > 0 ? K : 1) : b.kc;
    int mc = M < b.mc ? round_up(M > 0 ? M : 1, MR) : b.mc, nc = N < b.nc ? round_up(N > 0 ? N : 1, NR) : b.nc;
    /* 64 bytes of slack for aligning the start, and again between the two */
    return ((size_t)mc * kc + (size_t)kc * nc) * sizeof(float) + 128;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prfchw")))

#include "kernels/transpose16.h"
#define transpose16 transpose_avx512 /* the one 16x16 transpose (conv_direct.c's and conv_direct_bf16.c's too) */

/* dst[k*ld + c] = X(k, c) for k < kn, c < cn (cn <= 16), where X(k, c) =
 * src[c*cs + k] (the operand stored transposed): 16 x 16 blocks through
 * registers; lanes past cn get zeros. */
TGT static void pack_transposed(float *dst, int ld, const float *src, ptrdiff_t cs, int kn, int cn) {
    __mmask16 cm = cn >= 16 ? 0xffff : (__mmask16)((1u << cn) - 1);
    int k = 0;
    for (; k + 16 <= kn; k += 16) {
        __m512 r[16];
        for (int c = 0; c < 16; c++) r[c] = c < cn ? _mm512_loadu_ps(src + c * cs + k) : _mm512_setzero_ps();
        transpose16(r);
        for (int u = 0; u < 16; u++) _mm512_mask_storeu_ps(dst + (size_t)(k + u) * ld, cm, r[u]);
    }
    for (; k < kn; k++)
        for (int c = 0; c < 16 && c < ld; c++) dst[(size_t)k * ld + c] = c < cn ? src[c * cs + k] : 0.0f;
}

/* dst[k*ld + c] = src[k*rs + c] for c < cn (cn <= 16), zeros to 16 lanes */
TGT static void pack_rows(float *dst, int ld, const float *src, ptrdiff_t rs, int kn, int cn) {
    __mmask16 cm = cn >= 16 ? 0xffff : (__mmask16)((1u << cn) - 1);
    for (int k = 0; k < kn; k++) _mm512_storeu_ps(dst + (size_t)k * ld, _mm512_maskz_loadu_ps(cm, src + k * rs));
}

/* op(X)(k, j) for k in [k0, k0+kn) and j in [j0, j0+jn), packed in panels
 * of `w` (16 or 32; 12 is handled by the A packer) columns: panel p holds
 * kn rows of w floats. X(k, j) = X[k*rs + j*cs]; one of rs, cs is 1. */
TGT static void pack_panels(float *dst, int w, const float *X, ptrdiff_t rs, ptrdiff_t cs, int k0, int kn, int j0,
                            int jn) {
    for (int p = 0; p * w < jn; p++)
        for (int h = 0; h < w; h += 16) {
            int j = j0 + p * w + h, cn = jn - p * w - h;
            cn = cn > 16 ? 16 : cn;
            float *d = dst + (size_t)p * kn * w + h;
            if (cn <= 0) {
                for (int k = 0; k < kn; k++) memset(d + (size_t)k * w, 0, 16 * sizeof(float));
            } else if (cs == 1) {
                pack_rows(d, w, X + k0 * rs + j, rs, kn, cn);
            } else {
                pack_transposed(d, w, X + j * cs + k0, cs, kn, cn);
            }
        }
}

/* A block: Ap[(ib*kn + k)*MR + r] = op(A)(i0 + ib*MR + r, k0 + k), zeros past M.
 * op(A)(i, k) = A[i*rs + k*cs]. Row-major A (cs == 1) goes through the
 * 16-lane transposer with the 4 lanes past MR masked off. */
TGT static void pack_a(float *Ap, const float *A, ptrdiff_t rs, ptrdiff_t cs, int i0, int mn, int k0, int kn) {
    for (int ib = 0; ib * MR < mn; ib++) {
        int rn = mn - ib * MR < MR ? mn - ib * MR : MR;
        float *d = Ap + (size_t)ib * kn * MR;
        const float *s = A + (i0 + ib * MR) * rs + k0 * cs;
        if (cs == 1) {
            int k = 0;
            for (; k + 16 <= kn; k += 16) {
                __m512 r[16];
                for (int c = 0; c < 16; c++) r[c] = c < rn ? _mm512_loadu_ps(s + c * rs + k) : _mm512_setzero_ps();
                transpose16(r);
                for (int u = 0; u < 16; u++) _mm512_mask_storeu_ps(d + (size_t)(k + u) * MR, 0x0fff, r[u]);
            }
            for (; k < kn; k++)
                for (int c = 0; c < MR; c++) d[(size_t)k * MR + c] = c < rn ? s[c * rs + k] : 0.0f;
        } else { /* op(A) = A^T stored row-major: a k row holds consecutive i */
            __mmask16 m = (__mmask16)((1u << rn) - 1);
            for (int k = 0; k < kn; k++)
                _mm512_mask_storeu_ps(d + (size_t)k * MR, 0x0fff, _mm512_maskz_loadu_ps(m, s + k * cs));
        }
    }
}

/* C[0..mr) x [0..nr) = (or +=, when acc) the kn-step product of one A
 * micro-panel (MR rows, zero-padded) and one B micro-panel (NR columns). */
TGT static void kernel_12x32(int kn, const float *a, const float *b, float *C, int ldc, int mr, int nr, int acc) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 c0[MR], c1[MR];
    /* Ask for the tile's C lines now, for writing: they are written after
     * the k loop, and in the engine C is usually a cold gradient (wide_cnn's
     * fc1 dx and dW, 4.7 MB each); without this every store waits for its
     * line's read-for-ownership, which cost those GEMMs a third of their
     * rate against the same call with C warm. */
    for (int r = 0; r < mr; r++) {
        __builtin_prefetch(C + (size_t)r * ldc, 1, 3);
        __builtin_prefetch(C + (size_t)r * ldc + nr - 1, 1, 3);
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int k = 0; k < kn; k++, a += MR, b += NR) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[r]);
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        float *c = C + (size_t)r * ldc;
        if (acc) {
            c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, c));
            c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, c + 16));
        }
        _mm512_mask_storeu_ps(c, m0, c0[r]);
        _mm512_mask_storeu_ps(c + 16, m1, c1[r]);
    }
}

static float *align64(void *p) { return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

static void sgemm_avx512(int tA, int tB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc, void *scratch) {
    blocking bl = blocking_now();
    ptrdiff_t ars = tA ? 1 : lda, acs = tA ? lda : 1, brs = tB ? 1 : ldb, bcs = tB ? ldb : 1;
    int kc_max = K < bl.kc ? K : bl.kc, mc_max = M < bl.mc ? round_up(M, MR) : bl.mc;
    float *Ap = align64(scratch), *Bp = align64(Ap + (size_t)mc_max * kc_max);
    for (int jc = 0; jc < N; jc += bl.nc) {
        int nn = N - jc < bl.nc ? N - jc : bl.nc;
        for (int pc = 0; pc < K; pc += bl.kc) {
            int kn = K - pc < bl.kc ? K - pc : bl.kc;
            /* op(B)(k, j) = B[k*brs + j*bcs]: rows are k, columns j */
            pack_panels(Bp, NR, B, brs, bcs, pc, kn, jc, nn);
            for (int ic = 0; ic < M; ic += bl.mc) {
                int mn = M - ic < bl.mc ? M - ic : bl.mc;
                pack_a(Ap, A, ars, acs, ic, mn, pc, kn);
                for (int jr = 0; jr < nn; jr += NR)
                    for (int ir = 0; ir < mn; ir += MR)
                        kernel_12x32(kn, Ap + (size_t)ir * kn, Bp + (size_t)jr * kn, C + (size_t)(ic + ir) * ldc + jc + jr,
                                     ldc, mn - ir < MR ? mn - ir : MR, nn - jr < NR ? nn - jr : NR, pc > 0);
            }
        }
    }
}
#define HAVE_OWN_SGEMM 1
#endif

/* The AVX-512 kernel wherever the CPU has AVX-512, OpenBLAS below that. On
 * the project's AMD machines it beat OpenBLAS on every model shape, whichever
 * kernels OpenBLAS picked; on an Intel Xeon (Sapphire Rapids class) it was
 * only level with or a little ahead of OpenBLAS's SkylakeX kernels
 * (kernel_bench's "matmul" rows; tests/bench/README.md). A rule measured on
 * one CPU kind; issue #55 replaces it with a choice measured at compile
 * time. */
int k_sgemm_own(int M, int N, int K) {
    (void)M, (void)N, (void)K;
#ifdef HAVE_OWN_SGEMM
    return k_simd_level() == K_SIMD_AVX512;
#else
    return 0;
#endif
}

const char *k_sgemm_path_name(int M, int N, int K) {
    return k_sgemm_own(M, N, K) ? "own AVX-512" : "OpenBLAS";
}

void k_sgemm(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
             int ldc, void *scratch) {
    k_sgemm_m(k_sgemm_own(M, N, K), transA, transB, M, N, K, A, lda, B, ldb, C, ldc, scratch);
}

void k_sgemm_m(int own, int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float *C, int ldc, void *scratch) {
    if (M <= 0 || N <= 0) return;
#ifdef HAVE_OWN_SGEMM
    if (K > 0 && own) {
        sgemm_avx512(transA, transB, M, N, K, A, lda, B, ldb, C, ldc, scratch);
        return;
    }
#endif
    (void)scratch, (void)own;
    k_gemm(transA, transB, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}
