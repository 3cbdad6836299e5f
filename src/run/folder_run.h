/* folder_run.h — the folder dataset's side of a run (folder_run.c): its keys
 * into the data options, and what the run records about the data. Its own
 * header, not run.h's, so that run.c's callers of it and folder_run.c's use
 * of the run's record do not make the two files lean on each other.
 */
#ifndef XT_RUN_FOLDER_RUN_H
#define XT_RUN_FOLDER_RUN_H

#include <stddef.h>

#include "io/jsonw.h"
#include "run/run.h"
#include "util/err.h"

/* dataset: folder: its keys into o, the cache beside the output by default;
 * nothing for the other datasets. */
void xt_run_folder_opts(const xt_config *c, xt_data_opts *o);
/* The per-channel mean (std = 0) or std (std = 1) the data is normalized
 * with, as "0.1307" or "0.49, 0.48, 0.45". */
void xt_run_norm_text(const xt_dataset *d, int std, char *out, size_t cap);
/* normalize auto measured on a folder's training split: a comment line in
 * config.yaml (host 0, training runs). 0 or XT_EIO. */
int xt_run_record_norm(const xt_run *r, xt_err *e);
/* results.json's "folder" object: classes, images, skipped files, normalization. */
void xt_run_folder_results(const xt_run *r, xt_jsonw *w);

#endif
