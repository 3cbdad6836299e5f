/* image_decode.h — one PNG or JPEG file's bytes to 8-bit pixels with the
 * channels a model asks for (1 = grey, 3 = RGB), for the folder dataset.
 *
 *   xt_decoded d;
 *   if (xt_image_decode(buf, len, "cats/1.jpg", 89478485, 3, &d, &e)) ... e.msg names the file ...
 *   ... d.px is (d.h, d.w, 3) interleaved ...
 *   xt_decoded_free(&d);
 *
 * The format is told by the first bytes (PNG signature, JPEG SOI marker),
 * never by the file name. Grey, grey+alpha, RGB, RGBA, palette (with or
 * without transparency) and 1..16-bit PNGs all arrive as 8-bit: alpha is
 * dropped (not composited, as Pillow's convert("RGB")), 16 bits are scaled
 * to 8 with rounding; RGB becomes grey by ITU-R 601 luma (Pillow's
 * convert("L")). Grey and YCbCr JPEGs are decoded by libjpeg straight into
 * the asked-for colour space; CMYK JPEGs are refused.
 *
 * The header's width x height is checked against max_pixels before any
 * pixel buffer is allocated (Pillow's decompression-bomb guard). A
 * truncated or corrupt stream is an error, including what libjpeg only
 * warns about (a premature end it would pad with grey): a silently grey
 * image under a real label is worse than a refused file.
 *
 * Not here: reading the file (the caller passes its bytes), resizing
 * (image_resize.h), folder scans (folder.h) or caching (image_cache.h).
 */
#ifndef XT_DATA_IMAGE_DECODE_H
#define XT_DATA_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum { XT_IMG_UNKNOWN, XT_IMG_PNG, XT_IMG_JPEG } xt_img_format;

typedef struct xt_decoded {
    int w, h, channels;  /* channels: as asked, 1 or 3 */
    uint8_t *px;         /* (h, w, channels) interleaved, malloc'd */
} xt_decoded;

/* Pillow's Image.MAX_IMAGE_PIXELS: 1 GiB of RGBA (1024*1024*1024 / 4 / 3). */
#define XT_IMAGE_MAX_PIXELS_DEFAULT 89478485LL

/* Which decoder the bytes are for (by signature only). */
xt_img_format xt_image_sniff(const uint8_t *buf, size_t len);

/* Decode buf (the whole file) into *out. path is for messages only.
 * channels: 1 or 3. max_pixels: refuse a larger header (0 = no limit).
 * Returns 0, or XT_EDATA with "PATH: <what is wrong>" (no fix: the caller
 * knows whether to add "remove it" or "or set on_bad_image: skip"). On
 * failure *out is empty. */
int xt_image_decode(const uint8_t *buf, size_t len, const char *path, long long max_pixels, int channels,
                    xt_decoded *out, xt_err *e);

void xt_decoded_free(xt_decoded *d);

#endif
