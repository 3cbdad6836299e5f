/* config.h — the FLAGS file: YAML -> xt_config, with defaults, --set
 * overrides and strict validation.
 *
 * Every key is declared once in the key table in config.c (name, type, default,
 * range, help), which drives parsing, --set, validation, "did you mean" hints,
 * --dry-run printing and the reference table in the README/man page.
 * Errors name file:line:col (the YAML node's position; for --set, "--set
 * KEY=VALUE"), what is wrong and the fix, with exit code XT_EUSAGE.
 */
#ifndef XT_CONFIG_H
#define XT_CONFIG_H

#include <stdio.h>

#include "config/spec.h"
#include "util/err.h"

typedef enum { XT_DS_MNIST, XT_DS_FASHION_MNIST, XT_DS_SYNTHETIC } xt_dataset_kind;
typedef enum { XT_OPT_SGD, XT_OPT_ADAM, XT_OPT_ADAMW } xt_optim_kind;
typedef enum { XT_SCHED_CONSTANT, XT_SCHED_STEP, XT_SCHED_COSINE } xt_sched_kind;

typedef struct xt_config {
    char source[512];          /* the config file path ("" when none) */
    char name[128];            /* config basename without extension: "mnist" */

    /* --- the seed's FLAGS --- */
    char datadir[512];         /* required for mnist/fashion_mnist */
    int batch_size;            /* 128, per core */
    int num_workers;           /* 4, loader threads */
    double learning_rate;      /* 0.01 */
    double momentum;           /* 0.5 (SGD) */
    int num_epochs;            /* 18 if absent (the PyTorch/XLA MNIST default) */
    int num_cores;             /* machine's online CPUs if absent; 1..256 */
    int log_steps;             /* 20 */
    int metrics_debug;         /* false */

    /* --- run --- */
    xt_dataset_kind dataset;   /* mnist | fashion_mnist | synthetic (default mnist) */
    char model_path[512];      /* `model: models/x.yaml` ("" when inline) */
    xt_spec spec;              /* the parsed model (from model_path or inline) */
    long long seed;            /* 1 */
    char output_dir[512];      /* default runs/<name> */
    double target_accuracy;    /* 0 = none; percent */
    int test_batch_size;       /* 1000 */
    char save_graphs[512];     /* "" = off; also env XLATRAIN_SAVE_GRAPHS */
    int progress;              /* -1 auto (tty), 0 off, 1 on */

    /* --- data --- */
    char train_images[512], train_labels[512], test_images[512], test_labels[512];
    long train_subset[2];      /* [start, end); {0,-1} = all */
    long test_subset[2];
    int download;              /* false */
    int synthetic_train_size;  /* 6000 */
    int synthetic_test_size;   /* 1000 */
    double norm_mean, norm_std;/* <0 = the dataset's own (MNIST 0.1307/0.3081) */
    int random_crop_padding;   /* 0 = off */
    int shuffle;               /* true */
    int drop_last;             /* true for training */
    int loader_prefetch_size;  /* 8 */
    int device_prefetch_size;  /* 4 */

    /* --- optimizer / schedule --- */
    xt_optim_kind optimizer;   /* optimizer.name: sgd */
    int nesterov;              /* optimizer.nesterov: false */
    double weight_decay;       /* optimizer.weight_decay: 0 */
    double beta1, beta2, adam_eps; /* optimizer.betas: [0.9, 0.999], optimizer.eps: 1e-8 */
    xt_sched_kind schedule;    /* schedule.name: constant */
    int step_size;             /* schedule.step_size (epochs): 10 */
    double gamma;              /* schedule.gamma: 0.1 */
    int warmup_epochs;         /* schedule.warmup_epochs: 0 */
    int scale_lr_by_world_size;/* true, as the seed */

    /* --- checkpoints --- */
    int checkpoint_every;      /* checkpoint.every (epochs): 1 */
    int keep_checkpoints;      /* checkpoint.keep: 3 */

    /* --- data parallel --- */
    int pin_cores;             /* false */
    int worker_timeout;        /* seconds without progress before a worker is declared hung: 300 */
    int blas_threads;          /* per worker: 1 */
} xt_config;

/* Defaults for every key (no file read). */
void xt_config_defaults(xt_config *c);

/* Load `path`, apply the `nset` overrides "key=value" (dotted keys for nested
 * maps), resolve the model spec and validate. Returns 0 or an XT_E* code.
 * `path` may be NULL (defaults and overrides only). On failure nothing is
 * left to free; on success call xt_config_free. */
int xt_config_load(xt_config *c, const char *path, const char *const *sets, int nset, xt_err *e);

/* Print the resolved configuration as YAML (every key, sorted as the key table). */
void xt_config_print(const xt_config *c, FILE *out);

/* Every key with its type, default and a line of help (for --help). */
void xt_config_print_keys(FILE *out);

/* Free what the config owns (the spec's layers). */
void xt_config_free(xt_config *c);

/* Stable 64-bit hash of the settings that make a checkpoint compatible
 * (the model spec: layer kinds, names and shapes). */
unsigned long long xt_config_model_hash(const xt_config *c);

#endif
