/* image_files.c — write test images; see image_files.h. */
#include "image_files.h"

#include <stdio.h>

#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/png.h"

int timg_write(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

uint8_t *timg_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) free(b), b = NULL;
    fclose(f);
    *len = (size_t)n;
    return b;
}

int timg_png_rgb(const char *path, const uint8_t *rgb, int w, int h) {
    xt_image img;
    xt_err e = {0};
    if (xt_image_init(&img, w, h, XT_WHITE, &e)) return -1;
    memcpy(img.px, rgb, (size_t)w * h * 3);
    int rc = xt_png_write(path, &img, &e);
    xt_image_free(&img);
    return rc ? -1 : 0;
}

int timg_png_raw(const char *path, int w, int h, int color_type, int bit_depth, const uint8_t *data, size_t stride,
                 const uint8_t *palette_rgb, int npalette, const uint8_t *trans, int ntrans) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) {
        png_destroy_write_struct(&p, &info);
        fclose(f);
        return -1;
    }
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, bit_depth, color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette_rgb) {
        png_color pal[256];
        for (int i = 0; i < npalette; i++) pal[i] = (png_color){palette_rgb[3 * i], palette_rgb[3 * i + 1], palette_rgb[3 * i + 2]};
        png_set_PLTE(p, info, pal, npalette);
        if (trans) png_set_tRNS(p, info, trans, ntrans, NULL);
    }
    png_write_info(p, info);
    for (int y = 0; y < h; y++) png_write_row(p, data + (size_t)y * stride);
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    return fclose(f) ? -1 : 0;
}

uint8_t *timg_jpeg_mem(const uint8_t *px, int w, int h, int channels, int quality, size_t *len) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    unsigned char *out = NULL;
    unsigned long n = 0;
    c.err = jpeg_std_error(&err); /* the encoder only fails on a bad call here: exit is fine in a test */
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, &n);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = channels;
    c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * (size_t)w * (size_t)channels);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    /* libjpeg's buffer comes from its own malloc: copy it into one ours frees */
    uint8_t *copy = malloc(n);
    if (copy) memcpy(copy, out, n);
    free(out);
    *len = n;
    return copy;
}

int timg_jpeg(const char *path, const uint8_t *px, int w, int h, int channels, int quality) {
    size_t n;
    uint8_t *b = timg_jpeg_mem(px, w, h, channels, quality, &n);
    if (!b) return -1;
    int rc = timg_write(path, b, n);
    free(b);
    return rc;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* One chunk: length, type, data, CRC over type and data. */
static size_t chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t n) {
    put32(out, n);
    memcpy(out + 4, type, 4);
    if (n) memcpy(out + 8, data, n);
    put32(out + 8 + n, (uint32_t)crc32(0, out + 4, n + 4));
    return 12 + n;
}

int timg_png_header_only(const char *path, uint32_t w, uint32_t h) {
    uint8_t buf[256], ihdr[13] = {0};
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memcpy(buf, sig, 8);
    put32(ihdr, w), put32(ihdr + 4, h);
    ihdr[8] = 8, ihdr[9] = 2; /* 8-bit RGB */
    size_t n = 8 + chunk(buf + 8, "IHDR", ihdr, 13);
    static const uint8_t idat[] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}; /* zlib of nothing */
    n += chunk(buf + n, "IDAT", idat, sizeof idat);
    n += chunk(buf + n, "IEND", NULL, 0);
    return timg_write(path, buf, n);
}
