/* monitor.c — the monitored metric's best value, best epoch and patience
 * counter (see monitor.h). The rule is Keras' EarlyStopping: an epoch
 * improves when it beats the best by more than min_delta in the monitor's
 * direction; otherwise the wait grows, and at `patience` the run stops.
 * A NaN or infinite value is never an improvement, so it can never become
 * the best (and a diverging evaluation runs the patience down). */
#include "run/monitor.h"

#include <math.h>

const char *xt_monitor_name(const xt_config *c) { return c->monitor == XT_MON_TEST_LOSS ? "test_loss" : "test_accuracy"; }

int xt_monitor_maximize(const xt_config *c) {
    if (c->monitor_mode != XT_MODE_AUTO) return c->monitor_mode == XT_MODE_MAX;
    return c->monitor == XT_MON_TEST_ACCURACY;
}

int xt_monitor_update(xt_run *r, double test_acc, double test_loss, int epoch) {
    const xt_config *c = r->c;
    double v = c->monitor == XT_MON_TEST_LOSS ? test_loss : test_acc;
    int better = 0;
    if (isfinite(v)) {
        if (isnan(r->mon_best)) better = 1;
        else if (xt_monitor_maximize(c)) better = v - c->min_delta > r->mon_best;
        else better = v + c->min_delta < r->mon_best;
    }
    if (better) {
        r->mon_best = v;
        r->mon_best_epoch = epoch;
        r->mon_wait = 0;
    } else {
        r->mon_wait++;
    }
    return better;
}

int xt_monitor_should_stop(const xt_run *r) { return r->c->patience > 0 && r->mon_wait >= r->c->patience; }
