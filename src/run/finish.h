/* finish.h — the master's end-of-run outputs: predictions.png from the last
 * test batch, results.json (also printed as the last stdout line), and the
 * target_accuracy verdict. Not here: the per-epoch outputs (loop.c). */
#ifndef XT_RUN_FINISH_H
#define XT_RUN_FINISH_H

#include "run/eval.h"
#include "run/run.h"
#include "util/err.h"

/* Write the outputs; returns 0, an I/O error, or XT_EBELOW (outputs written)
 * when the best accuracy misses target_accuracy. */
int xt_run_finish(xt_run *r, const xt_grid_samples *grid, double final_loss, xt_err *e);

#endif
