/* tb.c — the run's TensorBoard log; see tb.h. */
#include "run/tb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/png.h"
#include "run/confusion.h"
#include "run/finish.h"
#include "run/log.h"

int xt_tb_enabled(const xt_config *c) { return c->logdir[0] != 0; }

int xt_tb_dir(const xt_run *r, char *out, size_t cap) {
    const char *l = r->c->logdir;
    int n = !strcmp(l, "auto") ? snprintf(out, cap, "%s/tb", r->outdir) : snprintf(out, cap, "%s", l);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int xt_tb_open(xt_tb *t, const xt_run *r, xt_err *e) {
    memset(t, 0, sizeof *t);
    char dir[1024];
    if (xt_tb_dir(r, dir, sizeof dir)) return xt_fail(e, XT_EIO, "logdir %.100s...: the path is too long; choose a shorter logdir", r->c->logdir);
    int rc = xt_tfevents_open(&t->ev, dir, e);
    if (rc) return rc;
    t->open = 1;
    t->ema_weight = 1;
    /* the steps after the checkpoint are trained again: TensorBoard keeps the new ones */
    if (r->resumed) xt_tfevents_session_start(&t->ev, r->global_step + 1, xt_wall_s());
    return xt_tfevents_flush(&t->ev, e);
}

int xt_tb_step(xt_tb *t, const xt_run *r, double loss, double lr, double samples_per_sec, xt_err *e) {
    if (!t->open) return 0;
    long long step = r->global_step;
    double wall = xt_wall_s();
    t->ema = XT_TB_SMOOTHING * t->ema + (1 - XT_TB_SMOOTHING) * loss;
    t->ema_weight *= XT_TB_SMOOTHING;
    double smoothed = t->ema / (1 - t->ema_weight);
    xt_tfevents_scalar(&t->ev, "train/loss", step, wall, (float)loss);
    xt_tfevents_scalar(&t->ev, "train/loss_smoothed", step, wall, (float)smoothed);
    xt_tfevents_scalar(&t->ev, "train/lr", step, wall, (float)lr);
    xt_tfevents_scalar(&t->ev, "train/samples_per_sec", step, wall, (float)samples_per_sec);
    /* written now, flushed at the evaluation; a failed write surfaces there */
    (void)e;
    return 0;
}

/* "test/recall/<class>", the name's spaces and slashes made underscores so
 * that TensorBoard groups every class under test/recall. */
static void recall_tag(const xt_run *r, int c, char *tag, size_t cap) {
    char buf[16];
    const char *name = xt_confusion_class_name(r, c, buf, sizeof buf);
    size_t o = (size_t)snprintf(tag, cap, "test/recall/");
    for (const char *p = name; *p && o + 1 < cap; p++) tag[o++] = *p == ' ' || *p == '/' ? '_' : *p;
    tag[o < cap ? o : cap - 1] = 0;
}

/* One rendered figure as a PNG image summary; img is freed. */
static int image_event(xt_tb *t, const char *tag, long long step, double wall, xt_image *img, xt_err *e) {
    if (!img->px) return 0;
    uint8_t *png = NULL;
    size_t len = 0;
    int rc = xt_png_encode(img, &png, &len, e);
    if (!rc) xt_tfevents_image(&t->ev, tag, step, wall, png, len, img->w, img->h);
    free(png);
    xt_image_free(img);
    return rc;
}

int xt_tb_evaluation(xt_tb *t, const xt_run *r, const xt_tb_epoch *ep, xt_err *e) {
    if (!t->open) return 0;
    long long step = r->global_step;
    double wall = xt_wall_s();
    if (isfinite(ep->train_loss)) xt_tfevents_scalar(&t->ev, "train/epoch_loss", step, wall, (float)ep->train_loss);
    xt_tfevents_scalar(&t->ev, "test/accuracy", step, wall, (float)ep->test_accuracy);
    if (isfinite(ep->test_loss)) xt_tfevents_scalar(&t->ev, "test/loss", step, wall, (float)ep->test_loss);
    for (int c = 0; r->confusion && c < r->nclasses; c++) {
        long long support = 0;
        for (int j = 0; j < r->nclasses; j++) support += r->confusion[c * r->nclasses + j];
        if (!support) continue; /* no test image of this class: no recall */
        char tag[96];
        recall_tag(r, c, tag, sizeof tag);
        xt_tfevents_scalar(&t->ev, tag, step, wall, (float)((double)r->confusion[c * r->nclasses + c] / (double)support));
    }
    xt_tfevents_scalar(&t->ev, "time/epoch_s", step, wall, (float)ep->seconds);
    xt_image img;
    int rc = xt_run_grid_render(r, ep->grid, &img, e);
    if (!rc) rc = image_event(t, "test/predictions", step, wall, &img, e);
    char title[160];
    snprintf(title, sizeof title, "Confusion matrix: %s, step %lld", r->c->name, step);
    if (!rc) rc = xt_confusion_render(r, title, &img, e);
    if (!rc) rc = image_event(t, "test/confusion_matrix", step, wall, &img, e);
    if (!rc) rc = xt_tfevents_flush(&t->ev, e);
    return rc;
}

void xt_tb_close(xt_tb *t) {
    if (t->open) xt_tfevents_close(&t->ev);
    t->open = 0;
}
