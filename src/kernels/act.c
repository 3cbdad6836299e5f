/* act.c — activations applied in place by kernels that write their output
 * themselves (a convolution's ReLU epilogue, conv.c / conv_direct.c).
 * Is not: the engine's elementwise ops (engine/ew.c runs RELU as a graph op).
 * One loop compiled per SIMD width; every width gives the same bits. */
#include "kernels/kernels.h"
#include "kernels/simd.h"

#define RELU_LOOP(name, attr)                                   \
    static attr void name(float *x, size_t n) {                 \
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f; \
    }
RELU_LOOP(relu_gen, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
RELU_LOOP(relu_avx2, __attribute__((target("avx2,fma"))))
RELU_LOOP(relu_avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))))
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
