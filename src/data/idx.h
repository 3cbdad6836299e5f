/* idx.h — reader for the IDX files of MNIST and FashionMNIST, raw or gzipped.
 *
 * An IDX file is a big-endian magic 0x000008NN (unsigned bytes, NN dimensions),
 * NN big-endian uint32 sizes, then the bytes. The MNIST family uses two
 * shapes: images (0x00000803: count x rows x cols) and labels (0x00000801:
 * count). Everything is checked — magic, dimension count, sizes, bytes present
 * against the header, trailing bytes, label range, gzip integrity — because a
 * damaged download otherwise surfaces much later as a puzzling accuracy.
 * Errors are XT_EDATA with a one-line message that starts with the path.
 *
 * Not here: which files make a dataset (dataset.c), downloading (download.c).
 */
#ifndef XT_DATA_IDX_H
#define XT_DATA_IDX_H

#include <stdint.h>

#include "util/err.h"

#define XT_IDX_MAGIC_IMAGES 0x00000803u
#define XT_IDX_MAGIC_LABELS 0x00000801u

typedef struct xt_idx {
    long n;          /* images or labels in the file */
    int rows, cols;  /* image size; 0 for a labels file */
    uint8_t *data;   /* (n, rows, cols) pixels or (n) labels; malloc'd, owned */
} xt_idx;

/* Read an images file. rows/cols > 0 demand that image size (28x28 for the
 * models here); 0 accepts any. gzip is detected from the content, so a raw
 * file named .gz still reads. Returns 0, or XT_EDATA (XT_EIO when the file
 * cannot be opened) with *out left empty. */
int xt_idx_read_images(const char *path, int rows, int cols, xt_idx *out, xt_err *e);

/* Read a labels file; every label must be in 0..num_classes-1. */
int xt_idx_read_labels(const char *path, int num_classes, xt_idx *out, xt_err *e);

void xt_idx_free(xt_idx *x);

#endif
