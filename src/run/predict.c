/* predict.c — `--predict IDX_FILE`: run a checkpoint over an images file and
 * write a CSV "index,predicted[,label],p0..p9" (the label column when a
 * matching labels file sits beside it: *-images-idx3-ubyte* ->
 * *-labels-idx1-ubyte*). Batches of test_batch_size; eval mode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/idx.h"
#include "io/atomic.h"
#include "run/train_internal.h"

static int labels_path_for(const char *images, char *out, size_t cap) {
    const char *p = strstr(images, "images-idx3");
    if (!p || (size_t)snprintf(out, cap, "%.*slabels-idx1%s", (int)(p - images), images, p + strlen("images-idx3")) >= cap) return 0;
    return access(out, R_OK) == 0;
}

int xt_predict_main(xt_run *r, xt_err *e) {
    const xt_config *c = r->c;
    const xt_spec *sp = &c->spec;
    xt_idx img = {0}, lab = {0};
    int rc = xt_idx_read_images(r->cli->predict, sp->input[1], sp->input[2], &img, e);
    if (rc) return rc;
    char lpath[1024];
    int have_labels = labels_path_for(r->cli->predict, lpath, sizeof lpath) && xt_idx_read_labels(lpath, sp->num_classes, &lab, NULL) == 0 && lab.n == img.n;
    double mean, std;
    xt_data_norm_defaults(xt_run_data_kind(c->dataset), &mean, &std);
    if (c->norm_std > 0) { mean = c->norm_mean; std = c->norm_std; }
    int B = c->test_batch_size, K = sp->num_classes, hw = img.rows * img.cols;
    float *x = malloc((size_t)B * hw * sizeof *x), *logp = malloc((size_t)B * K * sizeof *logp);
    char *csv = NULL;
    size_t len = 0, cap = (size_t)img.n * (size_t)(24 + 12 * K) + 256;
    csv = malloc(cap);
    xt_engine_opts eo = {.fuse = 1};
    xt_engine *en = xt_engine_new(&r->store, &eo);
    if (!x || !logp || !csv || !en) { rc = xt_fail(e, XT_ERUNTIME, "out of memory"); goto out; }
    len += (size_t)snprintf(csv + len, cap - len, "index,predicted%s", have_labels ? ",label" : "");
    for (int k = 0; k < K; k++) len += (size_t)snprintf(csv + len, cap - len, ",p%d", k);
    csv[len++] = '\n';
    for (long s = 0; s < img.n; s += B) {
        int n = img.n - s < B ? (int)(img.n - s) : B;
        for (long i = 0; i < (long)n * hw; i++) x[i] = (float)(((double)img.data[s * hw + i] / 255.0 - mean) / std);
        xt_store_set_input_shape(&r->store, r->slot_x, 4, (int32_t[]){n, 1, img.rows, img.cols});
        xt_store_bind(&r->store, r->slot_x, x);
        xt_graph *g = xt_engine_graph(en);
        xt_t out = xt_model_forward(&r->model, g, xt_leaf(g, r->slot_x), XT_EVAL, XT_NONE, 0);
        if (sp->nlayers && sp->layers[sp->nlayers - 1].kind != XT_L_LOG_SOFTMAX) out = xt_log_softmax(g, out);
        xt_fetch(g, out, logp, (size_t)n * K * 4);
        if ((rc = xt_mark_step(en, e))) goto out;
        for (int i = 0; i < n; i++) {
            int best = 0;
            for (int k = 1; k < K; k++)
                if (logp[i * K + k] > logp[i * K + best]) best = k;
            len += (size_t)snprintf(csv + len, cap - len, "%ld,%d", s + i, best);
            if (have_labels) len += (size_t)snprintf(csv + len, cap - len, ",%d", lab.data[s + i]);
            for (int k = 0; k < K; k++) len += (size_t)snprintf(csv + len, cap - len, ",%.5f", exp(logp[i * K + k]));
            csv[len++] = '\n';
        }
    }
    char path[1024];
    if (r->cli->predict_out) snprintf(path, sizeof path, "%s", r->cli->predict_out);
    else snprintf(path, sizeof path, "%s/predictions.csv", r->outdir);
    if ((rc = xt_write_file_atomic(path, csv, len, e))) goto out;
    fprintf(stderr, "xlatrain: wrote %ld predictions to %s\n", img.n, path);
out:
    xt_engine_free(en);
    free(x);
    free(logp);
    free(csv);
    xt_idx_free(&img);
    xt_idx_free(&lab);
    return rc;
}
