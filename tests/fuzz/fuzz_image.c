/* fuzz_image.c — the folder dataset's decoders (src/data/image_decode.c):
 * any bytes as a PNG or JPEG file, decoded to grey and to RGB under a small
 * max_image_pixels, then (when it decodes) resampled to 7x5 and 40x33 as
 * `resize` does (image_resize.c). Whatever the bytes, no crash, no leak, no
 * read outside the input (libpng and libjpeg report through longjmp: this
 * is where that path is exercised under ASan), and a decoded image is
 * exactly w*h*channels bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_decode.h"
#include "data/image_resize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int channels = 1; channels <= 3; channels += 2) {
        xt_decoded d;
        xt_err e = {0};
        /* 1<<20 pixels: a fuzzer-made header cannot make the harness allocate gigabytes */
        if (xt_image_decode(data, size, "fuzz", 1 << 20, channels, &d, &e)) {
            if (!e.msg[0] || d.px) abort(); /* a failure always says why and leaves nothing behind */
            continue;
        }
        if (d.w < 1 || d.h < 1 || d.channels != channels) abort();
        /* resampling reads every decoded byte: ASan sees a buffer shorter than w*h*channels */
        static const int sizes[2][2] = {{7, 5}, {40, 33}};
        for (int k = 0; k < 2; k++) {
            uint8_t *out = malloc((size_t)sizes[k][0] * (size_t)sizes[k][1] * (size_t)channels);
            if (out && xt_image_resize(d.px, d.h, d.w, out, sizes[k][0], sizes[k][1], channels)) abort();
            free(out);
        }
        xt_decoded_free(&d);
    }
    return 0;
}
