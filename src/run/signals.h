/* signals.h — the stop request of a single-process run (SIGINT/SIGTERM);
 * xt_spawn handles its own for multi-process runs. */
#ifndef XT_RUN_SIGNALS_H
#define XT_RUN_SIGNALS_H

#include "util/err.h"

/* Catch SIGINT and SIGTERM (an ignored one stays ignored, as under nohup).
 * Installs nest: only the outermost install saves the old dispositions and
 * only its restore puts them back; neither clears a stop already asked for. */
void xt_signals_install(void);
void xt_signals_restore(void);
/* For a command that never polls the stop request (--predict, --export,
 * --sweep's own handling): the old dispositions back, whatever the nesting,
 * and a signal caught meanwhile raised again under them (so a SIGTERM still
 * ends it as it would have without the handlers). */
void xt_signals_release(void);
/* Nonzero once a signal asked the run to stop. */
int xt_stop_requested(void);
/* XT_EINTR, "interrupted by SIG... before the run started: nothing was
 * trained or written", when a stop was asked for; else 0. For a run whose
 * directory is not claimed yet. */
int xt_stopped_before_start(xt_err *e);

#endif
