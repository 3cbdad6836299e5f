/* mkdirs.c — mkdir -p; see mkdirs.h. */
#include "util/mkdirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int xt_mkdirs(const char *dir, char *failed, size_t cap) {
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s", dir) >= sizeof p) {
        snprintf(failed, cap, "%s", dir);
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s) continue;
        char c = *s;
        *s = 0;
        if (mkdir(p, 0777) && errno != EEXIST) {
            int err = errno;
            snprintf(failed, cap, "%s", p);
            errno = err;
            return -1;
        }
        if (!(*s = c)) return 0;
    }
}
