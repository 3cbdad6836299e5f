/* mkdirs.h — create a directory and every missing parent (mkdir -p).
 *
 * Is: the one walk over a path's prefixes that the run directory, the data
 * download, the image cache, TensorBoard's logdir and the kernel-choice cache
 * share. Is not: the error message, which each caller words for its own key
 * and fix (hence the failing prefix is handed back, not reported here).
 */
#ifndef XT_UTIL_MKDIRS_H
#define XT_UTIL_MKDIRS_H

#include <stddef.h>

/* mkdir -p `dir` (mode 0777, less the umask). Returns 0, or -1 with errno set
 * and the prefix that could not be created in failed[cap] (the whole path,
 * errno ENAMETOOLONG, when it does not fit the walk's buffer). */
int xt_mkdirs(const char *dir, char *failed, size_t cap);

#endif
