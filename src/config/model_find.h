/* model_find.h — where a `model:` layer spec is found, and which models
 * there are.
 *
 * A model is named in a config as a path (`models/fashion_cnn.yaml`) or as a
 * bare name (`lenet5`). It is looked up, first match wins:
 *   1. the path as written (relative to the current directory);
 *   2. next to the config file;
 *   3. in each models directory: the installation's (<prefix>/share/xlatrain,
 *      found from the running binary's own path, so a copy installed with any
 *      PREFIX or DESTDIR finds its models), then the source tree's when the
 *      binary runs from one (./xlatrain or build/<kind>/xlatrain). A path that
 *      starts with models/ is tried under each data directory as written; a
 *      bare name NAME as models/NAME.yaml there.
 * Is not: the spec parser (spec.h) or the config's other keys.
 */
#ifndef XT_CONFIG_MODEL_FIND_H
#define XT_CONFIG_MODEL_FIND_H

#include <stddef.h>

/* Resolve `as_written` (from the config `config_file`, or NULL for --set).
 * Returns 0 with the path in out; or -1 with out holding a one-line
 * description of where it looked, and `hint` (may be NULL) the closest
 * known model name when the name looks like a typo of one (else ""). */
int xt_model_find(const char *as_written, const char *config_file, char *out, size_t cap, char *hint, size_t hcap);

typedef struct xt_model_entry {
    char name[64];          /* file name without .yaml: what `model:` accepts */
    char path[1024];
    char description[160];  /* the file's first comment after "name.yaml — " */
} xt_model_entry;

/* Every *.yaml in the models directories (a name found twice: the first),
 * sorted by name, in a malloc'd array the caller frees. Returns the count
 * (0 when there are none), or -1 out of memory. */
int xt_model_list(xt_model_entry **out);

#endif
