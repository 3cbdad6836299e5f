/* image_cache.h — a folder dataset's images decoded once into a uint8 file
 * and mapped read-only, so epochs never wait for JPEG decoding and forked
 * workers share one copy of the pixels (the page cache's).
 *
 *   xt_cache_opts o = {.dir = "runs/folder-cache", .channels = 3, .rows = 32, .cols = 32, .threads = 4, ...};
 *   xt_image_set s;
 *   if (xt_image_cache_open(&s, &folder, NULL, 0, &o, &e)) return e.code;
 *   ... s.images (s.n, channels, rows, cols) planar, s.labels (s.n) ...
 *   xt_image_set_close(&s);
 *
 * The file is named by the MD5 of its key: the folder's real path, every
 * chosen file's path, size, mtime and label, the class names, the target
 * shape, resize and max_image_pixels. A changed, added or removed file
 * gives another key, so another file (the old one is removed once the new
 * one is in place). A missing or damaged cache is built: the files are
 * decoded by `threads` threads into a temp file, which is renamed into place
 * only when complete (io/atomic.h), so concurrent builders never leave a
 * torn cache, only the last complete one.
 *
 * A file that cannot be used (unreadable, not an image, corrupt, over
 * max_pixels, the wrong size without resize) is an exit-3 error naming it,
 * or with skip a warning and a count (s.skipped); skipped files' messages
 * are kept in the cache and said again when it is reused.
 *
 * Not here: the scan (folder.h), decoding (image_decode.h), resampling
 * (image_resize.h), normalization (dataset.c).
 */
#ifndef XT_DATA_IMAGE_CACHE_H
#define XT_DATA_IMAGE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "data/folder.h"
#include "util/err.h"

typedef struct xt_cache_opts {
    const char *dir;          /* where cache files live (created if missing) */
    const char *key;          /* the config key of the folder, for messages: "train_dir" */
    int channels, rows, cols; /* what every image becomes */
    int resize;               /* 1: resample to rows x cols; 0: another size is a bad file */
    long long max_pixels;     /* max_image_pixels (0 = no limit) */
    int skip;                 /* on_bad_image: skip */
    int threads;              /* decoding threads (>= 1) */
    xt_folder_warn_fn warn;   /* warnings (skipped files) */
    /* progress while building: a line, and whether it is the last one */
    void (*progress)(void *ctx, const char *line, int last);
    void *ctx;
} xt_cache_opts;

typedef struct xt_image_set {
    int64_t n;                /* images kept */
    int64_t skipped;          /* chosen files left out (on_bad_image: skip) */
    const uint8_t *images;    /* (n, channels, rows, cols), in the mapping */
    const uint8_t *labels;    /* (n) */
    void *map;                /* the whole file, read-only */
    size_t map_len;
    int built;                /* 1: decoded now; 0: the cache was reused */
    char path[1024];          /* the cache file */
} xt_image_set;

/* The chosen files of f: all when select is NULL, else those with
 * select[i] == want. 0, XT_EDATA (a bad file), XT_EIO (the cache cannot be
 * written), XT_ERUNTIME (memory). On failure *s is empty. */
int xt_image_cache_open(xt_image_set *s, const xt_folder *f, const uint8_t *select, int want, const xt_cache_opts *o,
                        xt_err *e);

void xt_image_set_close(xt_image_set *s);

#endif
