/* fuzz_cifar.c — the CIFAR-10 reader (src/data/cifar.c, cifar_archive.c).
 *
 * Input: one mode byte, then a payload.
 *   mode % 4 == 0: the payload is a batch file (.bin), read by xt_cifar_read_file
 *   mode % 4 == 1: the payload is the archive as it is (mutated gzip and tar
 *                  bytes), read by xt_cifar_read_archive as the test split
 *   mode % 4 == 2: the payload becomes test_batch.bin inside a tar.gz built
 *                  here with libarchive (so the fuzzer explores records inside
 *                  a valid archive); mode / 4 odd: the archive's last
 *                  (mode / 8 + 1) bytes are cut off
 *   mode % 4 == 3: the payload is batches.meta.txt's text
 * Whatever happens, a success holds only whole records with labels 0..9 and
 * no more bytes than went in, and a failure is one non-empty line.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/cifar.h"
#include "fuzz_util.h"

/* tar.gz holding cifar-10-batches-bin/test_batch.bin = payload; NULL on failure. */
static uint8_t *tar_gz(const uint8_t *payload, size_t n, size_t *out_len) {
    size_t cap = n + n / 8 + 4096;
    uint8_t *out = malloc(cap);
    struct archive *a = archive_write_new();
    struct archive_entry *ent = archive_entry_new();
    int ok = out && a && ent && archive_write_add_filter_gzip(a) == ARCHIVE_OK &&
             archive_write_set_format_ustar(a) == ARCHIVE_OK &&
             archive_write_open_memory(a, out, cap, out_len) == ARCHIVE_OK;
    if (ok) {
        archive_entry_set_pathname(ent, "cifar-10-batches-bin/test_batch.bin");
        archive_entry_set_filetype(ent, AE_IFREG);
        archive_entry_set_perm(ent, 0644);
        archive_entry_set_size(ent, (la_int64_t)n);
        ok = archive_write_header(a, ent) == ARCHIVE_OK && archive_write_data(a, payload, n) == (la_ssize_t)n &&
             archive_write_close(a) == ARCHIVE_OK;
    }
    if (ent) archive_entry_free(ent);
    if (a) archive_write_free(a);
    if (!ok) free(out), out = NULL;
    return out;
}

static void check_result(int rc, const xt_cifar *c, const xt_err *e, size_t in_bytes) {
    if (rc) {
        fuzz_note("refused", e->msg);
        FUZZ_ASSERT(e->code && e->msg[0] && !strchr(e->msg, '\n'), "a failure with no message or a multi-line one");
        return;
    }
    fuzz_note("read", "");
    FUZZ_ASSERT(c->n > 0 && (size_t)c->n * XT_CIFAR_RECORD <= in_bytes, "%lld records from %zu bytes",
                (long long)c->n, in_bytes);
    for (int64_t i = 0; i < c->n; i++) FUZZ_ASSERT(c->labels[i] < 10, "label %d at %lld", c->labels[i], (long long)i);
    volatile uint8_t last = c->images[(size_t)c->n * XT_CIFAR_PIXELS - 1];
    (void)last;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int mode = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    xt_cifar c = {0};
    xt_err e = {0};
    int rc;
    switch (mode % 4) {
    case 0:
        rc = xt_cifar_read_file(fuzz_write_file("batch.bin", p, n), &c, &e);
        check_result(rc, &c, &e, n);
        break;
    case 1:
        rc = xt_cifar_read_archive(fuzz_write_file("a.tar.gz", p, n), 1, &c, &e);
        /* a tiny archive can inflate to many records: only the invariants on labels hold */
        check_result(rc, &c, &e, rc ? 0 : (size_t)c.n * XT_CIFAR_RECORD);
        break;
    case 2: {
        size_t len = 0;
        uint8_t *t = tar_gz(p, n, &len);
        if (!t) return 0;
        if (mode / 4 % 2) len = len > (size_t)(mode / 8 + 1) ? len - (size_t)(mode / 8 + 1) : 0;
        rc = xt_cifar_read_archive(fuzz_write_file("b.tar.gz", t, len), 1, &c, &e);
        free(t);
        check_result(rc, &c, &e, n);
        break;
    }
    default:
        rc = xt_cifar_parse_meta("batches.meta.txt", (const char *)p, n, &c, &e);
        fuzz_note(rc ? "refused" : "read", rc ? e.msg : "class names");
        if (!rc)
            for (int k = 0; k < XT_CIFAR_CLASSES; k++)
                FUZZ_ASSERT(c.names[k][0] && strlen(c.names[k]) < XT_CIFAR_NAME_MAX, "class name %d", k);
        else FUZZ_ASSERT(e.msg[0] && !strchr(e.msg, '\n'), "a failure with no message");
        break;
    }
    xt_cifar_free(&c);
    return 0;
}
