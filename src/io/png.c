/* png.c — RGB raster, drawing primitives and the libpng writer; see png.h. */
#include "io/png.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic.h"

int xt_image_init(xt_image *img, int w, int h, xt_rgb bg, xt_err *e) {
    img->w = img->h = 0;
    img->px = NULL;
    if (w < 1 || h < 1 || w > XT_IMAGE_MAX_SIDE || h > XT_IMAGE_MAX_SIDE)
        return xt_fail(e, XT_EIO, "cannot make a %dx%d image: each side must be 1..%d pixels; this is a bug, please report it",
                       w, h, XT_IMAGE_MAX_SIDE);
    img->px = malloc((size_t)w * (size_t)h * 3);
    if (!img->px)
        return xt_fail(e, XT_EIO, "cannot make a %dx%d image: out of memory; free some memory and retry", w, h);
    img->w = w;
    img->h = h;
    for (size_t i = 0, n = (size_t)w * (size_t)h; i < n; i++) {
        img->px[3 * i] = bg.r;
        img->px[3 * i + 1] = bg.g;
        img->px[3 * i + 2] = bg.b;
    }
    return 0;
}

void xt_image_free(xt_image *img) {
    free(img->px);
    img->px = NULL;
    img->w = img->h = 0;
}

void xt_image_set(xt_image *img, int x, int y, xt_rgb c) {
    if (x < 0 || y < 0 || x >= img->w || y >= img->h) return;
    uint8_t *p = img->px + 3 * ((size_t)y * (size_t)img->w + (size_t)x);
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
}

void xt_image_blend(xt_image *img, int x, int y, xt_rgb c, double alpha) {
    if (x < 0 || y < 0 || x >= img->w || y >= img->h || !(alpha > 0)) return;
    if (alpha > 1) alpha = 1;
    uint8_t *p = img->px + 3 * ((size_t)y * (size_t)img->w + (size_t)x);
    p[0] = (uint8_t)lround(p[0] + (c.r - p[0]) * alpha);
    p[1] = (uint8_t)lround(p[1] + (c.g - p[1]) * alpha);
    p[2] = (uint8_t)lround(p[2] + (c.b - p[2]) * alpha);
}

void xt_image_fill_rect(xt_image *img, int x, int y, int w, int h, xt_rgb c) {
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    long x1 = (long)x + w, y1 = (long)y + h;
    if (x1 > img->w) x1 = img->w;
    if (y1 > img->h) y1 = img->h;
    for (int yy = y0; yy < y1; yy++)
        for (int xx = x0; xx < x1; xx++) xt_image_set(img, xx, yy, c);
}

void xt_image_rect(xt_image *img, int x, int y, int w, int h, xt_rgb c) {
    if (w < 1 || h < 1) return;
    xt_image_fill_rect(img, x, y, w, 1, c);
    xt_image_fill_rect(img, x, y + h - 1, w, 1, c);
    xt_image_fill_rect(img, x, y, 1, h, c);
    xt_image_fill_rect(img, x + w - 1, y, 1, h, c);
}

/* Coverage of a pixel by a shape at distance d from its edge-defining
 * skeleton: a one-pixel ramp centred on the edge is a cheap, good-looking
 * box-filter approximation. */
static double coverage(double half_width, double d) {
    double a = half_width + 0.5 - d;
    return a <= 0 ? 0 : a >= 1 ? 1 : a;
}

/* Clip a float box to the image, as integer pixel bounds [*lo, *hi]. */
static int clip_box(const xt_image *img, double xmin, double ymin, double xmax, double ymax, int *x0, int *y0,
                    int *x1, int *y1) {
    if (!(xmax >= 0 && ymax >= 0 && xmin < img->w && ymin < img->h)) return 0; /* also rejects NaN */
    *x0 = xmin < 0 ? 0 : (int)floor(xmin);
    *y0 = ymin < 0 ? 0 : (int)floor(ymin);
    *x1 = xmax >= img->w - 1 ? img->w - 1 : (int)ceil(xmax);
    *y1 = ymax >= img->h - 1 ? img->h - 1 : (int)ceil(ymax);
    return 1;
}

void xt_image_line(xt_image *img, double ax, double ay, double bx, double by, double width, xt_rgb c) {
    double hw = width > 0 ? width / 2 : 0.5, pad = hw + 1;
    int x0, y0, x1, y1;
    if (!clip_box(img, fmin(ax, bx) - pad, fmin(ay, by) - pad, fmax(ax, bx) + pad, fmax(ay, by) + pad, &x0, &y0,
                  &x1, &y1))
        return;
    double dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            /* distance from the pixel centre to the segment */
            double px = x + 0.5 - ax, py = y + 0.5 - ay;
            double t = len2 > 0 ? (px * dx + py * dy) / len2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = px - t * dx, ey = py - t * dy;
            xt_image_blend(img, x, y, c, coverage(hw, sqrt(ex * ex + ey * ey)));
        }
    }
}

void xt_image_disc(xt_image *img, double cx, double cy, double r, xt_rgb c) {
    int x0, y0, x1, y1;
    if (!clip_box(img, cx - r - 1, cy - r - 1, cx + r + 1, cy + r + 1, &x0, &y0, &x1, &y1)) return;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
            xt_image_blend(img, x, y, c, coverage(r - 0.5, d));
        }
}

void xt_image_blit_gray(xt_image *img, int x, int y, const uint8_t *gray, int gw, int gh, int scale) {
    xt_image_blit_planar(img, x, y, gray, 1, gw, gh, scale);
}

void xt_image_blit_planar(xt_image *img, int x, int y, const uint8_t *planes, int channels, int gw, int gh, int scale) {
    if (scale < 1) scale = 1;
    const size_t hw = (size_t)gw * (size_t)gh, g = channels == 3 ? hw : 0, b = channels == 3 ? 2 * hw : 0;
    for (int sy = 0; sy < gh; sy++)
        for (int sx = 0; sx < gw; sx++) {
            const uint8_t *p = planes + (size_t)sy * (size_t)gw + (size_t)sx;
            xt_image_fill_rect(img, x + sx * scale, y + sy * scale, scale, scale, (xt_rgb){p[0], p[g], p[b]});
        }
}

/* ---------------------------------------------------------------- PNG output */

/* Where libpng's bytes go: the atomic file of xt_png_write, or the memory
 * buffer of xt_png_encode (an image inside a TensorBoard event). */
typedef struct png_ctx {
    xt_atomic_file af;
    int to_memory;
    uint8_t *mem;
    size_t len, cap;
    char msg[200];   /* libpng's error message */
} png_ctx;

static void on_png_error(png_structp png, png_const_charp msg) {
    png_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* warnings do not stop the write, and library code never prints */
}

static int memory_append(png_ctx *ctx, const void *data, size_t n) {
    if (ctx->len + n > ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap : 1 << 16;
        while (cap < ctx->len + n) cap *= 2;
        uint8_t *p = realloc(ctx->mem, cap);
        if (!p) return -1;
        ctx->mem = p;
        ctx->cap = cap;
    }
    memcpy(ctx->mem + ctx->len, data, n);
    ctx->len += n;
    return 0;
}

static void on_png_write(png_structp png, png_bytep data, png_size_t n) {
    png_ctx *ctx = png_get_io_ptr(png);
    if (ctx->to_memory ? memory_append(ctx, data, n) != 0 : xt_atomic_write(&ctx->af, data, n) != 0)
        png_error(png, ctx->to_memory ? "out of memory" : "write failed");
}

static void on_png_flush(png_structp png) { (void)png; }

/* Run libpng over img into ctx (its destination already open). 0, or -1
 * with ctx->msg set (libpng's words). */
static int encode(png_ctx *ctx, const xt_image *img, png_bytep *rows) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = 0;
    if (!png || !info) {
        snprintf(ctx->msg, sizeof ctx->msg, "out of memory in libpng");
        rc = -1;
        goto out;
    }
    /* Nothing that the error path reads changes after setjmp, so no volatile
     * is needed: png, info, rows and ctx are all set above. */
    if (setjmp(png_jmpbuf(png))) {
        rc = -1;
        goto out;
    }
    png_set_write_fn(png, ctx, on_png_write, on_png_flush);
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text = {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Software", .text = "xlatrain"};
    png_set_text(png, info, &text, 1);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, info);
out:
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    return rc;
}

/* The row pointers libpng wants, and a zeroed context; NULL out of memory. */
static png_bytep *rows_of(const xt_image *img, png_ctx **ctx) {
    png_bytep *rows = malloc((size_t)img->h * sizeof *rows);
    *ctx = calloc(1, sizeof **ctx);
    if (!rows || !*ctx) {
        free(rows);
        free(*ctx);
        *ctx = NULL;
        return NULL;
    }
    for (int y = 0; y < img->h; y++) rows[y] = img->px + (size_t)y * (size_t)img->w * 3;
    return rows;
}

int xt_png_write(const char *path, const xt_image *img, xt_err *e) {
    if (!img->px || img->w < 1 || img->h < 1)
        return xt_fail(e, XT_EIO, "cannot write %s: the image is empty; this is a bug, please report it", path);
    png_ctx *ctx;
    png_bytep *rows = rows_of(img, &ctx);
    if (!rows) return xt_fail(e, XT_EIO, "cannot write %s: out of memory; free some memory and retry", path);
    int rc = xt_atomic_open(&ctx->af, path, e);
    if (!rc && encode(ctx, img, rows)) {
        int err = ctx->af.write_errno;
        xt_atomic_abort(&ctx->af);
        if (err)
            rc = xt_fail(e, XT_EIO, "cannot write %s: %s; %s", path, strerror(err), xt_io_hint(err));
        else
            rc = xt_fail(e, XT_EIO, "cannot write %s: libpng: %s; check the disk and retry", path, ctx->msg);
    } else if (!rc) {
        rc = xt_atomic_commit(&ctx->af, e);
    }
    free(rows);
    free(ctx);
    return rc;
}

int xt_png_encode(const xt_image *img, uint8_t **out, size_t *len, xt_err *e) {
    *out = NULL;
    *len = 0;
    if (!img->px || img->w < 1 || img->h < 1) return xt_fail(e, XT_EIO, "cannot encode an empty image as PNG; this is a bug, please report it");
    png_ctx *ctx;
    png_bytep *rows = rows_of(img, &ctx);
    if (!rows) return xt_fail(e, XT_EIO, "cannot encode a PNG: out of memory");
    ctx->to_memory = 1;
    int rc = 0;
    if (encode(ctx, img, rows)) {
        rc = xt_fail(e, XT_EIO, "cannot encode a %dx%d PNG: libpng: %s", img->w, img->h, ctx->msg);
        free(ctx->mem);
    } else {
        *out = ctx->mem;
        *len = ctx->len;
    }
    free(rows);
    free(ctx);
    return rc;
}
