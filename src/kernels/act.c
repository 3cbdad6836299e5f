/* act.c — activations applied in place by kernels that write their output
 * themselves (a convolution's ReLU epilogue, conv.c / conv_direct.c), and
 * the ReLU's backward mask (a convolution backward-data's epilogue).
 * Is not: the engine's elementwise ops (engine/ew.c runs RELU as a graph op).
 * One loop compiled per SIMD width; every width gives the same bits. */
#include "kernels/kernels.h"
#include "kernels/simd.h"

#define RELU_LOOP(name, attr)                                   \
    static attr void name(float *x, size_t n) {                 \
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f; \
    }
#define MASK_LOOP(name, attr)                                                      \
    static attr void name(float *dy, const float *x, size_t n) {                    \
        for (size_t i = 0; i < n; i++) dy[i] = x[i] > 0.0f ? dy[i] : 0.0f;          \
    }
RELU_LOOP(relu_gen, )
MASK_LOOP(mask_gen, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
RELU_LOOP(relu_avx2, __attribute__((target("avx2,fma"))))
RELU_LOOP(relu_avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))))
MASK_LOOP(mask_avx2, __attribute__((target("avx2,fma"))))
MASK_LOOP(mask_avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))))
#define ACT_WIDE 1
#endif

/* x = relu(x): x > 0 ? x : 0, so NaN and -0 become 0, as the engine's RELU */
void k_relu_inplace(float *x, size_t n) {
#ifdef ACT_WIDE
    switch (k_simd_level()) {
    case K_SIMD_AVX512: relu_avx512(x, n); return;
    case K_SIMD_AVX2: relu_avx2(x, n); return;
    default: break;
    }
#endif
    relu_gen(x, n);
}

/* dy = x > 0 ? dy : 0, as the engine's RELU_BWD(dy, x): NaN and -0 in x give 0 */
void k_relu_bwd_inplace(float *dy, const float *x, size_t n) {
#ifdef ACT_WIDE
    switch (k_simd_level()) {
    case K_SIMD_AVX512: mask_avx512(dy, x, n); return;
    case K_SIMD_AVX2: mask_avx2(dy, x, n); return;
    default: break;
    }
#endif
    mask_gen(dy, x, n);
}
