/* log.h — what a run prints: xm.RateTracker, the training-update lines, the
 * progress bar, whole-line stdout writes workers can share, and
 * metrics.jsonl lines. Not here: the end-of-run summary (finish.h). */
#ifndef XT_RUN_LOG_H
#define XT_RUN_LOG_H

#include "config/config.h"
#include "util/err.h"

typedef struct xt_rate {
    double smooth, start, partial_time, partial_count, partial_rate, count;
    int have_partial_rate;
} xt_rate;
void xt_rate_init(xt_rate *t);
void xt_rate_add(xt_rate *t, double count);
double xt_rate_rate(xt_rate *t);
double xt_rate_global(const xt_rate *t);
double xt_wall_s(void);
/* "[xla:0](20) Loss=0.52314 Rate=1234.56 GlobalRate=1180.02 Time=14:02:33" */
void xt_log_train_update(int ordinal, long long step, double loss, double rate, double global_rate);
/* Redraw the progress bar (a terminal only: see xt_progress_enabled): batch
 * `done` of `total` in epoch `epoch` of `nepochs`, at `rate` samples/s over
 * all workers, `batch_samples` samples per step over all workers. */
void xt_progress(int epoch, int nepochs, long long done, long long total, double rate, double batch_samples);
void xt_progress_clear(void);
/* Whether this run shows the bar; call it in every worker (only the master
 * draws), so that every worker's lines erase the bar's row first. */
int xt_progress_enabled(const xt_config *c);
/* Print one whole line to stdout with a single write (workers share it).
 * While stdout has no room it waits, unless a stop has been asked for (see
 * xt_out_watch_stop): then the line is dropped rather than hold up the
 * checkpoint. The progress bar's frames follow the same rule. */
void xt_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print one whole line to stderr by the same rule (the run's last message,
 * which follows its checkpoint). */
void xt_out_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Who says whether a stop has been asked for (NULL: nobody; lines then
 * always wait for room). Set per process, by the worker. */
void xt_out_watch_stop(int (*stop_asked)(void *ctx), void *ctx);
/* From now on this process is stopping (as if the watch had said so):
 * for what is printed after the worker's watch has ended. */
void xt_out_stopping(void);
/* Say on stderr (by the same rule) how many lines (and bar frames) this
 * process dropped while stopping, if any, naming worker `rank` (none if
 * negative). */
void xt_out_note_dropped(int rank);
/* Append one line to <outdir>/metrics.jsonl, built by the JSON writer (so a
 * NaN or infinite loss, rate or lr is null, never a bare NaN no parser
 * reads): a "step" line (step counts within the epoch) or an "epoch" line. */
int xt_jsonl_step(const char *outdir, int epoch, long long step, long long global_step, double loss, double rate, double lr,
                  xt_err *e);
int xt_jsonl_epoch(const char *outdir, int epoch, long long global_step, double loss, double accuracy, double test_loss,
                   double lr, double time_s, xt_err *e);

#endif
