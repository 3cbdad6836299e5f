/* config_keys.h — the FLAGS key table (internal to config*.c).
 *
 * Each key is declared once in config_keys.c: dotted name, type, where it
 * lives in xt_config, default, range and help. Parsing, --set, defaults,
 * "did you mean" hints, --dry-run printing and `xlatrain --help` all read
 * this one table; a new key is one new row.
 */
#ifndef XT_CONFIG_KEYS_H
#define XT_CONFIG_KEYS_H

#include <stddef.h>
#include <stdio.h>
#include <yaml.h>

#include "config/config_types.h"

typedef enum {
    XT_K_INT,     /* int */
    XT_K_I64,     /* long long */
    XT_K_FLOAT,   /* double */
    XT_K_BOOL,    /* int 0/1 */
    XT_K_STR,     /* char[size] */
    XT_K_ENUM,    /* int: index into choices */
    XT_K_TRI,     /* int: auto = -1, false = 0, true = 1 */
    XT_K_SUBSET,  /* long[2]: [start, end), end -1 = to the end */
    XT_K_FPAIR,   /* two doubles at off and off2 */
    XT_K_IPAIR,   /* int[2] at off, each in [min, max] */
    XT_K_MODEL,   /* a spec path or an inline spec: handled by config.c */
} xt_key_type;

enum {
    XT_KF_MIN_OPEN = 1,  /* value must be > min (not >=) */
    XT_KF_MAX_OPEN = 2,  /* value must be < max */
    XT_KF_AUTO = 4,      /* FLOAT, INT: "auto" is accepted and stored as -1 */
    XT_KF_COMPUTED = 8,  /* default is computed in config.c; def only documents it */
};

typedef struct xt_key {
    const char *name;            /* "batch_size", "optimizer.name" */
    xt_key_type type;
    size_t off, off2, size;      /* offsetof in xt_config; off2 for FPAIR; size for STR */
    const char *def;             /* the default as YAML text (or prose when COMPUTED) */
    double min, max;             /* numeric range (each element for pairs) */
    unsigned flags;              /* XT_KF_* */
    const char *const *choices;  /* ENUM: NULL-terminated names */
    const char *help;            /* one line for --help and man/xlatrain.yaml.5 (make man) */
} xt_key;

#define XT_NKEYS_MAX 96
extern const xt_key xt_keys[];
extern const int xt_nkeys;

/* Index of the key with this exact dotted name, or -1. */
int xt_key_find(const char *name);
/* Is `name` a group of dotted keys ("optimizer")? */
int xt_key_is_group(const char *name);

/* Store node v (a value from a YAML document) into key k of c. On a type or
 * range problem returns -1 with the reason in why ("expected an integer, got
 * 'abc'"); the caller adds the position. Not for XT_K_MODEL. */
int xt_key_set(const xt_key *k, xt_config *c, yaml_document_t *doc, const yaml_node_t *v, char *why, size_t cap);
/* The same for a scalar's text (`plain` = unquoted). */
int xt_key_set_text(const xt_key *k, xt_config *c, const char *text, int plain, char *why, size_t cap);
/* Set every key that has a literal default (all but XT_KF_COMPUTED and the
 * model) by reading its `def` text as YAML. Returns 0, or -1 with the key
 * and the reason in why (a broken table; a test checks it). */
int xt_keys_apply_defaults(xt_config *c, char *why, size_t cap);
/* Write k's value in c as a YAML value (no key, no newline). */
void xt_key_print_value(const xt_key *k, const xt_config *c, FILE *out);
/* "int 1..65536", "sgd|adam|adamw", "[start, end]" — for --help and docs. */
const char *xt_key_type_doc(const xt_key *k, char *buf, size_t cap);

#endif
