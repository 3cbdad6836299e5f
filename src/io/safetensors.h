/* safetensors.h — read and write checkpoints in the safetensors format, so
 * PyTorch (safetensors.torch.load_file, or bench/check_checkpoint.py) loads
 * them as they are.
 *
 * The format: 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"format": "pt", "xlatrain.crc32": "1a2b3c4d", ...},
 *    "conv1.weight": {"dtype": "F32", "shape": [10, 1, 5, 5], "data_offsets": [0, 1000]}, ...}
 * padded with spaces so the data starts at a multiple of 8, then the raw
 * little-endian tensor bytes, laid out in the order given, offsets relative to
 * the start of the data. We add "xlatrain.checksum": "crc32:<8 hex digits>"
 * to the metadata, a zlib crc32 over the canonical header (every metadata
 * pair, every tensor's name, dtype, shape and offsets) and then the data, so
 * an edited metadata value is caught like a flipped tensor bit; it is checked
 * on read when present (files from before it carry "xlatrain.crc32", the
 * data's crc32 alone, and that is checked instead). Metadata values stay
 * strings, so PyTorch loads the tensors as before. Also "format": "pt" (what
 * the Hugging Face loaders expect) unless given.
 *
 *   xt_st_tensor t[] = {{"fc.weight", XT_ST_F32, 2, {10, 50}, w}, {"step", XT_ST_I64, 0, {0}, &step}};
 *   xt_st_meta m[] = {{"epoch", "3"}};
 *   xt_st_write("runs/x/checkpoint-epoch003.safetensors", t, 2, m, 1, e);   // atomic
 *
 *   xt_st_file f;
 *   if (xt_st_read(path, &f, e)) return e->code;
 *   xt_st_copy(&f, "fc.weight", XT_ST_F32, 2, (int64_t[]){10, 50}, w, e);  // checks dtype+shape
 *   xt_st_close(&f);
 *
 * The reader trusts nothing: header length within the file, strict JSON,
 * known dtypes, shape x dtype size == byte range, ranges contiguous from 0 to
 * the end of the file with no gap or overlap, no duplicate names, checksum.
 * Any violation is XT_ERUNTIME "PATH: <what>; use another checkpoint", and so
 * is a path that is not a regular file (a FIFO is refused, never waited on);
 * a file that cannot be opened or read is XT_EIO. Reading is bounded: the
 * length field is checked against the file's size before the header is
 * read, the header is parsed before the data is read. Tensor data handed out is 16-byte
 * aligned (copied out of the file, whose offsets need not be aligned).
 * Not here: which tensors a model has (the caller's job), the checkpoint
 * directory (ckptdir.h).
 */
#ifndef XT_IO_SAFETENSORS_H
#define XT_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    XT_ST_F32,
    XT_ST_F64,
    XT_ST_I32,
    XT_ST_I64,
    XT_ST_U8,
    XT_ST_NDTYPES
} xt_st_dtype;

#define XT_ST_MAX_RANK 8
#define XT_ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */
#define XT_ST_CRC_KEY "xlatrain.crc32"     /* older files: crc32 of the data only */
#define XT_ST_SUM_KEY "xlatrain.checksum"  /* "crc32:<8 hex>" of the canonical header and the data */

typedef struct xt_st_tensor {
    const char *name;
    xt_st_dtype dtype;
    int rank;                        /* 0 (a scalar) .. XT_ST_MAX_RANK */
    int64_t shape[XT_ST_MAX_RANK];
    const void *data;                /* numel * dtype size bytes, host (little-endian) order */
    size_t nbytes;                   /* set by the reader; the writer computes it from shape */
} xt_st_tensor;

typedef struct xt_st_meta {
    const char *key, *value;
} xt_st_meta;

typedef struct xt_st_file {
    char path[1024];                 /* for messages (truncated if longer) */
    int ntensors;
    xt_st_tensor *tensors;           /* in header order */
    int nmeta;
    xt_st_meta *meta;                /* __metadata__ pairs, in header order */
    size_t data_bytes;               /* size of the data buffer */
    void *priv_;                     /* private: parsed header, aligned tensor copies */
} xt_st_file;

/* Bytes per element (4 for F32) and the spec's name ("F32"). */
size_t xt_st_dtype_size(xt_st_dtype t);
const char *xt_st_dtype_name(xt_st_dtype t);

/* Write `nt` tensors and `nm` metadata pairs to `path` atomically (temp file +
 * fsync + rename). Returns 0; XT_EIO when the file cannot be written (the old
 * file, if any, is untouched); XT_ERUNTIME for invalid descriptors (empty or
 * duplicate names, bad rank or dims, a metadata key XT_ST_CRC_KEY or XT_ST_SUM_KEY). */
int xt_st_write(const char *path, const xt_st_tensor *t, int nt, const xt_st_meta *m, int nm, xt_err *e);

/* Read and validate `path` into f. Returns 0, XT_EIO (cannot read) or
 * XT_ERUNTIME (not a valid safetensors file). On failure f needs no close. */
int xt_st_read(const char *path, xt_st_file *f, xt_err *e);

/* The same validation on bytes already in memory (`name` labels messages). */
int xt_st_parse(const void *buf, size_t size, const char *name, xt_st_file *f, xt_err *e);

/* Free what f owns; safe on a zeroed or already-closed file. */
void xt_st_close(xt_st_file *f);

/* The tensor called `name`, or NULL. */
const xt_st_tensor *xt_st_find(const xt_st_file *f, const char *name);

/* The metadata value for `key`, or NULL. */
const char *xt_st_meta_get(const xt_st_file *f, const char *key);

/* Copy tensor `name` into dst after checking it exists with exactly this
 * dtype and shape; XT_ERUNTIME naming the file and tensor otherwise
 * ("has shape [20, 10, 5, 5], the model expects [10, 1, 5, 5]"). */
int xt_st_copy(const xt_st_file *f, const char *name, xt_st_dtype dtype, int rank, const int64_t *shape,
               void *dst, xt_err *e);

#endif
