/* model_find.c — the model search path and the list of models; see
 * model_find.h. */
#include "config/model_find.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_yaml.h"

#define MAX_DATA_DIRS 3

/* snprintf that says whether it fit: 0, or -1 when truncated. */
__attribute__((format(printf, 3, 4))) static int fmt(char *out, size_t cap, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(out, cap, f, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directories that may hold models/ and configs/: the installation's
 * share/xlatrain beside the binary's bin/, then the source tree the binary
 * was built in (./xlatrain, build/release/xlatrain, build/asan/xlatrain).
 * Only those that have a models/ count. */
static int data_dirs(char dirs[][PATH_MAX]) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = 0; /* the binary's directory */
    const char *rel[MAX_DATA_DIRS] = {"/../share/xlatrain", "", "/../.."};
    int k = 0;
    for (int i = 0; i < MAX_DATA_DIRS; i++) {
        char d[PATH_MAX], m[PATH_MAX + 8], real[PATH_MAX];
        if (fmt(d, sizeof d, "%s%s", exe, rel[i]) || !realpath(d, real) || fmt(m, sizeof m, "%s/models", real)) continue;
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= !strcmp(dirs[j], real);
        if (!dup && is_dir(m) && !fmt(dirs[k], PATH_MAX, "%s", real)) k++;
    }
    return k;
}

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static int is_bare_name(const char *s) { return !strchr(s, '/') && !has_suffix(s, ".yaml") && !has_suffix(s, ".yml"); }

/* The closest known model name to `word`, or "". */
static void suggest(const char *word, char *hint, size_t hcap) {
    if (!hint || !hcap) return;
    hint[0] = 0;
    xt_model_entry *list = NULL;
    int n = xt_model_list(&list);
    if (n > 0) {
        const char *cands[256];
        int k = 0;
        for (int i = 0; i < n && k < 256; i++) cands[k++] = list[i].name;
        char base[256];
        const char *b = strrchr(word, '/');
        snprintf(base, sizeof base, "%s", b ? b + 1 : word);
        char *dot = strstr(base, ".y");
        if (dot) *dot = 0;
        const char *h = xt_suggest(base, cands, k);
        if (h && strcmp(h, base)) snprintf(hint, hcap, "%s", h);
    }
    free(list);
}

int xt_model_find(const char *as_written, const char *config_file, char *out, size_t cap, char *hint, size_t hcap) {
    if (hint && hcap) hint[0] = 0;
    int bare = is_bare_name(as_written);
    char cand[PATH_MAX + 1100];
    /* 1. as written; a bare name also as NAME.yaml */
    if (is_file(as_written)) return snprintf(out, cap, "%s", as_written) >= (int)cap ? -1 : 0;
    if (as_written[0] == '/') {
        snprintf(out, cap, "looked for the absolute path only");
        suggest(as_written, hint, hcap);
        return -1;
    }
    /* 2. next to the config file */
    const char *slash = config_file ? strrchr(config_file, '/') : NULL;
    if (slash) {
        if (!fmt(cand, sizeof cand, "%.*s/%s", (int)(slash - config_file), config_file, as_written) && is_file(cand)) return snprintf(out, cap, "%s", cand) >= (int)cap ? -1 : 0;
    }
    /* 3. the models directories */
    char dirs[MAX_DATA_DIRS][PATH_MAX];
    int nd = data_dirs(dirs);
    for (int i = 0; i < nd; i++) {
        int bad = bare ? fmt(cand, sizeof cand, "%s/models/%s.yaml", dirs[i], as_written)
                       : fmt(cand, sizeof cand, "%s/%s", dirs[i], as_written);
        if (!bad && is_file(cand)) return snprintf(out, cap, "%s", cand) >= (int)cap ? -1 : 0;
    }
    size_t o = (size_t)snprintf(out, cap, "looked in the current directory%s%.*s", slash ? ", next to " : "",
                                slash ? (int)strlen(config_file) : 0, slash ? config_file : "");
    for (int i = 0; i < nd && o < cap; i++) o += (size_t)snprintf(out + o, cap - o, ", in %s/models", dirs[i]);
    suggest(as_written, hint, hcap);
    return -1;
}

/* The description is the file's opening comment after "name.yaml — ", up
 * to the end of its first clause (".", ";", ":" or "("), on one line, at
 * most 70 characters cut at a word:
 * "fashion_cnn.yaml — the seed model of PyTorch/XLA's test_train_mp_mnist.py" */
static void read_description(const char *path, const char *file, char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char text[400] = "", line[256];
    size_t n = 0;
    for (int first = 1; n < sizeof text - 1 && fgets(line, sizeof line, f) && line[0] == '#'; first = 0) {
        char *s = line + 1;
        while (*s == ' ') s++;
        s[strcspn(s, "\r\n")] = 0;
        if (!*s) break; /* the paragraph ends */
        if (first) {
            if (!strncmp(s, file, strlen(file))) s += strlen(file);
            while (*s == ' ' || *s == '-' || (unsigned char)*s >= 0x80) s++; /* the dash, ASCII or UTF-8 */
        }
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", n ? " " : "", s);
    }
    fclose(f);
    size_t end = strcspn(text, ";:(");
    const char *dot = strstr(text, ". ");
    if (dot && (size_t)(dot - text) < end) end = (size_t)(dot - text);
    while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == ',' || text[end - 1] == '.')) end--;
    text[end] = 0;
    if (end > 70) {
        char *sp = text + 67;
        while (sp > text && *sp != ' ') sp--;
        strcpy(sp, "...");
    }
    if (fmt(out, cap, "%s", text)) out[0] = 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const xt_model_entry *)a)->name, ((const xt_model_entry *)b)->name);
}

/* Add dir's *.yaml models to the list (names already there are kept). */
static int add_dir(const char *dir, xt_model_entry **list, int *n, int *cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *f = de->d_name;
        size_t len = strlen(f);
        if (len <= 5 || len - 5 >= sizeof((*list)->name) || !has_suffix(f, ".yaml")) continue;
        int dup = 0;
        for (int i = 0; i < *n && !dup; i++) dup = !strncmp((*list)[i].name, f, len - 5) && !(*list)[i].name[len - 5];
        if (dup) continue;
        if (*n == *cap) {
            int c = *cap ? 2 * *cap : 16;
            xt_model_entry *p = realloc(*list, (size_t)c * sizeof *p);
            if (!p) {
                closedir(d);
                return -1;
            }
            *list = p;
            *cap = c;
        }
        xt_model_entry *m = &(*list)[(*n)++];
        if (fmt(m->path, sizeof m->path, "%s/%s", dir, f)) { /* a path too long to use: skip the file */
            (*n)--;
            continue;
        }
        snprintf(m->name, sizeof m->name, "%.*s", (int)(len - 5), f);
        read_description(m->path, f, m->description, sizeof m->description);
    }
    closedir(d);
    return 0;
}

int xt_model_list(xt_model_entry **out) {
    xt_model_entry *list = NULL;
    int n = 0, cap = 0;
    char dirs[MAX_DATA_DIRS][PATH_MAX];
    int nd = data_dirs(dirs);
    for (int i = 0; i < nd; i++) {
        char m[PATH_MAX + 8];
        if (fmt(m, sizeof m, "%s/models", dirs[i])) continue;
        if (add_dir(m, &list, &n, &cap)) {
            free(list);
            return -1;
        }
    }
    if (n) qsort(list, (size_t)n, sizeof *list, by_name);
    *out = list;
    return n;
}
