/* plan_operands.h — giving a node of a compiled plan a new operand list
 * (plan_operands.c), for the passes that rewrite what a node reads.
 *
 * Is: the one edit of a plan's graph that several passes share, below them
 * and below compile.c, which runs them. Is not: reading operands
 * (xt_plan_operand, plan.h), nor the passes themselves.
 */
#ifndef XT_ENGINE_PLAN_OPERANDS_H
#define XT_ENGINE_PLAN_OPERANDS_H

#include "engine/plan.h"

/* Node `node` reads ops[0..n) from now on, a new list at the end of
 * p->operands (ops may point into it); 0, or -1 without memory. */
int xt_plan_set_operands(xt_plan *p, int node, const int32_t *ops, int n);

#endif
