/* synthetic_cifar.c — coloured synthetic digits in a 32x32 frame; see
 * synthetic_cifar.h for what and why. All colour randomness comes from one
 * xt_rng keyed by (seed, XT_RNG_SYNTH_CIFAR, split, index); draws are
 * separate statements (see xt_rng_gauss) so the bytes are the same with
 * every compiler.
 */
#include "data/synthetic_cifar.h"

#include <string.h>

#include "data/cifar.h"
#include "data/rng.h"
#include "data/synthetic.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define S XT_CIFAR_SIDE
#define G XT_SYNTH_SIDE

static double luma(const double c[3]) { return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]; }

static void random_colour(xt_rng *r, double c[3]) {
    for (int k = 0; k < 3; k++) c[k] = xt_rng_range(r, 0, 256);
}

int xt_synth_cifar_sample(uint64_t seed, int split, int64_t index, uint8_t *out) {
    uint8_t glyph[G * G];
    int label = xt_synth_sample(seed, split, index, glyph);
    xt_rng r;
    xt_rng_init(&r, seed, XT_RNG_SYNTH_CIFAR, (uint64_t)split, (uint64_t)index);
    int oy = (int)xt_rng_below(&r, S - G + 1), ox = (int)xt_rng_below(&r, S - G + 1);
    double c0[3], c1[3], fg[3], mid[3];
    random_colour(&r, c0);
    random_colour(&r, c1);
    for (int k = 0; k < 3; k++) mid[k] = (c0[k] + c1[k]) / 2;
    /* A foreground far enough from the background to be seen; after a few
     * tries, the luminance-inverted background colour is (always > 60 away
     * unless the middle is grey, where white or black is). */
    random_colour(&r, fg);
    for (int t = 0; t < 8 && (luma(fg) - luma(mid)) * (luma(fg) - luma(mid)) < 60.0 * 60; t++) random_colour(&r, fg);
    if ((luma(fg) - luma(mid)) * (luma(fg) - luma(mid)) < 60.0 * 60)
        for (int k = 0; k < 3; k++) fg[k] = luma(mid) < 128 ? 255 : 0;
    double angle_x = xt_rng_range(&r, -1, 1), angle_y = xt_rng_range(&r, -1, 1);
    double sigma = xt_rng_range(&r, 0, 10);
    for (int k = 0; k < 3; k++) {
        for (int y = 0; y < S; y++) {
            for (int x = 0; x < S; x++) {
                /* t in [0, 1] along a random direction through the centre */
                double t = 0.5 + 0.5 * (angle_x * (x - 15.5) + angle_y * (y - 15.5)) / 31.0;
                double bg = c0[k] + (c1[k] - c0[k]) * t;
                int gy = y - oy, gx = x - ox;
                double a = gy >= 0 && gy < G && gx >= 0 && gx < G ? glyph[gy * G + gx] / 255.0 : 0;
                double noise = xt_rng_gauss(&r);
                double v = bg * (1 - a) + fg[k] * a + sigma * noise;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                out[(k * S + y) * S + x] = (uint8_t)(v + 0.5);
            }
        }
    }
    return label;
}

void xt_synth_cifar_generate(uint8_t *images, uint8_t *labels, int64_t first, int64_t n, uint64_t seed, int split) {
    for (int64_t i = 0; i < n; i++)
        labels[i] = (uint8_t)xt_synth_cifar_sample(seed, split, first + i, images + (size_t)i * XT_CIFAR_PIXELS);
}
