/* fuzz_idx.c — the IDX reader (src/data/idx.c) on arbitrary uncompressed bytes.
 *
 * Input: a whole IDX file. xt_idx_read_* only take a path, so the bytes go
 * through this process's scratch file (fuzz_util.h) and are read once, as
 * labels of 10 classes or as images (see read_one). A file that reads must
 * describe no more bytes than it holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/idx.h"
#include "fuzz_util.h"

/* One read per input (each read opens the file and sizes its buffers, the
 * costly part): as labels when the magic's dimension byte says 1, else as
 * images, of 28x28 when the input's length is odd and of any size otherwise. */
static void read_one(const char *path, const uint8_t *data, size_t size) {
    xt_idx x;
    xt_err e = {0};
    if (size >= 4 && data[3] == 1) {
        if (xt_idx_read_labels(path, 10, &x, &e) == 0) {
            fuzz_note("read", "labels");
            FUZZ_ASSERT(x.n > 0 && x.data && (size_t)x.n <= size, "bad label count %ld", x.n);
            for (long i = 0; i < x.n; i++) FUZZ_ASSERT(x.data[i] < 10, "label %d at %ld", x.data[i], i);
            xt_idx_free(&x);
        } else {
            fuzz_note("refused as labels", e.msg);
            FUZZ_ASSERT(e.code && e.msg[0] && !x.data, "a failure with no message or with data");
        }
        return;
    }
    int want = size % 2 ? 28 : 0;
    if (xt_idx_read_images(path, want, want, &x, &e) == 0) {
        fuzz_note("read", "images");
        FUZZ_ASSERT(x.n > 0 && x.rows > 0 && x.cols > 0 && x.data, "an empty image set read");
        FUZZ_ASSERT(!want || (x.rows == want && x.cols == want), "asked for %dx%d, got %dx%d", want, want, x.rows, x.cols);
        FUZZ_ASSERT((size_t)x.n * (size_t)x.rows * (size_t)x.cols <= size, "more pixels than input bytes");
        volatile uint8_t last = x.data[(size_t)x.n * (size_t)x.rows * (size_t)x.cols - 1];
        (void)last;
        xt_idx_free(&x);
    } else {
        fuzz_note("refused as images", e.msg);
        FUZZ_ASSERT(e.code && e.msg[0] && !x.data, "a failure with no message or with data");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    read_one(fuzz_write_file("input.idx", data, size), data, size);
    return 0;
}
