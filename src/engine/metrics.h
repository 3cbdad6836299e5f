/* metrics.h — counters and sampled metrics, reported in the format of
 * torch_xla.debug.metrics.metrics_report():
 *
 *   Metric: CompileTime
 *     TotalSamples: 2
 *     Accumulator: 120ms352.041us
 *     ValueRate: 885ms442.596us / second
 *     Rate: 15.0094 / second
 *     Percentiles: 1%=013ms352.041us; 5%=...; 99%=107ms000.000us
 *   Counter: CachedCompile
 *     Value: 99
 *
 * Per process (each data-parallel worker has its own). Names are created on
 * first use; a metric keeps its last 1024 samples for the percentiles.
 */
#ifndef XT_METRICS_H
#define XT_METRICS_H

#include <stdint.h>
#include <stdio.h>

typedef enum { XT_UNIT_TIME_NS, XT_UNIT_BYTES, XT_UNIT_COUNT } xt_metric_unit;

void xt_metric_add(const char *name, xt_metric_unit unit, double value);
void xt_counter_add(const char *name, int64_t delta);
int64_t xt_counter_get(const char *name);
/* Sum and count of a metric's samples (0 when absent). */
double xt_metric_total(const char *name, int64_t *count);
void xt_metrics_report(FILE *out);
void xt_metrics_reset(void);
/* Monotonic clock in nanoseconds. */
uint64_t xt_now_ns(void);

#endif
