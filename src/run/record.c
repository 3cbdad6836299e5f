/* record.c — the resolved config as the run's record: config.yaml, the
 * --dry-run output and the copy in each checkpoint are the same text, so
 * what a run says it was made with is what --config reads back, and what
 * --resume compares. Not here: the key table or value printing (config/),
 * or where the text is stored in a checkpoint (checkpoint.c). */
#include "run/record.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/atomic.h"
#include "util/utf8.h"
#include "util/version.h"

/* Keys that never change the trajectory: how long, how loudly, where to,
 * how often to checkpoint, and how many threads or processes serve it. */
static const char *const g_free_keys[] = {
    "num_epochs", "log_steps", "metrics_debug", "output_dir", "save_graphs", "progress", "target_accuracy",
    "download", "num_workers", "loader_prefetch_size", "device_prefetch_size", "checkpoint.every",
    "checkpoint.keep_last", "checkpoint.keep_best", "pin_cores", "worker_timeout", "blas_threads", "test_batch_size",
    "max_steps", "max_time", "limit_test_batches", "fast_dev_run", /* where a run stops, not how it goes */
    "logdir",
    "early_stopping.monitor", "early_stopping.mode", "early_stopping.patience", "early_stopping.min_delta",
};

char *xt_record_config_yaml(const xt_config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    xt_config_print(c, f);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *xt_record_config_portable(const xt_config *c) {
    char *yaml = xt_record_config_yaml(c);
    char *at = yaml ? strstr(yaml, "\noutput_dir: ") : NULL;
    if (at) {
        char *end = strchr(at + 1, '\n');
        memmove(at, end ? end : at + strlen(at), strlen(end ? end : at + strlen(at)) + 1);
    }
    return yaml;
}

/* "# command: ..." with every argument. Control characters become spaces, so
 * the comment stays one line, and bytes that are not UTF-8 (a file name may
 * hold any) are written as \xNN, so the file stays YAML (which is UTF-8). */
static void command_comment(FILE *f, const xt_cli *cli) {
    fputs("# command:", f);
    for (int i = 0; i < cli->argc; i++) {
        fputc(' ', f);
        const unsigned char *p = (const unsigned char *)cli->argv[i];
        for (size_t n = strlen(cli->argv[i]); n;) {
            uint32_t cp;
            size_t l = xt_utf8_decode(p, n, &cp);
            if (!l) fprintf(f, "\\x%02x", *p), l = 1;
            else if (cp < 0x20 || cp == 0x7f) fputc(' ', f);
            else fwrite(p, 1, l, f);
            p += l, n -= l;
        }
    }
    fputc('\n', f);
}

char *xt_record_config_file(const xt_config *c, const xt_cli *cli) {
    char *yaml = xt_record_config_yaml(c), *buf = NULL, date[32];
    size_t len = 0;
    FILE *f = yaml ? open_memstream(&buf, &len) : NULL;
    if (!f) {
        free(yaml);
        return NULL;
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "# resolved configuration: every key, --set applied; `xlatrain --config THIS_FILE\n"
               "# --set output_dir=NEW_DIR` runs it again\n"
               "# xlatrain %s, %s\n", XT_VERSION, date);
    command_comment(f, cli);
    fputs(yaml, f);
    free(yaml);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

int xt_record_write_config(const char *dir, const xt_config *c, const xt_cli *cli, xt_err *e) {
    char *text = xt_record_config_file(c, cli), path[700];
    if (!text) return xt_fail(e, XT_ERUNTIME, "out of memory recording the config");
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    int rc = xt_write_file_atomic(path, text, strlen(text), e);
    free(text);
    return rc;
}

/* ---- comparing two records ---------------------------------------------- */

/* One "key: value" line of a record, with the group prefix of nested keys. */
typedef struct entry {
    char key[96];
    const char *value;
    size_t vlen;
} entry;

/* The next key line at or after *p (top-level "k: v" or "  leaf: v" under a
 * "group:" line); deeper lines (an inline model) are skipped. 0 at the end. */
static int next_entry(const char **p, char *group, size_t gcap, entry *out) {
    while (**p) {
        const char *line = *p, *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        *p = line + n + (nl ? 1 : 0);
        int indent = 0;
        while (indent < (int)n && line[indent] == ' ') indent++;
        if (indent > 2 || line[indent] == '#' || indent == (int)n) continue;
        const char *colon = memchr(line, ':', n);
        if (!colon) continue;
        size_t kl = (size_t)(colon - line) - (size_t)indent;
        const char *v = colon + 1;
        while (v < line + n && *v == ' ') v++;
        if (indent == 0 && v == line + n) { /* "group:" opens nested keys (or an inline model) */
            snprintf(group, gcap, "%.*s", (int)kl, line);
            snprintf(out->key, sizeof out->key, "%.*s", (int)kl, line);
        } else if (indent == 0) {
            group[0] = 0;
            snprintf(out->key, sizeof out->key, "%.*s", (int)kl, line);
        } else {
            snprintf(out->key, sizeof out->key, "%s.%.*s", group, (int)kl, line + indent);
        }
        out->value = v;
        out->vlen = (size_t)(line + n - v);
        return 1;
    }
    return 0;
}

static int is_free_key(const char *key) {
    for (size_t i = 0; i < sizeof g_free_keys / sizeof *g_free_keys; i++)
        if (!strcmp(key, g_free_keys[i])) return 1;
    return 0;
}

static int find_entry(const char *yaml, const char *key, entry *out) {
    char group[96] = "";
    const char *p = yaml;
    while (next_entry(&p, group, sizeof group, out))
        if (!strcmp(out->key, key)) return 1;
    return 0;
}

/* Where each host finds its data: its own copy, compared by content
 * (hosts.h), not by path. */
static int is_data_path_key(const char *key) {
    static const char *const paths[] = {"datadir", "train_images", "train_labels", "test_images", "test_labels"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (!strcmp(key, paths[i])) return 1;
    return 0;
}

static int trajectory_diff(const char *old_yaml, const char *new_yaml, int skip_paths, char *diff, size_t cap);

int xt_record_trajectory_diff(const char *old_yaml, const char *new_yaml, char *diff, size_t cap) {
    return trajectory_diff(old_yaml, new_yaml, 0, diff, cap);
}

int xt_record_host_diff(const char *host0_yaml, const char *mine_yaml, char *diff, size_t cap) {
    return trajectory_diff(host0_yaml, mine_yaml, 1, diff, cap);
}

static int trajectory_diff(const char *old_yaml, const char *new_yaml, int skip_paths, char *diff, size_t cap) {
    char group[96] = "";
    const char *p = new_yaml;
    entry now, was;
    int n = 0;
    size_t o = 0;
    diff[0] = 0;
    while (next_entry(&p, group, sizeof group, &now)) {
        /* the model is compared by its hash (checkpoint.c), not by how it was named */
        if (is_free_key(now.key) || !strcmp(now.key, "model") || (skip_paths && is_data_path_key(now.key))) continue;
        int had = find_entry(old_yaml, now.key, &was);
        if (had && was.vlen == now.vlen && !memcmp(was.value, now.value, now.vlen)) continue;
        if (o < cap)
            o += (size_t)snprintf(diff + o, cap - o, "%s%s: %.*s -> %.*s", n ? "; " : "", now.key, had ? (int)was.vlen : 7,
                                  had ? was.value : "(unset)", (int)now.vlen, now.value);
        n++;
    }
    return n;
}
