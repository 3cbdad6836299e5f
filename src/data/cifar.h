/* cifar.h — reader for the binary version of CIFAR-10 (cifar-10-binary.tar.gz
 * from https://www.cs.toronto.edu/~kriz/cifar.html).
 *
 * A batch file (data_batch_1.bin ... data_batch_5.bin for training,
 * test_batch.bin for testing) is a plain sequence of 3,073-byte records: one
 * label byte (0..9), then 3,072 pixel bytes, 1,024 red, 1,024 green, 1,024
 * blue, each plane 32 rows of 32 (channel-planar, i.e. (3, 32, 32) as PyTorch
 * lays out an image). batches.meta.txt lists the 10 class names, one a line.
 *
 * The split's files are read from a directory (the extracted
 * cifar-10-batches-bin/, or any directory holding the files) or straight from
 * the .tar.gz through libarchive, or, for --predict and explicit paths, from
 * one .bin file. Everything is checked as idx.c checks IDX files: a file
 * whose size is not a whole number of records, a short last record, a label
 * over 9, an empty file, a missing batch, a torn archive or gzip stream are
 * each one XT_EDATA line naming the file (and the record) and the fix. Files
 * are opened through io/infile.h (regular files only, size known first);
 * buffers grow as bytes arrive, never from a size a header claims.
 *
 * Not here: which directory or file to use (dataset.c), downloading
 * (download.c), normalization and augmentation (transform.c).
 */
#ifndef XT_DATA_CIFAR_H
#define XT_DATA_CIFAR_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define XT_CIFAR_CHANNELS 3
#define XT_CIFAR_SIDE 32
#define XT_CIFAR_PIXELS (XT_CIFAR_CHANNELS * XT_CIFAR_SIDE * XT_CIFAR_SIDE) /* 3,072 */
#define XT_CIFAR_RECORD (1 + XT_CIFAR_PIXELS)                              /* 3,073 */
#define XT_CIFAR_CLASSES 10
#define XT_CIFAR_NAME_MAX 32 /* bytes of a class name, NUL included; longer names are an error */

/* The archive's name and its top directory, as published. */
#define XT_CIFAR_ARCHIVE "cifar-10-binary.tar.gz"
#define XT_CIFAR_DIR "cifar-10-batches-bin"
#define XT_CIFAR_META "batches.meta.txt"

typedef struct xt_cifar {
    int64_t n, cap;     /* records held; room for */
    uint8_t *images;    /* (n, 3, 32, 32), channel-planar as in the file */
    uint8_t *labels;    /* (n), each 0..9 */
    int have_names;     /* names[] came from batches.meta.txt */
    char names[XT_CIFAR_CLASSES][XT_CIFAR_NAME_MAX];
} xt_cifar;

/* The published class names, for when batches.meta.txt is absent. */
extern const char *const xt_cifar_default_names[XT_CIFAR_CLASSES];

/* The split's batch files: train data_batch_1.bin .. data_batch_5.bin (5),
 * test test_batch.bin (1). Returns the count; names[i] are static strings. */
int xt_cifar_split_files(int split, const char *const **names);

/* Records arriving in pieces of any size (a file read in chunks, an archive
 * member as libarchive hands it over), appended to out. `what` names the
 * source in messages ("data/x/test_batch.bin"). */
typedef struct xt_cifar_sink {
    xt_cifar *out;
    const char *what;
    uint8_t rec[XT_CIFAR_RECORD]; /* the record being completed */
    size_t have;                  /* its bytes so far */
    int64_t records;              /* complete records from this source */
} xt_cifar_sink;

void xt_cifar_sink_init(xt_cifar_sink *s, xt_cifar *out, const char *what);
int xt_cifar_sink_feed(xt_cifar_sink *s, const uint8_t *p, size_t n, xt_err *e);
/* The source ended: a partial record or no record at all is an error. */
int xt_cifar_sink_end(xt_cifar_sink *s, xt_err *e);

/* A source's size, before reading it: a whole, non-zero number of records
 * (a CIFAR-100 file, 3,074-byte records, is named as such). */
int xt_cifar_check_size(const char *what, uint64_t size, xt_err *e);

/* Records from memory (one batch file's bytes), appended to out. */
int xt_cifar_parse(const char *what, const uint8_t *buf, size_t len, xt_cifar *out, xt_err *e);

/* batches.meta.txt's text: 10 non-empty lines (blank lines ignored), each
 * name shorter than XT_CIFAR_NAME_MAX, into out->names. */
int xt_cifar_parse_meta(const char *what, const char *text, size_t len, xt_cifar *out, xt_err *e);

/* One .bin file, appended to out. */
int xt_cifar_read_file(const char *path, xt_cifar *out, xt_err *e);

/* Every batch file of the split, in order, from a directory (and its
 * batches.meta.txt when present). */
int xt_cifar_read_dir(const char *dir, int split, xt_cifar *out, xt_err *e);

/* The same from cifar-10-binary.tar.gz (members matched by base name, so
 * the archive's top directory does not matter); see cifar_archive.c. */
int xt_cifar_read_archive(const char *path, int split, xt_cifar *out, xt_err *e);

/* What the split's source in datadir is: DIR/cifar-10-batches-bin/ or DIR
 * itself when it holds the split's first batch file, else
 * DIR/cifar-10-binary.tar.gz. Writes the path and returns 1 (a directory) or
 * 2 (the archive), or 0 when none exists. */
int xt_cifar_find(const char *datadir, int split, char *out, size_t cap);

/* Any source: a directory, an archive (gzip content) or a .bin file
 * (cifar_source.c). */
int xt_cifar_read(const char *path, int split, xt_cifar *out, xt_err *e);

void xt_cifar_free(xt_cifar *c);

#endif
