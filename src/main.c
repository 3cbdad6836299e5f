/* main.c — the xlatrain command line: options -> xt_cli, the FLAGS file ->
 * xt_config, then --dry-run prints both, --predict goes to xt_predict_main
 * and anything else (training, --eval-only) to xt_train_main. This is the only place that prints an error message
 * ("xlatrain: <msg>" on stderr) and picks the exit code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_keys.h"
#include "config/config_yaml.h"
#include "config/model_find.h"
#include "distributed/cluster.h"
#include "io/ckptdir.h"
#include "io/safetensors.h"
#include "kernels/simd.h"
#include "run/cli.h"
#include "run/export.h"
#include "run/hosts.h"
#include "run/log.h"
#include "run/man_blocks.h"
#include "run/options.h"
#include "run/predict.h"
#include "run/record.h"
#include "run/signals.h"
#include "run/sweep.h"
#include "run/train.h"
#include "util/env_vars.h"
#include "util/err.h"
#include "util/version.h"

static const char usage_line[] =
    "usage: xlatrain --config FILE [--set KEY=VALUE]... [--dry-run] [--download]\n"
    "                [--resume PATH|latest [--allow-config-change]] [--overwrite]\n"
    "                [--eval-only] [--fast-dev-run] [--max-compiles N]\n"
    "                [--sweep KEY=V1,V2,...]... [--sweep-resume]\n"
    "                [--predict FILE [--output CSV]] [--logdir DIR]\n"
    "       xlatrain --export CHECKPOINT|RUN_DIR --output FILE(.pt|.onnx|.safetensors) [--format onnx|pt|safetensors]\n"
    "       xlatrain --list-models | --help | --version\n";

/* --help is this text with the option, exit-status and environment lists
 * printed from their tables (run/options.c, util/exit_codes.c,
 * util/env_vars.c) and the keys from the key table, in this order. */
static const char help_intro[] =
    "\n"
    "Train a CNN on MNIST-shaped or CIFAR-10 images on the CPU, the way PyTorch/XLA does\n"
    "on TPUs: a lazily traced, compiled and cached step graph, run by one forked\n"
    "data-parallel worker per core. FILE is a YAML FLAGS file (see configs/).\n"
    "\n"
    "options:\n";

static const char help_after_options[] =
    "\n"
    "output directory: one run per directory. A fresh run refuses an output_dir\n"
    "that holds a run (--resume latest continues it, --overwrite replaces it);\n"
    "without output_dir it takes the first free runs/NAME, runs/NAME-2, ... A\n"
    "lock (output_dir/xlatrain.lock) keeps a second run out while one is alive.\n"
    "The run records config.yaml there, and every ending after that writes\n"
    "results.json (eval.json for --eval-only) and prints it as the last line.\n"
    "\n"
    "exit status (results.json \"status\" in brackets):\n";

static const char help_after_exit[] =
    "\n"
    "several hosts: a build made with 'make MPI=1' (Open MPI) runs one MPI rank\n"
    "per host under mpirun or srun, each forking num_cores workers, e.g.\n"
    "  mpirun -np 2 --bind-to none xlatrain --config c.yaml --set num_cores=1\n"
    "The world is every host's workers, numbered host by host (xla:N); only rank\n"
    "0 writes output_dir; --version says whether MPI is compiled in. mpirun's\n"
    "own exit status is not the run's (Open MPI's mpirun exits 1 after a\n"
    "SIGTERM): scripts read results.json's status and exit_code. See the man\n"
    "page's MULTIPLE HOSTS.\n"
    "\n"
    "environment:\n";

static const char help_before_keys[] =
    "\n"
    "configuration keys (type; default, then what it does):\n";

/* "  TERM<pad>line 1\n<indent>line 2\n..." for a help text of '\n'-split lines */
static void print_help_item(const char *term, int width, const char *text) {
    printf("  %-*s ", width, term);
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        printf("%.*s\n", (int)n, line);
        line += n + (line[n] == '\n');
        if (*line) printf("%*s", width + 3, "");
    }
}

static void print_help(void) {
    char term[64];
    fputs(usage_line, stdout);
    fputs(help_intro, stdout);
    for (int i = 0; i < xt_noptions; i++) {
        const xt_option *o = &xt_options[i];
        if (!o->help) continue;
        snprintf(term, sizeof term, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        print_help_item(term, 22, o->help);
    }
    fputs(help_after_options, stdout);
    for (int i = 0; i < xt_nexit_codes; i++) {
        snprintf(term, sizeof term, "%d", xt_exit_codes[i].code);
        print_help_item(term, 4, xt_exit_codes[i].help);
    }
    fputs(help_after_exit, stdout);
    for (int i = 0; i < xt_nenv_vars; i++)
        if (xt_env_vars[i].help) print_help_item(xt_env_vars[i].name, 22, xt_env_vars[i].help);
    fputs(help_before_keys, stdout);
    xt_config_print_keys(stdout);
    fputs("\nThe manual pages: xlatrain(1) has the options and examples, xlatrain.yaml(5)\n"
          "the keys, the layer-spec format and the models (in a source tree:\n"
          "man -l man/xlatrain.1, man -l man/xlatrain.yaml.5).\n", stdout);
}

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

/* --list-models: every model `model: NAME` finds, one line each. */
static int list_models(void) {
    xt_model_entry *list = NULL;
    int n = xt_model_list(&list);
    if (n <= 0) {
        fprintf(stderr, "xlatrain: no models found (looked beside the binary: share/xlatrain/models, or models/ of the source tree)\n");
        free(list);
        return n < 0 ? XT_ERUNTIME : XT_EUSAGE;
    }
    for (int i = 0; i < n; i++) {
        xt_spec spec;
        xt_err e = {0};
        char params[32] = "?";
        if (!xt_spec_load(&spec, list[i].path, &e)) {
            xt_commas(params, (unsigned long long)xt_spec_total_params(&spec));
            xt_spec_free(&spec);
        }
        printf("%-14s %10s  %s\n", list[i].name, params, list[i].description);
    }
    free(list);
    return 0;
}

/* --bash-completion: a bash completion script generated from the option
 * table above and the config key table, so it cannot drift from them;
 * `make install` installs it. Model names come from --list-models when
 * completing, so they follow the installation. */
static void print_bash_completion(void) {
    printf("# bash completion for xlatrain, generated by 'xlatrain --bash-completion'\n"
           "_xlatrain() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} key\n"
           "    # '=' splits words: --set KEY=VALUE arrives as --set KEY = VALUE\n"
           "    if [[ $prev == = && $COMP_CWORD -ge 3 && ${COMP_WORDS[COMP_CWORD-3]} == --set ]]; then key=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
           "    if [[ $cur == = && $COMP_CWORD -ge 2 && ${COMP_WORDS[COMP_CWORD-2]} == --set ]]; then key=$prev; cur=; fi\n"
           "    if [[ -n $key ]]; then\n"
           "        case $key in\n"
           "            model) COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" --list-models 2>/dev/null | cut -d' ' -f1)\" -- \"$cur\"));;\n");
    for (int i = 0; i < xt_nkeys; i++) {
        const xt_key *k = &xt_keys[i];
        if (k->type != XT_K_ENUM || !k->choices) continue;
        printf("            %s) COMPREPLY=($(compgen -W \"", k->name);
        for (int c = 0; k->choices[c]; c++) printf("%s%s", c ? " " : "", k->choices[c]);
        printf("\" -- \"$cur\"));;\n");
    }
    printf("            *) COMPREPLY=();;\n"
           "        esac\n"
           "        return\n"
           "    fi\n"
           "    case $prev in\n"
           "        --config) COMPREPLY=($(compgen -f -X '!*.y*ml' -- \"$cur\") $(compgen -d -- \"$cur\")); return;;\n"
           "        --set|--sweep) compopt -o nospace 2>/dev/null; COMPREPLY=($(compgen -S = -W \"");
    for (int i = 0; i < xt_nkeys; i++) printf("%s%s", i ? " " : "", xt_keys[i].name);
    printf("\" -- \"$cur\")); return;;\n"
           "        --resume|--predict|--export|--output) COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n"
           "    esac\n"
           "    COMPREPLY=($(compgen -W \"");
    for (size_t i = 0; i < (size_t)xt_noptions; i++) printf("%s%s", i ? " " : "", xt_options[i].name);
    printf("\" -- \"$cur\"))\n"
           "}\n"
           "complete -o filenames -F _xlatrain xlatrain\n");
}

/* --man-block NAME: a generated block of the man pages, for `make man`. */
static int man_block(const char *name) {
    int rc = xt_man_block(name, stdout);
    if (rc == XT_EUSAGE) {
        char known[128] = "";
        for (int i = 0; xt_man_block_names[i]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", xt_man_block_names[i]);
        return usage_error("--man-block %s: no such block; the blocks are %s", name, known);
    }
    if (rc) fprintf(stderr, "xlatrain: --man-block %s: no models found\n", name);
    return rc;
}

/* Parse argv into cli. Returns -1 to go on, or an exit code (0 after
 * --help/--version, 2 after a usage error, already reported). */
static int parse_args(int argc, char **argv, xt_cli *cli) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "-h")) arg = "--help";
        if (!strcmp(arg, "-V")) arg = "--version";
        const xt_option *o = NULL;
        for (size_t k = 0; k < (size_t)xt_noptions && !o; k++)
            if ((val = match(arg, xt_options[k].name))) o = &xt_options[k];
        if (!o) {
            if (arg[0] == '-') {
                const char *names[XT_NOPTIONS_MAX], *h;
                char word[64];
                for (size_t k = 0; k < (size_t)xt_noptions; k++) names[k] = xt_options[k].name;
                snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
                if ((h = xt_suggest(word, names, xt_noptions)))
                    return usage_error("unknown option '%s' (did you mean '%s'?)", word, h);
                return usage_error("unknown option '%s'", arg);
            }
            return usage_error("unexpected argument '%s' (the config file goes after --config)", arg);
        }
        if (o->kind == XT_OPT_FLAG && *val) return usage_error("option '%s' takes no value", o->name);
        if (o->kind == XT_OPT_VALUE && arg[strlen(o->name)] != '=') {
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
                return usage_error("option '%s' needs a value", o->name);
            val = argv[++i];
        }
        if (o->kind == XT_OPT_VALUE && !*val) return usage_error("option '%s' needs a value", o->name);
        const char **slot = NULL;
        if (!strcmp(o->name, "--help")) {
            print_help();
            return 0;
        } else if (!strcmp(o->name, "--bash-completion")) {
            print_bash_completion();
            return 0;
        } else if (!strcmp(o->name, "--man-block")) {
            return man_block(val);
        } else if (!strcmp(o->name, "--list-models")) {
            return list_models();
        } else if (!strcmp(o->name, "--version")) {
            printf("xlatrain %s (%s)\n", XT_VERSION, xt_cluster_library());
            return 0;
        } else if (!strcmp(o->name, "--config")) slot = &cli->config_path;
        else if (!strcmp(o->name, "--resume")) slot = &cli->resume;
        else if (!strcmp(o->name, "--predict")) slot = &cli->predict;
        else if (!strcmp(o->name, "--export")) slot = &cli->export_ckpt;
        else if (!strcmp(o->name, "--output")) slot = &cli->predict_out;
        else if (!strcmp(o->name, "--format")) slot = &cli->export_format;
        else if (!strcmp(o->name, "--dry-run")) cli->dry_run = 1;
        else if (!strcmp(o->name, "--eval-only")) cli->eval_only = 1;
        else if (!strcmp(o->name, "--download")) cli->download = 1;
        else if (!strcmp(o->name, "--overwrite")) cli->overwrite = 1;
        else if (!strcmp(o->name, "--allow-config-change")) cli->allow_config_change = 1;
        else if (!strcmp(o->name, "--sweep-resume")) cli->sweep_resume = 1;
        else if (!strcmp(o->name, "--max-compiles")) {
            char *end;
            long n = strtol(val, &end, 10);
            if (*end || n < 1 || n > 1000000)
                return usage_error("--max-compiles %s: expected a whole number of graphs from 1 to 1000000 (a training run compiles 2)", val);
            cli->max_compiles = (int)n;
        }
        else if (!strcmp(o->name, "--fast-dev-run")) { /* the key, so config.yaml records it and sweep runs inherit it */
            if (cli->nset == XT_CLI_MAX_SETS) return usage_error("more than %d --set options", XT_CLI_MAX_SETS);
            cli->sets[cli->nset++] = "fast_dev_run=true";
        }
        else if (!strcmp(o->name, "--logdir")) { /* the key, so config.yaml records it and sweep runs inherit it */
            static char set[600];
            if ((size_t)snprintf(set, sizeof set, "logdir=%s", val) >= sizeof set) return usage_error("--logdir: the path is too long");
            if (cli->nset == XT_CLI_MAX_SETS) return usage_error("more than %d --set options", XT_CLI_MAX_SETS);
            cli->sets[cli->nset++] = set;
        }
        else if (!strcmp(o->name, "--sweep")) {
            if (cli->nsweep == XT_CLI_MAX_SETS) return usage_error("more than %d --sweep options", XT_CLI_MAX_SETS);
            cli->sweeps[cli->nsweep++] = val;
        } else if (!strcmp(o->name, "--set")) {
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
    if (cli->export_ckpt) {
        if (!cli->predict_out) return usage_error("--export needs --output FILE (.pt for PyTorch's format, else safetensors)");
        if (cli->config_path || cli->predict || cli->resume || cli->eval_only || cli->dry_run || cli->nset || cli->nsweep)
            return usage_error("--export takes only --output: the checkpoint names its tensors");
        if (cli->export_format && strcmp(cli->export_format, "onnx") && strcmp(cli->export_format, "pt") &&
            strcmp(cli->export_format, "safetensors"))
            return usage_error("--format %s: expected onnx, pt or safetensors", cli->export_format);
        return -1;
    }
    if (cli->export_format) return usage_error("--format goes with --export CKPT");
    /* --predict with a checkpoint named: the config it records will do */
    if (!cli->config_path && !(cli->predict && cli->resume && strcmp(cli->resume, "latest")))
        return usage_error("missing --config FILE%s", cli->predict ? " (or --resume CHECKPOINT, whose recorded config --predict then uses)" : "");
    if (cli->predict_out && !cli->predict) return usage_error("--output goes with --predict FILE or --export CKPT");
    if (cli->predict && cli->eval_only) return usage_error("choose one of --eval-only and --predict");
    if (cli->overwrite && (cli->resume || cli->eval_only || cli->predict))
        return usage_error("--overwrite starts a new run; it does not go with --resume, --eval-only or --predict");
    if (cli->allow_config_change && (!cli->resume || cli->eval_only || cli->predict))
        return usage_error("--allow-config-change goes with --resume when training");
    if (cli->sweep_resume && !cli->nsweep) return usage_error("--sweep-resume goes with the sweep's --sweep options");
    if (cli->nsweep && (cli->resume || cli->eval_only || cli->predict || cli->overwrite || cli->dry_run))
        return usage_error("--sweep runs new runs; it does not go with --resume, --eval-only, --predict, --overwrite or --dry-run (continue a sweep with --sweep-resume)");
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

/* Under mpirun with several ranks only training and --eval-only need every
 * host; the other commands run on rank 0 alone. */
static int host_is_idle(const xt_cli *cli) {
    return xt_cluster_rank() != 0 && (cli->export_ckpt || cli->predict || cli->dry_run);
}

static int run(xt_cli *cli, xt_err *err);

int main(int argc, char **argv) {
    /* first of all: a SIGINT/SIGTERM while the config is read or the data
     * made is a stop (exit 130, nothing left behind), not the default death */
    xt_signals_install();
    xt_cli cli = {.argc = argc, .argv = argv};
    int rc = parse_args(argc, argv, &cli);
    if (rc >= 0) {
        xt_signals_release();
        if (fflush(stdout) != 0 && rc == 0) return XT_EIO;
        return rc;
    }
    xt_err err = {0};
    if ((rc = xt_cluster_init(&argc, &argv, &err))) {
        fprintf(stderr, "xlatrain: %s\n", err.msg);
        return rc;
    }
    rc = host_is_idle(&cli) ? 0 : run(&cli, &err);
    /* a failure every host knows of (or success) ends each alone; any other
     * failure of this host takes the whole job down (MPI_Abort) */
    xt_cluster_exit(rc, rc == 0 || rc == XT_EBELOW || rc == XT_EINTR || xt_hosts_failure_agreed(), err.msg);
    return rc;
}

/* --predict FILE --resume CKPT without --config: the resolved config the
 * checkpoint records (a run directory: its newest checkpoint), with the
 * --set options over it and output_dir the checkpoint's directory (so the
 * CSV goes beside it). */
static int config_from_checkpoint(xt_config *cfg, xt_cli *cli, xt_err *err) {
    static char path[4096], dir_set[4200];
    struct stat st;
    if (stat(cli->resume, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (xt_st_find_latest(cli->resume, path, sizeof path, err)) return err->code;
    } else if ((size_t)snprintf(path, sizeof path, "%s", cli->resume) >= sizeof path) {
        return xt_fail(err, XT_EUSAGE, "--resume: path too long");
    }
    if (access(path, R_OK)) return xt_fail(err, XT_EDATA, "--resume %s: cannot read it: %s; check the path", path, strerror(errno));
    xt_st_file f;
    int rc = xt_st_read(path, &f, err);
    if (rc) return rc;
    const char *text = xt_st_meta_get(&f, "xlatrain.resolved_config");
    if (!text || !*text) {
        xt_st_close(&f);
        return xt_fail(err, XT_EUSAGE, "%s records no config; give the run's --config FILE", path);
    }
    const char *slash = strrchr(path, '/');
    snprintf(dir_set, sizeof dir_set, "output_dir=%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const char *sets[XT_CLI_MAX_SETS + 1];
    int n = 0;
    sets[n++] = dir_set;
    for (int i = 0; i < cli->nset; i++) sets[n++] = cli->sets[i];
    rc = xt_config_load_buffer(cfg, path, text, strlen(text), sets, n, err);
    xt_st_close(&f);
    if (!rc) {
        cli->resume = path;
        fprintf(stderr, "xlatrain: using the config %s records (no --config given)\n", path);
    }
    return rc;
}

static int run(xt_cli *cli, xt_err *err) {
    int rc;
    if (cli->export_ckpt) {
        xt_signals_release(); /* it never polls for a stop */
        rc = xt_export_as(cli->export_ckpt, cli->predict_out, cli->export_format, err);
        if (rc && err->msg[0]) fprintf(stderr, "xlatrain: %s\n", err->msg);
        return rc;
    }
    xt_config cfg;
    rc = cli->config_path ? xt_config_load(&cfg, cli->config_path, cli->sets, cli->nset, err) : config_from_checkpoint(&cfg, cli, err);
    /* only training and --eval-only poll for a stop; --sweep installs its own handlers */
    if (cli->dry_run || cli->nsweep || cli->predict) xt_signals_release();
    if (rc) {
        fprintf(stderr, "xlatrain: %s\n", err->msg);
        return rc;
    }
    for (int i = 0; i < cfg.nnotes && xt_cluster_rank() == 0; i++) fprintf(stderr, "xlatrain: note: %s\n", cfg.notes[i]);
    /* the ISA cap before anything runs or chooses a kernel; workers fork later and inherit it */
    k_isa_set_cap(cfg.isa - 1, cfg.isa_from);
    if (cli->dry_run) {
        rc = dry_run(&cfg, cli);
    } else {
        rc = cli->nsweep    ? xt_sweep_main(&cfg, cli, err)
             : cli->predict ? xt_predict_main(&cfg, cli, err)
                            : xt_train_main(&cfg, cli, err);
        fflush(stdout);
        /* after a stop, a stderr nobody reads must not keep the run from exiting */
        if (rc && err->msg[0]) xt_out_err("xlatrain: %s", err->msg);
    }
    xt_config_free(&cfg);
    return rc;
}
