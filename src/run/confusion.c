/* confusion.c — the last evaluation's confusion matrix over all workers,
 * its files and the per-class figures (see confusion.h). With several
 * workers each evaluates its DistributedSampler shard, so the matrix is the
 * sum of theirs; it sums to the number of test images evaluated, and its
 * diagonal to the correct ones, exactly as the global accuracy counts them
 * (both include the samples DistributedSampler repeats to even out the
 * shards when the test set does not split evenly). */
#include "run/confusion.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/allreduce.h"
#include "distributed/shm.h"
#include "io/atomic.h"
#include "io/heatmap.h"

/* Class c's name into buf: the dataset's (FashionMNIST's, CIFAR-10's), or
 * the digit itself when its classes have no names. */
static const char *class_name(const xt_run *r, int c, char *buf, size_t cap) {
    if (c < XT_DATA_MAX_CLASSES && r->test.class_names[c][0]) return r->test.class_names[c];
    snprintf(buf, cap, "%d", c);
    return buf;
}

int xt_confusion_reduce(xt_run *r, int rank, const long long *local, xt_err *e) {
    int k = r->c->spec.num_classes, kk = k * k;
    if (!r->confusion && !(r->confusion = calloc((size_t)kk, sizeof *r->confusion)))
        return xt_fail(e, XT_ERUNTIME, "out of memory for a %dx%d confusion matrix", k, k);
    r->nclasses = k;
    for (int base = 0; base < kk; base += XT_MESH_MAX) { /* counts stay far below 2^53: exact in a double */
        int n = kk - base < XT_MESH_MAX ? kk - base : XT_MESH_MAX;
        double v[XT_MESH_MAX];
        for (int i = 0; i < n; i++) v[i] = (double)local[base + i];
        if (r->dist) {
            int rc = xt_mesh_reduce_sum(r->dist, rank, v, n, e);
            if (rc) return rc;
        }
        for (int i = 0; i < n; i++) r->confusion[base + i] = (long long)v[i];
    }
    return 0;
}

/* Per-class figures of class c: support (true images), predicted, right. */
static void class_counts(const xt_run *r, int c, long long *support, long long *predicted, long long *right) {
    int k = r->nclasses;
    *support = *predicted = 0;
    for (int j = 0; j < k; j++) {
        *support += r->confusion[c * k + j];
        *predicted += r->confusion[j * k + c];
    }
    *right = r->confusion[c * k + c];
}

static void ratio(xt_jsonw *w, const char *key, long long num, long long den) {
    xt_jw_key(w, key);
    if (den > 0) xt_jw_numg(w, (double)num / (double)den, 6); else xt_jw_null(w);
}

void xt_confusion_per_class(const xt_run *r, xt_jsonw *w) {
    xt_jw_key(w, "per_class");
    if (!r->confusion) {
        xt_jw_null(w);
        return;
    }
    xt_jw_arr(w);
    for (int c = 0; c < r->nclasses; c++) {
        long long support, predicted, right;
        char buf[16];
        class_counts(r, c, &support, &predicted, &right);
        xt_jw_obj(w);
        xt_jw_key(w, "class"); xt_jw_str(w, class_name(r, c, buf, sizeof buf));
        xt_jw_key(w, "support"); xt_jw_int(w, support);
        ratio(w, "accuracy", right, support);
        ratio(w, "precision", right, predicted);
        ratio(w, "recall", right, support);
        xt_jw_end(w);
    }
    xt_jw_end(w);
}

static int write_json(const xt_run *r, const char *path, xt_err *e) {
    int k = r->nclasses;
    long long total = 0, right = 0;
    for (int i = 0; i < k * k; i++) total += r->confusion[i];
    for (int c = 0; c < k; c++) right += r->confusion[c * k + c];
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "classes"); xt_jw_arr(&w);
    for (int c = 0; c < k; c++) {
        char buf[16];
        xt_jw_str(&w, class_name(r, c, buf, sizeof buf));
    }
    xt_jw_end(&w);
    xt_jw_key(&w, "rows"); xt_jw_str(&w, "true class");
    xt_jw_key(&w, "columns"); xt_jw_str(&w, "predicted class");
    xt_jw_key(&w, "matrix"); xt_jw_arr(&w);
    for (int t = 0; t < k; t++) {
        xt_jw_arr(&w);
        for (int p = 0; p < k; p++) xt_jw_int(&w, r->confusion[t * k + p]);
        xt_jw_end(&w);
    }
    xt_jw_end(&w);
    xt_jw_key(&w, "total"); xt_jw_int(&w, total);
    xt_jw_key(&w, "correct"); xt_jw_int(&w, right);
    xt_jw_key(&w, "accuracy"); xt_jw_numg(&w, total ? 100.0 * (double)right / (double)total : 0, 6);
    xt_confusion_per_class(r, &w);
    xt_jw_end(&w);
    xt_jw_raw(&w, "\n", 1);
    int rc = xt_jw_finish(&w, path, e);
    if (!rc) rc = xt_write_file_atomic(path, w.buf, w.len, e);
    xt_jw_free(&w);
    return rc;
}

int xt_confusion_render(const xt_run *r, const char *title, xt_image *img, xt_err *e) {
    img->px = NULL;
    if (!r->confusion) return 0;
    int k = r->nclasses, rc = 0;
    const char **names = malloc((size_t)k * sizeof *names);
    char(*digits)[16] = malloc((size_t)k * sizeof *digits);
    if (!names || !digits) rc = xt_fail(e, XT_EIO, "cannot draw the confusion matrix: out of memory");
    for (int c = 0; !rc && c < k; c++) names[c] = class_name(r, c, digits[c], sizeof digits[c]);
    if (!rc) rc = xt_heatmap_render(img, r->confusion, k, names, title, e);
    free(names);
    free(digits);
    return rc;
}

const char *xt_confusion_class_name(const xt_run *r, int c, char *buf, size_t cap) { return class_name(r, c, buf, cap); }

int xt_confusion_write(const xt_run *r, xt_err *e) {
    if (!r->confusion) return 0;
    const char *pre = r->cli->eval_only ? "eval-" : "";
    char path[700], title[160];
    snprintf(path, sizeof path, "%s/%sconfusion.json", r->outdir, pre);
    int rc = write_json(r, path, e);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/%sconfusion.png", r->outdir, pre);
    snprintf(title, sizeof title, "Confusion matrix: %s, %s", r->c->name, r->cli->eval_only ? "--eval-only" : "last epoch");
    xt_image img;
    if ((rc = xt_confusion_render(r, title, &img, e))) return rc;
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
}
