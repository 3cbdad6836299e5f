/* history.c — curves.png from metrics.jsonl; see history.h. */
#include "run/history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/curves.h"
#include "io/json_read.h"

typedef struct history {
    long long *step;
    double *loss, *lr;
    int n, cap;
    /* per epoch (index epoch - 1, up to nepochs) */
    double *test_loss, *epoch_lr;
    long long *epoch_step;
} history;

static double num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int add_step(history *h, long long gs, double loss, double lr) {
    while (h->n > 0 && h->step[h->n - 1] >= gs) h->n--; /* trained again after a resume */
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 1024;
        long long *s = realloc(h->step, (size_t)cap * sizeof *s);
        if (s) h->step = s;
        double *l = realloc(h->loss, (size_t)cap * sizeof *l);
        if (l) h->loss = l;
        double *r = realloc(h->lr, (size_t)cap * sizeof *r);
        if (r) h->lr = r;
        if (!s || !l || !r) return -1;
        h->cap = cap;
    }
    h->step[h->n] = gs;
    h->loss[h->n] = loss;
    h->lr[h->n] = lr;
    h->n++;
    return 0;
}

/* Every line of <outdir>/metrics.jsonl into h; lines that are not JSON
 * objects of ours are skipped. -1 when out of memory. */
static int read_metrics(const char *outdir, int nepochs, history *h) {
    char path[700];
    snprintf(path, sizeof path, "%s/metrics.jsonl", outdir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (!rc && (len = getline(&line, &cap, f)) > 0) {
        xt_json_read_error je;
        json_t *o = xt_json_read(line, (size_t)len, 1 << 20, &je);
        const char *type = json_string_value(json_object_get(o, "type"));
        double gs = num(o, "global_step");
        if (type && isfinite(gs) && !strcmp(type, "step")) {
            rc = add_step(h, (long long)gs, num(o, "loss"), num(o, "lr"));
        } else if (type && isfinite(gs) && !strcmp(type, "epoch")) {
            double ep = num(o, "epoch");
            if (ep >= 1 && ep <= nepochs) {
                int i = (int)ep - 1;
                h->epoch_step[i] = (long long)gs;
                h->test_loss[i] = num(o, "test_loss");
                h->epoch_lr[i] = num(o, "lr");
            }
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return rc;
}

int xt_history_write_curves(const xt_run *r, xt_err *e) {
    int ne = r->nhist;
    history h = {0};
    h.test_loss = malloc((size_t)ne * sizeof *h.test_loss);
    h.epoch_lr = malloc((size_t)ne * sizeof *h.epoch_lr);
    h.epoch_step = malloc((size_t)ne * sizeof *h.epoch_step);
    char path[700];
    snprintf(path, sizeof path, "%s/curves.png", r->outdir);
    int rc = 0;
    if (!h.test_loss || !h.epoch_lr || !h.epoch_step) rc = -1;
    for (int i = 0; !rc && i < ne; i++) h.test_loss[i] = h.epoch_lr[i] = NAN, h.epoch_step[i] = -1;
    if (!rc) rc = read_metrics(r->outdir, ne, &h);
    if (rc) rc = xt_fail(e, XT_EIO, "cannot write %s: out of memory", path);
    else {
        xt_curves_run d = {.nepochs = ne, .loss = r->hist_loss, .acc = r->hist_acc, .test_loss = h.test_loss,
                           .lr = h.epoch_lr, .epoch_step = h.epoch_step, .nsteps = h.n, .step = h.step,
                           .step_loss = h.loss, .step_lr = h.lr};
        rc = xt_curves_write_run(path, &d, e);
    }
    free(h.step);
    free(h.loss);
    free(h.lr);
    free(h.test_loss);
    free(h.epoch_lr);
    free(h.epoch_step);
    return rc;
}
