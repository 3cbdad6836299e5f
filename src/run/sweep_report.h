/* sweep_report.h — what a sweep leaves and prints: summary.jsonl and
 * summary.csv in the sweep's directory (one row per finished run, in run
 * order, rewritten atomically after each run so a killed sweep keeps every
 * row it finished and a resumed one never repeats a row), and the table on
 * stdout at the end: every run, the mean and standard deviation over runs
 * that differ only in seed, and the best run.
 * Not here: running the sweep (sweep.h). */
#ifndef XT_RUN_SWEEP_REPORT_H
#define XT_RUN_SWEEP_REPORT_H

#include <stdio.h>

#include "run/sweep_types.h"
#include "util/err.h"

/* Rewrite <dir>/summary.jsonl and <dir>/summary.csv from the finished rows. 0 or XT_EIO. */
int xt_sweep_report_write(const xt_sweep *s, xt_err *e);
/* The table, the seed groups and the best run. */
void xt_sweep_report_print(const xt_sweep *s, FILE *out);

#endif
