/* finish.h — the master's end-of-run outputs: predictions.png from the last
 * test batch, results.json (also printed as the last stdout line), and the
 * target_accuracy verdict. Not here: the per-epoch outputs (loop.c). */
#ifndef XT_RUN_FINISH_H
#define XT_RUN_FINISH_H

#include "io/png.h"
#include "run/eval.h"
#include "run/run.h"
#include "util/err.h"

/* How a run ended, for its summary. */
typedef struct xt_summary {
    const char *status;       /* ok, below_target, diverged, interrupted, worker_failed, error */
    int exit_code;
    const char *message;      /* one line */
    double final_loss;        /* NaN when unknown */
    const char *checkpoint;   /* the newest checkpoint, NULL or "" when none */
} xt_summary;

/* Write the summary (results.json, or eval.json for --eval-only) and print
 * it as the last stdout line (printed even when the file cannot be
 * written). 0 or XT_EIO. */
int xt_run_summary(xt_run *r, const xt_summary *s, xt_err *e);

/* Write the outputs; returns 0, an I/O error, or XT_EBELOW (outputs written)
 * when the best accuracy misses target_accuracy. */
int xt_run_finish(xt_run *r, const xt_grid_samples *grid, double final_loss, xt_err *e);

/* The predictions grid of these samples of r's test set, as predictions.png
 * shows it, into img (img->px NULL when there are no samples; else
 * xt_image_free it). For the file and TensorBoard (tb.h). 0 or XT_EIO. */
int xt_run_grid_render(const xt_run *r, const xt_grid_samples *gs, xt_image *img, xt_err *e);

#endif
