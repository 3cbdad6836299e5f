/* man_blocks.h — the parts of the man pages that are printed from tables.
 *
 * Is: `xlatrain --man-block NAME` writes the roff of one generated block:
 *   keys    every config key (config/config_keys.c): type, default, help
 *   models  every model --list-models finds: parameters, input, description
 * man/xlatrain.yaml.5 holds each between the comment lines
 *   .\" BEGIN GENERATED NAME   and   .\" END GENERATED NAME
 * `make man` (man/regen.sh) puts the binary's output there, and
 * tests/test_docs.c fails when the committed text differs from it: a key
 * added to the table without `make man` is a failing test, not a stale page.
 * Is not: the rest of the pages (written by hand, checked by name against
 * the tables in tests/test_docs.c).
 */
#ifndef XT_MAN_BLOCKS_H
#define XT_MAN_BLOCKS_H

#include <stdio.h>

/* The block names, NULL-terminated: "keys", "models". */
extern const char *const xt_man_block_names[];

/* Write block `name` to out. Returns 0; XT_EUSAGE for an unknown name;
 * XT_ERUNTIME when no model is found or memory runs out. Prints no message:
 * the caller names the problem. */
int xt_man_block(const char *name, FILE *out);

/* Write text as roff running text: backslashes and minus signs escaped, a
 * line that would start with '.' or '\'' made literal. */
void xt_man_put_text(const char *text, FILE *out);

#endif
