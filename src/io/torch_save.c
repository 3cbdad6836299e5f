/* torch_save.c — a state_dict in torch.save's zip format; see torch_save.h. */
#include "io/torch_save.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "io/pickle.h"

/* PyTorch's legacy typed-storage class for each dtype: what the persistent
 * id names, and what torch.load maps back to a dtype. */
static const char *storage_class(xt_st_dtype d) {
    switch (d) {
    case XT_ST_F32: return "FloatStorage";
    case XT_ST_F64: return "DoubleStorage";
    case XT_ST_I32: return "IntStorage";
    case XT_ST_I64: return "LongStorage";
    case XT_ST_U8: return "ByteStorage";
    default: return NULL;
    }
}

static int64_t numel(const xt_st_tensor *t) {
    int64_t k = 1;
    for (int i = 0; i < t->rank; i++) k *= t->shape[i];
    return k;
}

/* A tuple of ints (the size or the stride). */
static void int_tuple(xt_pickle *p, const int64_t *v, int n) {
    if (n == 0) {
        xt_pickle_empty_tuple(p);
        return;
    }
    xt_pickle_mark(p);
    for (int i = 0; i < n; i++) xt_pickle_int(p, v[i]);
    xt_pickle_tuple(p);
}

/* torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict()) */
static void pickle_tensor(xt_pickle *p, const xt_st_tensor *t, int key) {
    char k[24];
    snprintf(k, sizeof k, "%d", key);
    int64_t stride[XT_ST_MAX_RANK], s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->shape[i];
    }
    xt_pickle_global(p, "torch._utils", "_rebuild_tensor_v2");
    xt_pickle_mark(p);
    xt_pickle_mark(p); /* the storage's persistent id */
    xt_pickle_str(p, "storage");
    xt_pickle_global(p, "torch", storage_class(t->dtype));
    xt_pickle_str(p, k);
    xt_pickle_str(p, "cpu");
    xt_pickle_int(p, numel(t));
    xt_pickle_tuple(p);
    xt_pickle_persid(p);
    xt_pickle_int(p, 0); /* storage offset */
    int_tuple(p, t->shape, t->rank);
    int_tuple(p, stride, t->rank);
    xt_pickle_bool(p, 0); /* requires_grad */
    xt_pickle_global(p, "collections", "OrderedDict"); /* backward hooks */
    xt_pickle_empty_tuple(p);
    xt_pickle_reduce(p);
    xt_pickle_tuple(p);
    xt_pickle_reduce(p);
}

/* data.pkl: OrderedDict([(name, tensor), ...]) */
static void pickle_state_dict(xt_pickle *p, const xt_st_tensor *t, int n) {
    xt_pickle_proto(p);
    xt_pickle_global(p, "collections", "OrderedDict");
    xt_pickle_empty_tuple(p);
    xt_pickle_reduce(p);
    xt_pickle_mark(p);
    for (int i = 0; i < n; i++) {
        xt_pickle_str(p, t[i].name);
        pickle_tensor(p, &t[i], i);
    }
    xt_pickle_setitems(p);
    xt_pickle_stop(p);
}

/* Add a record stored uncompressed; the bytes must stay valid until zip_close. */
static int add_record(zip_t *z, const char *name, const void *data, size_t len) {
    zip_source_t *src = zip_source_buffer(z, data, len, 0);
    if (!src) return -1;
    zip_int64_t idx = zip_file_add(z, name, src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (idx < 0) {
        zip_source_free(src);
        return -1;
    }
    return zip_set_file_compression(z, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
}

int xt_torch_save(const char *path, const xt_st_tensor *t, int n, xt_err *e) {
    for (int i = 0; i < n; i++)
        if (!storage_class(t[i].dtype)) return xt_fail(e, XT_EIO, "%s: tensor '%s' has a dtype PyTorch's format is not written for here", path, t[i].name);
    xt_pickle p;
    xt_pickle_init(&p);
    pickle_state_dict(&p, t, n);
    if (p.oom) {
        xt_pickle_free(&p);
        return xt_fail(e, XT_EIO, "%s: out of memory writing the state_dict", path);
    }
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        xt_fail(e, XT_EIO, "%s: cannot create: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        xt_pickle_free(&p);
        return XT_EIO;
    }
    int bad = add_record(z, "archive/data.pkl", p.buf, p.len) || add_record(z, "archive/byteorder", "little", 6);
    char (*names)[40] = calloc((size_t)n + 1, sizeof *names);
    if (!names) bad = 1;
    for (int i = 0; i < n && !bad; i++) {
        snprintf(names[i], sizeof names[i], "archive/data/%d", i);
        bad = add_record(z, names[i], t[i].data, (size_t)numel(&t[i]) * xt_st_dtype_size(t[i].dtype));
    }
    if (!bad) bad = add_record(z, "archive/version", "3\n", 2);
    if (bad) {
        xt_fail(e, XT_EIO, "%s: cannot write: %s", path, zip_strerror(z));
        zip_discard(z);
    } else if (zip_close(z)) { /* writes a temporary file, renames it over path */
        xt_fail(e, XT_EIO, "%s: cannot write: %s", path, zip_strerror(z));
        zip_discard(z);
        bad = 1;
    }
    free(names);
    xt_pickle_free(&p);
    return bad ? XT_EIO : 0;
}
