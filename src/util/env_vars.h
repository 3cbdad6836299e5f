/* env_vars.h — every environment variable xlatrain reads, as a table.
 *
 * Is: the list --help prints its environment section from, and the one
 * tests/test_docs.c holds against the code (every variable a getenv under
 * src/ reads has a row; the test finds them by their literal names) and
 * against the man page's ENVIRONMENT (each row documented there, nothing
 * documented that is not a row). A new getenv is one new row here and one
 * .TP entry in man/xlatrain.1.
 * Is not: where the variables are read; each reader calls getenv itself.
 */
#ifndef XT_ENV_VARS_H
#define XT_ENV_VARS_H

typedef struct xt_env_var {
    const char *name;
    const char *reader; /* who reads it: a src/ file, or the library that does */
    const char *help;   /* --help's text, lines split by '\n'; NULL = man page only */
} xt_env_var;

extern const xt_env_var xt_env_vars[];
extern const int xt_nenv_vars;

#endif
