/* train.h — a training run, or --eval-only: data, model, the train/eval loop
 * and its outputs (single process or N data-parallel workers).
 * Not here: --predict (predict.h). */
#ifndef XT_RUN_TRAIN_H
#define XT_RUN_TRAIN_H

#include "config/config.h"
#include "run/cli.h"
#include "util/err.h"

/* Train with the validated config `c` (or evaluate the --resume checkpoint
 * under --eval-only). Returns an exit code (enum xt_exit); on failure e
 * holds the one-line message. */
int xt_train_main(const xt_config *c, const xt_cli *cli, xt_err *e);

#endif
