/* synthetic_cifar.h — the built-in `dataset: synthetic_cifar10`: CIFAR-shaped
 * images (3x32x32 uint8, channel-planar, labels 0..9) generated from a seed,
 * for offline runs and CI of the CIFAR-10 pipeline (3 channels, per-channel
 * normalization, crop and flip augmentation, the RGB grid).
 *
 * Sample i is synthetic digit i (synthetic.h: same seed, split and index,
 * so the same label) placed at a random offset in the 32x32 frame and
 * coloured: a background that is a gradient between two random colours, a
 * foreground of a random colour at least 60 levels of luminance away from
 * the background's middle, pixel noise per channel. The colours are drawn
 * independently of the label, so only the shape tells the class: a CNN
 * learns it, a colour histogram cannot. Sample i depends only on (seed,
 * split, i), as the digits do.
 *
 * Not here: the glyphs themselves (synthetic.c), CIFAR-10 files (cifar.c).
 */
#ifndef XT_DATA_SYNTHETIC_CIFAR_H
#define XT_DATA_SYNTHETIC_CIFAR_H

#include <stdint.h>

/* Per-channel (R, G, B) mean and std of the pixels scaled to [0, 1],
 * measured over 50,000 training samples of seed 1 (seeds 2 and 3 are within
 * 0.003): the normalization default for `dataset: synthetic_cifar10`. */
#define XT_SYNTH_CIFAR_MEAN {0.5011, 0.5017, 0.5015}
#define XT_SYNTH_CIFAR_STD {0.2150, 0.2152, 0.2138}

/* Render sample `index` of `split` (0 train, 1 test) into out (3*32*32
 * bytes) and return its label. */
int xt_synth_cifar_sample(uint64_t seed, int split, int64_t index, uint8_t *out);

/* Samples [first, first + n) of a split: images (n, 3, 32, 32), labels (n). */
void xt_synth_cifar_generate(uint8_t *images, uint8_t *labels, int64_t first, int64_t n, uint64_t seed, int split);

#endif
