/* train_internal.h — the state of one run, shared by the train/eval loop,
 * logging, checkpoints and prediction (not a public API). Everything here
 * is set up by the parent before workers fork, so every replica starts from
 * the same weights (as xmp.MpModelWrapper). */
#ifndef XT_TRAIN_INTERNAL_H
#define XT_TRAIN_INTERNAL_H

#include <stdint.h>

#include "run/cli.h"
#include "config/config.h"
#include "data/dataset.h"
#include "distributed/shm.h"
#include "engine/graph.h"
#include "nn/model.h"
#include "optim/optim.h"

#define XT_MAX_EPOCHS 100000

typedef struct xt_run {
    const xt_config *c;
    const xt_cli *cli;
    char outdir[600];
    xt_dataset train, test;
    int have_train;
    xt_store store;
    xt_model model;
    xt_optim optim;
    int slot_x, slot_y, slot_step;  /* inputs: batch images, labels, step counter (int32) */
    int world;
    xt_dist *dist;                  /* NULL with one process */
    uint64_t model_hash;

    /* training position (restored by --resume) */
    int start_epoch;                /* 0-based epoch to run next */
    long long start_step_in_epoch;  /* batches of start_epoch already trained */
    long long global_step;
    double best_acc;                /* percent; -1 before any evaluation */
    double *hist_loss, *hist_acc;   /* per finished epoch (XT_MAX_EPOCHS cap) */
    int nhist;
    uint64_t t_start_ns;
    long long samples_trained;      /* by this process, for results.json */
    uint64_t train_ns;              /* in training epochs (not setup or evaluation) */
    uint64_t data_wait_ns;          /* of which waiting for the loader */
    xt_err err;                     /* a single-process run's failure */
} xt_run;

/* train.c: declare the model, inputs and optimizer slots in r->store and
 * initialise the weights from the seed (r->c set). */
int xt_run_setup_model(xt_run *r, xt_err *e);
/* Floats of the all-reduce's packed gradient block (pieces 64-byte aligned). */
size_t xt_run_grad_floats(const xt_run *r);
/* The data module's name for the config's dataset. */
xt_data_kind xt_run_data_kind(xt_dataset_kind k);

/* train_loop.c: the per-replica loop (also run in-process when world == 1). */
struct xt_batch;
/* Point the input slots at batch b (shape follows b->n). */
void xt_run_bind_batch(xt_run *r, const struct xt_batch *b);
/* Trace the model to log-probabilities (log_softmax added if the spec ends in logits). */
xt_t xt_run_trace_logp(xt_run *r, xt_graph *g, int mode);
/* One training step of batch b at learning rate lr: forward, backward,
 * all-reduce and update as one graph, run at its barrier. */
int xt_run_train_step(xt_run *r, xt_engine *en, const struct xt_batch *b, double lr, float *loss, xt_err *e);
int xt_worker_main(int ordinal, void *arg);
/* train.c: the master's end-of-run outputs (grid, results.json, summary
 * line) and the target_accuracy verdict; pred/truth/index are the last test
 * batch's first n (<= 25) samples. */
int xt_run_finish(xt_run *r, const int32_t *pred, const int32_t *truth, const int64_t *index, int n, double final_loss, xt_err *e);

/* train_ckpt.c */
int xt_ckpt_save(xt_run *r, int epoch_label, int next_epoch, long long step_in_epoch, xt_err *e);
int xt_ckpt_load(xt_run *r, const char *path, xt_err *e);
int xt_ckpt_resolve(const xt_run *r, const char *arg, char *out, size_t cap, xt_err *e);

/* train_log.c: xm.RateTracker and the log/progress output */
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
void xt_progress(int epoch, int nepochs, long long done, long long total, double rate);
void xt_progress_clear(void);
int xt_progress_enabled(const xt_config *c);
/* Print one whole line to stdout with a single write (workers share it). */
void xt_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int xt_append_jsonl(const xt_run *r, const char *line, xt_err *e);

/* predict.c */
int xt_predict_main(xt_run *r, xt_err *e);

/* signals (single-process runs; xt_spawn handles its own) */
void xt_signals_install(void);
void xt_signals_restore(void);
int xt_stop_requested(void);

#endif
