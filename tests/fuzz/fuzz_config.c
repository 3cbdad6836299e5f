/* fuzz_config.c — the FLAGS parser (src/config/config*.c, and spec.c for an
 * inline model) on arbitrary bytes, through xt_config_load_buffer.
 *
 * Input: the config's YAML text, optionally followed by a NUL byte and up to
 * 8 NUL-separated --set KEY=VALUE overrides ("batch_size: 8\0optimizer.name=adam").
 * A config that loads is printed, and the printout must load again to the
 * same printout (what --dry-run shows is a config that means the same).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fuzz_util.h"

#define MAX_SETS 8

static char *print_config(const xt_config *c, size_t *len) {
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    FUZZ_ASSERT(m, "open_memstream failed");
    xt_config_print(c, m);
    fclose(m);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = 0;
    size_t text_len = strlen(copy);
    const char *sets[MAX_SETS];
    int nset = 0;
    for (size_t at = text_len + 1; at <= size && nset < MAX_SETS; at += strlen(copy + at) + 1) sets[nset++] = copy + at;

    xt_config c;
    xt_err e = {0};
    if (xt_config_load_buffer(&c, "fuzz.yaml", copy, text_len, sets, nset, &e) == 0) {
        FUZZ_ASSERT(e.code == 0, "success with an error set: %s", e.msg);
        fuzz_note("config loaded", c.name);
        size_t len1 = 0, len2 = 0;
        char *p1 = print_config(&c, &len1);
        xt_config c2;
        xt_err e2 = {0};
        int rc = xt_config_load_buffer(&c2, "fuzz.yaml", p1, len1, NULL, 0, &e2);
        FUZZ_ASSERT(rc == 0, "the printed config does not load: %s\n--- printed:\n%s", e2.msg, p1);
        char *p2 = print_config(&c2, &len2);
        FUZZ_ASSERT(len1 == len2 && !memcmp(p1, p2, len1), "printing the reloaded config differs\n--- first:\n%s\n--- second:\n%s", p1, p2);
        FUZZ_ASSERT(xt_config_model_hash(&c) == xt_config_model_hash(&c2), "model hash changed on reload");
        free(p1);
        free(p2);
        xt_config_free(&c2);
        xt_config_free(&c);
    } else {
        fuzz_note("config refused", e.msg);
        FUZZ_ASSERT(e.code != 0 && e.msg[0], "failure without a message");
        FUZZ_ASSERT(!strchr(e.msg, '\n'), "a multi-line message: %s", e.msg);
    }
    free(copy);
    return 0;
}
