/* log.c — what a run prints: PyTorch/XLA's training-update lines with
 * xm.RateTracker's smoothed rate, a live progress bar on a terminal (never
 * in a pipe), whole-line writes that workers can share, and metrics.jsonl.
 * Not here: what the lines say about the run (loop.c, finish.c). */
#include "run/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/metrics.h"
#include "io/atomic.h"

double xt_wall_s(void) { return (double)xt_now_ns() / 1e9; }

/* Port of torch_xla.test.test_utils' RateTracker (smooth factor 0.4). */
void xt_rate_init(xt_rate *t) {
    memset(t, 0, sizeof *t);
    t->smooth = 0.4;
    t->start = t->partial_time = xt_wall_s();
}
void xt_rate_add(xt_rate *t, double count) { t->count += count; }
double xt_rate_rate(xt_rate *t) {
    double now = xt_wall_s(), delta = now - t->partial_time, rate = 0.0;
    if (delta > 0) {
        double cur = t->count / delta;
        rate = t->have_partial_rate ? (1 - t->smooth) * cur + t->smooth * t->partial_rate : cur;
        t->partial_count += t->count;
        t->count = 0;
        t->partial_time = now;
        t->partial_rate = rate;
        t->have_partial_rate = 1;
    }
    return rate;
}
double xt_rate_global(const xt_rate *t) {
    double delta = xt_wall_s() - t->start;
    return delta > 0 ? (t->partial_count + t->count) / delta : 0.0;
}

void xt_out(const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    xt_progress_clear();
    fflush(stdout);
    for (int off = 0; off < n;) {
        ssize_t w = write(STDOUT_FILENO, line + off, (size_t)(n - off));
        if (w <= 0) break;
        off += (int)w;
    }
}

void xt_log_train_update(int ordinal, long long step, double loss, double rate, double global_rate) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char ts[16];
    strftime(ts, sizeof ts, "%H:%M:%S", &tm);
    xt_out("[xla:%d](%lld) Loss=%.5f Rate=%.2f GlobalRate=%.2f Time=%s", ordinal, step, loss, rate, global_rate, ts);
}

static int g_progress_shown;

int xt_progress_enabled(const xt_config *c) {
    if (c->progress == 0) return 0;
    if (c->progress == 1) return 1;
    return isatty(STDERR_FILENO) && isatty(STDOUT_FILENO);
}

void xt_progress(int epoch, int nepochs, long long done, long long total, double rate) {
    static double last;
    double now = xt_wall_s();
    if (now - last < 0.1 && done < total) return; /* 10 redraws a second are plenty for a person */
    last = now;
    char bar[31];
    int fill = total > 0 ? (int)(30 * done / total) : 0;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[30] = 0;
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    fprintf(stderr, "\repoch %d/%d [%s] %3d%% %8.0f samples/s ETA %02d:%02d ", epoch, nepochs, bar,
            total > 0 ? (int)(100 * done / total) : 0, rate, (int)eta / 60, (int)eta % 60);
    fflush(stderr);
    g_progress_shown = 1;
}

void xt_progress_clear(void) {
    if (!g_progress_shown) return;
    fprintf(stderr, "\r%78s\r", "");
    fflush(stderr);
    g_progress_shown = 0;
}

int xt_append_jsonl(const char *outdir, const char *line, xt_err *e) {
    char path[700], buf[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", outdir);
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    return xt_append_file(path, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1), e);
}
