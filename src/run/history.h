/* history.h — curves.png of a run: its per-step and per-epoch figures read
 * back from metrics.jsonl (the master's own record, kept across resumes)
 * and drawn by io/curves.h.
 * A resumed run appends lines for the steps it trains again after its
 * checkpoint; read in order, a step or epoch seen again replaces what was
 * read for it and everything after it, so the figure shows the run as it
 * went on. Is not: metrics.jsonl's writer (loop.c). */
#ifndef XT_RUN_HISTORY_H
#define XT_RUN_HISTORY_H

#include "run/run.h"
#include "util/err.h"

/* Write <outdir>/curves.png for r's r->nhist finished epochs (their loss
 * and accuracy from r->hist_*, the rest from metrics.jsonl; a missing or
 * unreadable metrics.jsonl leaves those panels empty). 0 or XT_EIO. */
int xt_history_write_curves(const xt_run *r, xt_err *e);

#endif
