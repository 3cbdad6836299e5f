/* test_docs.c — the man pages held against the code's tables, so that the
 * reference cannot drift from what the binary does.
 *
 * Is: for each list the code keeps as one table, a check that its man page
 * documents every entry and nothing the code does not have:
 *   config keys    config/config_keys.c   xlatrain.yaml.5 KEYS (generated)
 *   layer types    config/spec.c          xlatrain.yaml.5 LAYER SPEC
 *   options        run/options.c          xlatrain.1 OPTIONS
 *   exit codes     util/exit_codes.c      xlatrain.1 EXIT STATUS
 *   env variables  util/env_vars.c        xlatrain.1 ENVIRONMENT
 *   run's files    run/rundir.c           xlatrain.1 FILES (each named)
 * and the environment table against every getenv("NAME") under src/. The
 * generated blocks of xlatrain.yaml.5 must be exactly what the binary under
 * test prints (`xlatrain --man-block NAME`): a key added to the table
 * without `make man` fails here, naming the key and the fix. Both pages
 * must render under groff with every warning on (an independent reader of
 * the roff), and man/regen.sh must restore a damaged block.
 * Entries are read from the roff as the first argument of the line after
 * each .TP or .TQ of the section (\- read as -).
 * Is not: a check of the prose, or of README.md (which no longer lists keys).
 * Runs from the repository root, as `make test` does.
 */
#include <ctype.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config_keys.h"
#include "config/spec.h"
#include "run/options.h"
#include "run/rundir.h"
#include "test.h"
#include "util/env_vars.h"
#include "util/err.h"

#define MAN1 "man/xlatrain.1"
#define MAN5 "man/xlatrain.yaml.5"
#define MAX_ENTRIES 256
#define NAME_CAP 64

static char *page(const char *path) {
    char *s = test_read_file(path, NULL);
    CHECK_MSG(s != NULL, "cannot read %s (run the tests from the repository root)", path);
    return s;
}

/* The text of section `name` (".SH NAME" up to the next .SH), or NULL. */
static const char *section(const char *text, const char *name, size_t *len) {
    char head[64];
    snprintf(head, sizeof head, "\n.SH %s\n", name);
    const char *s = strstr(text, head);
    if (!s) {
        snprintf(head, sizeof head, "\n.SH \"%s\"\n", name);
        s = strstr(text, head);
    }
    if (!s) return NULL;
    s += strlen(head);
    const char *e = strstr(s, "\n.SH ");
    *len = e ? (size_t)(e - s) + 1 : strlen(s);
    return s;
}

typedef struct {
    char name[MAX_ENTRIES][NAME_CAP];
    int line[MAX_ENTRIES]; /* in the page */
    int n;
} entries;

static int line_of(const char *text, const char *at) {
    int n = 1;
    for (const char *p = text; p < at; p++) n += *p == '\n';
    return n;
}

/* The first argument of a macro line (".B \-\-set", ".BI \-\-config \" FILE\"",
 * ".BR maxpool2d"): its leading name, \- and \& read as - and nothing. */
static void first_arg(const char *line, char *out, size_t cap) {
    size_t n = 0;
    const char *p = line + strcspn(line, " \n");
    while (*p == ' ') p++;
    if (*p == '"') p++;
    while (*p && *p != '\n' && n + 1 < cap) {
        if (p[0] == '\\' && p[1] == '-') out[n++] = '-', p += 2;
        else if (p[0] == '\\' && p[1] == '&') p += 2;
        else if (isalnum((unsigned char)*p) || strchr("_.-", *p)) out[n++] = *p++;
        else break;
    }
    out[n] = 0;
}

/* Every entry (.TP or .TQ, then its tag line) of `len` bytes at sec. */
static void read_entries(const char *text, const char *sec, size_t len, entries *out) {
    out->n = 0;
    for (const char *p = sec; p && p < sec + len;) {
        if ((!strncmp(p, ".TP\n", 4) || !strncmp(p, ".TQ\n", 4)) && out->n < MAX_ENTRIES) {
            first_arg(p + 4, out->name[out->n], NAME_CAP);
            out->line[out->n] = line_of(text, p + 4);
            out->n++;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
}

static int has_entry(const entries *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->name[i], name)) return 1;
    return 0;
}

/* Both ways: every code name is an entry, every entry a code name. */
static void compare(const char *path, const char *sec_name, const char *what, const char *table, const char *const *names,
                    int n, const entries *e) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(has_entry(e, names[i]), "%s: %s '%s' from %s is not documented in %s", path, what, names[i], table,
                  sec_name);
    for (int i = 0; i < e->n; i++) {
        int known = 0;
        for (int k = 0; k < n && !known; k++) known = !strcmp(names[k], e->name[i]);
        CHECK_MSG(known, "%s:%d: %s documents %s '%s', which %s does not have", path, e->line[i], sec_name, what,
                  e->name[i], table);
    }
}

static void check_section(const char *path, const char *text, const char *sec_name, const char *what,
                          const char *table, const char *const *names, int n) {
    size_t len;
    const char *sec = section(text, sec_name, &len);
    CHECK_MSG(sec != NULL, "%s: no section %s", path, sec_name);
    if (!sec) return;
    static entries e;
    read_entries(text, sec, len, &e);
    compare(path, sec_name, what, table, names, n, &e);
}

TEST(docs_every_option_is_in_the_man_page) {
    char *text = page(MAN1);
    if (!text) return;
    const char *names[XT_NOPTIONS_MAX];
    for (int i = 0; i < xt_noptions; i++) names[i] = xt_options[i].name;
    check_section(MAN1, text, "OPTIONS", "option", "the option table (src/run/options.c)", names, xt_noptions);
    free(text);
}

TEST(docs_every_exit_code_is_in_the_man_page) {
    char *text = page(MAN1);
    if (!text) return;
    static char buf[32][8];
    const char *names[32];
    CHECK(xt_nexit_codes <= 32);
    for (int i = 0; i < xt_nexit_codes && i < 32; i++) {
        snprintf(buf[i], sizeof buf[i], "%d", xt_exit_codes[i].code);
        names[i] = buf[i];
    }
    check_section(MAN1, text, "EXIT STATUS", "exit code", "enum xt_exit (src/util/exit_codes.c)", names,
                  xt_nexit_codes < 32 ? xt_nexit_codes : 32);
    free(text);
}

/* The enum and its table agree: every XT_E* code once, in the enum's order. */
TEST(docs_exit_code_table_matches_the_enum) {
    static const int codes[] = {XT_OK, XT_EUSAGE, XT_EDATA, XT_ERUNTIME, XT_EIO, XT_EBELOW, XT_ECOMPILE, XT_EINTR};
    CHECK_EQ(xt_nexit_codes, (int)(sizeof codes / sizeof *codes));
    for (int i = 0; i < xt_nexit_codes && i < (int)(sizeof codes / sizeof *codes); i++) {
        CHECK_EQ(xt_exit_codes[i].code, codes[i]);
        CHECK(xt_exit_codes[i].help && xt_exit_codes[i].help[0]);
    }
}

TEST(docs_every_env_var_is_in_the_man_page) {
    char *text = page(MAN1);
    if (!text) return;
    const char *names[64];
    CHECK(xt_nenv_vars <= 64);
    for (int i = 0; i < xt_nenv_vars && i < 64; i++) names[i] = xt_env_vars[i].name;
    check_section(MAN1, text, "ENVIRONMENT", "environment variable", "the table in src/util/env_vars.c", names,
                  xt_nenv_vars < 64 ? xt_nenv_vars : 64);
    free(text);
}

/* ---- getenv under src/ ---------------------------------------------------------- */

typedef struct {
    char name[64][NAME_CAP];
    int n;
    char report[4096];
} getenv_scan;

static int in_env_table(const char *name) {
    for (int i = 0; i < xt_nenv_vars; i++)
        if (!strcmp(xt_env_vars[i].name, name)) return 1;
    return 0;
}

static void scan_file(getenv_scan *g, const char *path) {
    size_t n = strlen(path);
    if (n < 2 || (strcmp(path + n - 2, ".c") && strcmp(path + n - 2, ".h"))) return;
    char *text = test_read_file(path, NULL);
    if (!text) return;
    for (const char *p = text; (p = strstr(p, "getenv(")); p += 7) {
        const char *q = p + 7;
        char name[NAME_CAP];
        size_t k = 0;
        if (*q == '"') {
            for (q++; *q && *q != '"' && k + 1 < sizeof name; q++) name[k++] = *q;
            name[k] = 0;
            if (g->n < 64) snprintf(g->name[g->n++], NAME_CAP, "%s", name);
            if (!in_env_table(name))
                snprintf(g->report + strlen(g->report), sizeof g->report - strlen(g->report),
                         "\n      %s:%d reads $%s: add it to src/util/env_vars.c and man/xlatrain.1's ENVIRONMENT", path,
                         line_of(text, p), name);
        } else {
            snprintf(g->report + strlen(g->report), sizeof g->report - strlen(g->report),
                     "\n      %s:%d: getenv of a computed name; write the name as a literal so this test sees it", path,
                     line_of(text, p));
        }
    }
    free(text);
}

static void scan_dir(getenv_scan *g, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) scan_dir(g, path);
        else scan_file(g, path);
    }
    closedir(d);
}

TEST(docs_env_table_lists_every_getenv_in_src) {
    static getenv_scan g;
    scan_dir(&g, "src");
    CHECK_MSG(g.n > 0, "found no getenv under src/ (run the tests from the repository root)");
    CHECK_MSG(!g.report[0], "environment variables the code reads but src/util/env_vars.c does not list:%s", g.report);
    /* and the other way: a row that names a src/ reader is read there */
    for (int i = 0; i < xt_nenv_vars; i++) {
        if (!strstr(xt_env_vars[i].reader, ".c")) continue; /* read by a library (OpenBLAS) */
        int found = 0;
        for (int k = 0; k < g.n && !found; k++) found = !strcmp(g.name[k], xt_env_vars[i].name);
        CHECK_MSG(found, "src/util/env_vars.c lists $%s as read by %s, but no getenv(\"%s\") is left in src/; "
                  "remove the row and its man page entry", xt_env_vars[i].name, xt_env_vars[i].reader,
                  xt_env_vars[i].name);
    }
}

/* ---- xlatrain.yaml.5 ---------------------------------------------------------- */

TEST(docs_every_layer_type_is_in_the_man_page) {
    char *text = page(MAN5);
    if (!text) return;
    const char *names[XT_L_COUNT];
    for (int k = 0; k < XT_L_COUNT; k++) names[k] = xt_layer_kind_name((xt_layer_kind)k);
    check_section(MAN5, text, "LAYER SPEC", "layer type", "the layer table (src/config/spec.c)", names, XT_L_COUNT);
    free(text);
}

TEST(docs_every_key_is_in_the_man_page) {
    char *text = page(MAN5);
    if (!text) return;
    const char *names[XT_NKEYS_MAX];
    for (int i = 0; i < xt_nkeys; i++) names[i] = xt_keys[i].name;
    /* by name first, so that a missing key is named; the block test below
     * then also catches a changed type, default or help */
    size_t len;
    const char *sec = section(text, "KEYS", &len);
    CHECK_MSG(sec != NULL, "%s: no section KEYS", MAN5);
    if (sec) {
        static entries e;
        read_entries(text, sec, len, &e);
        for (int i = 0; i < xt_nkeys; i++)
            CHECK_MSG(has_entry(&e, names[i]), "%s: key '%s' (src/config/config_keys.c) is not documented in KEYS; run make man",
                      MAN5, names[i]);
        for (int i = 0; i < e.n; i++)
            CHECK_MSG(xt_key_find(e.name[i]) >= 0, "%s:%d: KEYS documents key '%s', which the key table "
                      "(src/config/config_keys.c) does not have; run make man", MAN5, e.line[i], e.name[i]);
    }
    free(text);
}

/* The lines between ".\" BEGIN GENERATED NAME" and ".\" END GENERATED NAME". */
static const char *block(const char *text, const char *name, size_t *len) {
    char begin[64], end[64];
    snprintf(begin, sizeof begin, "\n.\\\" BEGIN GENERATED %s", name);
    snprintf(end, sizeof end, "\n.\\\" END GENERATED %s", name);
    const char *b = strstr(text, begin);
    if (!b) return NULL;
    b = strchr(b + 1, '\n');
    if (!b) return NULL;
    b++;
    const char *e = strstr(b - 1, end);
    if (!e) return NULL;
    *len = (size_t)(e + 1 - b);
    return b;
}

static void check_block(const char *path, const char *text, const char *name, const char *lower) {
    size_t len = 0;
    const char *got = block(text, name, &len);
    CHECK_MSG(got != NULL, "%s: no block between .\\\" BEGIN GENERATED %s and .\\\" END GENERATED %s", path, name, name);
    if (!got) return;
    static char want[1 << 18];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --man-block %s", test_bin(), lower);
    int rc = test_run(cmd, want, sizeof want);
    CHECK_MSG(rc == 0, "%s failed (%d): %s", cmd, rc, want);
    if (rc) return;
    if (strlen(want) == len && !memcmp(want, got, len)) return;
    /* the first line that differs, from both sides */
    size_t i = 0, line = 0;
    while (i < len && want[i] && want[i] == got[i]) line += got[i++] == '\n';
    size_t from = i;
    while (from > 0 && got[from - 1] != '\n') from--;
    int pn = (int)strcspn(got + from, "\n"), wn = (int)strcspn(want + from, "\n");
    if (from + (size_t)pn > len) pn = (int)(len - from);
    const char *page_line = from < len ? got + from : "(the block ends here)";
    const char *bin_line = want[from] ? want + from : "(the output ends here)";
    if (from >= len) pn = (int)strlen(page_line);
    if (!want[from]) wn = (int)strlen(bin_line);
    test_fail_at(__FILE__, __LINE__,
                 "%s:%d: the generated %s block is not what '%s' prints; run make man\n"
                 "      page:   %.*s\n      binary: %.*s",
                 path, line_of(text, got) + (int)line, name, cmd, pn, page_line, wn, bin_line);
}

TEST(docs_generated_blocks_match_the_binary) {
    char *text = page(MAN5);
    if (!text) return;
    check_block(MAN5, text, "KEYS", "keys");
    check_block(MAN5, text, "MODELS", "models");
    free(text);
}

/* make man's splicer: a page with a damaged block and the page as committed
 * come out the same (so a stale page does not fail this test too; the one
 * above says so). */
TEST(docs_regen_restores_a_damaged_block) {
    char *text = page(MAN5);
    if (!text) return;
    size_t len;
    const char *b = block(text, "KEYS", &len);
    CHECK(b != NULL);
    char *damaged = b ? malloc(strlen(text) + 64) : NULL;
    if (damaged) {
        size_t at = (size_t)(b - text);
        memcpy(damaged, text, at);
        strcpy(damaged + at, ".TP\n.B stale_key\nsomething old.\n");
        strcat(damaged, b + len);
        char pristine[512], cmd[2048];
        snprintf(pristine, sizeof pristine, "%s", test_write_file("pristine.5", text));
        const char *copy = test_write_file("damaged.5", damaged);
        static char out[4096];
        snprintf(cmd, sizeof cmd, "sh man/regen.sh %s %s %s", test_bin(), pristine, copy);
        CHECK_MSG(test_run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
        char *x = test_read_file(pristine, NULL), *y = test_read_file(copy, NULL);
        CHECK_MSG(x && y && !strcmp(x, y), "man/regen.sh left the damaged block of %s different from %s", copy,
                  pristine);
        CHECK_MSG(y && !strstr(y, "stale_key"), "man/regen.sh kept the damaged block's text in %s", copy);
        free(x);
        free(y);
    }
    free(damaged);
    free(text);
}

/* ---- FILES and rendering -------------------------------------------------------- */

TEST(docs_every_file_a_run_writes_is_in_files) {
    char *text = page(MAN1);
    if (!text) return;
    size_t len;
    const char *sec = section(text, "FILES", &len);
    CHECK_MSG(sec != NULL, "%s: no section FILES", MAN1);
    if (sec) {
        char *files = strndup(sec, len), esc[128];
        for (int i = 0; i < xt_rundir_nown_names; i++) {
            size_t k = 0;
            for (const char *p = xt_rundir_own_names[i]; *p && k + 3 < sizeof esc; p++) {
                if (*p == '-') esc[k++] = '\\';
                esc[k++] = *p;
            }
            esc[k] = 0;
            CHECK_MSG(strstr(files, esc), "%s: FILES does not name %s, which a run writes (src/run/rundir.c)", MAN1,
                      xt_rundir_own_names[i]);
        }
        free(files);
    }
    free(text);
}

TEST(docs_pages_render_without_warnings) {
    char out[8192];
    if (test_run("command -v groff", out, sizeof out) != 0)
        test_skip("groff is not installed (Debian: groff-base; .ci/run installs it)");
    static const char *pages[] = {MAN1, MAN5};
    for (int i = 0; i < 2; i++) {
        char cmd[512];
        /* -ww: every warning; -Tutf8: as man formats for a terminal; -z: no output */
        snprintf(cmd, sizeof cmd, "groff -man -Tutf8 -ww -z %s", pages[i]);
        int rc = test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 0 && !out[0], "%s: %s", cmd, out);
    }
}
