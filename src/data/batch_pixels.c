/* batch_pixels.c — see batch_pixels.h. */
#include "data/batch_pixels.h"

#include <stdlib.h>

float *xt_batch_pixels_alloc(size_t floats) {
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64; /* aligned_alloc wants a multiple of the alignment */
    return aligned_alloc(64, bytes ? bytes : 64);
}
