/* atomic.h — replace a file atomically: the one place that knows how.
 *
 *   xt_atomic_file af;
 *   if (xt_atomic_open(&af, path, e)) return e->code;
 *   xt_atomic_write(&af, header, n);  ...  (or fprintf(af.fp, ...), libpng on af.fp)
 *   return xt_atomic_commit(&af, e);  // or xt_atomic_abort(&af) on your own error
 *
 * The data goes to an unnamed file (O_TMPFILE) in the same directory, or
 * where the file system cannot, to "<path>.tmp.<pid>"; commit flushes,
 * fsyncs, links the unnamed file in as "<path>.tmp.<pid>", renames it over
 * `path` and fsyncs the directory, so a reader (or a crash, or a full disk)
 * sees either the old file or the complete new one, never a torn one, and a
 * process killed while writing leaves no temp file behind (the named
 * fallback's is swept, xt_tmp_sweep). On any failure the temp file is
 * removed and the existing `path` is untouched. Only a regular file is
 * replaced: a `path` that is a symbolic link, a device, a directory or a
 * FIFO is refused, never renamed over. The path "-" is standard output,
 * written as it comes (for --output -). Checkpoints, PNGs and results.json
 * all go through here. Errors are XT_EIO with "cannot write PATH:
 * <strerror>; <fix>".
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
    int unnamed;         /* an O_TMPFILE file, named `tmp` only at commit */
    int to_stdout;       /* path "-": standard output, written as it comes */
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

/* Whether `out` names the same file as `in` (same device and inode), so a
 * writer can refuse to overwrite its own input. 0 when either is missing. */
int xt_same_file(const char *out, const char *in);

/* A short hint for a failed write with this errno ("free some disk space",
 * "make the directory writable or choose another output_dir", ...). */
const char *xt_io_hint(int err);

#endif
