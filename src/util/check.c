/* check.c — the failure path of XT_CHECK; see check.h. */
#include "util/check.h"

#include <stdio.h>
#include <stdlib.h>

void xt_check_failed(const char *expr, const char *file, int line, const char *func) {
    fprintf(stderr, "xlatrain: internal error: %s:%d: %s: check '%s' failed; this is a bug in xlatrain, please report it with the command line and config\n",
            file, line, func, expr);
    fflush(NULL);
    abort();
}
