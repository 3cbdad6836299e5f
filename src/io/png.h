/* png.h — an RGB raster with a few drawing primitives, written as PNG.
 *
 *   xt_image img;
 *   if (xt_image_init(&img, 640, 480, XT_WHITE, e)) return e->code;
 *   xt_image_fill_rect(&img, 10, 10, 100, 20, (xt_rgb){0, 0, 255});
 *   xt_image_line(&img, 0, 0, 639.5, 479.5, 2.0, XT_BLACK);     // anti-aliased
 *   xt_image_blit_gray(&img, 50, 50, pixels, 28, 28, 4);         // 112x112
 *   int rc = xt_png_write("out.png", &img, e);                   // atomic
 *   xt_image_free(&img);
 *
 * Coordinates are pixels, x right and y down; integer (x, y) is the top-left
 * corner of a pixel, so the pixel's centre is (x + 0.5, y + 0.5). Everything
 * clips to the image, so callers never check bounds. Text is in font.h;
 * the plots that use this are grid.h and curves.h.
 */
#ifndef XT_IO_PNG_H
#define XT_IO_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct xt_rgb {
    uint8_t r, g, b;
} xt_rgb;

#define XT_WHITE ((xt_rgb){255, 255, 255})
#define XT_BLACK ((xt_rgb){0, 0, 0})

typedef struct xt_image {
    int w, h;
    uint8_t *px;   /* (h, w, 3): row-major RGB, 3*w bytes per row */
} xt_image;

#define XT_IMAGE_MAX_SIDE 16384

/* Allocate a w x h image filled with `bg`. 0, or XT_EIO for a bad size or
 * out of memory. */
int xt_image_init(xt_image *img, int w, int h, xt_rgb bg, xt_err *e);
void xt_image_free(xt_image *img);

/* Set one pixel; blend `c` over it with coverage alpha in [0, 1]. */
void xt_image_set(xt_image *img, int x, int y, xt_rgb c);
void xt_image_blend(xt_image *img, int x, int y, xt_rgb c, double alpha);

/* Solid rectangle [x, x+w) x [y, y+h); a 1-pixel outline of the same box. */
void xt_image_fill_rect(xt_image *img, int x, int y, int w, int h, xt_rgb c);
void xt_image_rect(xt_image *img, int x, int y, int w, int h, xt_rgb c);

/* Anti-aliased line of the given width with round ends, from (x0, y0) to
 * (x1, y1) in continuous coordinates. */
void xt_image_line(xt_image *img, double x0, double y0, double x1, double y1, double width, xt_rgb c);

/* Anti-aliased filled disc (point markers). */
void xt_image_disc(xt_image *img, double cx, double cy, double r, xt_rgb c);

/* Draw a gw x gh grayscale image (0 black .. 255 white) with its top-left at
 * (x, y), each source pixel a scale x scale block. */
void xt_image_blit_gray(xt_image *img, int x, int y, const uint8_t *gray, int gw, int gh, int scale);

/* The same for a channel-planar image (PyTorch's (C, H, W) layout): 1
 * channel is grayscale, 3 are the R, G and B planes one after another. */
void xt_image_blit_planar(xt_image *img, int x, int y, const uint8_t *planes, int channels, int gw, int gh, int scale);

/* Write img as an 8-bit RGB PNG, atomically (temp + fsync + rename, see
 * atomic.h). 0, or XT_EIO naming the file (libpng errors included). */
int xt_png_write(const char *path, const xt_image *img, xt_err *e);

/* The same PNG in memory (for an image summary in a TensorBoard event
 * file): *out is malloc'd, *len bytes. 0, or XT_EIO (out of memory). */
int xt_png_encode(const xt_image *img, uint8_t **out, size_t *len, xt_err *e);

#endif
