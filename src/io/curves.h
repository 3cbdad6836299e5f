/* curves.h — curves.png: training loss and test accuracy per epoch.
 *
 *   xt_curves_write("runs/mnist/curves.png", loss, acc, nepochs, e);
 *
 * Two panels side by side, drawn by us (no matplotlib): each has a title with
 * a summary ("last 0.0421", "best 98.72% at epoch 9"), a boxed plot area with
 * light grid lines, ticks at "nice" steps (1, 2, 5 x 10^k) with numeric
 * labels, axis labels ("epoch", "loss", "accuracy %"), and the series as an
 * anti-aliased line with a marker per epoch (markers shrink and then vanish
 * when epochs get too dense to tell apart). Works from 1 to thousands of
 * epochs. Non-finite values are skipped (the line breaks there).
 * Not here: the per-step loss (metrics.jsonl holds it).
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

/* The tick step for an axis spanning `span` with about `target` ticks:
 * 1, 2 or 5 times a power of ten. Exposed for tests. */
double xt_curves_nice_step(double span, int target);

#endif
