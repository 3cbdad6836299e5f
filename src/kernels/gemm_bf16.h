/* gemm_bf16.h — the packed bf16 GEMM under k_gemm_bf16 and the bf16
 * convolutions (gemm_bf16.c; private to src/kernels, the kernel tests and the
 * kernel bench).
 *
 * A GEMM in three calls, so a convolution packs its weights once for the
 * whole batch and only the per-image operand each time:
 *   k_bf16_pack_a(M, K, A, rs, cs, Ap)   element (i, k) = A[i*rs + k*cs]
 *   k_bf16_pack_b(K, N, B, rs, cs, Bp)   element (k, j) = B[k*rs + j*cs]
 *   k_bf16_gemm_packed(...)              C(M,N) = A B (+ C), AVX512-BF16 only
 * Packed layouts pair neighbouring k (the two bf16 halves of one 32-bit lane,
 * as vdpbf16ps multiplies them) and pad M, N and K with zeros, so the kernel
 * has no edge cases in its inner loop. Not here: the choice of path (bf16.h).
 */
#ifndef XT_KERNELS_GEMM_BF16_H
#define XT_KERNELS_GEMM_BF16_H

#include <stddef.h>

#include "kernels/bf16.h"

size_t k_bf16_pack_a_bytes(int M, int K);
size_t k_bf16_pack_b_bytes(int K, int N);
void k_bf16_pack_a(int M, int K, const k_bf16 *A, ptrdiff_t rs, ptrdiff_t cs, void *Ap);
void k_bf16_pack_b(int K, int N, const k_bf16 *B, ptrdiff_t rs, ptrdiff_t cs, void *Bp);
/* Only when k_bf16_path() != K_BF16_REF. */
void k_bf16_gemm_packed(int M, int N, int K, const void *Ap, const void *Bp, int accumulate, float *C, int ldc);
/* The same with A read in place: row-major bf16, K and lda even (the k pairs
 * are then whole 32-bit words of a row), 4-byte aligned. No packing of A. */
void k_bf16_gemm_rows(int M, int N, int K, const k_bf16 *A, int lda, const void *Bp, int accumulate, float *C, int ldc);

/* Round a byte count up to whole 64-byte lines (scratch areas are carved in lines). */
static inline size_t k_bf16_lines(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

#endif
