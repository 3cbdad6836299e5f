/* choice.h — the engine's table of kernel choices, the choice cache on disk
 * (choice.c) and how a compile chooses (pass_choose.c). Engine-internal. */
#ifndef XT_ENGINE_CHOICE_H
#define XT_ENGINE_CHOICE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct k_op_desc;

/* How a node's implementation was decided. */
enum xt_chose { XT_CHOSE_NONE = 0, XT_CHOSE_RULE, XT_CHOSE_ONLY, XT_CHOSE_TIMED, XT_CHOSE_CACHED, XT_CHOSE_AGREED };
/* How a compile chooses (xt_compile_opts.choose; NULL: today's rules). */
typedef struct xt_choose_opts xt_choose_opts;

typedef struct xt_choice_entry {
    uint64_t key;           /* xt_choice_key of the node's description */
    uint8_t impl;           /* K_IMPL_* */
    uint8_t agreed;         /* every worker uses it (from worker 0, a checkpoint, or a run of one process) */
    uint8_t from;           /* enum xt_chose (plan.h) */
    uint8_t saved;          /* written to the cache file */
    float us;               /* the winner's time per call (< 0: unknown) */
} xt_choice_entry;

typedef struct xt_choices {
    xt_choice_entry *e;
    int n, cap;
    /* the cache on disk */
    int cache_state;        /* 0 not opened, 1 usable, -1 none (no directory) */
    int cache_read;
    char cache_path[1200];
    char cpu[512];
    xt_choice_entry *cached;
    int ncached;
    /* counts since the engine started, for the log */
    int timed_candidates, cache_hits, timed_nodes;
} xt_choices;

uint64_t xt_choice_key(const struct k_op_desc *d);
/* The instruction set the keys are made at now ("avx512+avx512bf16", "avx2", "generic", ...). */
void xt_choice_isa_name(char *buf, size_t cap);
void xt_choice_describe(const struct k_op_desc *d, char *buf, size_t cap);
xt_choice_entry *xt_choices_find(xt_choices *t, uint64_t key);
xt_choice_entry *xt_choices_put(xt_choices *t, uint64_t key, int impl, float us, int agreed, int from);
void xt_choices_free(xt_choices *t);
/* "key=impl;..." of the agreed entries (malloc'd), and back (entries added agreed; their count, or -1). */
char *xt_choices_text(const xt_choices *t);
int xt_choices_load_text(xt_choices *t, const char *text);
void xt_choices_cache_open(xt_choices *t);
int xt_choices_cache_get(xt_choices *t, uint64_t key, int *impl, float *us);
int xt_choices_cache_save(xt_choices *t);

/* How a compile chooses (xt_compile_opts.choose). */
struct xt_choose_opts {
    int measured;           /* 0: today's rules (kernel_choice: fixed) */
    xt_choices *table;
    /* Several workers: agree sums a vector over them in rank order (worker 0's
     * values, the others' zeros: a broadcast), NULL in a run of one process. */
    int (*agree)(void *ctx, double *v, int n, xt_err *e);
    void *agree_ctx;
    int leader;             /* this process times and decides (worker 0 of host 0) */
    int skew;               /* tests: synthetic times; 1: the leader prefers the last candidate, the others the
                               first; 2: every process the last */
    int probe;              /* a probing compile (bf16's fp32 candidates): no exchange, no log */
    int quiet;              /* no log line per node */
};

#endif
