/* atomic.h — replace a file atomically: the one place that knows how.
 *
 *   xt_atomic_file af;
 *   if (xt_atomic_open(&af, path, e)) return e->code;
 *   xt_atomic_write(&af, header, n);  ...  (or fprintf(af.fp, ...), libpng on af.fp)
 *   return xt_atomic_commit(&af, e);  // or xt_atomic_abort(&af) on your own error
 *
 * The data goes to "<path>.tmp.<pid>" in the same directory; commit flushes,
 * fsyncs, closes, renames it over `path` and fsyncs the directory, so a reader
 * (or a crash, or a full disk) sees either the old file or the complete new
 * one, never a torn one. On any failure the temp file is removed and the
 * existing `path` is untouched. Checkpoints, PNGs and results.json all go
 * through here. Errors are XT_EIO with "cannot write PATH: <strerror>; <fix>".
 * Not for appending logs: xt_append_file() is the plain O_APPEND helper.
 */
#ifndef XT_IO_ATOMIC_H
#define XT_IO_ATOMIC_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"

typedef struct xt_atomic_file {
    FILE *fp;            /* write through this (NULL once committed or aborted) */
    int write_errno;     /* first errno seen by xt_atomic_write, 0 if none */
    char path[4096];     /* the final name */
    char tmp[4096 + 32]; /* the temp name */
} xt_atomic_file;

/* Create the temp file next to `path`. 0 or XT_EIO. */
int xt_atomic_open(xt_atomic_file *af, const char *path, xt_err *e);

/* fwrite all `n` bytes; returns 0, or -1 after recording errno (commit then
 * fails with that error, so callers may check only at the end). */
int xt_atomic_write(xt_atomic_file *af, const void *data, size_t n);

/* Make the new content durable and visible under `path`. 0 or XT_EIO; the
 * temp file is gone either way. */
int xt_atomic_commit(xt_atomic_file *af, xt_err *e);

/* Drop the temp file; the existing `path` stays as it was. Idempotent. */
void xt_atomic_abort(xt_atomic_file *af);

/* open + write + commit for a buffer in memory. */
int xt_write_file_atomic(const char *path, const void *data, size_t len, xt_err *e);

/* Append `len` bytes to `path` (created if missing) with one O_APPEND write,
 * for metrics.jsonl lines. Never through a symlink (O_NOFOLLOW) and only to
 * a regular file. Not atomic across crashes; 0 or XT_EIO. */
int xt_append_file(const char *path, const void *data, size_t len, xt_err *e);

/* Prove `dir` writable by creating and removing a temp file there, so a
 * read-only output directory is reported before any work. 0 or XT_EIO. */
int xt_dir_check_writable(const char *dir, xt_err *e);

/* Remove the temp files ("<name>.tmp.<pid>", regular files only) that a
 * process which no longer exists left in `dir` (killed mid-write), and any
 * with this process's pid: call it before this process writes there (at
 * the start of a run; in the parent once its workers are reaped). Returns
 * how many were removed; errors are ignored (the files are only garbage). */
int xt_tmp_sweep(const char *dir);

/* A short hint for a failed write with this errno ("free some disk space",
 * "make the directory writable or choose another output_dir", ...). */
const char *xt_io_hint(int err);

#endif
