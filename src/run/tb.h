/* tb.h — the run's TensorBoard log: which values the master worker writes to
 * `logdir`, under which tags, at which step. `tensorboard --logdir runs/`
 * then shows every run (each directory of event files is one run).
 *
 *   every log_steps steps (step = the global step):
 *     train/loss             the step's loss (metrics.jsonl's "step" line)
 *     train/loss_smoothed    its debiased moving average (XT_TB_SMOOTHING)
 *     train/lr               the learning rate of the step
 *     train/samples_per_sec  over all workers (the master's rate x world)
 *   after each evaluation (step = the global step at the epoch's end):
 *     train/epoch_loss, test/accuracy, test/loss (metrics.jsonl's "epoch" line)
 *     test/recall/<class>    per class, from the confusion matrix of all workers
 *     time/epoch_s           the epoch's training time
 *     test/predictions, test/confusion_matrix  (images: the PNGs' figures)
 *   and the file is flushed, so a live TensorBoard shows the epoch.
 * A resumed run writes a new file into the same directory, starting with
 * SessionLog START at the next step, so TensorBoard drops what the
 * interrupted run logged past the checkpoint; the smoothed loss starts
 * afresh there. Only the global master (worker 0 of host 0) writes.
 * Is not: the file format (io/tfevents.h) or the other outputs (loop.c).
 */
#ifndef XT_RUN_TB_H
#define XT_RUN_TB_H

#include <stddef.h>

#include "io/tfevents.h"
#include "run/eval.h"
#include "run/run.h"
#include "util/err.h"

/* train/loss_smoothed: s_k = w s_(k-1) + (1 - w) x_k over the logged
 * losses, divided by 1 - w^k so the first ones are not pulled towards 0;
 * w = 0.6 is TensorBoard's own default smoothing, so the value is what its
 * chart shows when the slider is left alone (set the slider to 0 to see
 * this line unsmoothed twice). */
#define XT_TB_SMOOTHING 0.6

typedef struct xt_tb {
    xt_tfevents ev;
    int open;
    double ema;         /* the smoothed loss's running sum (before debiasing) */
    double ema_weight;  /* XT_TB_SMOOTHING^k after k losses */
} xt_tb;

/* Whether c asks for event files (logdir not ""). The same in every worker. */
int xt_tb_enabled(const xt_config *c);

/* The directory the run's event files go to: logdir, or <output_dir>/tb for
 * `auto`. 0, or -1 when it does not fit in cap. */
int xt_tb_dir(const xt_run *r, char *out, size_t cap);

/* Open a new event file (the master only, once training starts). 0 or XT_EIO. */
int xt_tb_open(xt_tb *t, const xt_run *r, xt_err *e);

/* A logged training step at r->global_step. 0 or XT_EIO. */
int xt_tb_step(xt_tb *t, const xt_run *r, double loss, double lr, double samples_per_sec, xt_err *e);

/* One evaluation's figures (r->confusion must hold its matrix). */
typedef struct xt_tb_epoch {
    double train_loss, test_accuracy, test_loss, seconds;
    const xt_grid_samples *grid;
} xt_tb_epoch;
int xt_tb_evaluation(xt_tb *t, const xt_run *r, const xt_tb_epoch *ep, xt_err *e);

void xt_tb_close(xt_tb *t);

#endif
