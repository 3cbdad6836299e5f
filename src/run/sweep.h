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
#include "util/err.h"

/* One swept key and its values, in the order given. */
typedef struct xt_sweep_axis {
    char key[160];
    char **values;          /* (nvalues) malloc'd strings */
    int nvalues;
} xt_sweep_axis;

/* One run of the product and how it ended. */
typedef struct xt_sweep_row {
    int index;              /* 1-based, the <i> of its directory */
    int *choice;            /* (naxes) index into each axis' values */
    char dir[1024];
    int done;               /* ended (ran, or skipped by --sweep-resume) */
    int skipped;            /* --sweep-resume: its results.json already said ok */
    char status[32];        /* results.json's status, or "crashed"/"error" when it wrote none */
    int exit_code;
    double best_acc, final_acc, final_loss, samples_per_sec; /* NaN when unknown */
} xt_sweep_row;

typedef struct xt_sweep {
    xt_sweep_axis *axes;
    int naxes;
    xt_sweep_row *rows;     /* the product, first axis varying slowest */
    int nrows;
    char dir[600];          /* the sweep's own directory (output_dir) */
} xt_sweep;

/* Run the sweep the command line asks for (cli->nsweep > 0) over config c
 * (already loaded and valid). Returns 0 when every run succeeded, else the
 * first failing run's exit code (130 if the sweep itself was interrupted);
 * e holds a message for main to print. */
int xt_sweep_main(const xt_config *c, const xt_cli *cli, xt_err *e);

/* The value of axis a in row r. */
static inline const char *xt_sweep_value(const xt_sweep *s, const xt_sweep_row *r, int a) {
    return s->axes[a].values[r->choice[a]];
}

#endif
