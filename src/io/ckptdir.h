/* ckptdir.h — the checkpoint directory: names, listing, "latest", pruning.
 *
 * Checkpoints are "<dir>/checkpoint-epoch<NNN>.safetensors" with the epoch
 * zero-padded to 3 digits (more when it needs them), so `ls` sorts them;
 * one written mid-epoch (on an interrupt) is
 * "<dir>/checkpoint-epoch<EEE>-step<SSS>.safetensors": epoch EEE (1-based)
 * after SSS of its batches, before checkpoint-epochEEE.
 *
 *   char path[4096];
 *   xt_st_checkpoint_path(path, sizeof path, dir, epoch, e);
 *   xt_st_write(path, ...);
 *   xt_st_prune_checkpoints(dir, c->keep_checkpoints, epoch, e);
 *   ...
 *   xt_st_find_latest(dir, path, sizeof path, e);   // --resume latest
 *
 * Only names matching the pattern exactly count (temp files
 * "....safetensors.tmp.<pid>" and anything else in the directory are left
 * alone). Not here: the file format (safetensors.h).
 */
#ifndef XT_IO_CKPTDIR_H
#define XT_IO_CKPTDIR_H

#include <stddef.h>

#include "util/err.h"

typedef struct xt_st_ckpt {
    int epoch;
    long long step;  /* batches into `epoch` for a mid-epoch checkpoint; 0 for its end */
    char name[48];   /* file name inside the directory */
} xt_st_ckpt;

/* "<dir>/checkpoint-epoch<NNN>.safetensors" into out. 0, or XT_EIO when it
 * does not fit (or epoch < 0). */
int xt_st_checkpoint_path(char *out, size_t cap, const char *dir, int epoch, xt_err *e);

/* "<dir>/checkpoint-epoch<EEE>-step<SSS>.safetensors" (epoch, step >= 1). */
int xt_st_checkpoint_step_path(char *out, size_t cap, const char *dir, int epoch, long long step, xt_err *e);

/* The checkpoints in `dir`, ascending by training position (ties by name), in a malloc'd
 * array the caller frees. A missing directory is an empty list. 0 or XT_EIO. */
int xt_st_list_checkpoints(const char *dir, xt_st_ckpt **list, int *n, xt_err *e);

/* The path of the newest checkpoint in `dir` (by training position). 0; XT_EUSAGE when there
 * is none ("no checkpoint-epochNNN.safetensors in DIR; ..."); XT_EIO when the
 * directory cannot be read or the path does not fit. */
int xt_st_find_latest(const char *dir, char *out, size_t cap, xt_err *e);

/* Delete the oldest checkpoints until at most `keep` remain, never deleting
 * the one for `keep_epoch` (the one just written). keep < 1 keeps all.
 * 0 or XT_EIO. */
int xt_st_prune_checkpoints(const char *dir, int keep, int keep_epoch, xt_err *e);
/* The same, never deleting checkpoint (keep_epoch, keep_step). */
int xt_st_prune_checkpoints_at(const char *dir, int keep, int keep_epoch, long long keep_step, xt_err *e);

#endif
