/* config.h — the FLAGS file: YAML -> xt_config, with defaults, --set
 * overrides and strict validation.
 *
 * Every key is declared once in the key table in config_keys.c (name, type, default,
 * range, help), which drives parsing, --set, validation, "did you mean" hints,
 * --dry-run printing and the key reference in man/xlatrain.yaml.5 (generated
 * from the table by `make man`).
 * Errors name file:line:col (the YAML node's position; for --set, "--set
 * KEY=VALUE"), what is wrong and the fix, with exit code XT_EUSAGE.
 */
#ifndef XT_CONFIG_H
#define XT_CONFIG_H

#include <stdio.h>

#include "config/config_types.h"
#include "config/spec.h"
#include "util/err.h"

/* Defaults for every key (no file read). */
void xt_config_defaults(xt_config *c);

/* Load `path`, apply the `nset` overrides "key=value" (dotted keys for nested
 * maps), resolve the model spec and validate. Returns 0 or an XT_E* code.
 * `path` may be NULL (defaults and overrides only). On failure nothing is
 * left to free; on success call xt_config_free. */
int xt_config_load(xt_config *c, const char *path, const char *const *sets, int nset, xt_err *e);

/* xt_config_load on `len` bytes of YAML already in memory: `name` stands in
 * for the path (messages, the config's name, `model:` paths relative to its
 * directory). The same checks and limits as a file; for the fuzzer
 * (tests/fuzz/fuzz_config.c) and callers that build a config in memory. */
int xt_config_load_buffer(xt_config *c, const char *name, const char *text, size_t len, const char *const *sets,
                          int nset, xt_err *e);

/* Print the resolved configuration as YAML (every key, sorted as the key table). */
void xt_config_print(const xt_config *c, FILE *out);

/* Every key with its type, default and a line of help (for --help). */
void xt_config_print_keys(FILE *out);

/* Free what the config owns (the spec's layers). */
void xt_config_free(xt_config *c);

/* Stable 64-bit hash of the settings that make a checkpoint compatible
 * (the model spec: layer kinds, names and shapes). */
unsigned long long xt_config_model_hash(const xt_config *c);

#endif
