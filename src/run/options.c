/* options.c — the command-line option table (see options.h), in --help's
 * order. The help lines are wrapped by hand to --help's 80 columns (the
 * text starts at column 26). */
#include "run/options.h"

#include <stddef.h>

const xt_option xt_options[] = {
    {"--config", XT_OPT_VALUE, "FILE", "the FLAGS file (required)"},
    {"--set", XT_OPT_VALUE, "KEY=VALUE",
     "override a key after FILE is read; dotted keys reach\n"
     "nested maps (--set optimizer.name=adam); repeatable,\n"
     "the last one wins"},
    {"--dry-run", XT_OPT_FLAG, NULL,
     "print the resolved configuration as YAML that --config\n"
     "reads back (the model summary goes to stderr), then\n"
     "exit without reading any data"},
    {"--overwrite", XT_OPT_FLAG, NULL,
     "output_dir already holds a run: remove its files (only\n"
     "the ones xlatrain writes) and start afresh"},
    {"--resume", XT_OPT_VALUE, "PATH|latest",
     "continue from a checkpoint (.safetensors), or from the\n"
     "newest one in output_dir"},
    {"--allow-config-change", XT_OPT_FLAG, NULL,
     "let --resume continue although a key that changes the\n"
     "trajectory differs from the checkpoint's (recorded in\n"
     "results.json; the run is no longer bit-identical)"},
    {"--eval-only", XT_OPT_FLAG, NULL,
     "evaluate the --resume checkpoint (default: latest) on\n"
     "the test set and exit"},
    {"--predict", XT_OPT_VALUE, "FILE",
     "write the predicted class of every image in FILE (an IDX\n"
     "images file; a CIFAR-10 .bin batch for CIFAR-shaped\n"
     "models) as CSV, with the --resume checkpoint (default:\n"
     "latest); given --resume CKPT, --config may be left out:\n"
     "the config CKPT records is used"},
    {"--output", XT_OPT_VALUE, "CSV",
     "where --predict writes (default:\n"
     "OUTPUT_DIR/predictions.csv; '-': standard output)"},
    {"--export", XT_OPT_VALUE, "CKPT",
     "write the model's weights alone (PyTorch's state_dict\n"
     "names, no optimizer state) of checkpoint CKPT, or of a\n"
     "run directory's latest one, to --output FILE: PyTorch's\n"
     "own format for FILE.pt / FILE.pth (torch.load reads it),\n"
     "safetensors otherwise; FILE.onnx gets the model itself\n"
     "in ONNX (opset 17, eval form, a symbolic batch) for\n"
     "onnxruntime and the like; needs no --config"},
    {"--format", XT_OPT_VALUE, "F",
     "with --export: onnx, pt or safetensors whatever the\n"
     "--output name ends in"},
    {"--logdir", XT_OPT_VALUE, "DIR",
     "TensorBoard event files go to DIR (--set logdir=DIR;\n"
     "default OUTPUT_DIR/tb; watch with tensorboard --logdir)"},
    {"--sweep", XT_OPT_VALUE, "KEY=V1,V2,...",
     "a multirun: one normal run per combination of the\n"
     "swept values (the cartesian product of every --sweep,\n"
     "the first varying slowest), one after another, in\n"
     "OUTPUT_DIR/<i>-<key=value,...>; --sweep seed=1,2,3\n"
     "repeats. Writes OUTPUT_DIR/summary.jsonl and\n"
     "summary.csv as each run ends and prints the table\n"
     "(runs' own output goes to stderr), the mean and std.\n"
     "deviation over runs that differ only in seed, and\n"
     "the best run. Exit 0 when every run succeeded, else\n"
     "the first failing run's code; a failing run never\n"
     "stops the others"},
    {"--sweep-resume", XT_OPT_FLAG, NULL,
     "with --sweep: continue the sweep in OUTPUT_DIR, skipping\n"
     "runs whose results.json says they succeeded (exit 0:\n"
     "ok, time_limit, early_stopped), resuming from a\n"
     "checkpoint where one is left"},
    {"--fast-dev-run", XT_OPT_FLAG, NULL,
     "a smoke test for CI (--set fast_dev_run=true): one\n"
     "epoch of one training step and one test batch on each\n"
     "worker, through every writer (checkpoint written and\n"
     "read back, both PNGs, metrics.jsonl, results.json with\n"
     "\"smoke\": true); exit 0 only if all of them worked"},
    {"--max-compiles", XT_OPT_VALUE, "N",
     "a CI guard: fail with exit 7 if the engine compiles more\n"
     "than N distinct graphs (per worker); the message names\n"
     "each graph and why it was compiled. A training run\n"
     "needs 2 (training step, evaluation), plus one per\n"
     "partial batch shape"},
    {"--download", XT_OPT_FLAG, NULL, "fetch the dataset into datadir first if it is missing"},
    {"--list-models", XT_OPT_FLAG, NULL,
     "list the models that model: NAME finds, with their\n"
     "parameter counts, and exit"},
    {"--help", XT_OPT_FLAG, NULL, "this text"},
    {"--version", XT_OPT_FLAG, NULL, "print the version"},
    /* for `make install` and `make man`: documented in the man page, not in --help */
    {"--bash-completion", XT_OPT_FLAG, NULL, NULL},
    {"--man-block", XT_OPT_VALUE, "NAME", NULL},
};
const int xt_noptions = (int)(sizeof xt_options / sizeof *xt_options);
_Static_assert(sizeof xt_options / sizeof *xt_options <= XT_NOPTIONS_MAX, "raise XT_NOPTIONS_MAX");
