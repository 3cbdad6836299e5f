/* checkpoint.h — a run's checkpoint as safetensors (the model's state_dict
 * under PyTorch's names, the optimizer state and the training position);
 * written by the master only, atomically. Not here: when to write one
 * (loop.c) or the file format (io/safetensors.c). */
#ifndef XT_RUN_CHECKPOINT_H
#define XT_RUN_CHECKPOINT_H

#include <stddef.h>

#include "run/run.h"
#include "util/err.h"

/* Write r's state as checkpoint `epoch_label`, to resume at (next_epoch,
 * step_in_epoch); prunes old ones to checkpoint.keep_last. */
int xt_ckpt_save(xt_run *r, int epoch_label, int next_epoch, long long step_in_epoch, xt_err *e);
/* Write r's state, to resume after epoch `next_epoch`, as
 * <output_dir>/best.safetensors (atomically, replacing the previous best;
 * checkpoint.keep_best), and remember it in r->best_ckpt. */
int xt_ckpt_save_best(xt_run *r, int next_epoch, xt_err *e);
/* Restore r's weights (and, when training, optimizer state and position). */
int xt_ckpt_load(xt_run *r, const char *path, xt_err *e);
/* Only the best accuracy, history and global step of a checkpoint (for
 * the summary of a multi-process run that failed). */
int xt_ckpt_load_progress(xt_run *r, const char *path, xt_err *e);
/* The checkpoint --resume ARG names: a path, or "latest" in the output dir. */
int xt_ckpt_resolve(const xt_run *r, const char *arg, char *out, size_t cap, xt_err *e);

#endif
