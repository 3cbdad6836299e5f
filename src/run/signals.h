/* signals.h — the stop request of a single-process run (SIGINT/SIGTERM);
 * xt_spawn handles its own for multi-process runs. */
#ifndef XT_RUN_SIGNALS_H
#define XT_RUN_SIGNALS_H

/* Catch SIGINT and SIGTERM (an ignored one stays ignored, as under nohup). */
void xt_signals_install(void);
void xt_signals_restore(void);
/* Nonzero once a signal asked the run to stop. */
int xt_stop_requested(void);

#endif
