/* synth_idx.c — see synth_idx.h. */
#include "synth_idx.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

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

/* dir/name: an IDX file of n items (images 28x28 when rank is 3, labels
 * when 1), bytes shifted by salt. */
static void write_idx(const char *dir, const char *name, int rank, int n, int salt) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    unsigned char head[16] = {0, 0, 8, (unsigned char)rank};
    int dims[3] = {n, 28, 28};
    for (int d = 0; d < rank; d++)
        for (int b = 0; b < 4; b++) head[4 + 4 * d + b] = (unsigned char)(dims[d] >> (24 - 8 * b));
    fwrite(head, 1, 4 + 4 * (size_t)rank, f);
    long bytes = rank == 3 ? (long)n * 784 : n;
    for (long i = 0; i < bytes; i++) fputc(rank == 3 ? (int)((i * 7 + salt) % 256) : (int)(i % 10), f);
    CHECK(fclose(f) == 0);
}

void test_write_idx_set(const char *dir, int ntrain, int ntest, int salt) {
    mkdir(dir, 0777);
    write_idx(dir, "train-images-idx3-ubyte", 3, ntrain, salt);
    write_idx(dir, "train-labels-idx1-ubyte", 1, ntrain, 0);
    write_idx(dir, "t10k-images-idx3-ubyte", 3, ntest, salt);
    write_idx(dir, "t10k-labels-idx1-ubyte", 1, ntest, 0);
}
