/* config_keys.c — the FLAGS key table and the typed setters/printers that
 * every key goes through; see config_keys.h.
 *
 * Not here: walking the YAML document, --set, positions in messages or
 * checks that involve several keys (config.c).
 */
#include "config/config_keys.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "config/config_yaml.h"
#include "util/utf8.h"

#define F(m) offsetof(xt_config, m)
#define S(m) sizeof(((xt_config *)0)->m)
#define INT_KEY(n, m, d, lo, hi, h) {n, XT_K_INT, F(m), 0, 0, d, lo, hi, 0, NULL, h}
#define BOOL_KEY(n, m, d, h) {n, XT_K_BOOL, F(m), 0, 0, d, 0, 0, 0, NULL, h}
#define STR_KEY(n, m, d, h) {n, XT_K_STR, F(m), 0, S(m), d, 0, 0, 0, NULL, h}
#define FLOAT_KEY(n, m, d, lo, hi, fl, h) {n, XT_K_FLOAT, F(m), 0, 0, d, lo, hi, fl, NULL, h}
#define ENUM_KEY(n, m, d, ch, h) {n, XT_K_ENUM, F(m), 0, 0, d, 0, 0, 0, ch, h}

/* ENUM keys store through an int*: the enum types must be int-sized. */
_Static_assert(sizeof(xt_dataset_kind) == sizeof(int) && sizeof(xt_optim_kind) == sizeof(int) &&
                   sizeof(xt_sched_kind) == sizeof(int) && sizeof(xt_monitor_kind) == sizeof(int) &&
               sizeof(xt_monitor_mode) == sizeof(int) && sizeof(xt_precision_kind) == sizeof(int) &&
               sizeof(xt_bad_image) == sizeof(int),
               "enum keys are stored as int");

/* The enums' names in the order of their C values (config.h). */
static const char *const datasets[] = {"mnist", "fashion_mnist", "synthetic", "cifar10", "synthetic_cifar10", "folder", NULL};
static const char *const bad_images[] = {"error", "skip", NULL};
static const char *const optimizers[] = {"sgd", "adam", "adamw", NULL};
static const char *const schedules[] = {"constant", "step", "cosine", NULL};
static const char *const monitors[] = {"test_accuracy", "test_loss", NULL};
static const char *const modes[] = {"auto", "max", "min", NULL};
static const char *const precisions[] = {"fp32", "bf16", NULL};
static const char *const kernel_choices[] = {"measured", "fixed", NULL};
/* index - 1 is the kernels' level (simd.h: K_ISA_AUTO, K_SIMD_GENERIC, ...) */
static const char *const isas[] = {"auto", "generic", "avx2", "avx512", NULL};

const xt_key xt_keys[] = {
    /* the seed's FLAGS (PyTorch/XLA test_train_mp_mnist.py) */
    STR_KEY("datadir", datadir, "\"\"", "directory with the IDX files (or CIFAR-10's); required for mnist, fashion_mnist and cifar10"),
    INT_KEY("batch_size", batch_size, "128", 1, 65536, "training batch per core; the global batch is batch_size x num_cores"),
    INT_KEY("num_workers", num_workers, "4", 0, 64, "data-loader threads per core process"),
    FLOAT_KEY("learning_rate", learning_rate, "0.01", 0, HUGE_VAL, XT_KF_MIN_OPEN,
              "base learning rate (times num_cores when scale_lr_by_world_size)"),
    FLOAT_KEY("momentum", momentum, "0.5", 0, 1, XT_KF_MAX_OPEN, "SGD momentum; 0 = plain SGD"),
    INT_KEY("num_epochs", num_epochs, "18", 1, 100000, "passes over the training set"),
    {"num_cores", XT_K_INT, F(num_cores), 0, 0, "online CPUs", 1, 256, XT_KF_COMPUTED, NULL,
     "data-parallel worker processes, like xmp.spawn's nprocs"},
    INT_KEY("log_steps", log_steps, "20", 0, INT_MAX, "print a progress line every N training steps; 0 = per epoch only"),
    BOOL_KEY("metrics_debug", metrics_debug, "false", "print the engine's metrics report (compiles, cache hits, timers)"),

    /* the run */
    ENUM_KEY("dataset", dataset, "mnist", datasets, "which images to train on; synthetic and synthetic_cifar10 need no files; folder: your own PNG/JPEG files in train_dir"),
    {"model", XT_K_MODEL, F(model_path), 0, S(model_path), "(required)", 0, 0, 0, NULL,
     "spec file (from the current dir, else the config's dir) or an inline spec"},
    {"seed", XT_K_I64, F(seed), 0, 0, "1", 0, HUGE_VAL, 0, NULL, "seed for initialization, shuffling, dropout and synthetic data"},
    {"output_dir", XT_K_STR, F(output_dir), 0, S(output_dir), "runs/<config name>", 0, 0, XT_KF_COMPUTED, NULL,
     "the run's directory: checkpoints, metrics, plots, config.yaml, results.json; one run per directory (unset: the first free runs/<config name>, -2, -3, ...)"},
    FLOAT_KEY("target_accuracy", target_accuracy, "0", 0, 100, 0,
              "exit 6 if the best test accuracy (percent) ends below this; 0 = no target"),
    INT_KEY("test_batch_size", test_batch_size, "1000", 1, 65536, "evaluation batch"),
    STR_KEY("save_graphs", save_graphs, "\"\"",
            "graph dump directory (text and .dot); \"\" = $XLATRAIN_SAVE_GRAPHS or off"),
    STR_KEY("logdir", logdir, "auto",
            "TensorBoard event files (tensorboard --logdir DIR): auto = <output_dir>/tb, \"\" = off; with --sweep each run "
            "writes to its own subdirectory; also --logdir DIR"),
    ENUM_KEY("precision", precision, "fp32", precisions,
             "bf16: convolution and linear operands rounded to bfloat16, fp32 accumulation (weights, optimizer, "
             "batch norm, loss and checkpoints stay fp32); with kernel_choice: measured, a node whose fp32 kernel is "
             "faster on this CPU stays fp32 (the log counts both); unset: bf16 when XLA_USE_BF16=1"),
    ENUM_KEY("kernel_choice", kernel_choice, "measured", kernel_choices,
             "measured: time each convolution's and matrix product's candidate kernels on this CPU when a graph "
             "compiles (worker 0 for all; cached per CPU in ~/.cache/xlatrain) and run the fastest; fixed: the "
             "built-in rules; XLATRAIN_KERNEL_CHOICE=fixed|measured wins"),
    ENUM_KEY("isa", isa, "auto", isas,
             "the widest vector instructions the kernels may use: auto = the best this CPU has; avx2 or generic "
             "run the kernels an AVX2-only or older CPU runs (to measure or test them here); a cap above the CPU "
             "changes nothing; XLATRAIN_ISA=avx512|avx2|generic wins"),
    {"progress", XT_K_TRI, F(progress), 0, 0, "auto", 0, 0, 0, NULL, "progress bar: auto (when stderr is a terminal), true or false"},

    /* data */
    STR_KEY("train_images", train_images, "\"\"", "a file path, instead of datadir/train-images-idx3-ubyte[.gz] (cifar10: a .bin batch, a directory or the .tar.gz)"),
    STR_KEY("train_labels", train_labels, "\"\"", "a file path, instead of datadir/train-labels-idx1-ubyte[.gz]"),
    STR_KEY("test_images", test_images, "\"\"", "a file path, instead of datadir/t10k-images-idx3-ubyte[.gz] (cifar10: a .bin batch, a directory or the .tar.gz)"),
    STR_KEY("test_labels", test_labels, "\"\"", "a file path, instead of datadir/t10k-labels-idx1-ubyte[.gz]"),
    {"train_subset", XT_K_SUBSET, F(train_subset), 0, 0, "[0, -1]", 0, 0, 0, NULL,
     "use training images [start, end) only; end -1 = to the last one"},
    {"test_subset", XT_K_SUBSET, F(test_subset), 0, 0, "[0, -1]", 0, 0, 0, NULL, "use test images [start, end) only"},
    BOOL_KEY("download", download, "false", "fetch the dataset into datadir when its files are missing"),
    INT_KEY("synthetic_train_size", synthetic_train_size, "6000", 1, 10000000, "training images of dataset: synthetic or synthetic_cifar10"),
    INT_KEY("synthetic_test_size", synthetic_test_size, "1000", 1, 10000000, "test images of dataset: synthetic or synthetic_cifar10"),
    FLOAT_KEY("normalize.mean", norm_mean, "auto", 0, 1, XT_KF_AUTO,
              "mean subtracted from pixels in [0, 1], every channel; auto = the dataset's (MNIST 0.1307, CIFAR-10 per channel; folder: measured per channel on the training split)"),
    FLOAT_KEY("normalize.std", norm_std, "auto", 0, 1000, XT_KF_AUTO | XT_KF_MIN_OPEN,
              "std. deviation pixels are divided by, every channel; auto = the dataset's (MNIST 0.3081, CIFAR-10 per channel; folder: measured on the training split)"),
    {"random_crop_padding", XT_K_INT, F(random_crop_padding), 0, 0, "auto", 0, 16, XT_KF_AUTO, NULL,
     "pad by N and crop back at a random offset; 0 = off; auto = 4 for cifar10 and synthetic_cifar10, else 0"},
    {"random_flip", XT_K_TRI, F(random_flip), 0, 0, "auto", 0, 0, 0, NULL,
     "flip training images left-right at random; auto = on for cifar10 and synthetic_cifar10, else off"},
    {"random_resized_crop.scale", XT_K_FPAIR, F(rrc_scale[0]), F(rrc_scale[1]), 0, "[1, 1]", 0, 1, XT_KF_MIN_OPEN, NULL,
     "crop a random share [a, b] of each training image's area (0 < a <= b <= 1) at a random aspect ratio, resized back to the image's size (area averaging when shrinking, bilinear when growing), before random_flip, as torchvision's RandomResizedCrop; [1, 1] = off; not with random_crop_padding"},
    {"random_resized_crop.ratio", XT_K_FPAIR, F(rrc_ratio[0]), F(rrc_ratio[1]), 0, "[0.75, 1.3333333333333333]", 0, 100,
     XT_KF_MIN_OPEN, NULL, "random_resized_crop's range [r0, r1] of aspect ratios (width / height), drawn log-uniformly"},
    BOOL_KEY("shuffle", shuffle, "true", "reshuffle the training set every epoch"),
    BOOL_KEY("drop_last", drop_last, "true", "drop the last incomplete training batch (keeps one compiled graph)"),
    INT_KEY("loader_prefetch_size", loader_prefetch_size, "8", 1, 1024, "batches the loader threads prepare ahead"),
    INT_KEY("device_prefetch_size", device_prefetch_size, "4", 1, 1024, "batches staged for the step ahead (MpDeviceLoader)"),

    /* dataset: folder */
    STR_KEY("train_dir", train_dir, "\"\"", "dataset: folder: a folder with one subfolder of PNG/JPEG images per class (classes sorted by name, as torchvision's ImageFolder)"),
    STR_KEY("test_dir", test_dir, "\"\"", "dataset: folder: the test images, the same class subfolders as train_dir; \"\" = split val_fraction off train_dir"),
    FLOAT_KEY("val_fraction", val_fraction, "0", 0, 1, XT_KF_MAX_OPEN,
              "dataset: folder without test_dir: this share of train_dir's files is the test set, chosen by seed (the same files every run)"),
    {"resize", XT_K_IPAIR, F(resize), 0, 0, "[0, 0]", 0, 65535, 0, NULL,
     "dataset: folder: resize every image to [h, w] (area averaging when shrinking, bilinear when growing; must be the model's input size); [0, 0] = off, another size is an error"},
    STR_KEY("cache_dir", cache_dir, "\"\"", "dataset: folder: where the decoded images are cached (reused while no file changes); \"\" = folder-cache beside the output directory"),
    {"max_image_pixels", XT_K_I64, F(max_image_pixels), 0, 0, "89478485", 0, 1e15, 0, NULL,
     "dataset: folder: refuse an image whose header declares more pixels (a decompression bomb; Pillow's limit); 0 = no limit"},
    ENUM_KEY("on_bad_image", on_bad_image, "error", bad_images,
             "dataset: folder: error stops at an unreadable, corrupt or wrong-size file (exit 3); skip warns, leaves it out and counts it in results.json"),

    /* optimizer and schedule */
    ENUM_KEY("optimizer.name", optimizer, "sgd", optimizers, "the update rule, as PyTorch's SGD, Adam or AdamW"),
    BOOL_KEY("optimizer.nesterov", nesterov, "false", "Nesterov momentum (sgd with momentum > 0)"),
    FLOAT_KEY("optimizer.weight_decay", weight_decay, "0", 0, 1, 0, "L2 penalty (sgd, adam) or decoupled decay (adamw)"),
    {"optimizer.betas", XT_K_FPAIR, F(beta1), F(beta2), 0, "[0.9, 0.999]", 0, 1, XT_KF_MAX_OPEN, NULL,
     "Adam/AdamW moment decay rates"},
    FLOAT_KEY("optimizer.eps", adam_eps, "1e-08", 0, 1, XT_KF_MIN_OPEN, "Adam/AdamW epsilon added to the denominator"),
    FLOAT_KEY("grad_clip_norm", grad_clip_norm, "0", 0, HUGE_VAL, 0,
              "clip the gradients' global L2 norm (after the all-reduce) to this, as clip_grad_norm_; 0 = off"),
    FLOAT_KEY("label_smoothing", label_smoothing, "0", 0, 1, XT_KF_MAX_OPEN,
              "spread this much of each target over all classes, as CrossEntropyLoss(label_smoothing=)"),
    ENUM_KEY("schedule.name", schedule, "constant", schedules, "learning-rate schedule: constant, step or cosine"),
    INT_KEY("schedule.step_size", step_size, "10", 1, 100000, "for step: multiply the rate by gamma every N epochs"),
    FLOAT_KEY("schedule.gamma", gamma, "0.1", 0, 1, XT_KF_MIN_OPEN, "for step: the factor applied every step_size epochs"),
    INT_KEY("schedule.warmup_epochs", warmup_epochs, "0", 0, 100000, "linear warm-up from 0 over the first N epochs"),
    BOOL_KEY("scale_lr_by_world_size", scale_lr_by_world_size, "true", "multiply learning_rate by num_cores, as the seed does"),

    /* checkpoints and workers */
    INT_KEY("checkpoint.every", checkpoint_every, "1", 0, 100000, "write a checkpoint every N epochs; 0 = only the final one"),
    INT_KEY("checkpoint.keep_last", keep_checkpoints, "3", 0, 1000,
            "periodic checkpoints kept (older ones removed once the new one is in place); 0 = all"),
    BOOL_KEY("checkpoint.keep_best", keep_best, "false",
             "also keep the best epoch by early_stopping.monitor as best.safetensors"),

    /* the monitored metric: early stopping and checkpoint.keep_best */
    ENUM_KEY("early_stopping.monitor", monitor, "test_accuracy", monitors,
             "the metric early stopping and keep_best watch, after each epoch's evaluation"),
    ENUM_KEY("early_stopping.mode", monitor_mode, "auto", modes, "max or min is better; auto = max for test_accuracy, min for test_loss"),
    INT_KEY("early_stopping.patience", patience, "0", 0, 100000,
            "stop after N epochs without improvement (status early_stopped, exit 0); 0 = never"),
    FLOAT_KEY("early_stopping.min_delta", min_delta, "0", 0, HUGE_VAL, 0,
              "an improvement is a change by more than this (percent points or loss)"),
    /* smoke runs and limits */
    {"max_steps", XT_K_I64, F(max_steps), 0, 0, "0", 0, 2147483647.0, 0, NULL,
     "stop after N global optimizer steps (evaluate, checkpoint, status ok); 0 = no limit"},
    FLOAT_KEY("max_time", max_time, "0", 0, HUGE_VAL, 0,
              "seconds of training, then stop at the next step boundary (evaluate, checkpoint, status time_limit, exit 0); 0 = no limit"),
    INT_KEY("limit_train_batches", limit_train_batches, "0", 0, INT_MAX, "training batches per epoch and worker; 0 = all"),
    INT_KEY("limit_test_batches", limit_test_batches, "0", 0, INT_MAX, "test batches per evaluation and worker; 0 = all"),
    BOOL_KEY("fast_dev_run", fast_dev_run, "false",
             "a smoke test: 1 epoch, 1 training step and 1 test batch per worker, every output written (results.json smoke: true)"),
    BOOL_KEY("pin_cores", pin_cores, "false", "pin worker k to CPU k"),
    INT_KEY("worker_timeout", worker_timeout, "300", 0, 86400, "seconds without progress before a worker counts as hung; 0 = never"),
    INT_KEY("blas_threads", blas_threads, "1", 1, 256, "BLAS threads per worker"),
};
const int xt_nkeys = (int)(sizeof xt_keys / sizeof *xt_keys);
_Static_assert(sizeof xt_keys / sizeof *xt_keys <= XT_NKEYS_MAX, "raise XT_NKEYS_MAX");

int xt_key_find(const char *name) {
    for (int i = 0; i < xt_nkeys; i++)
        if (!strcmp(xt_keys[i].name, name)) return i;
    return -1;
}

int xt_key_is_group(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < xt_nkeys; i++)
        if (!strncmp(xt_keys[i].name, name, n) && xt_keys[i].name[n] == '.') return 1;
    return 0;
}

/* ---- range checks ------------------------------------------------------------- */

static const char *range_doc(const xt_key *k, char *buf, size_t cap) {
    char lo[32], hi[32];
    xt_fmt_double(k->min, lo, sizeof lo);
    xt_fmt_double(k->max, hi, sizeof hi);
    if (isinf(k->max)) snprintf(buf, cap, "%s %s", k->flags & XT_KF_MIN_OPEN ? ">" : ">=", lo);
    else if (k->type == XT_K_INT && k->max == INT_MAX) snprintf(buf, cap, ">= %s", lo);
    else if (k->type == XT_K_INT) snprintf(buf, cap, "from %s to %s", lo, hi);
    else snprintf(buf, cap, "in %c%s, %s%c", k->flags & XT_KF_MIN_OPEN ? '(' : '[', lo, hi,
                  k->flags & XT_KF_MAX_OPEN ? ')' : ']');
    return buf;
}

static int in_range(const xt_key *k, double v) {
    if (k->flags & XT_KF_MIN_OPEN ? v <= k->min : v < k->min) return 0;
    if (k->flags & XT_KF_MAX_OPEN ? v >= k->max : v > k->max) return 0;
    return 1;
}

static int bad(char *why, size_t cap, const char *expected, const char *text, int plain) {
    char q[64];
    if (xt_scalar_null(text, plain)) snprintf(why, cap, "expected %s, got nothing", expected);
    else if (!plain) snprintf(why, cap, "expected %s, got the quoted string %s; remove the quotes", expected,
                              xt_quote(text, q, sizeof q));
    else snprintf(why, cap, "expected %s, got %s", expected, xt_quote(text, q, sizeof q));
    return -1;
}

static int out_of_range(const xt_key *k, const char *text, char *why, size_t cap) {
    char r[128], q[64];
    snprintf(why, cap, "%s is out of range; it must be %s", xt_quote(text, q, sizeof q), range_doc(k, r, sizeof r));
    return -1;
}

/* ---- setters ------------------------------------------------------------------- */

static int set_float_text(const xt_key *k, double *dst, const char *text, int plain, char *why, size_t cap) {
    double v;
    if ((k->flags & XT_KF_AUTO) && plain && !strcmp(text, "auto")) return *dst = -1, 0;
    int r = xt_scalar_float(text, plain, &v);
    if (r == -1) return bad(why, cap, k->flags & XT_KF_AUTO ? "a number or auto" : "a number", text, plain);
    if (r == -2) { /* 1e400, inf, nan: no finite double; "must be > 0" would not say why */
        char q[64];
        snprintf(why, cap, "%s is not a finite number (a double holds up to about 1.8e308); give one %s", xt_quote(text, q, sizeof q),
                 range_doc(k, (char[128]){0}, 128));
        return -1;
    }
    if (!in_range(k, v)) return out_of_range(k, text, why, cap);
    *dst = v;
    return 0;
}

int xt_key_set_text(const xt_key *k, xt_config *c, const char *text, int plain, char *why, size_t cap) {
    char *base = (char *)c;
    void *dst = base + k->off;
    long long ll;
    int b, r;
    switch (k->type) {
    case XT_K_INT:
    case XT_K_I64:
        if ((k->flags & XT_KF_AUTO) && plain && !strcmp(text, "auto")) return *(int *)dst = -1, 0;
        r = xt_scalar_int(text, plain, &ll);
        if (r == -1) return bad(why, cap, k->flags & XT_KF_AUTO ? "an integer or auto" : "an integer", text, plain);
        if (r == -2 || !in_range(k, (double)ll)) return out_of_range(k, text, why, cap);
        if (k->type == XT_K_INT) *(int *)dst = (int)ll;
        else *(long long *)dst = ll;
        return 0;
    case XT_K_FLOAT: return set_float_text(k, dst, text, plain, why, cap);
    case XT_K_BOOL:
        if (xt_scalar_bool(text, plain, &b)) return bad(why, cap, "true or false", text, plain);
        *(int *)dst = b;
        return 0;
    case XT_K_TRI:
        if (plain && !strcmp(text, "auto")) return *(int *)dst = -1, 0;
        if (xt_scalar_bool(text, plain, &b)) return bad(why, cap, "auto, true or false", text, plain);
        *(int *)dst = b;
        return 0;
    case XT_K_STR:
        if (xt_scalar_null(text, plain)) text = "";
        /* A YAML file is UTF-8 already; a --set value may not be, and the
         * recorded config.yaml and results.json must be. */
        size_t tlen = strlen(text), at = xt_utf8_check(text, tlen);
        if (at != tlen) {
            snprintf(why, cap, "the value is not valid UTF-8 (byte 0x%02x at offset %zu); config files, config.yaml "
                     "and results.json hold UTF-8 text, so rename the file or pass its name in UTF-8",
                     (unsigned char)text[at], at);
            return -1;
        }
        if (strlen(text) >= k->size) {
            snprintf(why, cap, "the value is %zu bytes long; at most %zu are allowed", strlen(text), k->size - 1);
            return -1;
        }
        memcpy(dst, text, strlen(text) + 1);
        return 0;
    case XT_K_ENUM: {
        char expected[128] = "one of ", q[64];
        int n = 0;
        for (; k->choices[n]; n++) {
            if (!strcmp(text, k->choices[n])) return *(int *)dst = n, 0;  /* "sgd" quoted is fine too */
            snprintf(expected + strlen(expected), sizeof expected - strlen(expected), "%s%s", n ? ", " : "",
                     k->choices[n]);
        }
        const char *hint = xt_suggest(text, k->choices, n);
        bad(why, cap, expected, text, plain);
        if (hint && !xt_scalar_null(text, plain))
            snprintf(why, cap, "expected %s, got %s; did you mean '%s'?", expected, xt_quote(text, q, sizeof q), hint);
        return -1;
    }
    default: return bad(why, cap, k->type == XT_K_FPAIR ? "[a, b]" : k->type == XT_K_IPAIR ? "[h, w]" : "[start, end]", text, plain);
    }
}

/* [a, b] of numbers for SUBSET and FPAIR. */
static int set_pair(const xt_key *k, xt_config *c, yaml_document_t *doc, const yaml_node_t *v, char *why,
                    size_t cap) {
    const char *shape = k->type == XT_K_SUBSET ? "[start, end]" : k->type == XT_K_IPAIR ? "[h, w]" : "[a, b]";
    char got[96];
    if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.top - v->data.sequence.items.start != 2) {
        if (v->type == YAML_SEQUENCE_NODE) snprintf(got, sizeof got, "a list of %ld",
                                                    (long)(v->data.sequence.items.top - v->data.sequence.items.start));
        else xt_yaml_describe(v, got, sizeof got);
        snprintf(why, cap, "expected a list %s, got %s", shape, got);
        return -1;
    }
    yaml_node_t *a = yaml_document_get_node(doc, v->data.sequence.items.start[0]);
    yaml_node_t *b = yaml_document_get_node(doc, v->data.sequence.items.start[1]);
    const char *ta = xt_yaml_text(a), *tb = xt_yaml_text(b);
    if (!ta || !tb) {
        snprintf(why, cap, "expected a list %s of numbers, got nested lists or mappings", shape);
        return -1;
    }
    if (k->type == XT_K_FPAIR) {
        double x, y;
        if (set_float_text(k, &x, ta, xt_yaml_plain(a), why, cap) || set_float_text(k, &y, tb, xt_yaml_plain(b), why, cap))
            return -1;
        *(double *)((char *)c + k->off) = x;
        *(double *)((char *)c + k->off2) = y;
        return 0;
    }
    if (k->type == XT_K_IPAIR) {
        long long hw[2];
        const char *t[2] = {ta, tb};
        for (int i = 0; i < 2; i++) {
            if (xt_scalar_int(t[i], xt_yaml_plain(i ? b : a), &hw[i])) return bad(why, cap, "an integer", t[i], xt_yaml_plain(i ? b : a));
            if (hw[i] < k->min || hw[i] > k->max) return out_of_range(k, t[i], why, cap);
        }
        ((int *)((char *)c + k->off))[0] = (int)hw[0];
        ((int *)((char *)c + k->off))[1] = (int)hw[1];
        return 0;
    }
    long long s, e;
    if (xt_scalar_int(ta, xt_yaml_plain(a), &s)) return bad(why, cap, "an integer start", ta, xt_yaml_plain(a));
    if (xt_scalar_int(tb, xt_yaml_plain(b), &e)) return bad(why, cap, "an integer end", tb, xt_yaml_plain(b));
    if (s < 0 || s > LONG_MAX / 2) {
        snprintf(why, cap, "start %s must be >= 0", ta);
        return -1;
    }
    if (e != -1 && (e <= s || e > LONG_MAX / 2)) {
        snprintf(why, cap, "end %s must be greater than start %lld, or -1 for 'to the last image'", tb, s);
        return -1;
    }
    long *dst = (long *)((char *)c + k->off);
    dst[0] = (long)s;
    dst[1] = (long)e;
    return 0;
}

int xt_key_set(const xt_key *k, xt_config *c, yaml_document_t *doc, const yaml_node_t *v, char *why, size_t cap) {
    char got[96];
    if (!v) return xt_key_set_text(k, c, "", 1, why, cap); /* "--set key=": an empty document */
    if (k->type == XT_K_SUBSET || k->type == XT_K_FPAIR || k->type == XT_K_IPAIR) return set_pair(k, c, doc, v, why, cap);
    if (v->type != YAML_SCALAR_NODE) {
        char tdoc[160];
        snprintf(why, cap, "expected %s, got %s", xt_key_type_doc(k, tdoc, sizeof tdoc),
                 xt_yaml_describe(v, got, sizeof got));
        return -1;
    }
    return xt_key_set_text(k, c, xt_yaml_text(v), xt_yaml_plain(v), why, cap);
}

int xt_keys_apply_defaults(xt_config *c, char *why, size_t cap) {
    int bad_key = -1;
    for (int i = 0; i < xt_nkeys && bad_key < 0; i++) {
        const xt_key *k = &xt_keys[i];
        if (k->type == XT_K_MODEL || (k->flags & XT_KF_COMPUTED)) continue;
        yaml_document_t doc;
        char r[200];
        if (xt_yaml_parse(&doc, k->name, k->def, strlen(k->def), NULL)) {
            bad_key = i;
            snprintf(r, sizeof r, "not YAML");
        } else {
            if (xt_key_set(k, c, &doc, yaml_document_get_root_node(&doc), r, sizeof r)) bad_key = i;
            yaml_document_delete(&doc);
        }
        if (bad_key >= 0) snprintf(why, cap, "default of %s: %s", k->name, r);
    }
    return bad_key < 0 ? 0 : -1;
}

/* ---- printing ------------------------------------------------------------------ */

void xt_key_print_value(const xt_key *k, const xt_config *c, FILE *out) {
    const char *base = (const char *)c;
    const void *src = base + k->off;
    char a[32], b[32];
    switch (k->type) {
    case XT_K_INT:
        if ((k->flags & XT_KF_AUTO) && *(const int *)src < 0) fputs("auto", out);
        else fprintf(out, "%d", *(const int *)src);
        break;
    case XT_K_I64: fprintf(out, "%lld", *(const long long *)src); break;
    case XT_K_FLOAT:
        if ((k->flags & XT_KF_AUTO) && *(const double *)src < 0) fputs("auto", out);
        else fputs(xt_fmt_double(*(const double *)src, a, sizeof a), out);
        break;
    case XT_K_BOOL: fputs(*(const int *)src ? "true" : "false", out); break;
    case XT_K_TRI: fputs(*(const int *)src < 0 ? "auto" : *(const int *)src ? "true" : "false", out); break;
    case XT_K_STR:
    case XT_K_MODEL: xt_yaml_put_string(out, (const char *)src); break;
    case XT_K_ENUM: fputs(k->choices[*(const int *)src], out); break;
    case XT_K_SUBSET: fprintf(out, "[%ld, %ld]", ((const long *)src)[0], ((const long *)src)[1]); break;
    case XT_K_IPAIR: fprintf(out, "[%d, %d]", ((const int *)src)[0], ((const int *)src)[1]); break;
    case XT_K_FPAIR:
        fprintf(out, "[%s, %s]", xt_fmt_double(*(const double *)src, a, sizeof a),
                xt_fmt_double(*(const double *)(base + k->off2), b, sizeof b));
        break;
    }
}

const char *xt_key_type_doc(const xt_key *k, char *buf, size_t cap) {
    char r[128];
    switch (k->type) {
    case XT_K_INT:
    case XT_K_I64:
        snprintf(buf, cap, "integer %s%s", range_doc(k, r, sizeof r), k->flags & XT_KF_AUTO ? ", or auto" : "");
        break;
    case XT_K_FLOAT:
        snprintf(buf, cap, "number %s%s", range_doc(k, r, sizeof r), k->flags & XT_KF_AUTO ? ", or auto" : "");
        break;
    case XT_K_BOOL: snprintf(buf, cap, "true|false"); break;
    case XT_K_TRI: snprintf(buf, cap, "auto|true|false"); break;
    case XT_K_STR: snprintf(buf, cap, "string"); break;
    case XT_K_MODEL: snprintf(buf, cap, "path or mapping"); break;
    case XT_K_SUBSET: snprintf(buf, cap, "[start, end]"); break;
    case XT_K_IPAIR: snprintf(buf, cap, "[h, w], each %s", range_doc(k, r, sizeof r)); break;
    case XT_K_FPAIR: snprintf(buf, cap, "[a, b], each %s", range_doc(k, r, sizeof r)); break;
    case XT_K_ENUM:
        buf[0] = 0;
        for (int i = 0; k->choices[i]; i++)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? "|" : "", k->choices[i]);
        break;
    }
    return buf;
}
