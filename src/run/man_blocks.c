/* man_blocks.c — the roff of the man pages' generated blocks (see
 * man_blocks.h). Is not: the splicing into the page (man/regen.sh) or the
 * comparison with it (tests/test_docs.c). Everything printed here comes
 * from a table, so the page follows the table rather than a copy of it.
 */
#include "run/man_blocks.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_keys.h"
#include "config/model_find.h"
#include "config/spec.h"
#include "util/err.h"

const char *const xt_man_block_names[] = {"keys", "models", NULL};

void xt_man_put_text(const char *text, FILE *out) {
    int at_line_start = 1;
    for (const char *p = text; *p; p++) {
        if (at_line_start && (*p == '.' || *p == '\'')) fputs("\\&", out);
        if (*p == '\\') fputs("\\e", out);
        else if (*p == '-') fputs("\\-", out);
        else if (*p == '|') fputs("|\\:", out); /* a place to break a long list of choices */
        else fputc(*p, out);
        at_line_start = *p == '\n';
    }
}

/* A help line as a sentence: capitalised when its first word is a plain
 * lowercase word ("training batch" -> "Training batch", but "bf16: ..."
 * stays), with a full stop. */
static void put_sentence(const char *help, FILE *out) {
    size_t w = strspn(help, "abcdefghijklmnopqrstuvwxyz-");
    if (w > 0 && (help[w] == ' ' || help[w] == ',')) {
        char first[2] = {(char)toupper((unsigned char)help[0]), 0};
        xt_man_put_text(first, out);
        help++;
    }
    xt_man_put_text(help, out);
    size_t n = strlen(help);
    if (n && help[n - 1] != '.') fputc('.', out);
    fputc('\n', out);
}

static void print_keys(FILE *out) {
    char type[160];
    for (int i = 0; i < xt_nkeys; i++) {
        const xt_key *k = &xt_keys[i];
        fprintf(out, ".TP\n.B %s\n", k->name);
        xt_man_put_text(xt_key_type_doc(k, type, sizeof type), out);
        fputs("; default ", out);
        xt_man_put_text(k->def, out);
        fputs(".\n.br\n", out);
        put_sentence(k->help, out);
    }
}

static int print_models(FILE *out) {
    xt_model_entry *list = NULL;
    int n = xt_model_list(&list);
    for (int i = 0; i < n; i++) {
        xt_spec spec;
        xt_err e = {0};
        fprintf(out, ".TP\n.B %s\n", list[i].name);
        if (!xt_spec_load(&spec, list[i].path, &e)) {
            char params[32];
            fprintf(out, "%s parameters; input [%d, %d, %d].\n",
                    xt_commas(params, (unsigned long long)xt_spec_total_params(&spec)), spec.input[0], spec.input[1],
                    spec.input[2]);
            xt_spec_free(&spec);
        } else {
            /* a broken shipped model is a test failure elsewhere; keep the page's shape */
            fputs("(does not load).\n", out);
        }
        fputs(".br\n", out);
        put_sentence(list[i].description, out);
    }
    free(list);
    return n > 0 ? 0 : XT_ERUNTIME;
}

int xt_man_block(const char *name, FILE *out) {
    if (!strcmp(name, "keys")) {
        print_keys(out);
        return 0;
    }
    if (!strcmp(name, "models")) return print_models(out);
    return XT_EUSAGE;
}
