/* train_internal.h — compatibility only: the old all-in-one run header, now
 * just run/run.h (xt_run and its setup) and run/step.h (bind, trace, train
 * step). Kept for tests written against it on other branches
 * (tests/test_engine_safety.c, tests/test_golden_steps.c); new code includes
 * the two headers directly. Remove once nothing includes this file. */
#ifndef XT_RUN_TRAIN_INTERNAL_H
#define XT_RUN_TRAIN_INTERNAL_H

#include "run/run.h"
#include "run/step.h"

#endif
