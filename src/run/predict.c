/* predict.c — `--predict FILE`: run a checkpoint over an images file and
 * write a CSV "index,predicted[,label],p0..p9", the probabilities to 9
 * significant digits (so their logarithms match an exported model's
 * log-probabilities to 1e-6, however small they are). The file is an IDX images
 * file for the MNIST family (the label column when a matching labels file
 * sits beside it: *-images-idx3-ubyte* -> *-labels-idx1-ubyte*), and a
 * CIFAR-10 batch (.bin, labels inside; or the .tar.gz, whose test batch is
 * used) when the config's dataset is CIFAR-shaped. Batches of
 * test_batch_size; eval mode.
 * Not here: the model's setup and trace (run.c, step.c), training (train.c). */
#include "run/predict.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/cifar.h"
#include "data/idx.h"
#include "io/atomic.h"
#include "run/checkpoint.h"
#include "run/run.h"
#include "run/step.h"

static int labels_path_for(const char *images, char *out, size_t cap) {
    const char *p = strstr(images, "images-idx3");
    if (!p || (size_t)snprintf(out, cap, "%.*slabels-idx1%s", (int)(p - images), images, p + strlen("images-idx3")) >= cap) return 0;
    return access(out, R_OK) == 0;
}

/* The CSV text, sized up front for every row. */
typedef struct csv {
    char *buf;
    size_t len, cap;
} csv;

static void csv_header(csv *o, int have_labels, int K) {
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "index,predicted%s", have_labels ? ",label" : "");
    for (int k = 0; k < K; k++) o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, ",p%d", k);
    o->buf[o->len++] = '\n';
}

/* "index,predicted[,label],p0,..." for one image's log-probabilities (label -1: no column). */
static void csv_row(csv *o, long index, const float *logp, int K, int label) {
    int best = 0;
    for (int k = 1; k < K; k++)
        if (logp[k] > logp[best]) best = k;
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "%ld,%d", index, best);
    if (label >= 0) o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, ",%d", label);
    for (int k = 0; k < K; k++) o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, ",%.9g", exp(logp[k]));
    o->buf[o->len++] = '\n';
}

/* The images to predict, whatever file they came from. */
typedef struct pimages {
    long n;
    int channels, rows, cols;
    const uint8_t *data;    /* (n, channels, rows, cols) */
    const uint8_t *labels;  /* (n), or NULL */
} pimages;

/* Images s .. s+n-1 of img, normalized per channel, into x. */
static void normalize(const pimages *img, long s, int n, const double *mean, const double *std, float *x) {
    const long hw = (long)img->rows * img->cols, px = hw * img->channels;
    for (long i = 0; i < (long)n * px; i++) {
        int ch = (int)(i % px / hw);
        x[i] = (float)(((double)img->data[s * px + i] / 255.0 - mean[ch]) / std[ch]);
    }
}

static int write_csv(const xt_run *r, const csv *o, long n, xt_err *e) {
    char path[1024];
    if (r->cli->predict_out) snprintf(path, sizeof path, "%s", r->cli->predict_out);
    else snprintf(path, sizeof path, "%s/predictions.csv", r->outdir);
    if (xt_write_file_atomic(path, o->buf, o->len, e)) return e->code;
    fprintf(stderr, "xlatrain: wrote %ld predictions to %s\n", n, strcmp(path, "-") ? path : "standard output");
    return 0;
}

/* Predict every image of img into the CSV. */
static int predict_images(xt_run *r, const pimages *img, xt_err *e) {
    const xt_config *c = r->c;
    int B = c->test_batch_size, K = c->spec.num_classes, px = img->channels * img->rows * img->cols, rc = 0;
    double mean[XT_DATA_MAX_CHANNELS], std[XT_DATA_MAX_CHANNELS];
    xt_run_normalization(c, mean, std);
    float *x = malloc((size_t)B * px * sizeof *x), *logp = malloc((size_t)B * K * sizeof *logp);
    csv o = {.cap = (size_t)img->n * (size_t)(24 + 17 * K) + 256}; /* "-1.23456789e-123," at most per class */
    o.buf = malloc(o.cap);
    xt_engine_opts eo = {.fuse = 1, .precision = r->c->precision == XT_PRECISION_BF16 ? XT_PREC_BF16 : XT_PREC_FP32};
    xt_engine *en = xt_engine_new(&r->store, &eo);
    if (!x || !logp || !o.buf || !en) { rc = xt_fail(e, XT_ERUNTIME, "out of memory"); goto out; }
    csv_header(&o, img->labels != NULL, K);
    for (long s = 0; s < img->n; s += B) {
        int n = img->n - s < B ? (int)(img->n - s) : B;
        normalize(img, s, n, mean, std, x);
        xt_run_bind_images(r, x, n);
        xt_graph *g = xt_engine_graph(en);
        xt_fetch(g, xt_run_trace_logp(r, g, XT_EVAL), logp, (size_t)n * K * sizeof *logp);
        if ((rc = xt_mark_step(en, e))) goto out;
        for (int i = 0; i < n; i++) csv_row(&o, s + i, logp + (size_t)i * K, K, img->labels ? img->labels[s + i] : -1);
    }
    rc = write_csv(r, &o, img->n, e);
out:
    xt_engine_free(en);
    free(x);
    free(logp);
    free(o.buf);
    return rc;
}

/* A CIFAR-10 batch file (or the archive's test batch), labels included. */
static int predict_cifar(xt_run *r, xt_err *e) {
    xt_cifar cf = {0};
    int rc = xt_cifar_read(r->cli->predict, XT_SPLIT_TEST, &cf, e);
    pimages img = {cf.n, XT_CIFAR_CHANNELS, XT_CIFAR_SIDE, XT_CIFAR_SIDE, cf.images, cf.labels};
    if (!rc) rc = predict_images(r, &img, e);
    xt_cifar_free(&cf);
    return rc;
}

static int predict_file(xt_run *r, xt_err *e) {
    const xt_spec *sp = &r->c->spec;
    xt_idx im = {0}, lab = {0};
    if (r->c->dataset == XT_DS_FOLDER) /* not yet: it needs the checkpoint's normalization and the decoder */
        return xt_fail(e, XT_EUSAGE, "--predict reads IDX and CIFAR-10 files; it does not read PNG/JPEG images for "
                       "dataset: folder yet; evaluate a folder with --eval-only and test_dir");
    if (access(r->cli->predict, R_OK)) /* an input that cannot be read is a data error, not an output one */
        return xt_fail(e, XT_EDATA, "--predict %s: cannot read it: %s; check the path", r->cli->predict, strerror(errno));
    if (sp->input[0] == XT_CIFAR_CHANNELS) return predict_cifar(r, e);
    int rc = xt_idx_read_images(r->cli->predict, sp->input[1], sp->input[2], &im, e);
    if (rc) return rc;
    char lpath[1024];
    xt_err lerr = {0};
    int have_labels = 0;
    if (labels_path_for(r->cli->predict, lpath, sizeof lpath)) { /* beside it: used, or said why not */
        if (xt_idx_read_labels(lpath, sp->num_classes, &lab, &lerr))
            fprintf(stderr, "xlatrain: note: no label column: %s\n", lerr.msg);
        else if (lab.n != im.n)
            fprintf(stderr, "xlatrain: note: no label column: %s has %lld labels for %lld images\n", lpath, (long long)lab.n, (long long)im.n);
        else have_labels = 1;
    }
    pimages img = {im.n, 1, im.rows, im.cols, im.data, have_labels ? lab.data : NULL};
    rc = predict_images(r, &img, e);
    xt_idx_free(&im);
    xt_idx_free(&lab);
    return rc;
}

int xt_predict_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    static xt_run r;
    int rc = xt_run_open(&r, c, cli, e);
    if (!rc) rc = xt_run_claim(&r, e);
    if (!rc && !cli->resume)
        rc = xt_fail(e, XT_EUSAGE, "--predict needs trained weights: add --resume PATH (or --resume latest for the newest checkpoint in %s)", r.outdir);
    char path[1024];
    if (!rc) rc = xt_ckpt_resolve(&r, cli->resume, path, sizeof path, e);
    /* the CSV must not replace what it is made from */
    const char *out = cli->predict_out;
    if (!rc && out && (xt_same_file(out, cli->predict) || xt_same_file(out, path)))
        rc = xt_fail(e, XT_EUSAGE, "--output %s is %s; choose another name for the predictions", out,
                     xt_same_file(out, path) ? "the checkpoint the predictions are made with" : "the --predict input");
    if (!rc) rc = xt_ckpt_load(&r, path, e);
    if (!rc) rc = predict_file(&r, e);
    xt_run_close(&r);
    return rc;
}
