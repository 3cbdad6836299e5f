/* monitor.h — the monitored metric (early_stopping.monitor) after each
 * epoch: its best value and epoch, and the epochs since it last improved,
 * which drive early stopping and checkpoint.keep_best. The state lives in
 * xt_run and in every checkpoint, so a resumed run stops at the same epoch
 * as an uninterrupted one.
 * Not here: writing best.safetensors (checkpoint.c) or deciding when to
 * evaluate (loop.c). */
#ifndef XT_RUN_MONITOR_H
#define XT_RUN_MONITOR_H

#include "run/run.h"

/* "test_accuracy" or "test_loss". */
const char *xt_monitor_name(const xt_config *c);
/* 1 when a larger value is better (mode max, or auto with test_accuracy). */
int xt_monitor_maximize(const xt_config *c);
/* Record epoch `epoch` (1-based): the monitored one of test accuracy
 * (percent) and test loss. Returns 1 when it improved on the best by more
 * than min_delta (the first finite value always does; NaN never does). */
int xt_monitor_update(xt_run *r, double test_acc, double test_loss, int epoch);
/* Early stopping's verdict: patience epochs have passed without improvement. */
int xt_monitor_should_stop(const xt_run *r);

#endif
