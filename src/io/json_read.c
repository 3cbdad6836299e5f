/* json_read.c — untrusted JSON into a jansson tree under a heap budget; see
 * json_read.h. The budget is counted by allocation functions installed into
 * jansson once per process: they charge malloc_usable_size() of every block
 * to the calling thread's armed budget (none armed: plain malloc), so they
 * can free blocks that jansson allocated before them, and other threads
 * using jansson at the same time are not charged. */
#include "io/json_read.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct budget {
    size_t limit, used;
    int exceeded;
} budget;

static _Thread_local budget *t_budget; /* armed for the duration of one xt_json_read */

static void *counted_malloc(size_t n) {
    budget *b = t_budget;
    if (b && (n > b->limit || b->used > b->limit - n)) {
        b->exceeded = 1;
        return NULL;
    }
    void *p = malloc(n);
    if (p && b) b->used += malloc_usable_size(p);
    return p;
}

static void counted_free(void *p) {
    budget *b = t_budget;
    if (p && b) {
        size_t n = malloc_usable_size(p);
        b->used = n < b->used ? b->used - n : 0;
    }
    free(p);
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void install(void) { json_set_alloc_funcs(counted_malloc, counted_free); }

json_t *xt_json_read(const void *text, size_t len, size_t budget_bytes, xt_json_read_error *err) {
    pthread_once(&g_once, install);
    budget b = {.limit = budget_bytes};
    json_error_t je;
    t_budget = &b;
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    t_budget = NULL;
    if (root) return root;
    err->offset = je.position > 0 ? (size_t)je.position : 0;
    if (b.exceeded)
        snprintf(err->msg, sizeof err->msg, "the JSON tree needs more than %zu MiB of memory", budget_bytes >> 20);
    else
        snprintf(err->msg, sizeof err->msg, "%s", je.text);
    return NULL;
}

const char *xt_json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "value";
}
