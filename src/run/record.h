/* record.h — how a run records the way it was made: the resolved config as
 * YAML (config.yaml in the output directory, --dry-run's output, and a copy
 * in every checkpoint), and the comparison --resume makes against it.
 * Not here: printing one key's value (config_keys.c), checkpoint files
 * (checkpoint.c). */
#ifndef XT_RUN_RECORD_H
#define XT_RUN_RECORD_H

#include <stddef.h>

#include "config/config.h"
#include "run/cli.h"
#include "util/err.h"

/* The resolved config as YAML that --config reads back (every key, --set
 * applied), malloc'd; NULL when out of memory. */
char *xt_record_config_yaml(const xt_config *c);

/* The same without output_dir: the copy a checkpoint carries, so two runs
 * of one config into two directories write the same bytes. */
char *xt_record_config_portable(const xt_config *c);

/* The same, headed by YAML comments: the command line, version and date. */
char *xt_record_config_file(const xt_config *c, const xt_cli *cli);

/* Write <dir>/config.yaml (atomically). 0 or XT_EIO. */
int xt_record_write_config(const char *dir, const xt_config *c, const xt_cli *cli, xt_err *e);

/* The keys whose values differ between two recorded configs and that change
 * the training trajectory ("batch_size: 128 -> 64; seed: 1 -> 5") into
 * diff; returns how many. Keys that may change freely (num_epochs, logging,
 * output, checkpoint cadence, loader threads) are skipped. */
int xt_record_trajectory_diff(const char *old_yaml, const char *new_yaml, char *diff, size_t cap);
/* The same between host 0's config and this host's, leaving out where each
 * host finds its data (datadir and the four file paths: every host has its
 * own copy, compared by content instead). */
int xt_record_host_diff(const char *host0_yaml, const char *mine_yaml, char *diff, size_t cap);

#endif
