/* folder_run.h — results.json's "folder" object (folder_run.c). finish.c
 * calls it; run.c does not, so it may take the whole run record.
 */
#ifndef XT_RUN_FOLDER_RUN_H
#define XT_RUN_FOLDER_RUN_H

#include "io/jsonw.h"
#include "run/run.h"

/* results.json's "folder" object: classes, images, skipped files, normalization. */
void xt_run_folder_results(const xt_run *r, xt_jsonw *w);

#endif
