/* sweep.h — a multirun (--sweep KEY=v1,v2 ...): the cartesian product of
 * the swept values, one normal run after another, each in its own
 * directory <sweep dir>/<i>-<key=value,...>, a summary row per run as it
 * ends, and the table at the end.
 *
 * Each run is this same binary exec'd again (/proc/self/exe) with the
 * sweep's --set overrides, the run's values and --set output_dir=..., so a
 * run that crashes, diverges or leaks cannot take the sweep or its
 * neighbours with it, and every run is exactly what the same command line
 * typed by hand would do (its config.yaml reruns it).
 * Not here: the summary files and the printed table (sweep_report.h). */
#ifndef XT_RUN_SWEEP_H
#define XT_RUN_SWEEP_H

#include "config/config.h"
#include "run/cli.h"
#include "run/sweep_types.h"
#include "util/err.h"

/* Run the sweep the command line asks for (cli->nsweep > 0) over config c
 * (already loaded and valid). Returns 0 when every run succeeded, else the
 * first failing run's exit code (130 if the sweep itself was interrupted);
 * e holds a message for main to print. */
int xt_sweep_main(const xt_config *c, const xt_cli *cli, xt_err *e);

#endif
