/* fuzz_spec.c — the layer-spec parser and shape inference (src/config/spec.c,
 * over config_yaml.c's YAML loading) on arbitrary bytes.
 *
 * Input: a layer-spec file's text. A spec that loads is summarised and
 * written back with xt_spec_print_yaml, which spec.h promises reads back to
 * the same spec: the reloaded spec must have the same hash and parameter
 * counts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_yaml.h"
#include "config/spec.h"
#include "fuzz_util.h"

static int load(xt_spec *s, const char *text, size_t len, xt_err *e) {
    yaml_document_t doc;
    memset(s, 0, sizeof *s);
    int rc = xt_yaml_parse(&doc, "fuzz.yaml", text, len, e);
    if (rc) return rc;
    rc = xt_spec_from_yaml(s, "fuzz.yaml", &doc, yaml_document_get_root_node(&doc), e);
    yaml_document_delete(&doc);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xt_spec s;
    xt_err e = {0};
    if (load(&s, (const char *)data, size, &e)) {
        fuzz_note("spec refused", e.msg);
        FUZZ_ASSERT(e.code != 0 && e.msg[0], "failure without a message");
        FUZZ_ASSERT(!strchr(e.msg, '\n'), "a multi-line message: %s", e.msg);
        return 0;
    }
    fuzz_note("spec loaded", NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    FUZZ_ASSERT(m, "open_memstream failed");
    xt_spec_summary(&s, m);
    fclose(m);
    free(buf);
    buf = NULL;
    m = open_memstream(&buf, &len);
    FUZZ_ASSERT(m, "open_memstream failed");
    xt_spec_print_yaml(&s, m, 0);
    fclose(m);
    xt_spec s2;
    xt_err e2 = {0};
    int rc = load(&s2, buf, len, &e2);
    FUZZ_ASSERT(rc == 0, "the printed spec does not load: %s\n--- printed:\n%s", e2.msg, buf);
    FUZZ_ASSERT(xt_spec_hash(&s) == xt_spec_hash(&s2), "the printed spec hashes differently\n--- printed:\n%s", buf);
    FUZZ_ASSERT(xt_spec_total_params(&s) == xt_spec_total_params(&s2) &&
                    xt_spec_total_buffers(&s) == xt_spec_total_buffers(&s2) && s.num_classes == s2.num_classes,
                "the printed spec counts differently\n--- printed:\n%s", buf);
    xt_spec_free(&s2);
    xt_spec_free(&s);
    free(buf);
    return 0;
}
