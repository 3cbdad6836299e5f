/* folder_data.h — the folder dataset's settings on the run's side
 * (folder_data.c). It takes the config and the datasets, never the run
 * record (run.h), because run.c calls it: that keeps run.c below it.
 */
#ifndef XT_RUN_FOLDER_DATA_H
#define XT_RUN_FOLDER_DATA_H

#include <stddef.h>

#include "config/config.h"
#include "data/dataset.h"
#include "util/err.h"

/* dataset: folder: its keys into o, the cache beside the output by default;
 * nothing for the other datasets. */
void xt_run_folder_opts(const xt_config *c, xt_data_opts *o);
/* The per-channel mean (std = 0) or std (std = 1) the data is normalized
 * with, as "0.1307" or "0.49, 0.48, 0.45". */
void xt_run_norm_text(const xt_dataset *d, int std, char *out, size_t cap);
/* normalize auto measured on a folder's training split d: a comment line in
 * outdir/config.yaml (the caller decides when: host 0, training runs).
 * Nothing when d's normalization was given. 0 or XT_EIO. */
int xt_run_record_norm(const xt_dataset *d, const char *outdir, xt_err *e);

#endif
