/* download.h — fetch MNIST / FashionMNIST / CIFAR-10 from their public mirrors with curl
 * (or wget), verify each file against its published MD5 and only then give it
 * its final name, so a partial or damaged download never looks like data.
 *
 * Each file goes to NAME.part, is checked, then renamed to NAME; on any
 * failure the .part is removed and the next mirror is tried. Files already
 * present with the right checksum are kept. Offline, the first file fails at
 * once (DNS or connect error, 10 s connect timeout) and the message names the
 * directory to fill by hand. $XLATRAIN_DATA_MIRROR (a base URL) replaces the
 * built-in mirrors, for local caches and tests. The shell twin for `make data`
 * is data/fetch.sh; data/README.md lists the files, mirrors and checksums.
 *
 * Not here: reading the files (idx.c, dataset.c). No libcurl: the program
 * runs the curl or wget binary.
 */
#ifndef XT_DATA_DOWNLOAD_H
#define XT_DATA_DOWNLOAD_H

#include "data/dataset.h"
#include "util/err.h"

/* Progress notes ("train-images-idx3-ubyte.gz: downloaded from ..., MD5 ok"),
 * one line each, for the caller to print or ignore (library code never prints). */
typedef void (*xt_download_note)(void *ctx, const char *line);

/* The four .gz files of `kind` (mnist or fashion_mnist), or
 * cifar-10-binary.tar.gz (cifar10, read without extracting), into dir
 * (created if needed). Returns 0 or XT_EDATA (XT_EUSAGE for synthetic), stopping at the
 * first file no mirror could deliver. */
int xt_download_dataset(xt_data_kind kind, const char *dir, xt_download_note note, void *ctx, xt_err *e);

/* One file: try base URLs mirrors[0..n) in turn (each ending in '/' or not)
 * until one yields content whose MD5 is md5_hex. Returns 0 or XT_EDATA. */
int xt_download_file(const char *const *mirrors, int n, const char *dir, const char *name, const char *md5_hex,
                     xt_download_note note, void *ctx, xt_err *e);

/* Published MD5 of `name` ("t10k-images-idx3-ubyte.gz") for kind, or NULL. */
const char *xt_download_md5(xt_data_kind kind, const char *name);

#endif
