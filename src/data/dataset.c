/* dataset.c — pick, load and check one split; see dataset.h. */
#include "data/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/cifar.h"
#include "data/folder.h"
#include "data/folder_dataset.h"
#include "data/idx.h"
#include "data/synthetic.h"
#include "data/synthetic_cifar.h"

_Static_assert(sizeof(((xt_dataset *)0)->class_names[0]) >= XT_CIFAR_NAME_MAX, "a CIFAR-10 class name must fit");

static const char *const FASHION_NAMES[XT_DATA_CLASSES] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

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
    case XT_DATA_CIFAR10: return "cifar10";
    case XT_DATA_SYNTHETIC_CIFAR10: return "synthetic_cifar10";
    case XT_DATA_FOLDER: return "folder";
    }
    return "?";
}

static int cifar_shaped(xt_data_kind kind) { return kind == XT_DATA_CIFAR10 || kind == XT_DATA_SYNTHETIC_CIFAR10; }

void xt_data_shape(xt_data_kind kind, int shape[3]) {
    shape[0] = cifar_shaped(kind) ? XT_CIFAR_CHANNELS : 1;
    shape[1] = shape[2] = cifar_shaped(kind) ? XT_CIFAR_SIDE : 28;
}

void xt_data_norm_defaults(xt_data_kind kind, double *mean, double *std) {
    static const double cifar_m[3] = {0.4914, 0.4822, 0.4465}, cifar_s[3] = {0.2470, 0.2435, 0.2616};
    static const double synth_m[3] = XT_SYNTH_CIFAR_MEAN, synth_s[3] = XT_SYNTH_CIFAR_STD;
    for (int c = 0; c < XT_DATA_MAX_CHANNELS; c++) mean[c] = 0, std[c] = 1;
    switch (kind) {
    case XT_DATA_FASHION_MNIST: mean[0] = 0.2860, std[0] = 0.3530; return;
    case XT_DATA_SYNTHETIC: mean[0] = XT_SYNTH_MEAN, std[0] = XT_SYNTH_STD; return;
    case XT_DATA_CIFAR10: memcpy(mean, cifar_m, sizeof cifar_m), memcpy(std, cifar_s, sizeof cifar_s); return;
    case XT_DATA_SYNTHETIC_CIFAR10: memcpy(mean, synth_m, sizeof synth_m), memcpy(std, synth_s, sizeof synth_s); return;
    case XT_DATA_FOLDER: return; /* measured on the training split (folder_dataset.c) */
    case XT_DATA_MNIST: break;
    }
    mean[0] = 0.1307, std[0] = 0.3081;
}

void xt_data_augment_defaults(xt_data_kind kind, int *crop_padding, int *flip) {
    *crop_padding = cifar_shaped(kind) ? 4 : 0;
    *flip = cifar_shaped(kind);
}

static int set(const char *s) { return s && *s; }

/* A file named by key that is not there. A relative path is taken from the
 * working directory, not from the config's folder (an installed
 * share/xlatrain/configs/real_t10k.yaml's ../shared, say): name it. */
static int missing_file(const char *path, const char *key, xt_err *e) {
    char cwd[480] = "";
    int rel = path[0] != '/' && getcwd(cwd, sizeof cwd);
    return xt_fail(e, XT_EDATA, "%s: no such file (the value of %s%s%s); correct %s where it is set (the config file or --set)%s",
                   path, key, rel ? ", relative to the working directory " : "", rel ? cwd : "", key,
                   rel ? ", or run from the directory that path is relative to" : "");
}

/* Resolve one of the four files: the explicit path, else NAME or NAME.gz in
 * datadir. A missing standard file gets the message that tells a new user
 * every way forward. */
static int locate(const xt_data_opts *o, const char *explicit_path, const char *key, const char *name, char *out,
                  size_t cap, xt_err *e) {
    if (set(explicit_path)) {
        if (access(explicit_path, F_OK) != 0)
            return missing_file(explicit_path, key, e);
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

/* Samples [start, end) of a whole split become the dataset: moved to the
 * front, the tail stays allocated (at most one file's worth for the run). */
static void keep_range(xt_dataset *ds, uint8_t *images, uint8_t *labels, int64_t start, int64_t end) {
    const size_t px = xt_dataset_image_bytes(ds);
    ds->n = end - start;
    ds->first = start;
    memmove(images, images + (size_t)start * px, (size_t)ds->n * px);
    memmove(labels, labels + start, (size_t)ds->n);
    ds->images = images;
    ds->labels = labels;
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
    ds->images = malloc((size_t)ds->n * xt_dataset_image_bytes(ds));
    ds->labels = malloc((size_t)ds->n);
    if (!ds->images || !ds->labels) {
        xt_dataset_free(ds);
        return xt_fail(e, XT_ERUNTIME, "out of memory for %d synthetic images", total);
    }
    if (o->kind == XT_DATA_SYNTHETIC_CIFAR10) xt_synth_cifar_generate(ds->images, ds->labels, start, ds->n, o->seed, split);
    else xt_synth_generate(ds->images, ds->labels, start, ds->n, o->seed, split);
    return 0;
}

/* Where the CIFAR-10 split comes from: the explicit path, else datadir's
 * extracted directory or archive; a missing one says every way forward. */
static int cifar_source(const xt_data_opts *o, int split, char *out, size_t cap, xt_err *e) {
    const char *explicit_path = split == XT_SPLIT_TRAIN ? o->train_images : o->test_images;
    const char *key = split == XT_SPLIT_TRAIN ? "train_images" : "test_images";
    if (set(explicit_path)) {
        if (access(explicit_path, F_OK) != 0)
            return missing_file(explicit_path, key, e);
        snprintf(out, cap, "%s", explicit_path);
        return 0;
    }
    if (!set(o->datadir))
        return xt_fail(e, XT_EDATA, "datadir is not set, so CIFAR-10 cannot be found; set datadir to the directory "
                       "holding " XT_CIFAR_ARCHIVE " or its extracted " XT_CIFAR_DIR "/ (`make data DATASET=cifar10` "
                       "puts it in data/cifar10), or set %s, or use `dataset: synthetic_cifar10`", key);
    if (xt_cifar_find(o->datadir, split, out, cap)) return 0;
    const char *const *files;
    xt_cifar_split_files(split, &files);
    return xt_fail(e, XT_EDATA, "%s: has neither " XT_CIFAR_ARCHIVE " nor the CIFAR-10 batches (%s, in " XT_CIFAR_DIR
                   "/ or directly): fetch it with `make data DATASET=cifar10` or `xlatrain --download` (see "
                   "data/README.md), or train on `dataset: synthetic_cifar10`", o->datadir, files[0]);
}

static int open_cifar(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e) {
    xt_cifar c = {0};
    int64_t start = 0, end = 0;
    int rc = cifar_source(o, split, ds->images_path, sizeof ds->images_path, e);
    if (!rc) rc = xt_cifar_read(ds->images_path, split, &c, e);
    if (!rc) rc = subset(split == XT_SPLIT_TRAIN ? o->train_subset : o->test_subset, c.n,
                         split == XT_SPLIT_TRAIN ? "train_subset" : "test_subset", ds->images_path, &start, &end, e);
    if (rc) {
        xt_cifar_free(&c);
        return rc;
    }
    keep_range(ds, c.images, c.labels, start, end);
    for (int k = 0; k < XT_CIFAR_CLASSES; k++) {
        snprintf(ds->class_names[k], sizeof ds->class_names[k], "%s", c.have_names ? c.names[k] : xt_cifar_default_names[k]);
    }
    return 0;
}

_Static_assert(XT_DATA_MAX_CLASSES == XT_FOLDER_MAX_CLASSES, "a folder's classes fit the names table");

/* dataset: folder (folder_dataset.c): its split into ds. Given
 * normalize numbers apply to every channel; auto is measured on the
 * training split. */
static int open_folder(xt_dataset *ds, const xt_data_opts *o, xt_err *e) {
    const int train = ds->split == XT_SPLIT_TRAIN, measure = o->norm_mean < 0 || o->norm_std <= 0;
    xt_folder_opts fo = {.train_dir = o->train_dir, .test_dir = o->test_dir, .val_fraction = o->val_fraction,
                         .seed = o->seed, .channels = o->channels, .rows = o->rows, .cols = o->cols,
                         .resize = o->resize, .cache_dir = o->cache_dir, .max_image_pixels = o->max_image_pixels,
                         .skip_bad = o->skip_bad, .threads = o->threads,
                         .subset = train ? o->train_subset : o->test_subset, .measure_norm = measure,
                         .train_mean = o->train_mean, .train_std = o->train_std, .note = o->note,
                         .progress = o->progress, .ctx = o->ctx};
    xt_folder_split_data d = {.class_names = ds->class_names};
    int rc = xt_folder_split_open(&d, &fo, !train, e);
    if (rc) {
        memset(ds, 0, sizeof *ds);
        return rc;
    }
    ds->channels = o->channels, ds->rows = o->rows, ds->cols = o->cols;
    ds->num_classes = d.num_classes;
    ds->n = d.n, ds->first = d.first, ds->skipped = d.skipped;
    ds->images = d.images, ds->labels = d.labels, ds->map = d.map, ds->map_len = d.map_len;
    snprintf(ds->images_path, sizeof ds->images_path, "%s", d.source);
    snprintf(ds->cache_path, sizeof ds->cache_path, "%s", d.cache_path);
    for (int c = 0; c < ds->channels; c++) {
        ds->mean[c] = o->norm_mean >= 0 ? o->norm_mean : d.mean[c];
        ds->std[c] = o->norm_std > 0 ? o->norm_std : d.std[c];
    }
    ds->norm_computed = measure;
    return 0;
}

int xt_dataset_open(xt_dataset *ds, const xt_data_opts *o, int split, xt_err *e) {
    const int train = split == XT_SPLIT_TRAIN;
    xt_idx im = {0}, lb = {0};
    int rc;
    memset(ds, 0, sizeof *ds);
    ds->kind = o->kind;
    ds->split = train ? XT_SPLIT_TRAIN : XT_SPLIT_TEST;
    int shape[3];
    xt_data_shape(o->kind, shape);
    ds->channels = shape[0], ds->rows = shape[1], ds->cols = shape[2];
    ds->num_classes = XT_DATA_CLASSES;
    xt_data_norm_defaults(o->kind, ds->mean, ds->std);
    for (int c = 0; c < ds->channels; c++) {
        if (o->norm_mean >= 0) ds->mean[c] = o->norm_mean;
        if (o->norm_std > 0) ds->std[c] = o->norm_std;
    }
    if (o->kind == XT_DATA_FASHION_MNIST)
        for (int k = 0; k < XT_DATA_CLASSES; k++) snprintf(ds->class_names[k], sizeof ds->class_names[k], "%s", FASHION_NAMES[k]);
    if (o->kind == XT_DATA_SYNTHETIC || o->kind == XT_DATA_SYNTHETIC_CIFAR10) return open_synthetic(ds, o, ds->split, e);
    if (o->kind == XT_DATA_FOLDER) return open_folder(ds, o, e);
    if (o->kind == XT_DATA_CIFAR10) {
        rc = open_cifar(ds, o, ds->split, e);
        if (rc) memset(ds, 0, sizeof *ds);
        return rc;
    }

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
    keep_range(ds, im.data, lb.data, start, end);
    return 0;
fail:
    xt_idx_free(&im);
    xt_idx_free(&lb);
    memset(ds, 0, sizeof *ds);
    return rc;
}

void xt_dataset_free(xt_dataset *ds) {
    if (ds->map) munmap(ds->map, ds->map_len);
    else free(ds->images), free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
