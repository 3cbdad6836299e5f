/* run.h — the state of one run (xt_run) and its setup, shared by training,
 * --eval-only and --predict: the output directory, the model, input and
 * optimizer slots (declared and initialised before any fork, so every
 * replica starts from the same weights, as xmp.MpModelWrapper), and the data.
 * Not here: what a run does with it (step.h, loop.h, train.h, predict.h). */
#ifndef XT_RUN_RUN_H
#define XT_RUN_RUN_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "config/config.h"
#include "data/dataset.h"
#include "distributed/shm.h"
#include "engine/store.h"
#include "nn/model.h"
#include "optim/optim.h"
#include "run/cli.h"
#include "run/rundir.h"
#include "util/err.h"

#define XT_MAX_EPOCHS 100000
#define XT_MAX_REPLICAS 256         /* num_cores' maximum */

/* Why training stopped before num_epochs (results.json's status and message). */
enum xt_limit_stop { XT_STOP_NONE, XT_STOP_MAX_STEPS, XT_STOP_TIME_LIMIT, XT_STOP_EARLY };

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
    int world;                      /* replicas in all: the sum of every host's num_cores */
    int local_world;                /* this host's worker processes (its num_cores) */
    int rank_offset;                /* global ordinal of this host's local worker 0 */
    int host, hosts;                /* MPI rank and ranks (cluster.h); 0 and 1 on one machine */
    xt_dist *dist;                  /* NULL with one process on one host */
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
    char last_ckpt[1024];           /* newest checkpoint written or loaded ("" when none) */
    int summary_written;            /* this process wrote the summary (results.json/eval.json) */
    xt_rundir rundir;               /* the claimed output directory and its lock */
    int claimed;                    /* the directory is ours: every ending writes a summary */
    char *config_yaml;              /* the resolved config as recorded (record.h) */
    char *resumed_config;           /* the one the --resume checkpoint recorded, NULL if none */
    char *resumed_choices;          /* the kernel choices it recorded ("key=impl;..."), NULL if none */
    char resumed_choices_isa[64];   /* the ISA they were made at ("" in a checkpoint older than that record) */
    struct xt_engine *engine;       /* this worker's while it runs (its kernel choices go into checkpoints) */
    char *kernel_choice_lines;      /* its choices, one line per node, kept when it closes (results.json) */
    double last_loss;               /* of the last training step in this process; NaN before any */
    /* each replica's loss sums in a partial epoch: gathered on an interrupt
     * (loop.c), saved and restored with the checkpoint */
    double part_loss_sum[XT_MAX_REPLICAS];
    long long part_loss_n[XT_MAX_REPLICAS];
    int npart;
    int resumed;                    /* --resume loaded and accepted its checkpoint */
    int config_changed;             /* resumed with --allow-config-change over a changed key */
    int limit_stop;                 /* training stopped early by a limit (enum xt_limit_stop), 0 if not */
    uint64_t t_train0_ns;           /* when this process began training, for max_time */
    /* the monitored metric (monitor.h), saved and restored with the checkpoint */
    double mon_best;                /* best value so far; NaN before any */
    int mon_best_epoch;             /* 1-based epoch of mon_best; 0 before any */
    int mon_wait;                   /* epochs since it last improved */
    char best_ckpt[1024];           /* best.safetensors once written (checkpoint.keep_best), else "" */
    long long *confusion;           /* (nclasses^2) the last evaluation's [true][predicted] counts over
                                       all replicas (confusion.h); NULL before it */
    int nclasses;
} xt_run;

/* Set r up for config c and command line cli: declare and initialise the
 * model, inputs and optimizer (no data read, no directory touched).
 * Call xt_run_close afterwards whatever this returns. */
int xt_run_open(xt_run *r, const xt_config *c, const xt_cli *cli, xt_err *e);
/* Claim the output directory (rundir.h) on the global master and, for a new
 * training run, record its config there; call it once everything that can
 * refuse the run from the config, model or data has passed, so a refused
 * run leaves no directory that holds a run. */
int xt_run_claim(xt_run *r, xt_err *e);
/* Declare the model, inputs and optimizer slots in r->store and initialise
 * the weights from the seed (only r->c needs to be set). */
int xt_run_setup_model(xt_run *r, xt_err *e);
/* Open the test set, and the training set unless --eval-only (downloading
 * first when asked), and check the model's input shape against the data. */
int xt_run_open_data(xt_run *r, xt_err *e);
/* A folder's measured normalization as a note at the end of config.yaml,
 * once that is written (host 0, training runs; nothing otherwise). */
int xt_run_note_norm(const xt_run *r, xt_err *e);
/* Free what xt_run_open and xt_run_open_data allocated. */
void xt_run_close(xt_run *r);
/* Floats of the all-reduce's packed gradient block (pieces 64-byte aligned). */
size_t xt_run_grad_floats(const xt_run *r);
/* The data module's name for the config's dataset. */
xt_data_kind xt_run_data_kind(xt_dataset_kind k);
/* The training augmentation the config asks for, `auto` resolved by dataset
 * (crop padding 4 and flips for CIFAR-10, none for the MNIST family). */
void xt_run_augmentation(const xt_config *c, int *crop_padding, int *flip);
/* 1 when random_resized_crop is on (scale below [1, 1]). */
int xt_run_resized_crop(const xt_config *c);
/* The per-channel normalization (XT_DATA_MAX_CHANNELS each) the config
 * asks for, `auto` resolved by dataset: what the loader, --predict and an
 * exported model's documentation use. */
void xt_run_normalization(const xt_config *c, double *mean, double *std);

/* results.json's final_loss: the mean training loss of the last finished
 * epoch over all replicas (what curves.png and metrics.jsonl's epoch line
 * show, and Keras' history reports), NaN before the first epoch ends. */
static inline double xt_run_final_loss(const xt_run *r) { return r->nhist > 0 ? r->hist_loss[r->nhist - 1] : (double)NAN; }

#endif
