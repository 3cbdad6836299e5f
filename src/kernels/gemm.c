/* gemm.c — row-major single-precision GEMM: the OpenBLAS call and its naive twin.
 *
 * Is: k_gemm, a thin row-major wrapper over cblas_sgemm (OpenBLAS, one thread
 * per worker: the launcher pins OPENBLAS_NUM_THREADS=1), and k_gemm_ref, the
 * triple loop the tests hold it against.
 * Is not: our own GEMM (sgemm.c, which the engine's MATMUL calls and which
 * falls back to k_gemm below AVX-512). The convolutions that OpenBLAS serves
 * badly (a handful of input channels) get direct kernels in conv_direct.c.
 */
#include "kernels/kernels.h"

#include <cblas.h>

void k_gemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
            const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
}

/* op(A)(i,k) and op(B)(k,j) read straight from the row-major storage. Double
 * accumulation, so the reference is more accurate than what it checks. beta == 0
 * ignores C's old contents (BLAS semantics: NaN garbage in C must not leak). */
void k_gemm_ref(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) {
                double a = transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = transB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += a * b;
            }
            float *c = &C[(size_t)i * ldc + j];
            double old = beta == 0.0f ? 0.0 : (double)beta * *c;
            *c = (float)(alpha * acc + old);
        }
    }
}
