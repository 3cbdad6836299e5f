/* rng.h — the data pipeline's small deterministic PRNG (header only).
 *
 * Every random decision in src/data (a synthetic image, a shuffle, a crop) is
 * drawn from a stream keyed by a tuple such as (seed, domain, epoch, index),
 * so sample i never depends on generation order, thread count or how many
 * draws another sample made. splitmix64 mixes the key into a xoshiro256**
 * state. Not for cryptography, and not bit-compatible with torch.Generator.
 */
#ifndef XT_DATA_RNG_H
#define XT_DATA_RNG_H

#include <stdint.h>

/* Domains keep streams that share a seed apart. */
enum {
    XT_RNG_SYNTH = 0x5e17,   /* synthetic image: (seed, domain, split, index) */
    XT_RNG_SYNTH_LABELS,     /* synthetic labels: (seed, domain, split, block of 10) */
    XT_RNG_SHUFFLE,          /* sampler: (seed, domain, epoch) */
    XT_RNG_CROP,             /* augmentation: (seed, domain, epoch, index): crop offsets, then the flip */
    XT_RNG_SYNTH_CIFAR,      /* synthetic CIFAR colouring: (seed, domain, split, index) */
    XT_RNG_SPLIT,            /* folder dataset's validation split: (seed, domain, files) */
    XT_RNG_RESIZED_CROP,     /* random_resized_crop: (seed, domain, epoch, index); its own stream, so the
                                flip and crop offsets of XT_RNG_CROP do not move when it is turned on */
};

typedef struct xt_rng {
    uint64_t s[4];
} xt_rng;

/* splitmix64's finalizer: a bijective 64-bit mix. */
static inline uint64_t xt_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seed a stream from four key words (unused words: 0). */
static inline void xt_rng_init(xt_rng *r, uint64_t k0, uint64_t k1, uint64_t k2, uint64_t k3) {
    uint64_t h = xt_mix64(k0 + 0x9e3779b97f4a7c15ULL);
    h = xt_mix64(h ^ (k1 + 0x632be59bd9b4e019ULL));
    h = xt_mix64(h ^ (k2 + 0x8cb92ba72f3d8dd7ULL));
    h = xt_mix64(h ^ (k3 + 0xd1b54a32d192ed03ULL));
    for (int i = 0; i < 4; i++) {
        h += 0x9e3779b97f4a7c15ULL;
        r->s[i] = xt_mix64(h);
    }
}

static inline uint64_t xt_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** next output. */
static inline uint64_t xt_rng_next(xt_rng *r) {
    uint64_t *s = r->s;
    uint64_t out = xt_rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = xt_rotl64(s[3], 45);
    return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double xt_rng_uniform(xt_rng *r) { return (double)(xt_rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [lo, hi). */
static inline double xt_rng_range(xt_rng *r, double lo, double hi) { return lo + (hi - lo) * xt_rng_uniform(r); }

/* Uniform integer in [0, n), n > 0, without modulo bias (rejection). */
static inline uint64_t xt_rng_below(xt_rng *r, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = xt_rng_next(r);
    while (x >= limit);
    return x % n;
}

/* Approximately N(0, 1): the sum of four uniforms, rescaled. Bounded (|x| < 3.5)
 * and free of libm, which is all the pixel noise needs.
 * Draws are separate statements on purpose, here and in every caller: C leaves
 * the evaluation order of operands and arguments unspecified (GCC and clang
 * differ), so two draws in one expression would make the data compiler-specific. */
static inline double xt_rng_gauss(xt_rng *r) {
    double s = xt_rng_uniform(r);
    s += xt_rng_uniform(r);
    s += xt_rng_uniform(r);
    s += xt_rng_uniform(r);
    return (s - 2.0) * 1.7320508075688772; /* var of the sum is 4/12 */
}

#endif
