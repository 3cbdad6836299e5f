/* batch_pixels.h — where a batch's float pixels live: the memory the loader
 * assembles each batch into (loader.c), and the benchmark's stand-in for it
 * (tests/bench/train_bench.c), one function so the two cannot drift apart.
 *
 * A buffer starts on a 64-byte line, so the convolution's packing, which
 * reads each image 16 floats at a time, never loads across two lines.
 * MEASURED (seed CNN, batch 1024, 8 distinct batches, pinned, Zen 5, perf
 * samples over 61 steps, 2 interleaved pairs): pack_plane_avx512 400-432
 * with the images 16 bytes past a line (a plain malloc block, which
 * train_bench used until 2026-12-02), 327-339 on a line. Whole steps did
 * not show it: batch 1024 ran a median 55.2K samples/s either way (6
 * interleaved pairs, 53.4K-58.4K).
 * Small pages on purpose: the same runs with each buffer of 2 MB or more on
 * transparent huge pages (madvise) packed faster still (183-205 samples),
 * but whole steps ran slower, 54,970-57,120 samples/s against 57,830-60,570
 * (5 interleaved pairs); huge pages for the engine's arena were slower too.
 * Not here: what goes into the buffer (loader.c, transform.c). */
#ifndef XT_DATA_BATCH_PIXELS_H
#define XT_DATA_BATCH_PIXELS_H

#include <stddef.h>

/* Room for `floats` pixels (at least one line), or NULL when memory runs out;
 * free() releases it. */
float *xt_batch_pixels_alloc(size_t floats);

#endif
