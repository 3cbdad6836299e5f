/* batch_pixels.h — where a batch's float pixels live: the memory the loader
 * assembles each batch into (loader.c), and the benchmark's stand-in for it
 * (tests/bench/train_bench.c), one function so the two cannot drift apart.
 *
 * A buffer starts on a 64-byte line, so the convolution's packing, which
 * reads each image 16 floats at a time, never loads across two lines.
 * The convolution's packing of the images (pack_plane_avx512) measured
 * faster on a line than 16 bytes past one (a plain malloc block), though
 * whole steps did not show it: perf samples of it and train_bench's batch
 * sweep at batch 1024 (make bench); the figures are in
 * tests/bench/HISTORY.md.
 * Small pages on purpose: in the same runs, each buffer of 2 MB or more on
 * transparent huge pages (madvise) packed faster still, but whole steps ran
 * slower; huge pages for the engine's arena were slower too.
 * Not here: what goes into the buffer (loader.c, transform.c). */
#ifndef XT_DATA_BATCH_PIXELS_H
#define XT_DATA_BATCH_PIXELS_H

#include <stddef.h>

/* Room for `floats` pixels (at least one line), or NULL when memory runs out;
 * free() releases it. */
float *xt_batch_pixels_alloc(size_t floats);

#endif
