/* finish.c — the master's end-of-run outputs: predictions.png (the last test
 * batch's first samples), results.json, the same JSON object as the last
 * stdout line, and the target_accuracy verdict.
 * Not here: per-epoch outputs (loop.c) or checkpoints (checkpoint.c). */
#include "run/finish.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/metrics.h"
#include "io/atomic.h"
#include "io/grid.h"
#include "io/jsonw.h"
#include "run/log.h"

static const char *const g_fashion_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

/* predictions.png; skipped for images over 64x64 pixels. */
static int write_grid(const xt_run *r, const xt_grid_samples *gs, xt_err *e) {
    static uint8_t imgs[XT_GRID_MAX * 64 * 64];
    int hw = r->test.rows * r->test.cols;
    int act[XT_GRID_MAX], prd[XT_GRID_MAX];
    if (gs->n <= 0 || hw > 64 * 64) return 0;
    for (int i = 0; i < gs->n; i++) {
        memcpy(imgs + (size_t)i * hw, r->test.images + (size_t)gs->index[i] * hw, (size_t)hw);
        act[i] = gs->truth[i];
        prd[i] = gs->pred[i];
    }
    char path[700];
    snprintf(path, sizeof path, "%s/predictions.png", r->outdir);
    if (xt_grid_write(path, imgs, r->test.rows, r->test.cols, act, prd, gs->n,
                      r->c->dataset == XT_DS_FASHION_MNIST ? g_fashion_names : NULL, e))
        return e->code;
    return 0;
}

/* The results object: what ran, how well, how fast. */
static void results_json(const xt_run *r, xt_jsonw *w, double final_loss, int below) {
    const xt_config *c = r->c;
    double wall = (double)(xt_now_ns() - r->t_start_ns) / 1e9;
    double final_acc = r->nhist ? r->hist_acc[r->nhist - 1] : r->best_acc;
    double train_s = (double)r->train_ns / 1e9;
    xt_jw_obj(w);
    xt_jw_key(w, "config"); xt_jw_str(w, c->source);
    xt_jw_key(w, "dataset"); xt_jw_str(w, xt_data_kind_name(xt_run_data_kind(c->dataset)));
    xt_jw_key(w, "model"); xt_jw_str(w, c->spec.source);
    xt_jw_key(w, "epochs"); xt_jw_int(w, r->nhist);
    xt_jw_key(w, "best_accuracy"); xt_jw_numg(w, r->best_acc, 6);
    xt_jw_key(w, "final_accuracy"); xt_jw_numg(w, final_acc, 6);
    xt_jw_key(w, "final_loss"); if (isfinite(final_loss)) xt_jw_numg(w, final_loss, 6); else xt_jw_null(w);
    xt_jw_key(w, "target_accuracy"); if (c->target_accuracy > 0) xt_jw_numg(w, c->target_accuracy, 6); else xt_jw_null(w);
    xt_jw_key(w, "samples_per_sec"); xt_jw_numg(w, train_s > 0 ? (double)r->samples_trained * r->world / train_s : 0, 6);
    xt_jw_key(w, "train_time_s"); xt_jw_numg(w, train_s, 6);
    xt_jw_key(w, "data_wait_s"); xt_jw_numg(w, (double)r->data_wait_ns / 1e9, 6);
    xt_jw_key(w, "wall_time_s"); xt_jw_numg(w, wall, 6);
    xt_jw_key(w, "num_cores"); xt_jw_int(w, r->world);
    xt_jw_key(w, "batch_size"); xt_jw_int(w, c->batch_size);
    xt_jw_key(w, "learning_rate"); xt_jw_numg(w, c->learning_rate, 6);
    xt_jw_key(w, "seed"); xt_jw_int(w, c->seed);
    xt_jw_key(w, "output_dir"); xt_jw_str(w, r->outdir);
    xt_jw_key(w, "status"); xt_jw_str(w, below ? "below_target" : "ok");
    xt_jw_end(w);
}

/* results.json with a trailing newline, then the same object on stdout. */
static int write_results(const xt_run *r, const xt_jsonw *w, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/results.json", r->outdir);
    char *text = malloc(w->len + 2);
    if (!text) return xt_fail(e, XT_ERUNTIME, "out of memory");
    memcpy(text, w->buf, w->len);
    text[w->len] = '\n';
    int rc = xt_write_file_atomic(path, text, w->len + 1, e);
    if (!rc) xt_out("%s", w->buf); /* the last stdout line: the same summary, one JSON object */
    free(text);
    return rc;
}

int xt_run_finish(xt_run *r, const xt_grid_samples *grid, double final_loss, xt_err *e) {
    const xt_config *c = r->c;
    if (write_grid(r, grid, e)) return e->code;
    int below = c->target_accuracy > 0 && r->best_acc < c->target_accuracy;
    xt_jsonw w;
    xt_jw_init(&w);
    results_json(r, &w, final_loss, below);
    int rc = xt_jw_finish(&w, "results.json", e);
    if (!rc) rc = write_results(r, &w, e);
    xt_jw_free(&w);
    if (rc) return rc;
    if (below) return xt_fail(e, XT_EBELOW, "best accuracy %.2f%% is below target_accuracy %.2f%% (outputs written to %s)", r->best_acc, c->target_accuracy, r->outdir);
    return 0;
}
