/* ckptdir.h — the checkpoint directory: names, listing, "latest", pruning.
 *
 * Checkpoints are "<dir>/checkpoint-epoch<NNN>.safetensors" with the epoch
 * zero-padded to 3 digits (more when it needs them), so `ls` sorts them.
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
    char name[48];   /* file name inside the directory */
} xt_st_ckpt;

/* "<dir>/checkpoint-epoch<NNN>.safetensors" into out. 0, or XT_EIO when it
 * does not fit (or epoch < 0). */
int xt_st_checkpoint_path(char *out, size_t cap, const char *dir, int epoch, xt_err *e);

/* The checkpoints in `dir`, ascending by epoch (ties by name), in a malloc'd
 * array the caller frees. A missing directory is an empty list. 0 or XT_EIO. */
int xt_st_list_checkpoints(const char *dir, xt_st_ckpt **list, int *n, xt_err *e);

/* The path of the highest-epoch checkpoint in `dir`. 0; XT_EUSAGE when there
 * is none ("no checkpoint-epochNNN.safetensors in DIR; ..."); XT_EIO when the
 * directory cannot be read or the path does not fit. */
int xt_st_find_latest(const char *dir, char *out, size_t cap, xt_err *e);

/* Delete the oldest checkpoints until at most `keep` remain, never deleting
 * the one for `keep_epoch` (the one just written). keep < 1 keeps all.
 * 0 or XT_EIO. */
int xt_st_prune_checkpoints(const char *dir, int keep, int keep_epoch, xt_err *e);

#endif
