/* crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of TFRecord framing, and TensorFlow's "masked" form of it.
 * Is not: zlib's CRC-32 (another polynomial; PNG and zip use that one). */
#ifndef XT_IO_CRC32C_H
#define XT_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes ("123456789" -> 0xE3069283). */
uint32_t xt_crc32c(const void *data, size_t n);

/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that
 * the CRC of data that itself holds CRCs is not trivially related to them. */
uint32_t xt_crc32c_masked(const void *data, size_t n);

#endif
