/* node.h — one IR node of the lazy graph (plain data) and its element count.
 *
 * Is: the record every part of the engine reads (the graph, autodiff, the
 * passes, the executor) and xt_numel (node.c). Is not: the ops and their
 * constructors (graph.h), the graph that holds the nodes (internal.h).
 *
 * Why apart from graph.h: internal.h's inline helpers count a node's
 * elements and graph.c includes internal.h; with xt_numel in graph.c the
 * two would lean on each other. Here both use it from below.
 */
#ifndef XT_ENGINE_NODE_H
#define XT_ENGINE_NODE_H

#include <stdint.h>

#define XT_MAX_RANK 4

/* One IR node: plain data, valid across fork(), comparable with memcmp
 * after zero-initialisation. */
typedef struct xt_node {
    uint64_t hash;          /* structural: op, attrs, dtype, shape, operand hashes */
    int16_t op;             /* xt_op (graph.h) */
    int8_t dtype;           /* xt_dtype (store.h) */
    int8_t rank;
    int32_t shape[XT_MAX_RANK];
    int32_t nin;            /* operands: g->operands[in_off .. in_off+nin) */
    int32_t in_off;
    int32_t iattr[6];
    float fattr[2];
} xt_node;

/* Elements of the node's shape (1 for rank 0). */
int64_t xt_numel(const xt_node *n);

#endif
