/* main.c — the xlatrain command line: options -> xt_cli, the FLAGS file ->
 * xt_config, then --dry-run prints both, --predict goes to xt_predict_main
 * and anything else (training, --eval-only) to xt_train_main. This is the only place that prints an error message
 * ("xlatrain: <msg>" on stderr) and picks the exit code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "run/cli.h"
#include "run/predict.h"
#include "run/record.h"
#include "run/train.h"
#include "util/err.h"
#include "util/version.h"

static const char usage_line[] =
    "usage: xlatrain --config FILE [--set KEY=VALUE]... [--dry-run] [--download]\n"
    "                [--resume PATH|latest [--allow-config-change]] [--overwrite]\n"
    "                [--eval-only]\n"
    "                [--predict IDX_FILE [--output CSV]]\n"
    "       xlatrain --help | --version\n";

static const char help_text[] =
    "\n"
    "Train a small CNN on MNIST-shaped images on the CPU, the way PyTorch/XLA does\n"
    "on TPUs: a lazily traced, compiled and cached step graph, run by one forked\n"
    "data-parallel worker per core. FILE is a YAML FLAGS file (see configs/).\n"
    "\n"
    "options:\n"
    "  --config FILE          the FLAGS file (required)\n"
    "  --set KEY=VALUE        override a key after FILE is read; dotted keys reach\n"
    "                         nested maps (--set optimizer.name=adam); repeatable,\n"
    "                         the last one wins\n"
    "  --dry-run              print the resolved configuration as YAML that --config\n"
    "                         reads back (the model summary goes to stderr), then\n"
    "                         exit without reading any data\n"
    "  --overwrite            output_dir already holds a run: remove its files (only\n"
    "                         the ones xlatrain writes) and start afresh\n"
    "  --resume PATH|latest   continue from a checkpoint (.safetensors), or from the\n"
    "                         newest one in output_dir\n"
    "  --allow-config-change  let --resume continue although a key that changes the\n"
    "                         trajectory differs from the checkpoint's (recorded in\n"
    "                         results.json; the run is no longer bit-identical)\n"
    "  --eval-only            evaluate the --resume checkpoint (default: latest) on\n"
    "                         the test set and exit\n"
    "  --predict IDX_FILE     write the predicted class of every image in IDX_FILE as\n"
    "                         CSV, with the --resume checkpoint (default: latest)\n"
    "  --output CSV           where --predict writes (default:\n"
    "                         OUTPUT_DIR/predictions.csv)\n"
    "  --download             fetch the dataset into datadir first if it is missing\n"
    "  --help                 this text\n"
    "  --version              print the version\n"
    "\n"
    "output directory: one run per directory. A fresh run refuses an output_dir\n"
    "that holds a run (--resume latest continues it, --overwrite replaces it);\n"
    "without output_dir it takes the first free runs/NAME, runs/NAME-2, ... A\n"
    "lock (output_dir/xlatrain.lock) keeps a second run out while one is alive.\n"
    "The run records config.yaml there, and every ending after that writes\n"
    "results.json (eval.json for --eval-only) and prints it as the last line.\n"
    "\n"
    "exit status (results.json \"status\" in brackets):\n"
    "  0    success [ok]\n"
    "  2    usage, configuration or layer-spec error; output_dir holds another run\n"
    "       or is in use; --resume with a config that changes the trajectory [error]\n"
    "  3    an input cannot be read: dataset files missing, truncated or corrupt;\n"
    "       the --predict images or --resume checkpoint missing or unreadable [error]\n"
    "  4    training failed: loss NaN/Inf [diverged], a worker died or hung\n"
    "       [worker_failed], a damaged or foreign checkpoint [error]\n"
    "  5    an output file cannot be written [error]\n"
    "  6    finished, but the best test accuracy is below target_accuracy\n"
    "       [below_target]\n"
    "  130  interrupted by SIGINT or SIGTERM, checkpoint written [interrupted]\n"
    "\n"
    "environment:\n"
    "  XLATRAIN_SAVE_GRAPHS   directory for graph dumps when save_graphs is not set\n"
    "  OPENBLAS_NUM_THREADS   OpenBLAS's thread count; workers use blas_threads\n"
    "\n"
    "configuration keys (type; default, then what it does):\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "xlatrain: %s; try 'xlatrain --help'\n", msg);
    return XT_EUSAGE;
}

/* "--name" matches "--name" and "--name=VALUE"; returns the inline value,
 * "" for none, NULL for no match. */
static const char *match(const char *arg, const char *name) {
    size_t n = strlen(name);
    if (strncmp(arg, name, n)) return NULL;
    if (arg[n] == 0) return "";
    if (arg[n] == '=') return arg + n + 1;
    return NULL;
}

enum { OPT_FLAG, OPT_VALUE };
static const struct option_def {
    const char *name;
    int kind;
} options[] = {
    {"--config", OPT_VALUE}, {"--set", OPT_VALUE},     {"--resume", OPT_VALUE},  {"--predict", OPT_VALUE},
    {"--output", OPT_VALUE}, {"--dry-run", OPT_FLAG},  {"--eval-only", OPT_FLAG}, {"--download", OPT_FLAG},
    {"--help", OPT_FLAG},    {"--version", OPT_FLAG},   {"--overwrite", OPT_FLAG}, {"--allow-config-change", OPT_FLAG},
};

/* Parse argv into cli. Returns -1 to go on, or an exit code (0 after
 * --help/--version, 2 after a usage error, already reported). */
static int parse_args(int argc, char **argv, xt_cli *cli) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "-h")) arg = "--help";
        if (!strcmp(arg, "-V")) arg = "--version";
        const struct option_def *o = NULL;
        for (size_t k = 0; k < sizeof options / sizeof *options && !o; k++)
            if ((val = match(arg, options[k].name))) o = &options[k];
        if (!o) {
            if (arg[0] == '-') return usage_error("unknown option '%s'", arg);
            return usage_error("unexpected argument '%s' (the config file goes after --config)", arg);
        }
        if (o->kind == OPT_FLAG && *val) return usage_error("option '%s' takes no value", o->name);
        if (o->kind == OPT_VALUE && arg[strlen(o->name)] != '=') {
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
                return usage_error("option '%s' needs a value", o->name);
            val = argv[++i];
        }
        if (o->kind == OPT_VALUE && !*val) return usage_error("option '%s' needs a value", o->name);
        const char **slot = NULL;
        if (!strcmp(o->name, "--help")) {
            fputs(usage_line, stdout);
            fputs(help_text, stdout);
            xt_config_print_keys(stdout);
            fputs("\nThe manual page (man -l man/xlatrain.1) has the layer-spec format and examples.\n", stdout);
            return 0;
        } else if (!strcmp(o->name, "--version")) {
            puts("xlatrain " XT_VERSION);
            return 0;
        } else if (!strcmp(o->name, "--config")) slot = &cli->config_path;
        else if (!strcmp(o->name, "--resume")) slot = &cli->resume;
        else if (!strcmp(o->name, "--predict")) slot = &cli->predict;
        else if (!strcmp(o->name, "--output")) slot = &cli->predict_out;
        else if (!strcmp(o->name, "--dry-run")) cli->dry_run = 1;
        else if (!strcmp(o->name, "--eval-only")) cli->eval_only = 1;
        else if (!strcmp(o->name, "--download")) cli->download = 1;
        else if (!strcmp(o->name, "--overwrite")) cli->overwrite = 1;
        else if (!strcmp(o->name, "--allow-config-change")) cli->allow_config_change = 1;
        else if (!strcmp(o->name, "--set")) {
            if (!strchr(val, '=') || val[0] == '=')
                return usage_error("--set %s: expected KEY=VALUE, e.g. --set batch_size=64", val);
            if (cli->nset == XT_CLI_MAX_SETS) return usage_error("more than %d --set options", XT_CLI_MAX_SETS);
            cli->sets[cli->nset++] = val;
        }
        if (slot) {
            if (*slot) return usage_error("option '%s' given twice", o->name);
            *slot = val;
        }
    }
    if (!cli->config_path) return usage_error("missing --config FILE");
    if (cli->predict_out && !cli->predict) return usage_error("--output goes with --predict IDX_FILE");
    if (cli->predict && cli->eval_only) return usage_error("choose one of --eval-only and --predict");
    if (cli->overwrite && (cli->resume || cli->eval_only || cli->predict))
        return usage_error("--overwrite starts a new run; it does not go with --resume, --eval-only or --predict");
    if (cli->allow_config_change && (!cli->resume || cli->eval_only || cli->predict))
        return usage_error("--allow-config-change goes with --resume when training");
    if ((cli->eval_only || cli->predict) && !cli->resume) cli->resume = "latest";
    return -1;
}

/* The resolved config on stdout, as config.yaml records it (so the output
 * is a config --config reads back); the model summary on stderr. */
static int dry_run(const xt_config *c, const xt_cli *cli) {
    char *text = xt_record_config_file(c, cli);
    if (!text) {
        fprintf(stderr, "xlatrain: out of memory\n");
        return XT_ERUNTIME;
    }
    printf("# resolved configuration (%s)\n", c->source[0] ? c->source : "defaults");
    if (!c->output_dir_set) printf("# output_dir is the default: a run takes the first free one of %s, %s-2, ...\n", c->output_dir, c->output_dir);
    fputs(text, stdout);
    free(text);
    fprintf(stderr, "# model\n");
    xt_spec_summary(&c->spec, stderr);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "xlatrain: cannot write to standard output\n");
        return XT_EIO;
    }
    return 0;
}

int main(int argc, char **argv) {
    xt_cli cli = {.argc = argc, .argv = argv};
    int rc = parse_args(argc, argv, &cli);
    if (rc >= 0) {
        if (fflush(stdout) != 0 && rc == 0) return XT_EIO;
        return rc;
    }
    xt_config cfg;
    xt_err err = {0};
    rc = xt_config_load(&cfg, cli.config_path, cli.sets, cli.nset, &err);
    if (rc) {
        fprintf(stderr, "xlatrain: %s\n", err.msg);
        return rc;
    }
    if (cli.dry_run) {
        rc = dry_run(&cfg, &cli);
    } else {
        rc = cli.predict ? xt_predict_main(&cfg, &cli, &err) : xt_train_main(&cfg, &cli, &err);
        fflush(stdout);
        if (rc && err.msg[0]) fprintf(stderr, "xlatrain: %s\n", err.msg);
    }
    xt_config_free(&cfg);
    return rc;
}
