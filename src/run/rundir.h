/* rundir.h — the output directory as one run's own: which files xlatrain
 * writes there, whether a run is already there, the default directory
 * (runs/<name>, runs/<name>-2, ...), --overwrite's cleanup, and the lock
 * held for the run's whole life. Not here: writing the files themselves
 * (loop.c, finish.c, checkpoint.c). */
#ifndef XT_RUN_RUNDIR_H
#define XT_RUN_RUNDIR_H

#include <stddef.h>

#include "util/err.h"

#define XT_LOCK_FILE "xlatrain.lock"

typedef enum {
    XT_CLAIM_NEW,       /* a fresh training run: the directory must hold no run (or --overwrite) */
    XT_CLAIM_CONTINUE,  /* --resume: the run already there, exclusively */
    XT_CLAIM_READ,      /* --eval-only, --predict: shared with other readers */
} xt_claim_kind;

typedef struct xt_rundir {
    char dir[600];
    int lock_fd;        /* -1 when no lock is held */
} xt_rundir;

/* Claim `dir` for `kind`. With pick_free (output_dir not set), a busy or
 * used `dir` moves on to dir-2, dir-3, ... instead of failing. overwrite
 * removes the previous run's own files once the lock is held. 0, XT_EUSAGE
 * (refused or busy: the message names the directory, the PID and the way
 * out) or XT_EIO. */
int xt_rundir_claim(xt_rundir *d, const char *dir, xt_claim_kind kind, int pick_free, int overwrite, xt_err *e);
/* The default directory's newest run: of base, base-2, ... those that hold
 * a run, the one written to last, into out. The number of runs found (0:
 * out untouched). */
int xt_rundir_newest(const char *base, char *out, size_t cap);
/* Drop the lock (the kernel also drops it when the process dies). */
void xt_rundir_release(xt_rundir *d);
/* The exact names a run writes into its directory (checkpoints aside, which
 * are checkpoint-epochNNN[-stepNNN].safetensors): --overwrite removes these,
 * and tests/test_docs.c checks the man page's FILES names each. */
extern const char *const xt_rundir_own_names[];
extern const int xt_rundir_nown_names;
/* Whether a file name is one xlatrain writes into an output directory. */
int xt_rundir_is_own_file(const char *name);
/* Whether `dir` holds a run: any of xlatrain's files but the lock. */
int xt_rundir_holds_run(const char *dir);

#endif
