/* spec_check.h — helpers shared by the layer-spec tests (test_spec.c,
 * test_spec_block.c): load a spec from text, and expect one error. */
#ifndef XT_TESTS_SPEC_CHECK_H
#define XT_TESTS_SPEC_CHECK_H

#include "config/spec.h"

/* Write `text` as <tmp>/m.yaml and load it; *path (if given) gets the file. */
int load_text(const char *text, xt_spec *s, xt_err *e, const char **path);

/* The spec must fail with XT_EUSAGE, the message must start with
 * "<file>:<line>:<col>: " and contain both needles (NULL: none), on one line. */
#define SPEC_ERR(text, line, col, n1, n2) spec_err(__FILE__, __LINE__, text, line, col, n1, n2)
void spec_err(const char *file, int at, const char *text, int line, int col, const char *n1, const char *n2);

#endif
