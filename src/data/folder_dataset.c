/* folder_dataset.c — one split of a folder dataset; see folder_dataset.h.
 *
 * Why the test split's normalization comes from the training split: the
 * model is trained on pixels normalized by the training images' statistics,
 * and any other images it sees must go through the same numbers
 * (torchvision's Normalize is likewise fitted once on the training set).
 * Not here: scanning, decoding, the cache file.
 */
#include "data/folder_dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "data/folder.h"
#include "data/image_cache.h"

enum { TRAIN = 0, TEST = 1 };

/* Per-channel mean and std of pixels / 255, exact from 256-bin histograms. */
static void channel_stats(const uint8_t *images, int64_t n, int channels, size_t plane, double *mean, double *std) {
    for (int c = 0; c < channels; c++) {
        uint64_t hist[256] = {0};
        for (int64_t i = 0; i < n; i++) {
            const uint8_t *p = images + ((size_t)i * (size_t)channels + (size_t)c) * plane;
            for (size_t k = 0; k < plane; k++) hist[p[k]]++;
        }
        double cnt = (double)n * (double)plane, s = 0, ss = 0;
        for (int v = 0; v < 256; v++) s += (double)hist[v] * v, ss += (double)hist[v] * v * v;
        double m = s / cnt, var = ss / cnt - m * m;
        mean[c] = m / 255.0;
        std[c] = sqrt(var > 0 ? var : 0) / 255.0;
        if (std[c] < 1e-6) std[c] = 1; /* every pixel alike: only centre, never divide by ~0 */
    }
}

static void warn_to(void *ctx, const char *line) {
    const xt_folder_opts *o = ctx;
    if (o->note) o->note(o->ctx, line);
}

static void progress_to(void *ctx, const char *line, int last) {
    const xt_folder_opts *o = ctx;
    if (o->progress) o->progress(o->ctx, line, last);
}

/* the cache calls back with the opts as its context, which hold the caller's */
static xt_cache_opts cache_opts(const xt_folder_opts *o, const char *key) {
    xt_cache_opts c = {.dir = o->cache_dir ? o->cache_dir : "", .key = key, .channels = o->channels, .rows = o->rows,
                       .cols = o->cols, .resize = o->resize, .max_pixels = o->max_image_pixels, .skip = o->skip_bad,
                       .threads = o->threads, .warn = warn_to, .progress = progress_to, .ctx = (void *)o};
    return c;
}

/* The split's files, mapped: train_dir (all, or the part val_fraction
 * leaves), val_fraction's part of train_dir, or test_dir (whose classes must
 * be train_dir's). classes: train_dir's scan, for the names. */
static int open_set(const xt_folder_opts *o, int split, xt_folder *train, xt_image_set *set, xt_err *e) {
    const int use_test_dir = split == TEST && o->test_dir && o->test_dir[0];
    /* the test split scans train_dir again (its classes, or its val_fraction
     * part): the training split has already warned about and counted its trouble */
    int rc = xt_folder_scan(train, o->train_dir, "train_dir", o->skip_bad, o->note && split == TRAIN ? warn_to : NULL,
                            (void *)o, e);
    if (rc) return rc;
    if (use_test_dir) {
        xt_folder t;
        if ((rc = xt_folder_scan(&t, o->test_dir, "test_dir", o->skip_bad, o->note ? warn_to : NULL, (void *)o, e))) return rc;
        int same = t.nclasses == train->nclasses;
        for (int k = 0; same && k < t.nclasses; k++) same = !strcmp(t.classes[k], train->classes[k]);
        if (!same) {
            int k = 0;
            while (k < t.nclasses && k < train->nclasses && !strcmp(t.classes[k], train->classes[k])) k++;
            rc = xt_fail(e, XT_EDATA, "%s: its class folders differ from train_dir's (%d vs %d classes; the first "
                         "difference: '%s' vs '%s'); give test_dir the same subfolders as %s", o->test_dir, t.nclasses,
                         train->nclasses, k < t.nclasses ? t.classes[k] : "(none)",
                         k < train->nclasses ? train->classes[k] : "(none)", o->train_dir);
        } else {
            xt_cache_opts co = cache_opts(o, "test_dir");
            rc = xt_image_cache_open(set, &t, NULL, 0, &co, e);
            if (!rc) set->skipped += t.skipped; /* what test_dir's own scan left out */
        }
        xt_folder_free(&t);
        return rc;
    }
    uint8_t *val = NULL;
    if (o->val_fraction > 0) {
        if (!(val = malloc((size_t)(train->n ? train->n : 1)))) return xt_fail(e, XT_ERUNTIME, "out of memory");
        xt_folder_split(train, o->val_fraction, o->seed, val);
    }
    xt_cache_opts co = cache_opts(o, split == TRAIN ? "train_dir" : "train_dir's val_fraction");
    rc = xt_image_cache_open(set, train, val, split == TRAIN ? 0 : 1, &co, e);
    free(val);
    return rc;
}

/* auto normalization of the test split without the caller's numbers
 * (--eval-only): measure the training split, from its cache */
static int train_stats(const xt_folder_opts *o, double *mean, double *std, xt_err *e) {
    xt_folder f;
    xt_image_set s;
    int rc = open_set(o, TRAIN, &f, &s, e);
    if (!rc) {
        channel_stats(s.images, s.n, o->channels, (size_t)o->rows * (size_t)o->cols, mean, std);
        xt_image_set_close(&s);
    }
    xt_folder_free(&f);
    return rc;
}

int xt_folder_split_open(xt_folder_split_data *ds, const xt_folder_opts *o, int test_split, xt_err *e) {
    xt_folder f;
    xt_image_set s;
    const int split = test_split ? TEST : TRAIN;
    char (*names)[32] = ds->class_names;
    memset(ds, 0, sizeof *ds);
    ds->class_names = names;
    int rc = open_set(o, split, &f, &s, e);
    if (rc) {
        xt_folder_free(&f);
        return rc;
    }
    ds->num_classes = f.nclasses;
    for (int k = 0; k < f.nclasses; k++) snprintf(names[k], 32, "%.31s", f.classes[k]);
    snprintf(ds->source, sizeof ds->source, "%s", split == TEST && o->test_dir && o->test_dir[0] ? o->test_dir : o->train_dir);
    snprintf(ds->cache_path, sizeof ds->cache_path, "%s", s.path);
    ds->skipped = (split == TRAIN ? f.skipped : 0) + s.skipped;
    xt_folder_free(&f);
    ds->map = s.map, ds->map_len = s.map_len;
    ds->images = (uint8_t *)s.images; /* read-only pages: nothing writes a dataset's pixels */
    ds->labels = (uint8_t *)s.labels;
    ds->n = s.n;
    const char *key = split == TRAIN ? "train_subset" : "test_subset";
    const long *sub = o->subset;
    int64_t start = sub[0], end = sub[1] == -1 ? ds->n : sub[1];
    if (ds->n == 0) {
        rc = xt_fail(e, XT_EDATA, "%s: no images left for the %s split%s; add images%s", ds->source,
                     split == TRAIN ? "training" : "test", ds->skipped ? " (every file was skipped)" : "",
                     split == TEST && !(o->test_dir && o->test_dir[0]) ? " or raise val_fraction" : "");
    } else if (start < 0 || end <= start || end > ds->n) {
        char a[32];
        rc = xt_fail(e, XT_EUSAGE, "%s [%ld, %ld) is out of range: %s has %s images; use 0 <= start < end <= %s (end -1 = all)",
                     key, sub[0], sub[1], ds->source, xt_commas(a, (unsigned long long)ds->n), a);
    }
    if (rc) {
        xt_folder_split_close(ds);
        return rc;
    }
    const size_t plane = (size_t)o->rows * (size_t)o->cols, px = plane * (size_t)o->channels;
    ds->images += (size_t)start * px, ds->labels += start;
    ds->n = end - start, ds->first = start;
    if (o->measure_norm) { /* the test split takes the training split's numbers */
        if (split == TRAIN) {
            channel_stats(ds->images, ds->n, o->channels, plane, ds->mean, ds->std);
        } else if (o->train_mean && o->train_std) {
            memcpy(ds->mean, o->train_mean, sizeof ds->mean), memcpy(ds->std, o->train_std, sizeof ds->std);
        } else if ((rc = train_stats(o, ds->mean, ds->std, e))) {
            xt_folder_split_close(ds);
            return rc;
        }
    }
    return 0;
}

void xt_folder_split_close(xt_folder_split_data *d) {
    if (d->map) munmap(d->map, d->map_len);
    d->map = NULL;
    d->images = d->labels = NULL;
    d->n = 0;
}
