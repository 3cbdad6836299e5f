/* choice.c — the engine's table of kernel choices and the choice cache.
 *
 * Is: the table every compile of this engine consults and adds to (key: a
 * node's description as its kernel runs it, kernels/impl.h's k_op_desc, and
 * the instruction set the kernels run at (the ISA cap: an AVX2-capped run
 * must not take an AVX-512 run's choices, from a checkpoint or this table),
 * not the CPU model; value: the implementation, its time, and whether
 * every worker uses it — `agreed`, from worker 0 or a checkpoint); its text
 * form, which checkpoints record and --resume reads back; and the cache on
 * disk, keyed by the CPU (model name, family/model, the ISA flags and cache
 * sizes the kernels use) and by the build that timed them
 * (util/build_id.h), in $XLATRAIN_CACHE_DIR, else $XDG_CACHE_HOME/xlatrain,
 * else ~/.cache/xlatrain, written as a temp file renamed over the old one,
 * so concurrent runs never see half a file.
 * Is not: the timing or the exchange between workers (pass_choose.c).
 */
#include "engine/choice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/bf16.h"
#include "kernels/cache.h"
#include "kernels/impl.h"
#include "kernels/onednn.h"
#include "kernels/simd.h"
#include "util/build_id.h"
#include "util/mkdirs.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

/* The instruction set the kernels run at now (the ISA cap, a forced level,
 * the bf16 path): 0 .. 5. */
static int isa_id(void) { return 2 * k_simd_level() + (k_bf16_path() != K_BF16_REF); }

void xt_choice_isa_name(char *buf, size_t cap) {
    int isa = isa_id();
    snprintf(buf, cap, "%s%s", k_simd_name(isa / 2), isa & 1 ? "+avx512bf16" : "");
}

uint64_t xt_choice_key(const k_op_desc *d) {
    const k_conv_shape *s = &d->s;
    int32_t v[] = {d->kind, d->bf16, d->relu, d->prologue, d->M, d->N, d->K, d->tA, d->tB,
                   s->N, s->Ci, s->H, s->W, s->Co, s->kh, s->kw, s->sh, s->sw, s->ph, s->pw, isa_id()};
    uint64_t h = 0x786c6174636831ULL; /* "xlatch1" */
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) h = mix(h, (uint64_t)(uint32_t)v[i]);
    return h ? h : 1;
}

static const char *const kind_names[K_OP_KINDS] = {"conv_fwd", "conv_fwd_pool2", "conv_bwd_data", "conv_bwd_data_unpool2",
                                                   "conv_bwd_weight", "conv_bwd_weight_unpool2", "matmul"};

void xt_choice_describe(const k_op_desc *d, char *buf, size_t cap) {
    const k_conv_shape *s = &d->s;
    if (d->kind == K_OP_MATMUL)
        snprintf(buf, cap, "matmul %s %dx%dx%d%s%s", d->bf16 ? "bf16" : "fp32", d->M, d->N, d->K, d->tA ? " tA" : "",
                 d->tB ? " tB" : "");
    else
        snprintf(buf, cap, "%s %s N%d %dx%dx%d->%d k%dx%d s%d p%d%s%s", kind_names[d->kind], d->bf16 ? "bf16" : "fp32",
                 s->N, s->Ci, s->H, s->W, s->Co, s->kh, s->kw, s->sh, s->ph, d->relu ? " relu" : "",
                 d->prologue ? " bn" : "");
}

xt_choice_entry *xt_choices_find(xt_choices *t, uint64_t key) {
    for (int i = 0; i < t->n; i++)
        if (t->e[i].key == key) return &t->e[i];
    return NULL;
}

xt_choice_entry *xt_choices_put(xt_choices *t, uint64_t key, int impl, float us, int agreed, int from) {
    xt_choice_entry *c = xt_choices_find(t, key);
    if (!c) {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 64;
            xt_choice_entry *e = realloc(t->e, (size_t)cap * sizeof *e);
            if (!e) return NULL;
            t->e = e;
            t->cap = cap;
        }
        c = &t->e[t->n++];
        memset(c, 0, sizeof *c);
        c->key = key;
    }
    c->impl = (uint8_t)impl;
    c->us = us;
    c->agreed = c->agreed || agreed;
    c->from = (uint8_t)from;
    return c;
}

void xt_choices_free(xt_choices *t) {
    free(t->e);
    memset(t, 0, sizeof *t);
}

/* ---- text: "key=impl;key=impl" (checkpoints, --resume) --------------------- */

char *xt_choices_text(const xt_choices *t) {
    size_t cap = (size_t)t->n * 64 + 1, o = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (int i = 0; i < t->n; i++)
        if (t->e[i].agreed)
            o += (size_t)snprintf(s + o, cap - o, "%s%016llx=%s", o ? ";" : "", (unsigned long long)t->e[i].key,
                                  k_impls[t->e[i].impl].name);
    return s;
}

int xt_choices_load_text(xt_choices *t, const char *text) {
    int n = 0;
    for (const char *p = text; p && *p;) {
        char name[64];
        unsigned long long key;
        int used = 0;
        if (sscanf(p, "%16llx=%63[^;]%n", &key, name, &used) != 2) return -1;
        int impl = k_impl_by_name(name);
        if (!impl) return -1;
        if (!xt_choices_put(t, key, impl, -1.0f, 1, XT_CHOSE_AGREED)) return -1;
        n++;
        p += used;
        if (*p == ';') p++;
    }
    return n;
}

/* ---- the cache on disk ----------------------------------------------------- */

/* The candidates there are, and the code that runs them: a cache written
 * before a row existed, with another oneDNN, or by another build of the
 * kernels (a faster AVX2 GEMM, say) never stands in for a timing that would
 * include them. The build is the executable's GNU build ID: a hash of its
 * code, so any rebuilt kernel times anew, once (a row that starts to run
 * where it did not, such as the sparse passes at AVX2, included: a choice
 * timed without it would otherwise be read back forever). */
static uint64_t candidates_id(void) {
    uint64_t h = 0x696d706c73ULL;
    for (int i = 1; i < K_IMPL_COUNT; i++)
        for (const char *c = k_impls[i].name; *c; c++) h = mix(h, (uint8_t)*c);
    for (const char *c = k_onednn_version(); *c; c++) h = mix(h, (uint8_t)*c);
    return h;
}

/* "model name | family | model | ISA | L1d/L2 | oneDNN | candidates | build": what the timings depend on. */
static void cpu_id(char *buf, size_t cap) {
    char model[256] = "unknown", fam[32] = "?", mod[32] = "?", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    int got = 0;
    while (f && got < 3 && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "model name", 10)) snprintf(model, sizeof model, "%s", v), got++;
        else if (!strncmp(line, "cpu family", 10)) snprintf(fam, sizeof fam, "%s", v), got++;
        else if (!strncmp(line, "model\t", 6)) snprintf(mod, sizeof mod, "%s", v), got++;
    }
    if (f) fclose(f);
    char isa[64];
    xt_choice_isa_name(isa, sizeof isa);
    const char *build = xt_build_id();
    snprintf(buf, cap, "%s | family %s model %s | %s | L1d %zu L2 %zu | oneDNN %s | candidates %016llx | build %s",
             model, fam, mod, isa, k_cache_l1d_bytes(), k_cache_l2_bytes(), k_onednn_version(),
             (unsigned long long)candidates_id(), *build ? build : "unknown");
}

static int cache_dir(char *buf, size_t cap) {
    const char *d = getenv("XLATRAIN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (d && *d) n = snprintf(buf, cap, "%s", d);
    else if (x && *x) n = snprintf(buf, cap, "%s/xlatrain", x);
    else if (h && *h) n = snprintf(buf, cap, "%s/.cache/xlatrain", h);
    else return -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}


void xt_choices_cache_open(xt_choices *t) {
    if (t->cache_state) return;
    t->cache_state = -1;
    char dir[900];
    if (cache_dir(dir, sizeof dir)) return;
    cpu_id(t->cpu, sizeof t->cpu);
    uint64_t h = 0x63707531ULL;
    for (const char *c = t->cpu; *c; c++) h = mix(h, (uint8_t)*c);
    snprintf(t->cache_path, sizeof t->cache_path, "%s/kernel-choices-%016llx.txt", dir, (unsigned long long)h);
    t->cache_state = 1;
}

/* The cache's entries: lines "key impl us". */
static void read_cache(const char *path, xt_choice_entry **out, int *n) {
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[256];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long key;
        char name[64];
        float us;
        if (line[0] == '#' || sscanf(line, "%16llx %63s %f", &key, name, &us) != 3) continue;
        int impl = k_impl_by_name(name);
        if (!impl) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            xt_choice_entry *e = realloc(*out, (size_t)cap * sizeof *e);
            if (!e) break;
            *out = e;
        }
        (*out)[(*n)++] = (xt_choice_entry){.key = key, .impl = (uint8_t)impl, .us = us};
    }
    fclose(f);
}

int xt_choices_cache_get(xt_choices *t, uint64_t key, int *impl, float *us) {
    xt_choices_cache_open(t);
    if (t->cache_state != 1) return 0;
    if (!t->cache_read) {
        read_cache(t->cache_path, &t->cached, &t->ncached);
        t->cache_read = 1;
    }
    for (int i = t->ncached - 1; i >= 0; i--) /* the latest line for a key wins */
        if (t->cached[i].key == key) {
            *impl = t->cached[i].impl;
            *us = t->cached[i].us;
            return 1;
        }
    return 0;
}

/* Merge the entries timed here into the file: read it again (another run
 * may have added lines), append, write a temp file, rename it over. */
int xt_choices_cache_save(xt_choices *t) {
    xt_choices_cache_open(t);
    if (t->cache_state != 1) return -1;
    int any = 0;
    for (int i = 0; i < t->n && !any; i++) any = t->e[i].from == XT_CHOSE_TIMED && !t->e[i].saved;
    if (!any) return 0;
    char dir[sizeof t->cache_path];
    memcpy(dir, t->cache_path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    char failed[8];
    if (xt_mkdirs(dir, failed, sizeof failed)) return -1; /* left unsaved: a later run times them again */
    xt_choice_entry *old;
    int nold;
    read_cache(t->cache_path, &old, &nold);
    char tmp[sizeof t->cache_path + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", t->cache_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(old);
        return -1;
    }
    fprintf(f, "# xlatrain kernel choices (key implementation us-per-call) for %s\n", t->cpu);
    for (int i = 0; i < nold; i++) {
        xt_choice_entry *mine = xt_choices_find(t, old[i].key);
        if (mine && mine->from == XT_CHOSE_TIMED && !mine->saved) continue; /* timed again here: the new line */
        fprintf(f, "%016llx %s %.3f\n", (unsigned long long)old[i].key, k_impls[old[i].impl].name, old[i].us);
    }
    for (int i = 0; i < t->n; i++)
        if (t->e[i].from == XT_CHOSE_TIMED && !t->e[i].saved)
            fprintf(f, "%016llx %s %.3f\n", (unsigned long long)t->e[i].key, k_impls[t->e[i].impl].name, t->e[i].us);
    free(old);
    int rc = fclose(f) ? -1 : rename(tmp, t->cache_path);
    if (rc) {
        unlink(tmp);
        return -1;
    }
    for (int i = 0; i < t->n; i++)
        if (t->e[i].from == XT_CHOSE_TIMED) t->e[i].saved = 1;
    free(t->cached); /* read again on the next lookup */
    t->cached = NULL;
    t->ncached = 0;
    t->cache_read = 0;
    return 0;
}
