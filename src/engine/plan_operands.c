/* plan_operands.c — giving a node of a compiled plan a new operand list;
 * see plan_operands.h.
 *
 * Its own file, not compile.c's, because the passes compile.c runs call it:
 * here both use it from below, and compile.c is only the passes' caller. */
#include <stdlib.h>
#include <string.h>

#include "engine/plan_operands.h"

int xt_plan_set_operands(xt_plan *p, int node, const int32_t *ops, int n) {
    int32_t list[8]; /* copied first: ops may point into the array realloc moves */
    if (n < 0 || n > (int)(sizeof list / sizeof list[0])) return -1;
    memcpy(list, ops, sizeof *list * (size_t)n);
    int32_t *grown = realloc(p->operands, sizeof *grown * ((size_t)p->nops + (size_t)n));
    if (!grown) return -1;
    p->operands = grown;
    memcpy(grown + p->nops, list, sizeof *list * (size_t)n);
    p->nodes[node].in_off = p->nops;
    p->nodes[node].nin = n;
    p->nops += n;
    return 0;
}
