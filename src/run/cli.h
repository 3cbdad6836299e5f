/* cli.h — what the command line asked for (parsed by main.c). */
#ifndef XT_CLI_H
#define XT_CLI_H

#define XT_CLI_MAX_SETS 128

typedef struct xt_cli {
    const char *config_path;              /* --config FILE (required unless --help/--version) */
    const char *sets[XT_CLI_MAX_SETS];    /* --set key=value, in order (later wins) */
    int nset;
    int dry_run;                          /* --dry-run: print config + model summary, exit 0 */
    int eval_only;                        /* --eval-only: evaluate the --resume checkpoint */
    const char *resume;                   /* --resume PATH|latest */
    const char *predict;                  /* --predict IDX_FILE: write predictions CSV */
    const char *predict_out;              /* --output: CSV for --predict (default <output_dir>/predictions.csv),
                                             the weights file for --export */
    const char *export_ckpt;              /* --export CKPT|RUN_DIR: write the state_dict to --output */
    const char *export_format;            /* --format onnx|pt|safetensors: over --output's extension */
    int download;                         /* --download: fetch the dataset first */
    int overwrite;                        /* --overwrite: replace the run already in output_dir */
    int allow_config_change;              /* --allow-config-change: resume despite a changed trajectory key */
    const char *sweeps[XT_CLI_MAX_SETS];  /* --sweep KEY=v1,v2,...: one axis of a multirun each (sweep.h) */
    int nsweep;
    int max_compiles;                     /* --max-compiles N: exit 7 past N compiled graphs; 0 = no limit */
    int sweep_resume;                     /* --sweep-resume: skip the sweep's runs that ended ok */
    int argc;                             /* the command line, recorded in config.yaml */
    char **argv;
} xt_cli;

#endif
