/* metrics.c — counters and sampled metrics; see metrics.h.
 *
 * The registry is per process, as torch_xla's is: each data-parallel worker
 * reports its own. It grows when a new name first appears (a handful of
 * names, all in the first step), so recording a value never allocates. */
#include "engine/metrics.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/check.h"

#define MAX_SAMPLES 1024

typedef struct {
    char name[48];
    int is_counter;
    xt_metric_unit unit;
    int64_t value;           /* counters */
    int64_t count;           /* metrics: samples ever added */
    double total;
    double samples[MAX_SAMPLES];  /* ring of the most recent */
    uint64_t first_ns, last_ns;
} metric;

static metric *g_metrics;
static int g_nmetrics, g_cap;

uint64_t xt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static metric *find(const char *name, int create, int is_counter) {
    for (int i = 0; i < g_nmetrics; i++)
        if (!strcmp(g_metrics[i].name, name)) return &g_metrics[i];
    if (!create) return NULL;
    XT_CHECK(strlen(name) < sizeof g_metrics->name); /* names are the program's own */
    if (g_nmetrics == g_cap) {
        int cap = g_cap ? 2 * g_cap : 32;
        metric *p = realloc(g_metrics, (size_t)cap * sizeof *p);
        if (!p) return NULL; /* out of memory: the metric is not recorded, the run goes on */
        g_metrics = p;
        g_cap = cap;
    }
    metric *m = &g_metrics[g_nmetrics++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->is_counter = is_counter;
    return m;
}

void xt_metric_add(const char *name, xt_metric_unit unit, double value) {
    metric *m = find(name, 1, 0);
    if (!m) return;
    uint64_t now = xt_now_ns();
    if (!m->count) m->first_ns = now;
    m->last_ns = now;
    m->unit = unit;
    m->samples[m->count % MAX_SAMPLES] = value;
    m->count++;
    m->total += value;
}

void xt_counter_add(const char *name, int64_t delta) {
    metric *m = find(name, 1, 1);
    if (m) m->value += delta;
}

int64_t xt_counter_get(const char *name) {
    metric *m = find(name, 0, 1);
    return m ? m->value : 0;
}

double xt_metric_total(const char *name, int64_t *count) {
    metric *m = find(name, 0, 0);
    if (count) *count = m ? m->count : 0;
    return m ? m->total : 0.0;
}

void xt_metrics_reset(void) { g_nmetrics = 0; } /* keeps the registry's memory for reuse */

/* torch_xla prints times as e.g. "013ms352.041us", "02s120ms003.000us". */
static void fmt_value(char *buf, size_t cap, xt_metric_unit unit, double v) {
    if (unit == XT_UNIT_TIME_NS) {
        double us = v / 1000.0;
        long long s = (long long)(us / 1e6);
        us -= (double)s * 1e6;
        long long ms = (long long)(us / 1e3);
        us -= (double)ms * 1e3;
        if (s) snprintf(buf, cap, "%02llds%03lldms%07.3fus", s, ms, us);
        else snprintf(buf, cap, "%03lldms%07.3fus", ms, us);
    } else if (unit == XT_UNIT_BYTES) {
        if (v >= 1048576.0) snprintf(buf, cap, "%.2fMB", v / 1048576.0);
        else if (v >= 1024.0) snprintf(buf, cap, "%.2fKB", v / 1024.0);
        else snprintf(buf, cap, "%.0fB", v);
    } else {
        snprintf(buf, cap, "%.2f", v);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void xt_metrics_report(FILE *out) {
    static const int pct[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};
    for (int i = 0; i < g_nmetrics; i++) {
        metric *m = &g_metrics[i];
        if (m->is_counter) continue;
        char a[64], b[64];
        double secs = m->last_ns > m->first_ns ? (double)(m->last_ns - m->first_ns) / 1e9 : 0.0;
        fmt_value(a, sizeof a, m->unit, m->total);
        fprintf(out, "Metric: %s\n  TotalSamples: %lld\n  Accumulator: %s\n", m->name, (long long)m->count, a);
        if (secs > 0) {
            fmt_value(b, sizeof b, m->unit, m->total / secs);
            fprintf(out, "  ValueRate: %s / second\n  Rate: %g / second\n", b, (double)m->count / secs);
        }
        int n = m->count < MAX_SAMPLES ? (int)m->count : MAX_SAMPLES;
        double sorted[MAX_SAMPLES];
        memcpy(sorted, m->samples, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
        fprintf(out, "  Percentiles: ");
        for (int k = 0; k < 9; k++) {
            int idx = (int)((double)pct[k] / 100.0 * (n - 1) + 0.5);
            fmt_value(a, sizeof a, m->unit, sorted[idx]);
            fprintf(out, "%d%%=%s%s", pct[k], a, k < 8 ? "; " : "\n");
        }
    }
    for (int i = 0; i < g_nmetrics; i++)
        if (g_metrics[i].is_counter) fprintf(out, "Counter: %s\n  Value: %lld\n", g_metrics[i].name, (long long)g_metrics[i].value);
}
