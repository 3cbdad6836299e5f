/* fuzz_safetensors.c — the safetensors reader (src/io/safetensors.c, over
 * jansson via io/json_read.c) on arbitrary bytes, through the in-memory xt_st_parse.
 *
 * Input: a whole .safetensors file. A file that parses must hand out tensors
 * that xt_st_find/xt_st_copy agree on, and must survive a round trip: written
 * again with xt_st_write (to this process's scratch directory) and read back
 * with xt_st_read, it gives the same tensors (names, dtypes, shapes, bytes)
 * and the same metadata.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "io/safetensors.h"

static void check_same(const xt_st_file *a, const xt_st_file *b) {
    FUZZ_ASSERT(a->ntensors == b->ntensors, "%d tensors, %d after a round trip", a->ntensors, b->ntensors);
    for (int i = 0; i < a->ntensors; i++) {
        const xt_st_tensor *x = &a->tensors[i], *y = xt_st_find(b, x->name);
        FUZZ_ASSERT(y, "tensor '%s' lost in a round trip", x->name);
        FUZZ_ASSERT(x->dtype == y->dtype && x->rank == y->rank && x->nbytes == y->nbytes &&
                        !memcmp(x->shape, y->shape, sizeof x->shape[0] * (size_t)x->rank),
                    "tensor '%s' changed its descriptor in a round trip", x->name);
        FUZZ_ASSERT(!x->nbytes || !memcmp(x->data, y->data, x->nbytes), "tensor '%s' changed its bytes", x->name);
    }
    for (int i = 0; i < a->nmeta; i++) {
        if (!strcmp(a->meta[i].key, XT_ST_CRC_KEY)) continue;
        const char *v = xt_st_meta_get(b, a->meta[i].key);
        FUZZ_ASSERT(v && !strcmp(v, a->meta[i].value), "metadata '%s' changed in a round trip", a->meta[i].key);
    }
}

static void round_trip(const xt_st_file *f) {
    xt_st_meta *m = calloc((size_t)f->nmeta + 1, sizeof *m);
    FUZZ_ASSERT(m, "out of memory");
    int nm = 0;
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, XT_ST_CRC_KEY)) m[nm++] = f->meta[i]; /* the writer adds its own */
    char path[700];
    snprintf(path, sizeof path, "%s/rt.safetensors", fuzz_scratch_dir());
    xt_err e = {0};
    int rc = xt_st_write(path, f->tensors, f->ntensors, m, nm, &e);
    /* The writer refuses only what the reader cannot have produced. */
    FUZZ_ASSERT(rc == 0, "a file that reads does not write back: %s", e.msg);
    xt_st_file g;
    memset(&e, 0, sizeof e);
    rc = xt_st_read(path, &g, &e);
    FUZZ_ASSERT(rc == 0, "a file written from a valid one does not read: %s", e.msg);
    check_same(f, &g);
    xt_st_close(&g);
    unlink(path);
    free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    xt_st_file f;
    xt_err e = {0};
    if (xt_st_parse(data, size, "fuzz.safetensors", &f, &e)) {
        fuzz_note("refused", e.msg);
        FUZZ_ASSERT(e.code && e.msg[0] && !f.tensors && !f.meta && !f.priv_, "a failure with no message or with data");
        return 0;
    }
    fuzz_note("parsed", NULL);
    for (int i = 0; i < f.ntensors; i++) {
        const xt_st_tensor *t = &f.tensors[i];
        FUZZ_ASSERT(xt_st_find(&f, t->name) == t, "xt_st_find does not find tensor '%s'", t->name);
        FUZZ_ASSERT(((uintptr_t)t->data & 15) == 0, "tensor '%s' is not 16-byte aligned", t->name);
        void *dst = malloc(t->nbytes ? t->nbytes : 1);
        FUZZ_ASSERT(dst, "out of memory");
        xt_err ce = {0};
        FUZZ_ASSERT(xt_st_copy(&f, t->name, t->dtype, t->rank, t->shape, dst, &ce) == 0, "xt_st_copy: %s", ce.msg);
        FUZZ_ASSERT(!t->nbytes || !memcmp(dst, t->data, t->nbytes), "xt_st_copy copied other bytes");
        free(dst);
    }
    for (int i = 0; i < f.nmeta; i++) (void)xt_st_meta_get(&f, f.meta[i].key);
    round_trip(&f);
    xt_st_close(&f);
    return 0;
}
