/* log.c — what a run prints: PyTorch/XLA's training-update lines with
 * xm.RateTracker's smoothed rate, a live progress bar on a terminal (never
 * in a pipe), whole-line writes that workers can share and that never hold
 * up a stop, and metrics.jsonl.
 * Not here: what the lines say about the run (loop.c, finish.c). */
#include "run/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/metrics.h"
#include "io/atomic.h"
#include "io/jsonw.h"

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

/* ---- writes that never hold up a stop -------------------------------------
 * stdout can be a pipe or a pty whose reader has stopped reading: mpirun
 * stops forwarding its ranks' output as soon as it is signalled, and a
 * terminal held by Ctrl-S or a pager nobody scrolls does the same. A plain
 * write() would then block the worker for good, before the checkpoint that
 * the stop asked for. So a line waits for room in slices of 100 ms, asking
 * between them whether a stop was asked for; once one was, what the reader
 * cannot take at once is dropped and counted: the checkpoint and
 * results.json matter more than lines nobody reads. A run that is not
 * stopping waits for its reader as long as it takes, and loses nothing. */
static int (*g_stop_asked)(void *ctx);
static void *g_stop_ctx;
static long long g_dropped;
static int g_cut; /* a line was cut short: the note starts on a line of its own */

void xt_out_watch_stop(int (*stop_asked)(void *ctx), void *ctx) {
    g_stop_asked = stop_asked;
    g_stop_ctx = ctx;
}

static int g_stopping; /* latched: a stop, once asked for, stays asked for */

void xt_out_stopping(void) { g_stopping = 1; }

static int stop_asked(void) {
    if (!g_stopping && g_stop_asked && g_stop_asked(g_stop_ctx)) g_stopping = 1;
    return g_stopping;
}

/* fd's non-blocking twin: a second open file description of the same pipe,
 * FIFO or terminal (reopened through /proc/self/fd/N) with O_NONBLOCK set on
 * it alone. Setting O_NONBLOCK on fd itself would change it for everyone
 * who shares the description: the shell, the other workers, mpirun. poll()
 * alone is not enough: a pty polls writable with less room than a line, and
 * a write that then blocks would wait for good in a worker that no signal
 * interrupts. -1 where there is none: a regular file never blocks, and a
 * socket cannot be reopened (it keeps poll and a blocking write). Opened on
 * first use by each process that writes (close-on-exec). */
static int nonblocking_twin(int fd) {
    static int twin[3] = {-2, -2, -2};
    if (fd < 0 || fd > 2) return -1;
    if (twin[fd] == -2) {
        struct stat st;
        char path[32];
        twin[fd] = -1;
        if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            twin[fd] = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        }
    }
    return twin[fd];
}

/* Write all of buf to fd unless a stop is asked for while fd has no room;
 * a line cut short that way is counted as dropped. Each write is at most
 * PIPE_BUF bytes, so a line written to a pipe stays whole (atomic) when
 * workers share it. Without a twin, the write waits for poll's word that
 * there is room, which a pipe keeps (a free page) and a socket mostly. */
static void put(int fd, const char *buf, size_t len) {
    int twin = nonblocking_twin(fd), wait = twin < 0;
    for (size_t off = 0; off < len;) {
        if (wait) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int ready = poll(&p, 1, stop_asked() ? 0 : 100);
            if (ready == 0 || (ready < 0 && errno == EINTR)) { /* no room yet, or a signal: ask again */
                if (ready == 0 && stop_asked()) {
                    g_dropped++;
                    if (off) g_cut = 1;
                    return;
                }
                continue;
            }
            /* room, or an error the write itself reports (a closed or bad fd) */
        }
        size_t chunk = len - off < PIPE_BUF ? len - off : PIPE_BUF;
        ssize_t w = write(twin >= 0 ? twin : fd, buf + off, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* full: wait for room, or drop */
            wait = 1;
            continue;
        }
        if (w <= 0) return;
        off += (size_t)w;
        wait = twin < 0;
    }
}

void xt_out_note_dropped(int rank) {
    if (!g_dropped) return;
    char msg[256], who[32] = "";
    if (rank >= 0) snprintf(who, sizeof who, "[xla:%d] ", rank);
    int n = snprintf(msg, sizeof msg, "%sxlatrain: %s%lld line%s of output dropped while stopping: "
                     "stdout had no room (its reader had stopped reading); results.json has the summary\n",
                     g_cut ? "\n" : "", who, g_dropped, g_dropped == 1 ? "" : "s");
    put(STDERR_FILENO, msg, (size_t)n);
}

/* 1 when a progress bar may be on the terminal (set by xt_progress_enabled
 * in every worker, though only the master draws it): each line then starts
 * by erasing the bar's row, in the same write, so no worker's line is ever
 * appended to the master's bar. */
static int g_erase_bar_row;

/* One whole line to fd with a single write (workers share stdout), the bar's
 * row erased first when erase_row; a line longer than the stack buffer
 * (results.json's summary grows with per-class figures) is formatted on the
 * heap, never cut. */
static void vline(int fd, int erase_row, const char *fmt, va_list ap) {
    char small[2048], *line = small;
    size_t o = erase_row ? 4 : 0, cap = sizeof small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(line + o, cap - 1 - o, fmt, ap);
    if (n >= 0 && (size_t)n >= cap - 1 - o && (line = malloc(cap = (size_t)n + o + 2)))
        n = vsnprintf(line + o, cap - 1 - o, fmt, again);
    va_end(again);
    if (!line) { /* out of memory: the line as far as it fits */
        line = small;
        n = (int)(sizeof small - 2 - o);
    }
    if (n < 0) return;
    if (o) memcpy(line, "\r\033[K", 4);
    size_t len = (size_t)n + o;
    line[len++] = '\n';
    xt_progress_clear();
    fflush(stdout);
    put(fd, line, len);
    if (line != small) free(line);
}

void xt_out(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline(STDOUT_FILENO, g_erase_bar_row, fmt, ap);
    va_end(ap);
}

void xt_out_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline(STDERR_FILENO, 0, fmt, ap); /* the bar is cleared, never drawn over */
    va_end(ap);
}

void xt_log_train_update(int ordinal, long long step, double loss, double rate, double global_rate) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char ts[16];
    strftime(ts, sizeof ts, "%H:%M:%S", &tm);
    xt_out("[xla:%d](%lld) Loss=%.5f Rate=%.2f GlobalRate=%.2f Time=%s", ordinal, step, loss, rate, global_rate, ts);
}

/* ---- the progress bar ----------------------------------------------------
 * One line on stderr, redrawn in place at most 10 times a second: never
 * wider than the terminal (its width from TIOCGWINSZ, asked again after
 * SIGWINCH, which also forces a redraw), erased before every log line, so
 * a 60-column terminal never wraps it into stale copies. */
static int g_progress_shown;
static volatile sig_atomic_t g_winch = 1; /* 1: ask the width (again) */
static int g_cols = 80;

static void on_winch(int sig) {
    (void)sig;
    g_winch = 1;
}

/* The terminal's width, asked once and again after each SIGWINCH. */
static int terminal_cols(void) {
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_winch;
        sa.sa_flags = SA_RESTART; /* a resize never interrupts the run's own I/O */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGWINCH, &sa, NULL);
        installed = 1;
    }
    if (g_winch) {
        g_winch = 0;
        struct winsize ws;
        if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) g_cols = ws.ws_col;
    }
    return g_cols;
}

/* The bar is drawn when progress is forced on, or by default when both
 * stdout and stderr are terminals (never into a pipe or a log file). */
int xt_progress_enabled(const xt_config *c) {
    int on = c->progress == 1 || (c->progress != 0 && isatty(STDERR_FILENO) && isatty(STDOUT_FILENO));
    g_erase_bar_row = on && isatty(STDOUT_FILENO); /* never escape codes into a file */
    return on;
}

static void mmss(char *buf, size_t cap, double s) {
    int t = s > 0 && s < 360000 ? (int)(s + 0.5) : 0; /* under 100 hours */
    if (t >= 3600) snprintf(buf, cap, "%d:%02d:%02d", t / 3600 % 100, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%02d:%02d", t / 60 % 60, t % 60);
}

void xt_progress(int epoch, int nepochs, long long done, long long total, double rate, double batch_samples) {
    static double last;
    double now = xt_wall_s();
    int resized = g_winch;
    if (!resized && now - last < 0.1 && done < total) return; /* 10 redraws a second are plenty for a person */
    last = now;
    int cols = terminal_cols();
    /* time left: this epoch's batches, then the later epochs' (assumed as long) */
    double per_batch = rate > 0 ? batch_samples / rate : 0;
    long long left = total > done ? total - done : 0;
    char eta[48], run_eta[48], head[48], tail[160], bar[64];
    mmss(eta, sizeof eta, (double)left * per_batch);
    mmss(run_eta, sizeof run_eta, (double)(left + (long long)(nepochs - epoch) * total) * per_batch);
    int pct = total > 0 ? (int)(100 * done / total) : 0;
    snprintf(head, sizeof head, "epoch %d/%d", epoch, nepochs);
    /* the widest tail that fits beside the head; the bar takes what is left (at most 30) */
    /* both times count down: say so ("left"), not ETA, which reads as a clock time */
    const char *tails[3] = {" %3d%% %.0f samples/s, %s left, run %s left", " %3d%% %s left, run %s left", " %3d%%"};
    int room = cols - 1 - (int)strlen(head); /* never the last column: writing there wraps on many terminals */
    for (int t = 0; t < 3; t++) {
        if (t == 0) snprintf(tail, sizeof tail, tails[0], pct, rate, eta, run_eta);
        else if (t == 1) snprintf(tail, sizeof tail, tails[1], pct, eta, run_eta);
        else snprintf(tail, sizeof tail, tails[2], pct);
        if ((int)strlen(tail) + 7 <= room) break; /* a bar of at least 5 fits */
        if (t == 2 && (int)strlen(tail) > room) tail[0] = 0;
    }
    int width = room - (int)strlen(tail) - 3;
    if (width > 30) width = 30;
    bar[0] = 0;
    if (width >= 5) {
        int fill = total > 0 ? (int)(width * done / total) : 0;
        bar[0] = ' ';
        bar[1] = '[';
        for (int i = 0; i < width; i++) bar[2 + i] = i < fill ? '=' : (i == fill ? '>' : ' ');
        bar[2 + width] = ']';
        bar[3 + width] = 0;
    }
    char line[sizeof head + sizeof bar + sizeof tail], frame[sizeof line + 8];
    snprintf(line, sizeof line, "%s%s%s", head, bar, tail);
    if ((int)strlen(line) > cols - 1) line[cols > 1 ? cols - 1 : 0] = 0;
    int n = snprintf(frame, sizeof frame, "\r%s\033[K", line); /* erase what a longer earlier frame left */
    put(STDERR_FILENO, frame, (size_t)n);
    g_progress_shown = 1;
}

void xt_progress_clear(void) {
    if (!g_progress_shown) return;
    put(STDERR_FILENO, "\r\033[K", 4);
    g_progress_shown = 0;
}

/* The finished line, appended with its newline in one write. */
static int append_jsonl(const char *outdir, xt_jsonw *w, xt_err *e) {
    char path[700];
    snprintf(path, sizeof path, "%s/metrics.jsonl", outdir);
    int rc = xt_jw_finish(w, path, e);
    if (!rc) xt_jw_raw(w, "\n", 1);
    if (!rc) rc = xt_jw_finish(w, path, e);
    if (!rc) rc = xt_append_file(path, w->buf, w->len, e);
    xt_jw_free(w);
    return rc;
}

/* v rounded to `decimals` places, as %.Nf showed it (NaN stays NaN: null) */
static double places(double v, int decimals) {
    double s = pow(10, decimals);
    return isfinite(v) && fabs(v) < 1e15 ? round(v * s) / s : v;
}

int xt_jsonl_step(const char *outdir, int epoch, long long step, long long global_step, double loss, double rate, double lr,
                  xt_err *e) {
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "type"), xt_jw_str(&w, "step");
    xt_jw_key(&w, "epoch"), xt_jw_int(&w, epoch);
    xt_jw_key(&w, "step"), xt_jw_int(&w, step);
    xt_jw_key(&w, "global_step"), xt_jw_int(&w, global_step);
    xt_jw_key(&w, "loss"), xt_jw_numg(&w, loss, 6);
    xt_jw_key(&w, "rate"), xt_jw_num(&w, places(rate, 2));
    xt_jw_key(&w, "lr"), xt_jw_numg(&w, lr, 6);
    xt_jw_end(&w);
    return append_jsonl(outdir, &w, e);
}

int xt_jsonl_epoch(const char *outdir, int epoch, long long global_step, double loss, double accuracy, double test_loss,
                   double lr, double time_s, xt_err *e) {
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "type"), xt_jw_str(&w, "epoch");
    xt_jw_key(&w, "epoch"), xt_jw_int(&w, epoch);
    xt_jw_key(&w, "global_step"), xt_jw_int(&w, global_step);
    xt_jw_key(&w, "loss"), xt_jw_numg(&w, loss, 6);
    xt_jw_key(&w, "accuracy"), xt_jw_num(&w, places(accuracy, 4));
    xt_jw_key(&w, "test_loss"), xt_jw_numg(&w, test_loss, 6); /* null when not computed (non-finite) */
    xt_jw_key(&w, "lr"), xt_jw_numg(&w, lr, 6);
    xt_jw_key(&w, "time"), xt_jw_num(&w, places(time_s, 3));
    xt_jw_end(&w);
    return append_jsonl(outdir, &w, e);
}
