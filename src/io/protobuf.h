/* protobuf.h — the few Protocol Buffers wire-format writes that TensorBoard's
 * event files and ONNX models need, into one growing byte buffer.
 *
 *   xt_pb b = {0};
 *   xt_pb_string(&b, 1, "conv1.weight");      // field 1, length-delimited
 *   size_t m = xt_pb_begin(&b, 5);           // a nested message in field 5
 *   xt_pb_varint(&b, 1, 3);                  //   its field 1 = 3
 *   xt_pb_end(&b, m);                        // its length goes in front
 *   if (b.oom) ...; use b.buf[0 .. b.len); xt_pb_free(&b);
 *
 * The wire format (protobuf.dev/programming-guides/encoding): each field is
 * a tag varint (field << 3 | wire type) then its value: a varint (type 0),
 * 8 little-endian bytes (type 1), a length varint and the bytes (type 2), or
 * 4 little-endian bytes (type 5). Repeated fields are written one element
 * at a time (every parser accepts that, packed or not). A nested message's
 * length is only known once it is written, so xt_pb_end moves its bytes up
 * by the size of the length varint: one memmove per nesting level.
 * Is not: a parser (the tests read what we write with Debian's protobuf and
 * onnx packages), or anything schema-driven. Out of memory is sticky in
 * b.oom, so callers write everything and check once.
 */
#ifndef XT_IO_PROTOBUF_H
#define XT_IO_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct xt_pb {
    uint8_t *buf;
    size_t len, cap;
    int oom;        /* an allocation failed: buf holds a prefix only */
} xt_pb;

/* Field `field` as a varint: int32/int64/uint64/enum/bool (a negative int64
 * is its two's complement, ten bytes, as protobuf encodes it). */
void xt_pb_varint(xt_pb *b, int field, uint64_t v);
/* float (wire type 5) and double (wire type 1). */
void xt_pb_float(xt_pb *b, int field, float v);
void xt_pb_double(xt_pb *b, int field, double v);
/* bytes or string (wire type 2). */
void xt_pb_bytes(xt_pb *b, int field, const void *data, size_t n);
void xt_pb_string(xt_pb *b, int field, const char *s);
/* A nested message in field `field`: write its fields after xt_pb_begin,
 * then xt_pb_end with the mark it returned. */
size_t xt_pb_begin(xt_pb *b, int field);
void xt_pb_end(xt_pb *b, size_t mark);
void xt_pb_free(xt_pb *b);

#endif
