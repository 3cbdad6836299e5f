/* fuzz_idx.c — the IDX reader (src/data/idx.c) on arbitrary uncompressed bytes.
 *
 * Input: a whole IDX file. xt_idx_read_* only take a path, so the bytes go
 * through this process's scratch file (fuzz_util.h) and are read once, as
 * labels of 10 classes or as images (fuzz_idx_read.h). A file that reads must
 * describe no more bytes than it holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_idx_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* labels when the magic's dimension byte says 1, else images: of 28x28
     * when the input's length is odd and of any size otherwise */
    int kind = size >= 4 && data[3] == 1 ? FUZZ_IDX_LABELS : size % 2 ? FUZZ_IDX_IMAGES_28 : FUZZ_IDX_IMAGES;
    fuzz_idx_read(fuzz_write_file("input.idx", data, size), kind, size);
    return 0;
}
