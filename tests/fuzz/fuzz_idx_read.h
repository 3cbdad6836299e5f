/* fuzz_idx_read.h — one IDX read and its invariants, shared by fuzz_idx.c
 * (raw bytes) and fuzz_idx_gz.c (through the gzip path).
 *
 * Each input is read once (each read opens the file and sizes its buffers,
 * the costly part), as `kind` says: FUZZ_IDX_LABELS (10 classes),
 * FUZZ_IDX_IMAGES (any size) or FUZZ_IDX_IMAGES_28 (28x28 asked for). A read
 * that succeeds holds a non-empty set of what was asked for; a refusal has a
 * message and no data. `bound` (0: none, as for a compressed file) is the
 * input's length, which a raw file's contents cannot exceed.
 */
#ifndef XT_FUZZ_IDX_READ_H
#define XT_FUZZ_IDX_READ_H

#include <stddef.h>
#include <stdint.h>

#include "data/idx.h"
#include "fuzz_util.h"

enum { FUZZ_IDX_IMAGES = 0, FUZZ_IDX_LABELS = 1, FUZZ_IDX_IMAGES_28 = 2 };

static inline void fuzz_idx_read(const char *path, int kind, size_t bound) {
    xt_idx x;
    xt_err e = {0};
    int labels = kind == FUZZ_IDX_LABELS, want = kind == FUZZ_IDX_IMAGES_28 ? 28 : 0;
    int rc = labels ? xt_idx_read_labels(path, 10, &x, &e) : xt_idx_read_images(path, want, want, &x, &e);
    if (rc) {
        fuzz_note(labels ? "refused as labels" : "refused as images", e.msg);
        FUZZ_ASSERT(e.code && e.msg[0] && !x.data, "a failure with no message or with data");
        return;
    }
    fuzz_note("read", labels ? "labels" : "images");
    if (labels) {
        if (bound) FUZZ_ASSERT(x.n > 0 && x.data && (size_t)x.n <= bound, "bad label count %ld", x.n);
        for (long i = 0; i < x.n; i++) FUZZ_ASSERT(x.data[i] < 10, "label %d at %ld", x.data[i], i);
    } else {
        size_t px = (size_t)x.n * (size_t)x.rows * (size_t)x.cols;
        FUZZ_ASSERT(x.n > 0 && x.rows > 0 && x.cols > 0 && x.data, "an empty image set read");
        FUZZ_ASSERT(!want || (x.rows == want && x.cols == want), "asked for %dx%d, got %dx%d", want, want, x.rows,
                    x.cols);
        if (bound) {
            FUZZ_ASSERT(px <= bound, "more pixels than input bytes");
            volatile uint8_t last = x.data[px - 1]; /* ASan: the buffer holds every pixel it claims */
            (void)last;
        }
    }
    xt_idx_free(&x);
}

#endif
