/* image_decode.c — PNG (libpng) and JPEG (libjpeg) bytes to 8-bit grey or
 * RGB pixels; see image_decode.h.
 *
 * Both libraries report errors by calling a function that must not return,
 * so each decoder sets a jump point (setjmp) before the first library call
 * and the error function longjmps back to it. Everything that the code
 * between setjmp and the longjmp changes and the recovery path then reads
 * (the pixel buffer, the row table) is held through volatile pointers, as C
 * requires for automatic objects across a longjmp.
 * Not here: files, resizing, caching.
 */
#include "data/image_decode.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE without including it */

#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t PNG_SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

xt_img_format xt_image_sniff(const uint8_t *buf, size_t len) {
    if (len >= 8 && !memcmp(buf, PNG_SIG, 8)) return XT_IMG_PNG;
    if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) return XT_IMG_JPEG;
    return XT_IMG_UNKNOWN;
}

void xt_decoded_free(xt_decoded *d) {
    free(d->px);
    memset(d, 0, sizeof *d);
}

/* A header's claim against the guard, before anything is allocated. */
static int check_size(const char *path, const char *fmt, unsigned long w, unsigned long h, long long max_pixels, xt_err *e) {
    char a[32];
    if (w == 0 || h == 0) return xt_fail(e, XT_EDATA, "%s: %s header declares an empty %lux%lu image", path, fmt, w, h);
    unsigned long long px = (unsigned long long)w * h;
    if (max_pixels > 0 && px > (unsigned long long)max_pixels)
        return xt_fail(e, XT_EDATA, "%s: %s header declares %lux%lu = %s pixels, over max_image_pixels (%lld): a "
                       "decompression bomb or a huge photo; raise max_image_pixels if it is real",
                       path, fmt, w, h, xt_commas(a, px), max_pixels);
    if (w > 0x7fffffffUL / 4 || h > 0x7fffffffUL / 4 || px > ((size_t)-1) / 8)
        return xt_fail(e, XT_EDATA, "%s: %s header declares %lux%lu, too large to decode", path, fmt, w, h);
    return 0;
}

/* ---- PNG ------------------------------------------------------------------------ */

typedef struct png_src {
    const uint8_t *buf;
    size_t len, pos;
    char msg[200];   /* libpng's error text */
} png_src;

static void png_read_mem(png_structp p, png_bytep out, png_size_t n) {
    png_src *s = png_get_io_ptr(p);
    if (n > s->len - s->pos) png_error(p, "file ends early (truncated)");
    memcpy(out, s->buf + s->pos, n);
    s->pos += n;
}

static void png_err(png_structp p, png_const_charp msg) {
    png_src *s = png_get_error_ptr(p);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(p, 1);
}

/* Ancillary-chunk trouble (a bad CRC in a text chunk, an unknown sRGB
 * profile) is not the pixels' trouble: libpng goes on, and so do we. */
static void png_warn(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

static void gray_from_rgb(uint8_t *px, size_t n) {
    /* Pillow's convert("L"): ITU-R 601-2 luma in 16-bit fixed point */
    for (size_t i = 0; i < n; i++)
        px[i] = (uint8_t)((px[3 * i] * 19595u + px[3 * i + 1] * 38470u + px[3 * i + 2] * 7471u + 0x8000u) >> 16);
}

static int decode_png(const uint8_t *buf, size_t len, const char *path, long long max_pixels, int channels, xt_decoded *out,
                      xt_err *e) {
    png_src src = {buf, len, 0, ""};
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_err, png_warn);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    uint8_t *volatile px = NULL;
    png_bytep *volatile rows = NULL;
    volatile int rc = 0;
    if (!info) {
        png_destroy_read_struct(p ? &p : NULL, NULL, NULL);
        return xt_fail(e, XT_ERUNTIME, "%s: out of memory starting libpng", path);
    }
    if (setjmp(png_jmpbuf(p))) {
        if (!rc) rc = xt_fail(e, XT_EDATA, "%s: corrupt PNG: %s", path, src.msg);
        goto done;
    }
    png_set_read_fn(p, &src, png_read_mem);
    /* our own guard decides (max_image_pixels); libpng's default 1,000,000 per side would refuse first */
    png_set_user_limits(p, 0x7fffffff, 0x7fffffff);
    png_read_info(p, info);
    png_uint_32 w = png_get_image_width(p, info), h = png_get_image_height(p, info);
    if ((rc = check_size(path, "PNG", w, h, max_pixels, e))) goto done;
    int ct = png_get_color_type(p, info);
    png_set_expand(p);                   /* palette -> RGB, grey 1/2/4 -> 8 bits, tRNS -> alpha */
    if (png_get_bit_depth(p, info) == 16) png_set_scale_16(p); /* rounds, not truncates */
    png_set_strip_alpha(p);
    int src_gray = !(ct & PNG_COLOR_MASK_COLOR);
    if (src_gray && channels == 3) png_set_gray_to_rgb(p);
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    int got = png_get_channels(p, info);
    if (png_get_rowbytes(p, info) != (size_t)w * (size_t)got || got != (src_gray ? channels : 3)) {
        rc = xt_fail(e, XT_EDATA, "%s: PNG decodes to %d channels per pixel; expected %d", path, got, src_gray ? channels : 3);
        goto done;
    }
    px = malloc((size_t)w * h * (size_t)got);
    rows = malloc(sizeof(png_bytep) * h);
    if (!px || !rows) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: out of memory for a %ux%u image", path, (unsigned)w, (unsigned)h);
        goto done;
    }
    for (png_uint_32 y = 0; y < h; y++) rows[y] = px + (size_t)y * w * (size_t)got;
    png_read_image(p, rows);
    png_read_end(p, NULL); /* the CRC of the last data chunk and the end marker: a cut file fails here */
    if (got == 3 && channels == 1) gray_from_rgb(px, (size_t)w * h);
    out->w = (int)w, out->h = (int)h, out->channels = channels, out->px = px;
    px = NULL;
done:
    png_destroy_read_struct(&p, &info, NULL);
    free(rows);
    free(px);
    return rc;
}

/* ---- JPEG ----------------------------------------------------------------------- */

typedef struct jpeg_fail {
    struct jpeg_error_mgr pub;  /* first: libjpeg hands us a pointer to it */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int warned;                 /* libjpeg saw corrupt data and carried on */
} jpeg_fail;

static void jpeg_exit(j_common_ptr ci) {
    jpeg_fail *f = (jpeg_fail *)ci->err;
    ci->err->format_message(ci, f->msg);
    longjmp(f->jump, 1);
}

/* libjpeg's warnings are corrupt data it papered over (a premature end
 * padded with grey, a broken Huffman code): keep the first, refuse later. */
static void jpeg_message(j_common_ptr ci, int level) {
    jpeg_fail *f = (jpeg_fail *)ci->err;
    if (level == -1 && !f->warned) {
        ci->err->format_message(ci, f->msg);
        f->warned = 1;
    }
}

static int decode_jpeg(const uint8_t *buf, size_t len, const char *path, long long max_pixels, int channels, xt_decoded *out,
                       xt_err *e) {
    struct jpeg_decompress_struct ci;
    jpeg_fail f;
    uint8_t *volatile px = NULL;
    volatile int rc = 0;
    memset(&f, 0, sizeof f);
    ci.err = jpeg_std_error(&f.pub);
    f.pub.error_exit = jpeg_exit;
    f.pub.emit_message = jpeg_message;
    if (setjmp(f.jump)) {
        if (!rc) rc = xt_fail(e, XT_EDATA, "%s: corrupt JPEG: %s", path, f.msg);
        jpeg_destroy_decompress(&ci);
        free(px);
        return rc;
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, buf, (unsigned long)len);
    if (jpeg_read_header(&ci, TRUE) != JPEG_HEADER_OK) {
        rc = xt_fail(e, XT_EDATA, "%s: a JPEG of tables only, with no image", path);
        goto done;
    }
    if ((rc = check_size(path, "JPEG", ci.image_width, ci.image_height, max_pixels, e))) goto done;
    if (ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK || ci.num_components == 4) {
        rc = xt_fail(e, XT_EDATA, "%s: a CMYK JPEG; save it as RGB (e.g. `convert IN -colorspace sRGB OUT`)", path);
        goto done;
    }
    ci.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB; /* grey from YCbCr is its Y: the luma */
    jpeg_start_decompress(&ci);
    if (ci.output_components != channels) {
        rc = xt_fail(e, XT_EDATA, "%s: JPEG decodes to %d channels; expected %d", path, ci.output_components, channels);
        goto done;
    }
    size_t stride = (size_t)ci.output_width * (size_t)channels;
    px = malloc(stride * ci.output_height);
    if (!px) {
        rc = xt_fail(e, XT_ERUNTIME, "%s: out of memory for a %ux%u image", path, ci.output_width, ci.output_height);
        goto done;
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW row = px + stride * ci.output_scanline;
        if (jpeg_read_scanlines(&ci, &row, 1) != 1) break;
    }
    if (ci.output_scanline == ci.output_height) jpeg_finish_decompress(&ci);
    if (f.warned || ci.output_scanline != ci.output_height) {
        rc = xt_fail(e, XT_EDATA, "%s: corrupt JPEG: %s", path, f.warned ? f.msg : "image data ends early");
        goto done;
    }
    out->w = (int)ci.output_width, out->h = (int)ci.output_height, out->channels = channels, out->px = px;
    px = NULL;
done:
    jpeg_destroy_decompress(&ci);
    free(px);
    return rc;
}

int xt_image_decode(const uint8_t *buf, size_t len, const char *path, long long max_pixels, int channels,
                    xt_decoded *out, xt_err *e) {
    memset(out, 0, sizeof *out);
    if (channels != 1 && channels != 3)
        return xt_fail(e, XT_EUSAGE, "%s: images decode to 1 or 3 channels, not %d; set the model's input to [1, h, w] or [3, h, w]",
                       path, channels);
    if (len == 0) return xt_fail(e, XT_EDATA, "%s: an empty file (0 bytes), not an image", path);
    switch (xt_image_sniff(buf, len)) {
    case XT_IMG_PNG: return decode_png(buf, len, path, max_pixels, channels, out, e);
    case XT_IMG_JPEG: return decode_jpeg(buf, len, path, max_pixels, channels, out, e);
    case XT_IMG_UNKNOWN: break;
    }
    char head[40] = "";
    for (size_t i = 0; i < len && i < 8; i++) snprintf(head + strlen(head), sizeof head - strlen(head), "%s%02x", i ? " " : "", buf[i]);
    return xt_fail(e, XT_EDATA, "%s: not a PNG or JPEG image (it starts with bytes %s); only PNG and JPEG are read, "
                   "whatever the file name says", path, head);
}
