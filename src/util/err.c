/* err.c — error records for library code; see err.h. */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int xt_fail(xt_err *e, int code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        /* one line only: a stray newline from a library message would break greps */
        for (char *p = e->msg; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        e->code = code;
    }
    return code;
}

const char *xt_commas(char *buf, unsigned long long n) {
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%llu", n);
    int o = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}
