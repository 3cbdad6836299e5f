/* train.h — the run: data, model, train/eval loop, outputs (single process or
 * one of N data-parallel workers). */
#ifndef XT_TRAIN_H
#define XT_TRAIN_H

#include "run/cli.h"
#include "config/config.h"
#include "util/err.h"

/* Run what `cli` asks for with the validated config `c`: train (default),
 * --eval-only or --predict. Returns an exit code (enum xt_exit); on failure
 * e holds the one-line message. */
int xt_train_main(const xt_config *c, const xt_cli *cli, xt_err *e);

#endif
