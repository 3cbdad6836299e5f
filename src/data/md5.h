/* md5.h — MD5 (RFC 1321), to verify downloaded dataset files against the
 * checksums torchvision publishes. Integrity against transfer errors only: MD5
 * is not a defence against a malicious mirror, and nothing else should use it.
 */
#ifndef XT_DATA_MD5_H
#define XT_DATA_MD5_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct xt_md5 {
    uint32_t h[4];
    uint64_t len;        /* bytes hashed so far */
    uint8_t buf[64];     /* the partial block */
} xt_md5;

void xt_md5_init(xt_md5 *m);
void xt_md5_update(xt_md5 *m, const void *data, size_t n);
/* Finish and write the 16-byte digest. */
void xt_md5_final(xt_md5 *m, uint8_t digest[16]);

/* Digest of a buffer as 32 lowercase hex digits (+ NUL). */
void xt_md5_hex(const void *data, size_t n, char hex[33]);

/* Digest of a whole file as hex; XT_EIO naming the path when it cannot be read. */
int xt_md5_file(const char *path, char hex[33], xt_err *e);

#endif
