/* test_readme.c — the README's commands work when pasted into a clone.
 *
 * Every ```sh block of README.md is run, in order, by bash -e -o pipefail in
 * one scratch directory that looks like a fresh clone to the commands (its
 * own configs/ and models/, ./xlatrain), unless the line just before the
 * fence says why not: `<!-- not run by tests/test_readme.c: REASON -->`
 * (network, mpirun, the quick start that .ci/run runs itself). "Small
 * settings": ./xlatrain there is a wrapper that adds
 *   --set synthetic_train_size=512 --set target_accuracy=0
 * to every command that trains from a --config, so the recipes run in
 * seconds (and under ASan) while keeping their own flags as written.
 *
 * This file checks commands, not prose: what each key or option means is
 * checked against the manual pages by tests/test_docs.c.
 */
#include "test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP_MARK "<!-- not run by tests/test_readme.c:"

typedef struct {
    int line;        /* 1-based line of the opening fence */
    char *text;      /* the commands, malloc'd */
    int skipped;     /* marked not to run */
    char why[256];   /* the reason given with the mark */
} sh_block;

/* Split README.md's ```sh blocks out; returns how many (at most cap). */
static int read_sh_blocks(const char *path, sh_block *b, int cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[4096], prev[4096] = "";
    int n = 0, lineno = 0;
    sh_block *cur = NULL;
    size_t len = 0, room = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        int fence = !strncmp(line, "```", 3);
        if (cur) {
            if (fence) {
                cur = NULL;
            } else {
                size_t l = strlen(line);
                if (len + l + 1 > room) {
                    room = 2 * (len + l + 1);
                    cur->text = realloc(cur->text, room);
                }
                memcpy(cur->text + len, line, l + 1);
                len += l;
            }
        } else if (fence && !strcmp(line + 3, "sh\n") && n < cap) {
            cur = &b[n++];
            *cur = (sh_block){.line = lineno};
            cur->text = calloc(1, 1);
            len = 0;
            room = 1;
            const char *mark = strstr(prev, SKIP_MARK);
            if (mark) {
                cur->skipped = 1;
                snprintf(cur->why, sizeof cur->why, "%s", mark + strlen(SKIP_MARK));
                char *end = strstr(cur->why, "-->");
                if (end) *end = 0;
            }
        } else if (fence) {
            /* another language's block: skip its body by treating it as a block we drop */
            char skip[4096];
            while (fgets(skip, sizeof skip, f)) {
                lineno++;
                if (!strncmp(skip, "```", 3)) break;
            }
        }
        if (strspn(line, " \t\n") != strlen(line)) snprintf(prev, sizeof prev, "%s", line);
    }
    fclose(f);
    return n;
}

static void free_blocks(sh_block *b, int n) {
    for (int i = 0; i < n; i++) free(b[i].text);
}

/* The scratch clone: configs/, models/ and the small-settings ./xlatrain. */
static const char *make_scratch(void) {
    static char dir[1024];
    char bin[PATH_MAX], cmd[3 * PATH_MAX];
    if (!realpath(test_bin(), bin)) return NULL;
    snprintf(dir, sizeof dir, "%s/clone", test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/data' && cp -r configs models '%s'/ && cp data/*.py '%s/data/'", dir, dir, dir);
    if (test_run(cmd, NULL, 0) != 0) return NULL;
    char wrapper[sizeof dir + 16];
    snprintf(wrapper, sizeof wrapper, "%s/xlatrain", dir);
    FILE *w = fopen(wrapper, "w");
    if (!w) return NULL;
    fprintf(w,
            "#!/bin/sh\n"
            "# tests/test_readme.c: the README's commands with small settings: one epoch unless\n"
            "# they name num_epochs, and a max_time they set 2 s (a bound either way)\n"
            "case \" $* \" in\n"
            "*\" --config \"*)\n"
            "  set -- \"$@\" --set synthetic_train_size=512 --set target_accuracy=0\n"
            "  case \" $* \" in *\" max_time=\"*) set -- \"$@\" --set max_time=2 ;; esac\n"
            "  case \" $* \" in *\" num_epochs=\"*) ;; *) set -- \"$@\" --set num_epochs=1 ;; esac ;;\n"
            "esac\n"
            "exec '%s' \"$@\"\n",
            bin);
    fclose(w);
    snprintf(cmd, sizeof cmd, "chmod +x '%s'", wrapper);
    return test_run(cmd, NULL, 0) == 0 ? dir : NULL;
}

TEST(readme_sh_blocks_are_marked_or_run) {
    sh_block b[64];
    int n = read_sh_blocks("README.md", b, 64);
    CHECK(n > 0);
    int run = 0;
    for (int i = 0; i < n; i++) {
        if (!b[i].skipped) run++;
        /* a block left out must say why, in words */
        CHECK_MSG(!b[i].skipped || strlen(b[i].why) > 5, "README.md:%d: a block not run gives no reason", b[i].line);
        CHECK_MSG(strlen(b[i].text) > 0, "README.md:%d: an empty sh block", b[i].line);
    }
    /* the recipes (real data aside) are run: a README whose blocks all opted out tests nothing */
    CHECK_MSG(run >= 6, "only %d of README.md's %d sh blocks are run", run, n);
    free_blocks(b, n);
}

TEST(readme_commands_work_in_a_fresh_clone) {
    if (test_run("command -v jq >/dev/null", NULL, 0) != 0)
        test_skip("jq is not installed: the README's recipes pipe results.json to it (.ci/run installs jq)");
    if (test_run("/usr/bin/python3 -c 'import onnx' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-onnx is not installed: the README's ONNX recipe checks its model with it "
                  "(.ci/run installs it)");
    if (test_run("/usr/bin/python3 -c 'import PIL' 2>/dev/null", NULL, 0) != 0)
        test_skip("Debian's python3-pil is not installed: the README's own-images recipe draws its example with it "
                  "(.ci/run installs it)");
    sh_block b[64];
    int n = read_sh_blocks("README.md", b, 64);
    CHECK(n > 0);
    const char *dir = make_scratch();
    CHECK(dir != NULL);
    if (!dir) return;
    static char out[16384];
    char path[512], cmd[2048], check[1200];
    for (int i = 0; i < n; i++) {
        if (b[i].skipped) continue;
        snprintf(path, sizeof path, "%s/block%02d.sh", test_tmpdir(), i);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f) break;
        fputs(b[i].text, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "cd '%s' && PATH=\"$PWD:$PATH\" bash -e -o pipefail '%s' </dev/null", dir, path);
        int rc = test_run(cmd, out, sizeof out);
        CHECK_MSG(rc == 0, "README.md:%d: the block exited %d:\n%s\n--- output ---\n%s", b[i].line, rc, b[i].text, out);
    }
    /* what the recipes say they leave behind */
    static const char *made[] = {"run.yaml", "runs/lenet/results.json", "runs/sweep/summary.csv",
                                 "ci/smoke/results.json", "runs/bf16/results.json", "runs/demo/results.json",
                                 "demo.pt", "demo.onnx", "runs/shapes/predictions.png", "runs/demo/tb"};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        snprintf(check, sizeof check, "test -s '%s/%s'", dir, made[i]);
        CHECK_MSG(test_run(check, NULL, 0) == 0, "the README's recipes did not write %s", made[i]);
    }
    free_blocks(b, n);
}
