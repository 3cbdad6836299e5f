/* store.h — device data: named buffers the graph's leaves refer to by slot.
 *
 * Parameters, buffers (BN running stats) and optimizer state live in ONE
 * flat, 64-byte aligned block, each slot at an offset (so the optimizer
 * update, a checkpoint and a replica broadcast are walks over one array).
 * Input slots (the batch) are bound to caller-owned memory every step.
 * Slots are declared first, then xt_store_finalize allocates the block.
 */
#ifndef XT_STORE_H
#define XT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* XT_BF16 is never a slot's dtype: only the engine's cast nodes produce it
 * (engine/pass_precision.c), stored as the top 16 bits of a float32. Nor is
 * XT_U8: a max pool's argmax (the kept cell of each window) only. */
typedef enum { XT_F32 = 0, XT_I32 = 1, XT_BF16 = 2, XT_U8 = 3 } xt_dtype;

/* Bytes of one element of a dtype: the one place that knows it. */
static inline size_t xt_dtype_size(int dtype) {
    switch (dtype) {
    case XT_F32: return sizeof(float);
    case XT_I32: return sizeof(int32_t);
    case XT_BF16: return sizeof(uint16_t);
    case XT_U8: return sizeof(uint8_t);
    default: return 0;
    }
}

/* The alignment rule for packed float blocks: n floats rounded up to whole
 * 64-byte cache lines. The store's slots and the all-reduce's gradient
 * pieces both use it, so a gradient piece and its parameter line up. */
#define XT_LINE_FLOATS 16
static inline int64_t xt_line_floats(int64_t n) { return (n + XT_LINE_FLOATS - 1) & ~(int64_t)(XT_LINE_FLOATS - 1); }
typedef enum { XT_SLOT_PARAM, XT_SLOT_BUFFER, XT_SLOT_STATE, XT_SLOT_INPUT } xt_slot_kind;

typedef struct xt_slot {
    char name[128];         /* state_dict name: "conv1.weight", "optim.momentum.conv1.weight" */
    xt_slot_kind kind;
    int dtype;              /* xt_dtype */
    int rank;
    int32_t shape[4];
    int64_t numel;
    size_t offset;          /* in floats into the block (not for inputs) */
    void *data;             /* resolved after finalize / bind */
} xt_slot;

typedef struct xt_store {
    xt_slot *slots;
    int n, cap;
    float *block;           /* all non-input slots */
    size_t block_floats;
    int finalized;
    uint64_t bytes_to_device;  /* metrics: bytes bound as inputs */
} xt_store;

void xt_store_init(xt_store *s);
void xt_store_free(xt_store *s);
/* Declare a slot; returns its id (>= 0) or -1 (duplicate name, finalized, OOM). */
int xt_store_add(xt_store *s, const char *name, xt_slot_kind kind, int dtype, int rank, const int32_t *shape);
/* Allocate the block (zeroed). */
int xt_store_finalize(xt_store *s, xt_err *e);
/* Point an input slot at caller memory for the next step(s). */
/* Change an input slot's shape (e.g. a final partial batch): leaves hash
 * their shape, so the next trace gets (or reuses) the matching executable. */
void xt_store_set_input_shape(xt_store *s, int slot, int rank, const int32_t *shape);
void xt_store_bind(xt_store *s, int slot, void *data);
int xt_store_find(const xt_store *s, const char *name);
static inline float *xt_store_f32(const xt_store *s, int slot) { return (float *)s->slots[slot].data; }

#endif
