/* dataset.h — one split (train or test) of a dataset held in memory as u8
 * pixels and labels: MNIST / FashionMNIST read from IDX files (1x28x28),
 * CIFAR-10 from its binary batches (3x32x32), or one of the built-in
 * synthetic sets (digits 1x28x28, coloured digits 3x32x32). The data module stands alone: the training code copies the
 * config's data keys into an xt_data_opts (this header does not know
 * config.h).
 *
 *   xt_data_opts o; xt_data_opts_defaults(&o);
 *   o.kind = XT_DATA_MNIST; o.datadir = "data/mnist";
 *   xt_dataset train; if (xt_dataset_open(&train, &o, XT_SPLIT_TRAIN, &err)) return err.code;
 *   ... train.images (n, channels, rows, cols), train.labels (n), train.mean[c] / train.std[c] ...
 *   xt_dataset_free(&train);
 *
 * Not here: reading one IDX file (idx.c) or CIFAR-10 batch (cifar.c), downloading (download.c),
 * normalization and batching (transform.c, loader.c).
 */
#ifndef XT_DATA_DATASET_H
#define XT_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    XT_DATA_MNIST,
    XT_DATA_FASHION_MNIST,
    XT_DATA_SYNTHETIC,
    XT_DATA_CIFAR10,
    XT_DATA_SYNTHETIC_CIFAR10,
    XT_DATA_FOLDER,                /* PNG/JPEG files, one subfolder per class (folder.h, image_cache.h) */
} xt_data_kind;
enum { XT_SPLIT_TRAIN = 0, XT_SPLIT_TEST = 1 };
#define XT_DATA_MAX_CHANNELS 3
#define XT_DATA_CLASSES 10 /* every built-in dataset has 10 */
#define XT_DATA_MAX_CLASSES 256 /* a folder dataset has up to this many (labels are one byte) */

/* The standard file names (look for NAME, then NAME.gz). */
#define XT_IDX_TRAIN_IMAGES "train-images-idx3-ubyte"
#define XT_IDX_TRAIN_LABELS "train-labels-idx1-ubyte"
#define XT_IDX_TEST_IMAGES "t10k-images-idx3-ubyte"
#define XT_IDX_TEST_LABELS "t10k-labels-idx1-ubyte"

typedef struct xt_data_opts {
    xt_data_kind kind;             /* default XT_DATA_MNIST */
    const char *datadir;           /* where the four IDX files are (mnist/fashion_mnist), or CIFAR-10's */
    /* Explicit files override the standard names in datadir; NULL or "" = standard.
     * CIFAR-10: *_images name a .bin batch, a directory or the .tar.gz; *_labels are unused. */
    const char *train_images, *train_labels, *test_images, *test_labels;
    long train_subset[2];          /* [start, end) of the split's file; end -1 = to the end */
    long test_subset[2];
    uint64_t seed;                 /* synthetic: generation seed (1) */
    int synthetic_train_size;      /* 6000 */
    int synthetic_test_size;       /* 1000 */
    double norm_mean, norm_std;    /* < 0 (std <= 0): the dataset's own, see xt_data_norm_defaults;
                                      given, they apply to every channel */
    /* XT_DATA_FOLDER only */
    const char *train_dir, *test_dir; /* test_dir NULL or "": val_fraction of train_dir is the test split */
    double val_fraction;
    int channels, rows, cols;      /* what every image becomes: the model's input */
    int resize;                    /* 1: resample to rows x cols; 0: another size is a bad file */
    const char *cache_dir;
    long long max_image_pixels;
    int skip_bad;                  /* on_bad_image: skip */
    int threads;                   /* decoding threads for the first pass */
    const double *train_mean, *train_std; /* auto normalization of the test split: the training split's,
                                             when the caller has it; NULL = computed here */
    void (*note)(void *ctx, const char *line);            /* warnings */
    void (*progress)(void *ctx, const char *line, int last); /* the cache's first pass */
    void *ctx;
} xt_data_opts;

typedef struct xt_dataset {
    xt_data_kind kind;
    int split;                     /* XT_SPLIT_TRAIN or XT_SPLIT_TEST */
    int64_t n;                     /* samples, after the subset */
    int channels, rows, cols;      /* 1x28x28 or 3x32x32 */
    int num_classes;               /* 10; a folder dataset's class folders */
    uint8_t *images;               /* (n, channels, rows, cols), channel-planar */
    uint8_t *labels;               /* (n), each < num_classes */
    int64_t first;                 /* index in the file (or synthetic stream) of sample 0: the subset start */
    double mean[XT_DATA_MAX_CHANNELS]; /* per channel: the override or the dataset's default */
    double std[XT_DATA_MAX_CHANNELS];
    char images_path[1024];        /* where the data came from; "" for synthetic */
    char labels_path[1024];        /* "" for synthetic and CIFAR-10 (labels are in the records) */
    /* Class names for plots: FashionMNIST's, CIFAR-10's (from
     * batches.meta.txt, else the published list); "" for datasets of digits.
     * Held in the struct, so a copy of it stays whole. A folder dataset's are
     * its folder names (cut to 31 bytes). */
    char class_names[XT_DATA_MAX_CLASSES][32];
    /* XT_DATA_FOLDER: images and labels point into the mapped cache */
    void *map;
    size_t map_len;
    int64_t skipped;               /* files left out (on_bad_image: skip) */
    int norm_computed;             /* mean/std were measured on the training split (normalize auto) */
    char cache_path[1024];
} xt_dataset;

void xt_data_opts_defaults(xt_data_opts *o);

/* "mnist", "fashion_mnist", "synthetic", "cifar10", "synthetic_cifar10", "folder" (the config's spelling). */
const char *xt_data_kind_name(xt_data_kind kind);

/* The (channels, rows, cols) of every image of kind: [1, 28, 28] or [3, 32, 32]. */
void xt_data_shape(xt_data_kind kind, int shape[3]);

/* Per-dataset, per-channel normalization (XT_DATA_MAX_CHANNELS entries each,
 * the unused ones 0 and 1): MNIST 0.1307/0.3081, FashionMNIST 0.2860/0.3530,
 * synthetic XT_SYNTH_MEAN/XT_SYNTH_STD (measured, see synthetic.h), CIFAR-10
 * (0.4914, 0.4822, 0.4465)/(0.2470, 0.2435, 0.2616) (the training set's own,
 * as torchvision-based recipes use them), synthetic CIFAR measured. */
void xt_data_norm_defaults(xt_data_kind kind, double *mean, double *std);

/* Augmentation the dataset gets when the config says auto: CIFAR-10 and its
 * synthetic twin pad 4 and crop, and flip; the MNIST family none (a flipped
 * digit is another glyph). */
void xt_data_augment_defaults(xt_data_kind kind, int *crop_padding, int *flip);

/* Bytes of one image: channels * rows * cols. */
static inline size_t xt_dataset_image_bytes(const xt_dataset *ds) {
    return (size_t)ds->channels * (size_t)ds->rows * (size_t)ds->cols;
}

/* Load (or generate) one split. Returns 0, XT_EDATA for missing or damaged
 * files (the message names the file, and for a missing one says where to put
 * it and how to fetch it), XT_EUSAGE for a subset outside the data, XT_EIO
 * when a file exists but cannot be opened. On failure *ds is empty. */
int xt_dataset_open(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e);

void xt_dataset_free(xt_dataset *ds);

#endif
