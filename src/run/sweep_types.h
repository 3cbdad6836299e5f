/* sweep_types.h — a sweep as plain data: its axes (swept keys and
 * values), one row per run of the product and how it ended. Below both
 * sweep.c (which fills it) and sweep_report.c (which writes and prints it).
 * Not here: running or reporting (sweep.h, sweep_report.h). */
#ifndef XT_RUN_SWEEP_TYPES_H
#define XT_RUN_SWEEP_TYPES_H

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
    int skipped;            /* --sweep-resume: its results.json already said it succeeded (exit 0) */
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
    char logdir[512];       /* a logdir the config names ("" for auto or off): each run gets logdir/<its directory's name> */
} xt_sweep;

/* The value of axis a in row r. */
static inline const char *xt_sweep_value(const xt_sweep *s, const xt_sweep_row *r, int a) {
    return s->axes[a].values[r->choice[a]];
}

#endif
