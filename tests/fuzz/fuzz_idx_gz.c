/* fuzz_idx_gz.c — the IDX reader (src/data/idx.c) through its gzip path.
 *
 * Input: one mode byte, one parameter byte, then a payload.
 *   mode % 4 == 0: the payload is the file as it is (mutated gzip bytes: bad
 *                  headers, damaged deflate data, wrong CRC/length trailers)
 *   mode % 4 == 1: the payload is an IDX file, gzip-compressed here (level
 *                  mode / 4 % 10), so the fuzzer explores IDX contents inside a
 *                  valid gzip stream
 *   mode % 4 == 2: as 1, then the last (parameter + 1) bytes cut off
 *   mode % 4 == 3: as 1, then the parameter byte flips a bit of the compressed
 *                  stream at a position chosen by the payload length
 * The file is named .gz and read once: as labels when the IDX magic says one
 * dimension (for mode 0, when parameter % 3 == 1), else as images (of 28x28
 * when the payload's length is odd, or parameter % 3 == 2 for mode 0).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_idx_read.h"

/* gzip-compress in[0..n) into a malloc'd buffer; NULL when zlib fails. */
static uint8_t *gzip_bytes(const uint8_t *in, size_t n, int level, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, (uLong)n) + 32;
    uint8_t *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return NULL;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int mode = data[0] % 4, level = data[0] / 4 % 10, param = data[1];
    const uint8_t *payload = data + 2;
    size_t n = size - 2;
    if (mode == 0) { /* the kind from the parameter byte: the magic is compressed */
        fuzz_idx_read(fuzz_write_file("input.gz", payload, n), param % 3, 0);
        return 0;
    }
    int kind = n >= 4 && payload[3] == 1 ? FUZZ_IDX_LABELS : n % 2 ? FUZZ_IDX_IMAGES_28 : FUZZ_IDX_IMAGES;
    size_t zlen = 0;
    uint8_t *z = gzip_bytes(payload, n, level, &zlen);
    if (!z) return 0;
    if (mode == 2) zlen = (size_t)param + 1 < zlen ? zlen - ((size_t)param + 1) : 0;
    if (mode == 3 && zlen) z[(n * 31 + (size_t)param) % zlen] ^= (uint8_t)(1u << (param % 8));
    fuzz_idx_read(fuzz_write_file("input.gz", z, zlen), kind, 0);
    free(z);
    return 0;
}
