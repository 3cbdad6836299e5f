/* predict.c — `--predict IDX_FILE`: run a checkpoint over an images file and
 * write a CSV "index,predicted[,label],p0..p9" (the label column when a
 * matching labels file sits beside it: *-images-idx3-ubyte* ->
 * *-labels-idx1-ubyte*). Batches of test_batch_size; eval mode.
 * Not here: the model's setup and trace (run.c, step.c), training (train.c). */
#include "run/predict.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    for (int k = 0; k < K; k++) o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, ",%.5f", exp(logp[k]));
    o->buf[o->len++] = '\n';
}

/* Images s .. s+n-1 of img, normalized, into x. */
static void normalize(const xt_idx *img, long s, int n, double mean, double std, float *x) {
    long hw = (long)img->rows * img->cols;
    for (long i = 0; i < (long)n * hw; i++) x[i] = (float)(((double)img->data[s * hw + i] / 255.0 - mean) / std);
}

static void norm_of(const xt_config *c, double *mean, double *std) {
    xt_data_norm_defaults(xt_run_data_kind(c->dataset), mean, std);
    if (c->norm_std > 0) { *mean = c->norm_mean; *std = c->norm_std; }
}

static int write_csv(const xt_run *r, const csv *o, long n, xt_err *e) {
    char path[1024];
    if (r->cli->predict_out) snprintf(path, sizeof path, "%s", r->cli->predict_out);
    else snprintf(path, sizeof path, "%s/predictions.csv", r->outdir);
    if (xt_write_file_atomic(path, o->buf, o->len, e)) return e->code;
    fprintf(stderr, "xlatrain: wrote %ld predictions to %s\n", n, path);
    return 0;
}

/* Predict every image of img (labels in lab when have_labels) into the CSV. */
static int predict_images(xt_run *r, const xt_idx *img, const xt_idx *lab, int have_labels, xt_err *e) {
    const xt_config *c = r->c;
    int B = c->test_batch_size, K = c->spec.num_classes, hw = img->rows * img->cols, rc = 0;
    double mean, std;
    norm_of(c, &mean, &std);
    float *x = malloc((size_t)B * hw * sizeof *x), *logp = malloc((size_t)B * K * sizeof *logp);
    csv o = {.cap = (size_t)img->n * (size_t)(24 + 12 * K) + 256};
    o.buf = malloc(o.cap);
    xt_engine_opts eo = {.fuse = 1};
    xt_engine *en = xt_engine_new(&r->store, &eo);
    if (!x || !logp || !o.buf || !en) { rc = xt_fail(e, XT_ERUNTIME, "out of memory"); goto out; }
    csv_header(&o, have_labels, K);
    for (long s = 0; s < img->n; s += B) {
        int n = img->n - s < B ? (int)(img->n - s) : B;
        normalize(img, s, n, mean, std, x);
        xt_run_bind_images(r, x, n, img->rows, img->cols);
        xt_graph *g = xt_engine_graph(en);
        xt_fetch(g, xt_run_trace_logp(r, g, XT_EVAL), logp, (size_t)n * K * sizeof *logp);
        if ((rc = xt_mark_step(en, e))) goto out;
        for (int i = 0; i < n; i++) csv_row(&o, s + i, logp + (size_t)i * K, K, have_labels ? lab->data[s + i] : -1);
    }
    rc = write_csv(r, &o, img->n, e);
out:
    xt_engine_free(en);
    free(x);
    free(logp);
    free(o.buf);
    return rc;
}

static int predict_file(xt_run *r, xt_err *e) {
    const xt_spec *sp = &r->c->spec;
    xt_idx img = {0}, lab = {0};
    if (access(r->cli->predict, R_OK)) /* an input that cannot be read is a data error, not an output one */
        return xt_fail(e, XT_EDATA, "--predict %s: cannot read it: %s; check the path", r->cli->predict, strerror(errno));
    int rc = xt_idx_read_images(r->cli->predict, sp->input[1], sp->input[2], &img, e);
    if (rc) return rc;
    char lpath[1024];
    int have_labels = labels_path_for(r->cli->predict, lpath, sizeof lpath) && xt_idx_read_labels(lpath, sp->num_classes, &lab, NULL) == 0 && lab.n == img.n;
    rc = predict_images(r, &img, &lab, have_labels, e);
    xt_idx_free(&img);
    xt_idx_free(&lab);
    return rc;
}

int xt_predict_main(const xt_config *c, const xt_cli *cli, xt_err *e) {
    static xt_run r;
    int rc = xt_run_open(&r, c, cli, e);
    if (!rc && !cli->resume)
        rc = xt_fail(e, XT_EUSAGE, "--predict needs trained weights: add --resume PATH (or --resume latest for the newest checkpoint in %s)", r.outdir);
    char path[1024];
    if (!rc) rc = xt_ckpt_resolve(&r, cli->resume, path, sizeof path, e);
    if (!rc) rc = xt_ckpt_load(&r, path, e);
    if (!rc) rc = predict_file(&r, e);
    xt_run_close(&r);
    return rc;
}
