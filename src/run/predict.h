/* predict.h — `--predict IDX_FILE`: a checkpoint's predictions for every
 * image of an IDX file, as CSV. Not here: training or --eval-only (train.h). */
#ifndef XT_RUN_PREDICT_H
#define XT_RUN_PREDICT_H

#include "config/config.h"
#include "run/cli.h"
#include "util/err.h"

/* Load the --resume checkpoint (main defaults it to "latest") and write the
 * CSV to --output or <output_dir>/predictions.csv. Returns an exit code
 * (enum xt_exit); on failure e holds the one-line message. */
int xt_predict_main(const xt_config *c, const xt_cli *cli, xt_err *e);

#endif
