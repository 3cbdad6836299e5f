/* store.c — device data slots in one flat block; see store.h. */
#include "engine/store.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void xt_store_init(xt_store *s) { memset(s, 0, sizeof *s); }

void xt_store_free(xt_store *s) {
    free(s->slots);
    free(s->block);
    memset(s, 0, sizeof *s);
}

int xt_store_find(const xt_store *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->slots[i].name, name)) return i;
    return -1;
}

int xt_store_add(xt_store *s, const char *name, xt_slot_kind kind, int dtype, int rank, const int32_t *shape) {
    if (s->finalized || rank < 0 || rank > 4 || !xt_dtype_size(dtype) || strlen(name) >= sizeof s->slots[0].name ||
        xt_store_find(s, name) >= 0)
        return -1;
    /* Copy the caller's data before the array may move: callers pass the
     * name and shape of an existing slot (an optimizer state shaped like
     * its parameter), which realloc below would free. */
    xt_slot sl;
    memset(&sl, 0, sizeof sl);
    snprintf(sl.name, sizeof sl.name, "%s", name);
    sl.kind = kind;
    sl.dtype = dtype;
    sl.rank = rank;
    sl.numel = 1;
    for (int i = 0; i < rank; i++) {
        sl.shape[i] = shape[i];
        sl.numel *= shape[i];
    }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        xt_slot *p = realloc(s->slots, (size_t)cap * sizeof *p);
        if (!p) return -1;
        s->slots = p;
        s->cap = cap;
    }
    s->slots[s->n] = sl;
    return s->n++;
}

int xt_store_finalize(xt_store *s, xt_err *e) {
    size_t off = 0;
    for (int i = 0; i < s->n; i++) {
        xt_slot *sl = &s->slots[i];
        if (sl->kind == XT_SLOT_INPUT) continue;
        sl->offset = off;
        off += (size_t)xt_line_floats(sl->numel);  /* 64-byte aligned slots */
    }
    s->block_floats = off;
    if (off) {
        s->block = aligned_alloc(64, off * sizeof(float));
        if (!s->block) return xt_fail(e, XT_ERUNTIME, "out of memory allocating %zu parameter bytes", off * sizeof(float));
        memset(s->block, 0, off * sizeof(float));
    }
    for (int i = 0; i < s->n; i++)
        if (s->slots[i].kind != XT_SLOT_INPUT) s->slots[i].data = s->block + s->slots[i].offset;
    s->finalized = 1;
    return 0;
}

void xt_store_bind(xt_store *s, int slot, void *data) {
    s->slots[slot].data = data;
    s->bytes_to_device += (uint64_t)s->slots[slot].numel * xt_dtype_size(s->slots[slot].dtype);
}

void xt_store_set_input_shape(xt_store *s, int slot, int rank, const int32_t *shape) {
    xt_slot *sl = &s->slots[slot];
    sl->rank = rank;
    sl->numel = 1;
    for (int i = 0; i < rank; i++) {
        sl->shape[i] = shape[i];
        sl->numel *= shape[i];
    }
}
