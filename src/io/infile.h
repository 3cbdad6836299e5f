/* infile.h — the one way xlatrain opens a file it reads (config, layer spec,
 * IDX data, checkpoint, a downloaded file's checksum).
 *
 *   xt_infile in;
 *   xt_in_opts o = {.open_code = XT_EDATA, .bad_code = XT_EDATA, .fix = "pass an IDX file"};
 *   if (xt_in_open(&in, path, &o, e)) return e->code;
 *   ... in.size is known before any byte is read; xt_in_read(&in, buf, n, &got) ...
 *   xt_in_close(&in);
 *
 * Why a helper: open(2) on a FIFO blocks until a writer appears, and reading
 * a device or /proc file has no size to check against. So the file is opened
 * with O_NONBLOCK (a FIFO open returns at once), fstat'ed, refused unless it
 * is a regular file, and only then switched back to blocking reads. Its size
 * is fixed at open, so readers can check a header's claims against it and
 * never read more than they meant to.
 * Not here: parsing (the callers), writing (atomic.h).
 */
#ifndef XT_IO_INFILE_H
#define XT_IO_INFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

/* "a directory", "a FIFO", "a symbolic link", ...: what a file that is not
 * a regular one is, for a refusal (also atomic.c's). */
const char *xt_file_kind(mode_t m);

typedef struct xt_in_opts {
    int open_code;    /* exit code when the file cannot be opened (missing, no permission) */
    int bad_code;     /* exit code when it is not a regular file or too large */
    const char *fix;  /* the end of the message: "pass a .safetensors checkpoint file" */
} xt_in_opts;

typedef struct xt_infile {
    int fd;           /* -1 when closed */
    uint64_t size;    /* st_size at open */
    const char *path; /* the caller's string, for messages */
} xt_infile;

/* Open `path` for reading: regular files only. 0, or o->open_code /
 * o->bad_code with "PATH: cannot open: <reason>; <fix>" or "PATH: is a FIFO,
 * not a regular file; <fix>". */
int xt_in_open(xt_infile *in, const char *path, const xt_in_opts *o, xt_err *e);

/* Read up to n bytes; *got says how many arrived (fewer only at the end of
 * the file). 0, or an errno value on a read error. */
int xt_in_read(xt_infile *in, void *buf, size_t n, size_t *got);

/* Read exactly n bytes at offset `off` without moving the file position.
 * 0, or an errno value (EIO when the file is shorter). */
int xt_in_pread(xt_infile *in, void *buf, size_t n, uint64_t off);

void xt_in_close(xt_infile *in);

/* The whole file into a malloc'd, NUL-terminated buffer, refusing (bad_code,
 * "PATH: N bytes, larger than the LIMIT-byte limit; <fix>") before reading
 * when it is larger than `max`. *len excludes the NUL. */
int xt_in_read_all(const char *path, size_t max, const xt_in_opts *o, char **buf, size_t *len, xt_err *e);

#endif
