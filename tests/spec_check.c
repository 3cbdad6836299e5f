/* spec_check.c — see spec_check.h. */
#include "spec_check.h"

#include <string.h>

#include "test.h"

int load_text(const char *text, xt_spec *s, xt_err *e, const char **path) {
    const char *p = test_write_file("m.yaml", text);
    if (path) *path = p;
    return xt_spec_load(s, p, e);
}

void spec_err(const char *file, int at, const char *text, int line, int col, const char *n1, const char *n2) {
    xt_spec s;
    xt_err e = {0};
    const char *path;
    int rc = load_text(text, &s, &e, &path);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d:%d: ", path, line, col);
    if (rc != XT_EUSAGE) test_fail_at(file, at, "rc %d, want %d (msg: %s)", rc, XT_EUSAGE, e.msg);
    if (e.code != XT_EUSAGE) test_fail_at(file, at, "e.code %d", e.code);
    if (strncmp(e.msg, prefix, strlen(prefix))) test_fail_at(file, at, "want prefix \"%s\" in: %s", prefix, e.msg);
    if (n1 && !strstr(e.msg, n1)) test_fail_at(file, at, "want \"%s\" in: %s", n1, e.msg);
    if (n2 && !strstr(e.msg, n2)) test_fail_at(file, at, "want \"%s\" in: %s", n2, e.msg);
    if (strchr(e.msg, '\n')) test_fail_at(file, at, "message has a newline: %s", e.msg);
    if (s.layers || s.nlayers) test_fail_at(file, at, "spec not freed after an error");
    xt_spec_free(&s);
}
