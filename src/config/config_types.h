/* config_types.h — a resolved configuration as plain data: xt_config and its
 * enums, with no functions. Below both config.c (which fills one) and the
 * key table in config_keys.c (which says where each key lives in it), so
 * neither depends on the other's header for the type.
 * Not here: loading, validating or printing (config.h).
 */
#ifndef XT_CONFIG_TYPES_H
#define XT_CONFIG_TYPES_H

#include "config/spec.h"

typedef enum { XT_DS_MNIST, XT_DS_FASHION_MNIST, XT_DS_SYNTHETIC, XT_DS_CIFAR10, XT_DS_SYNTHETIC_CIFAR10, XT_DS_FOLDER } xt_dataset_kind;
typedef enum { XT_BAD_ERROR, XT_BAD_SKIP } xt_bad_image;
typedef enum { XT_OPT_SGD, XT_OPT_ADAM, XT_OPT_ADAMW } xt_optim_kind;
typedef enum { XT_SCHED_CONSTANT, XT_SCHED_STEP, XT_SCHED_COSINE } xt_sched_kind;
typedef enum { XT_MON_TEST_ACCURACY, XT_MON_TEST_LOSS } xt_monitor_kind;
typedef enum { XT_MODE_AUTO, XT_MODE_MAX, XT_MODE_MIN } xt_monitor_mode;
/* the values of engine/graph.h's xt_precision */
typedef enum { XT_PRECISION_FP32, XT_PRECISION_BF16 } xt_precision_kind;

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
    xt_dataset_kind dataset;   /* mnist | fashion_mnist | synthetic | cifar10 | synthetic_cifar10 (default mnist) */
    char model_path[512];      /* `model: models/x.yaml` ("" when inline) */
    xt_spec spec;              /* the parsed model (from model_path or inline) */
    long long seed;            /* 1 */
    char output_dir[512];      /* default runs/<name> */
    int output_dir_set;        /* output_dir was given (file or --set), not the default */
    double target_accuracy;    /* 0 = none; percent */
    int test_batch_size;       /* 1000 */
    char save_graphs[512];     /* "" = off; also env XLATRAIN_SAVE_GRAPHS */
    char logdir[512];          /* TensorBoard event files: "auto" = <output_dir>/tb, "" = off (run/tb.h) */
    int progress;              /* -1 auto (tty), 0 off, 1 on */
    xt_precision_kind precision; /* fp32 | bf16; unset: bf16 when XLA_USE_BF16=1 */
    char precision_from[64];   /* where it came from, for the log: "config", "XLA_USE_BF16=1", ... */
    int kernel_choice;         /* 0 measured, 1 fixed (today's rules); XLATRAIN_KERNEL_CHOICE wins */
    char kernel_choice_from[64]; /* where it came from, for the log */
    int isa;                   /* 0 auto, 1 generic, 2 avx2, 3 avx512: the kernels' cap (kernels/simd.h level + 1);
                                  XLATRAIN_ISA wins */
    char isa_from[64];         /* where it came from, for the log: "XLATRAIN_ISA=avx2", "config", ... */

    /* --- data --- */
    char train_images[512], train_labels[512], test_images[512], test_labels[512];
    long train_subset[2];      /* [start, end); {0,-1} = all */
    long test_subset[2];
    int download;              /* false */
    int synthetic_train_size;  /* 6000 */
    int synthetic_test_size;   /* 1000 */
    double norm_mean, norm_std;/* <0 = the dataset's own (MNIST 0.1307/0.3081) */
    int random_crop_padding;   /* 0 = off; -1 auto (4 for CIFAR-10, 0 for MNIST-shaped sets) */
    int random_flip;           /* -1 auto (on for CIFAR-10, off for MNIST-shaped sets), 0 off, 1 on */
    double rrc_scale[2];       /* random_resized_crop.scale: [1, 1] = off */
    double rrc_ratio[2];       /* random_resized_crop.ratio: [3/4, 4/3] */
    int shuffle;               /* true */
    int drop_last;             /* true for training */
    int loader_prefetch_size;  /* 8 */
    int device_prefetch_size;  /* 4 */

    /* --- dataset: folder (one subfolder per class) --- */
    char train_dir[512], test_dir[512]; /* test_dir "" = split val_fraction off train_dir */
    double val_fraction;       /* 0 */
    int resize[2];             /* [h, w]; [0, 0] = off: every image must have the model's size */
    char cache_dir[512];       /* "" = beside the output: <output_dir's parent>/folder-cache */
    long long max_image_pixels;/* 89478485, Pillow's guard; 0 = no limit */
    xt_bad_image on_bad_image; /* error | skip */

    /* --- optimizer / schedule --- */
    xt_optim_kind optimizer;   /* optimizer.name: sgd */
    int nesterov;              /* optimizer.nesterov: false */
    double weight_decay;       /* optimizer.weight_decay: 0 */
    double beta1, beta2, adam_eps; /* optimizer.betas: [0.9, 0.999], optimizer.eps: 1e-8 */
    double grad_clip_norm;     /* 0 (off): the gradients' global L2 norm is clipped to it, as clip_grad_norm_ */
    double label_smoothing;    /* 0: CrossEntropyLoss(label_smoothing=) */
    xt_sched_kind schedule;    /* schedule.name: constant */
    int step_size;             /* schedule.step_size (epochs): 10 */
    double gamma;              /* schedule.gamma: 0.1 */
    int warmup_epochs;         /* schedule.warmup_epochs: 0 */
    int scale_lr_by_world_size;/* true, as the seed */

    /* --- checkpoints --- */
    int checkpoint_every;      /* checkpoint.every (epochs): 1 */
    int keep_checkpoints;      /* checkpoint.keep_last: 3 */
    int keep_best;             /* checkpoint.keep_best: false (best.safetensors by the monitor) */

    /* --- the monitored metric: early stopping and keep_best --- */
    xt_monitor_kind monitor;   /* early_stopping.monitor: test_accuracy */
    xt_monitor_mode monitor_mode; /* early_stopping.mode: auto (max for accuracy, min for loss) */
    int patience;              /* early_stopping.patience (epochs): 0 = no early stopping */
    double min_delta;          /* early_stopping.min_delta: 0 */

    /* --- smoke runs and limits (CI) --- */
    long long max_steps;       /* stop after this many global optimizer steps: 0 = none */
    double max_time;           /* stop at the first step boundary after this many seconds of training: 0 = none */
    int limit_train_batches;   /* training batches per epoch and worker: 0 = all */
    int limit_test_batches;    /* evaluation batches per evaluation and worker: 0 = all */
    int fast_dev_run;          /* one epoch, one step, one evaluation batch, every output: a smoke test */

    /* --- data parallel --- */
    int pin_cores;             /* false */
    int worker_timeout;        /* seconds without progress before a worker is declared hung: 300 */
    int blas_threads;          /* per worker: 1 */

    /* what the config sets that has no effect, for main to print as notes
     * ("momentum 0.5 is not used by adam"); library code never prints */
    char notes[4][240];
    int nnotes;
} xt_config;

#endif
