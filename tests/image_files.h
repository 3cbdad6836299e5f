/* image_files.h — test helpers that write image files for the folder
 * dataset's tests: PNGs of every colour type and depth through libpng (RGB
 * ones through the project's own src/io/png.c), JPEGs through libjpeg.
 * Not a decoder: the tests decode with src/data/image_decode.c.
 */
#ifndef XT_TESTS_IMAGE_FILES_H
#define XT_TESTS_IMAGE_FILES_H

#include <stddef.h>
#include <stdint.h>

/* An 8-bit RGB PNG of (h, w, 3) pixels, written by src/io/png.c. 0 or -1. */
int timg_png_rgb(const char *path, const uint8_t *rgb, int w, int h);

/* A PNG of any colour type (PNG_COLOR_TYPE_*) and bit depth from rows of
 * packed samples as libpng takes them (16-bit big-endian). palette/ntrans:
 * for palette images (trans: alpha per entry, may be NULL). 0 or -1. */
int timg_png_raw(const char *path, int w, int h, int color_type, int bit_depth, const uint8_t *data, size_t stride,
                 const uint8_t *palette_rgb, int npalette, const uint8_t *trans, int ntrans);

/* A baseline JPEG of (h, w, channels) pixels (channels 1 or 3). 0 or -1. */
int timg_jpeg(const char *path, const uint8_t *px, int w, int h, int channels, int quality);

/* The same JPEG into memory (malloc'd, *len bytes). NULL on failure. */
uint8_t *timg_jpeg_mem(const uint8_t *px, int w, int h, int channels, int quality, size_t *len);

/* A PNG whose header declares w x h but which holds one empty data chunk:
 * the decompression-bomb shape. 0 or -1. */
int timg_png_header_only(const char *path, uint32_t w, uint32_t h);

/* Write len bytes to path. 0 or -1. */
int timg_write(const char *path, const void *data, size_t len);

/* Read a whole file (malloc'd). NULL on failure. */
uint8_t *timg_read(const char *path, size_t *len);

#endif
