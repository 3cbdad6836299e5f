/* test_io_protobuf.c — the protobuf wire-format writer (src/io/protobuf.c)
 * against bytes worked out by hand from the encoding rules, and CRC-32C
 * (src/io/crc32c.c) against the published check values. The event-file and
 * ONNX tests decode whole files with Debian's protobuf and onnx packages;
 * these pin the pieces. */
#include <string.h>

#include "io/crc32c.h"
#include "io/protobuf.h"
#include "test.h"

static int bytes_are(const xt_pb *b, const unsigned char *want, size_t n) {
    return !b->oom && b->len == n && !memcmp(b->buf, want, n);
}

TEST(protobuf_varints_and_fixed_fields) {
    xt_pb b = {0};
    xt_pb_varint(&b, 1, 150);               /* the guide's example: 08 96 01 */
    xt_pb_varint(&b, 2, 0);                 /* zero is one byte */
    xt_pb_varint(&b, 16, 1);                /* field 16: a two-byte tag 80 01 */
    xt_pb_float(&b, 2, 1.0f);               /* 15 00 00 80 3f */
    xt_pb_double(&b, 1, -2.0);              /* 09 then 8 bytes, c0 last */
    static const unsigned char want[] = {0x08, 0x96, 0x01, 0x10, 0x00, 0x80, 0x01, 0x01, 0x15, 0x00, 0x00, 0x80, 0x3f,
                                         0x09, 0, 0, 0, 0, 0, 0, 0, 0xc0};
    CHECK(bytes_are(&b, want, sizeof want));
    xt_pb_free(&b);
    /* a negative int64 is ten bytes of two's complement */
    xt_pb_varint(&b, 1, (uint64_t)(int64_t)-1);
    static const unsigned char neg[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_are(&b, neg, sizeof neg));
    xt_pb_free(&b);
}

TEST(protobuf_nested_messages_get_their_length_in_front) {
    xt_pb b = {0};
    xt_pb_string(&b, 1, "ab");
    size_t outer = xt_pb_begin(&b, 5);
    size_t inner = xt_pb_begin(&b, 4);
    xt_pb_varint(&b, 1, 3);
    xt_pb_end(&b, inner);
    xt_pb_string(&b, 2, "");
    xt_pb_end(&b, outer);
    static const unsigned char want[] = {0x0a, 0x02, 'a', 'b', 0x2a, 0x06, 0x22, 0x02, 0x08, 0x03, 0x12, 0x00};
    CHECK(bytes_are(&b, want, sizeof want));
    xt_pb_free(&b);
    /* a body of 200 bytes needs a two-byte length: the body moves up by two */
    unsigned char big[200];
    for (int i = 0; i < 200; i++) big[i] = (unsigned char)i;
    size_t m = xt_pb_begin(&b, 1);
    xt_pb_bytes(&b, 2, big, sizeof big);
    xt_pb_end(&b, m);
    CHECK_EQ(b.len, 1 + 2 + 1 + 2 + 200);
    CHECK_EQ(b.buf[1], 0x80 | (203 & 0x7f)); /* 203 = 0xcb: cb 01 */
    CHECK_EQ(b.buf[2], 0x01);
    CHECK_EQ(b.buf[3], 0x12);
    CHECK(!memcmp(b.buf + 6, big, sizeof big));
    xt_pb_free(&b);
}

TEST(crc32c_matches_the_published_check_values) {
    CHECK_EQ(xt_crc32c("123456789", 9), 0xE3069283u);
    unsigned char zeros[32] = {0}, ones[32];
    memset(ones, 0xff, sizeof ones);
    CHECK_EQ(xt_crc32c(zeros, 32), 0x8A9136AAu); /* RFC 3720, B.4 */
    CHECK_EQ(xt_crc32c(ones, 32), 0x62A8AB43u);
    CHECK_EQ(xt_crc32c("", 0), 0u);
    /* masked: rotate right by 15, add TensorFlow's constant */
    uint32_t c = 0xE3069283u;
    CHECK_EQ(xt_crc32c_masked("123456789", 9), (uint32_t)(((c >> 15) | (c << 17)) + 0xa282ead8u));
}
