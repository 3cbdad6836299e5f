/* node.c — a node's element count; see node.h. */
#include "engine/node.h"

int64_t xt_numel(const xt_node *n) {
    int64_t k = 1;
    for (int i = 0; i < n->rank; i++) k *= n->shape[i];
    return k;
}
