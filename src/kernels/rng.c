/* rng.c — counter-based random numbers (Philox-4x32-10, Salmon et al., SC'11).
 *
 * Is: the Philox-4x32-10 block function and k_rng_uniform, a pure function of
 * (seed, counter, index): the key is the 64-bit seed, the 128-bit counter block
 * is (index, counter). No state, so a replayed step (same seed, step, index)
 * draws the same dropout mask in any worker and any order. Philox passes
 * BigCrush and is what PyTorch's CUDA generator and JAX use.
 * Is not: a stream generator or anything cryptographic.
 */
#include "kernels/kernels.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void k_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* The top 24 bits of the first output word, scaled by 2^-24: exactly
 * representable floats in [0, 1), every one equally likely. */
float k_rng_uniform(uint64_t seed, uint64_t counter, uint64_t i) {
    uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), (uint32_t)counter, (uint32_t)(counter >> 32)};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    k_philox4x32_10(out, ctr, key);
    return (float)(out[0] >> 8) * (1.0f / 16777216.0f);
}
