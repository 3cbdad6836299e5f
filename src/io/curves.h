/* curves.h — curves.png: one run's training loss per step, learning rate,
 * test accuracy and test loss (xt_curves_write_run); and the two-panel
 * per-epoch figure (loss, accuracy) that compares several runs.
 *
 *   xt_curves_write("runs/mnist/curves.png", loss, acc, nepochs, e);
 *
 * Panels side by side, drawn by us (no matplotlib): each has a title with
 * a summary ("last 0.0421", "best 98.72% at epoch 9"), a boxed plot area with
 * light grid lines, ticks at "nice" steps (1, 2, 5 x 10^k) with numeric
 * labels, axis labels ("epoch", "loss", "accuracy %"), and the series as an
 * anti-aliased line with a marker per epoch (markers shrink and then vanish
 * when epochs get too dense to tell apart). Works from 1 to thousands of
 * epochs. Non-finite values are skipped (the line breaks there).
 * Not here: reading a run's figures (run/history.c reads metrics.jsonl).
 */
#ifndef XT_IO_CURVES_H
#define XT_IO_CURVES_H

#include "util/err.h"

#define XT_CURVES_W 1000
#define XT_CURVES_H 440

/* loss[i], acc[i]: epoch i+1's mean training loss and test accuracy in
 * percent; acc may be NULL (no test set: the panel says so). nepochs >= 1.
 * Writes atomically; 0 or XT_EIO. */
int xt_curves_write(const char *path, const double *loss, const double *acc, int nepochs, xt_err *e);

/* Several runs in one figure (fp32 beside bf16, say): series k in its own
 * colour in both panels, its name in a legend beside the figure title, every
 * series on the same axes. acc may be NULL in every series or in none.
 * nseries >= 1; 0 or XT_EIO. */
typedef struct xt_curve_series {
    const char *name;
    const double *loss, *acc;   /* nepochs values each */
} xt_curve_series;
int xt_curves_write_runs(const char *path, const xt_curve_series *s, int nseries, int nepochs, xt_err *e);

/* One run's figure, curves.png (XT_CURVES_W x XT_CURVES_RUN_H): four
 * panels, the step-axis ones on the left, the epoch-axis ones on the right,
 *   Training loss (step)   | Test accuracy (epoch)
 *   Learning rate (step)   | Test loss (epoch)
 * The training loss shows every logged step's loss faint, its centred
 * running mean bold (over 2% of the points each side, at least one: a
 * picture drawn at the end can look both ways, so the line does not lag
 * behind a falling loss as a moving average does), and each epoch's mean
 * loss as a marker midway through the epoch's steps. Without logged steps (log_steps: 0) the
 * epoch means and the epochs' learning rates are drawn instead; NULL
 * arrays and non-finite values are left out. */
typedef struct xt_curves_run {
    int nepochs;                  /* >= 1 */
    const double *loss, *acc;     /* per epoch: mean training loss, test accuracy % (acc may be NULL) */
    const double *test_loss;      /* per epoch, or NULL */
    const double *lr;             /* per epoch (the last step's), or NULL */
    const long long *epoch_step;  /* per epoch: the global step it ended at, or NULL */
    int nsteps;                   /* logged training steps */
    const long long *step;        /* their global steps, increasing */
    const double *step_loss, *step_lr;
} xt_curves_run;
#define XT_CURVES_RUN_H 680
int xt_curves_write_run(const char *path, const xt_curves_run *d, xt_err *e);

/* The tick step for an axis spanning `span` with about `target` ticks:
 * 1, 2 or 5 times a power of ten. Exposed for tests. */
double xt_curves_nice_step(double span, int target);

#endif
