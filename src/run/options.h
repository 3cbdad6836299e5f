/* options.h — the command-line option table: every option xlatrain takes,
 * whether it takes a value, and its --help text.
 *
 * Is: data. main.c parses argv against it and prints --help's option list and
 * the bash completion from it; tests/test_docs.c checks that the man page's
 * OPTIONS documents exactly these options. A new option is one row here,
 * its handling in main.c and a .TP entry in man/xlatrain.1.
 * Is not: what an option does (main.c and the run/ modules) or the argument
 * rules between options (parse_args in main.c).
 */
#ifndef XT_OPTIONS_H
#define XT_OPTIONS_H

enum { XT_OPT_FLAG, XT_OPT_VALUE };

typedef struct xt_option {
    const char *name;  /* "--config" */
    int kind;          /* XT_OPT_FLAG or XT_OPT_VALUE */
    const char *arg;   /* the value as --help names it ("FILE"), NULL for a flag */
    const char *help;  /* --help's text, lines split by '\n'; NULL = not in --help (maintainers' options) */
} xt_option;

#define XT_NOPTIONS_MAX 32 /* a bound for arrays of their names */
extern const xt_option xt_options[];
extern const int xt_noptions;

#endif
