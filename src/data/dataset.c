/* dataset.c — pick, load and check one split; see dataset.h. */
#include "data/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/idx.h"
#include "data/synthetic.h"

void xt_data_opts_defaults(xt_data_opts *o) {
    memset(o, 0, sizeof *o);
    o->kind = XT_DATA_MNIST;
    o->train_subset[1] = o->test_subset[1] = -1;
    o->seed = 1;
    o->synthetic_train_size = 6000;
    o->synthetic_test_size = 1000;
    o->norm_mean = o->norm_std = -1;
}

const char *xt_data_kind_name(xt_data_kind kind) {
    switch (kind) {
    case XT_DATA_MNIST: return "mnist";
    case XT_DATA_FASHION_MNIST: return "fashion_mnist";
    case XT_DATA_SYNTHETIC: return "synthetic";
    }
    return "?";
}

void xt_data_norm_defaults(xt_data_kind kind, double *mean, double *std) {
    switch (kind) {
    case XT_DATA_FASHION_MNIST: *mean = 0.2860, *std = 0.3530; return;
    case XT_DATA_SYNTHETIC: *mean = XT_SYNTH_MEAN, *std = XT_SYNTH_STD; return;
    case XT_DATA_MNIST: break;
    }
    *mean = 0.1307, *std = 0.3081;
}

static int set(const char *s) { return s && *s; }

/* Resolve one of the four files: the explicit path, else NAME or NAME.gz in
 * datadir. A missing standard file gets the message that tells a new user
 * every way forward. */
static int locate(const xt_data_opts *o, const char *explicit_path, const char *key, const char *name, char *out,
                  size_t cap, xt_err *e) {
    if (set(explicit_path)) {
        if (access(explicit_path, F_OK) != 0)
            return xt_fail(e, XT_EDATA, "%s: no such file (the value of %s); correct %s where it is set (the config file or --set)", explicit_path, key, key);
        snprintf(out, cap, "%s", explicit_path);
        return 0;
    }
    int fashion = o->kind == XT_DATA_FASHION_MNIST;
    const char *hint_make = fashion ? "make data DATASET=fashion_mnist" : "make data";
    const char *what = fashion ? "FashionMNIST" : "MNIST";
    if (!set(o->datadir))
        return xt_fail(e, XT_EDATA,
                       "datadir is not set, so %s(.gz) cannot be found; set datadir to the directory holding the four "
                       "%s files (`%s` puts them in data/%s), or set %s, or use `dataset: synthetic`",
                       name, what, hint_make, xt_data_kind_name(o->kind), key);
    const char *sep = o->datadir[strlen(o->datadir) - 1] == '/' ? "" : "/";
    snprintf(out, cap, "%s%s%s", o->datadir, sep, name);
    if (access(out, F_OK) == 0) return 0;
    snprintf(out, cap, "%s%s%s.gz", o->datadir, sep, name);
    if (access(out, F_OK) == 0) return 0;
    return xt_fail(e, XT_EDATA,
                   "%s%s%s(.gz) not found: put the four %s files in %s (see data/README.md), or fetch them with `%s` "
                   "or `xlatrain --download`, or train on `dataset: synthetic`",
                   o->datadir, sep, name, what, o->datadir, hint_make);
}

/* Resolve [start, end) against the split's size. */
static int subset(const long sub[2], int64_t total, const char *key, const char *source, int64_t *start,
                  int64_t *end, xt_err *e) {
    int64_t s = sub[0], t = sub[1] == -1 ? total : sub[1];
    if (s < 0 || t <= s || t > total) {
        char a[32];
        return xt_fail(e, XT_EUSAGE,
                       "%s [%ld, %ld) is out of range: %s has %s samples; use 0 <= start < end <= %s (end -1 = all)",
                       key, sub[0], sub[1], source, xt_commas(a, (unsigned long long)total), a);
    }
    *start = s;
    *end = t;
    return 0;
}

static int open_synthetic(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e) {
    const char *key = split == XT_SPLIT_TRAIN ? "synthetic_train_size" : "synthetic_test_size";
    int total = split == XT_SPLIT_TRAIN ? o->synthetic_train_size : o->synthetic_test_size;
    int64_t start = 0, end = 0;
    if (total < 1) return xt_fail(e, XT_EUSAGE, "%s is %d; it must be at least 1", key, total);
    int rc = subset(split == XT_SPLIT_TRAIN ? o->train_subset : o->test_subset, total,
                    split == XT_SPLIT_TRAIN ? "train_subset" : "test_subset", key, &start, &end, e);
    if (rc) return rc;
    ds->n = end - start;
    ds->first = start;
    ds->images = malloc((size_t)ds->n * XT_SYNTH_SIDE * XT_SYNTH_SIDE);
    ds->labels = malloc((size_t)ds->n);
    if (!ds->images || !ds->labels) {
        xt_dataset_free(ds);
        return xt_fail(e, XT_ERUNTIME, "out of memory for %d synthetic images", total);
    }
    xt_synth_generate(ds->images, ds->labels, start, ds->n, o->seed, split);
    return 0;
}

int xt_dataset_open(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e) {
    const int train = split == XT_SPLIT_TRAIN;
    xt_idx im = {0}, lb = {0};
    int rc;
    memset(ds, 0, sizeof *ds);
    ds->kind = o->kind;
    ds->split = train ? XT_SPLIT_TRAIN : XT_SPLIT_TEST;
    ds->rows = ds->cols = 28;
    ds->num_classes = 10;
    xt_data_norm_defaults(o->kind, &ds->mean, &ds->std);
    if (o->norm_mean >= 0) ds->mean = o->norm_mean;
    if (o->norm_std > 0) ds->std = o->norm_std;
    if (o->kind == XT_DATA_SYNTHETIC) return open_synthetic(ds, o, ds->split, e);

    if ((rc = locate(o, train ? o->train_images : o->test_images, train ? "train_images" : "test_images",
                     train ? XT_IDX_TRAIN_IMAGES : XT_IDX_TEST_IMAGES, ds->images_path, sizeof ds->images_path, e)) ||
        (rc = locate(o, train ? o->train_labels : o->test_labels, train ? "train_labels" : "test_labels",
                     train ? XT_IDX_TRAIN_LABELS : XT_IDX_TEST_LABELS, ds->labels_path, sizeof ds->labels_path, e)) ||
        (rc = xt_idx_read_images(ds->images_path, ds->rows, ds->cols, &im, e)) ||
        (rc = xt_idx_read_labels(ds->labels_path, ds->num_classes, &lb, e)))
        goto fail;
    if (lb.n != im.n) {
        char a[32], b[32];
        rc = xt_fail(e, XT_EDATA, "%s: %s labels for %s images (in %s); the two files do not belong together",
                     ds->labels_path, xt_commas(a, (unsigned long long)lb.n), xt_commas(b, (unsigned long long)im.n),
                     ds->images_path);
        goto fail;
    }
    int64_t start = 0, end = 0;
    if ((rc = subset(train ? o->train_subset : o->test_subset, im.n, train ? "train_subset" : "test_subset",
                     ds->images_path, &start, &end, e)))
        goto fail;
    const size_t px = (size_t)ds->rows * (size_t)ds->cols;
    ds->n = end - start;
    ds->first = start;
    /* Keep only the subset: move it to the front; the tail stays allocated,
     * which costs at most one file's worth for the run. */
    memmove(im.data, im.data + (size_t)start * px, (size_t)ds->n * px);
    memmove(lb.data, lb.data + start, (size_t)ds->n);
    ds->images = im.data;
    ds->labels = lb.data;
    return 0;
fail:
    xt_idx_free(&im);
    xt_idx_free(&lb);
    memset(ds, 0, sizeof *ds);
    return rc;
}

void xt_dataset_free(xt_dataset *ds) {
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
