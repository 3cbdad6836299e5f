/* dataset.h — one split (train or test) of a dataset held in memory as u8
 * pixels and labels: MNIST / FashionMNIST read from IDX files, or the built-in
 * synthetic set. The data module stands alone: the training code copies the
 * config's data keys into an xt_data_opts (this header does not know
 * config.h).
 *
 *   xt_data_opts o; xt_data_opts_defaults(&o);
 *   o.kind = XT_DATA_MNIST; o.datadir = "data/mnist";
 *   xt_dataset train; if (xt_dataset_open(&train, &o, XT_SPLIT_TRAIN, &err)) return err.code;
 *   ... train.images (n, 28, 28), train.labels (n), train.mean / train.std ...
 *   xt_dataset_free(&train);
 *
 * Not here: reading one IDX file (idx.c), downloading (download.c),
 * normalization and batching (transform.c, loader.c).
 */
#ifndef XT_DATA_DATASET_H
#define XT_DATA_DATASET_H

#include <stdint.h>

#include "util/err.h"

typedef enum { XT_DATA_MNIST, XT_DATA_FASHION_MNIST, XT_DATA_SYNTHETIC } xt_data_kind;
enum { XT_SPLIT_TRAIN = 0, XT_SPLIT_TEST = 1 };

/* The standard file names (look for NAME, then NAME.gz). */
#define XT_IDX_TRAIN_IMAGES "train-images-idx3-ubyte"
#define XT_IDX_TRAIN_LABELS "train-labels-idx1-ubyte"
#define XT_IDX_TEST_IMAGES "t10k-images-idx3-ubyte"
#define XT_IDX_TEST_LABELS "t10k-labels-idx1-ubyte"

typedef struct xt_data_opts {
    xt_data_kind kind;             /* default XT_DATA_MNIST */
    const char *datadir;           /* where the four IDX files are (mnist/fashion_mnist) */
    /* Explicit files override the standard names in datadir; NULL or "" = standard. */
    const char *train_images, *train_labels, *test_images, *test_labels;
    long train_subset[2];          /* [start, end) of the split's file; end -1 = to the end */
    long test_subset[2];
    uint64_t seed;                 /* synthetic: generation seed (1) */
    int synthetic_train_size;      /* 6000 */
    int synthetic_test_size;       /* 1000 */
    double norm_mean, norm_std;    /* < 0 (std <= 0): the dataset's own, see xt_data_norm_defaults */
} xt_data_opts;

typedef struct xt_dataset {
    xt_data_kind kind;
    int split;                     /* XT_SPLIT_TRAIN or XT_SPLIT_TEST */
    int64_t n;                     /* samples, after the subset */
    int rows, cols;                /* 28 x 28, one channel */
    int num_classes;               /* 10 */
    uint8_t *images;               /* (n, rows, cols) */
    uint8_t *labels;               /* (n), each < num_classes */
    int64_t first;                 /* index in the file (or synthetic stream) of sample 0: the subset start */
    double mean, std;              /* normalization to use: the override or the dataset's default */
    char images_path[1024];        /* where the data came from; "" for synthetic */
    char labels_path[1024];
} xt_dataset;

void xt_data_opts_defaults(xt_data_opts *o);

/* "mnist", "fashion_mnist" or "synthetic" (the config's spelling). */
const char *xt_data_kind_name(xt_data_kind kind);

/* Per-dataset normalization: MNIST 0.1307/0.3081, FashionMNIST 0.2860/0.3530,
 * synthetic XT_SYNTH_MEAN/XT_SYNTH_STD (measured, see synthetic.h). */
void xt_data_norm_defaults(xt_data_kind kind, double *mean, double *std);

/* Load (or generate) one split. Returns 0, XT_EDATA for missing or damaged
 * files (the message names the file, and for a missing one says where to put
 * it and how to fetch it), XT_EUSAGE for a subset outside the data, XT_EIO
 * when a file exists but cannot be opened. On failure *ds is empty. */
int xt_dataset_open(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e);

void xt_dataset_free(xt_dataset *ds);

#endif
