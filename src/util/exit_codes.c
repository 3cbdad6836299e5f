/* exit_codes.c — the table of xlatrain's exit codes (enum xt_exit in err.h):
 * code, enumerator and the text --help prints for it.
 *
 * Is: data, so that --help and the man page's drift test (tests/test_docs.c)
 * read the one list. Is not: where codes are chosen (each xt_fail call) or
 * the man page's longer EXIT STATUS prose, which is written by hand and
 * checked against this table by code.
 */
#include "util/err.h"

const xt_exit_code xt_exit_codes[] = {
    {XT_OK, "XT_OK",
     "success [ok]; also a run stopped by max_time [time_limit] or by\n"
     "early stopping [early_stopped]"},
    {XT_EUSAGE, "XT_EUSAGE",
     "usage, configuration or layer-spec error; output_dir holds another run\n"
     "or is in use; --resume with a config that changes the trajectory [error]"},
    {XT_EDATA, "XT_EDATA",
     "an input cannot be read: dataset files missing, truncated or corrupt;\n"
     "the --predict images or --resume checkpoint missing or unreadable [error]"},
    {XT_ERUNTIME, "XT_ERUNTIME",
     "training failed: loss NaN/Inf [diverged], a worker died or hung\n"
     "[worker_failed], a damaged or foreign checkpoint [error]"},
    {XT_EIO, "XT_EIO", "an output file cannot be written [error]"},
    {XT_EBELOW, "XT_EBELOW",
     "finished, but the best test accuracy is below target_accuracy\n"
     "[below_target]"},
    {XT_ECOMPILE, "XT_ECOMPILE", "more graphs compiled than --max-compiles allows [compile_limit]"},
    {XT_EINTR, "XT_EINTR", "interrupted by SIGINT or SIGTERM, checkpoint written [interrupted]"},
};
const int xt_nexit_codes = (int)(sizeof xt_exit_codes / sizeof *xt_exit_codes);
