/* synth_idx.c — see synth_idx.h. */
#include "synth_idx.h"

#include <stdint.h>
#include <stdio.h>

#include "data/synthetic.h"
#include "test.h"

void test_write_synth_idx(const char *path, int n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char hdr[16] = {0, 0, 8, 3, 0, 0, (unsigned char)(n >> 8), (unsigned char)n, 0, 0, 0, 28, 0, 0, 0, 28};
    fwrite(hdr, 1, sizeof hdr, f);
    uint8_t img[784];
    for (int i = 0; i < n; i++) {
        CHECK(xt_synth_sample(3, 1, 5000 + i, img) >= 0);
        fwrite(img, 1, sizeof img, f);
    }
    CHECK(fclose(f) == 0);
}
