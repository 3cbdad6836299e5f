/* folder_dataset.h — one split of `dataset: folder`: the scan (folder.h),
 * the train/test choice (test_dir, or val_fraction of train_dir by seed),
 * the mapped cache (image_cache.h), the class names, and `normalize: auto`
 * measured on the training split. dataset.c turns the result into an
 * xt_dataset; this header does not know dataset.h (no include circle), so
 * it has its own options and result.
 */
#ifndef XT_DATA_FOLDER_DATASET_H
#define XT_DATA_FOLDER_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct xt_folder_opts {
    const char *train_dir, *test_dir;  /* test_dir NULL or "": val_fraction of train_dir is the test split */
    double val_fraction;
    uint64_t seed;
    int channels, rows, cols;          /* what every image becomes: the model's input */
    int resize;                        /* 1: resample to rows x cols; 0: another size is a bad file */
    const char *cache_dir;
    long long max_image_pixels;
    int skip_bad;
    int threads;
    const long *subset;                /* [start, end) of the split, end -1 = all */
    int measure_norm;                  /* normalize auto: measure (train) or take train_mean/std (test) */
    const double *train_mean, *train_std; /* the training split's, when the caller has them; NULL = measured here */
    void (*note)(void *ctx, const char *line);
    void (*progress)(void *ctx, const char *line, int last);
    void *ctx;
} xt_folder_opts;

typedef struct xt_folder_split_data {
    int64_t n, first, skipped;
    uint8_t *images, *labels;          /* into the mapping (read-only pages) */
    void *map;
    size_t map_len;
    int num_classes;
    char (*class_names)[32];           /* the caller's table of XT_FOLDER_MAX_CLASSES names, filled */
    double mean[3], std[3];            /* measured (measure_norm), else untouched */
    char source[1024], cache_path[1024];
} xt_folder_split_data;

/* 0, or XT_EUSAGE / XT_EDATA / XT_EIO / XT_ERUNTIME; on failure nothing is held. */
int xt_folder_split_open(xt_folder_split_data *d, const xt_folder_opts *o, int test_split, xt_err *e);

/* Release the mapping. */
void xt_folder_split_close(xt_folder_split_data *d);

#endif
