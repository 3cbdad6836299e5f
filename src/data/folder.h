/* folder.h — the file list of a folder dataset: one subfolder per class,
 * as torchvision's ImageFolder reads it.
 *
 *   xt_folder f;
 *   if (xt_folder_scan(&f, "data/pets/train", "train_dir", 0, NULL, NULL, &e)) return e.code;
 *   ... f.classes[k] (sorted by name, byte order = Python's sorted()), f.files[i].path / .label / .size / .mtime_ns ...
 *   xt_folder_free(&f);
 *
 * Classes are the subfolders of the root, sorted by name; every file below a
 * class folder (recursively, symlinks followed) belongs to it, sorted by
 * path. Names starting with '.' (.DS_Store, .ipynb_checkpoints, an editor's
 * swap file) are not data and are skipped, as are files directly in the
 * root. The content of a file is not looked at here: a non-image is found
 * when it is decoded (image_cache.c).
 *
 * What is wrong with the tree itself — a class folder with no files, a
 * symlink loop, a dangling symlink, a folder that cannot be listed, a FIFO
 * or device among the files — is an exit-3 error naming the path and the
 * fix, or with skip = 1 a warning through `warn` (the entry left out, the
 * class kept so labels do not shift) counted in f.skipped.
 *
 * Not here: decoding, the cache, the train/validation split's use
 * (xt_folder_split only marks files).
 */
#ifndef XT_DATA_FOLDER_H
#define XT_DATA_FOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define XT_FOLDER_MAX_CLASSES 256 /* labels are one byte */

typedef struct xt_folder_file {
    char *path;          /* root/class/..., as opened */
    int label;           /* index into classes */
    int64_t size;        /* bytes, at scan time */
    int64_t mtime_ns;    /* modification time, ns */
} xt_folder_file;

typedef struct xt_folder {
    char root[1024];
    int nclasses;
    char **classes;      /* nclasses names, sorted */
    xt_folder_file *files;
    int64_t n;
    int64_t skipped;     /* entries left out with skip = 1 */
} xt_folder;

typedef void (*xt_folder_warn_fn)(void *ctx, const char *line);

/* Scan root. key names the config key for messages ("train_dir"). 0, or
 * XT_EDATA (the tree) / XT_ERUNTIME (memory); on failure *f is empty. */
int xt_folder_scan(xt_folder *f, const char *root, const char *key, int skip, xt_folder_warn_fn warn, void *ctx, xt_err *e);

/* Mark files for validation: round(n * fraction) of them, chosen by a
 * permutation keyed by seed (the same folder and seed always give the same
 * split, whatever else changes). val[i] = 1 for the chosen. */
void xt_folder_split(const xt_folder *f, double fraction, uint64_t seed, uint8_t *val);

void xt_folder_free(xt_folder *f);

#endif
