/* font.h — a built-in 5x12 bitmap font (printable ASCII 32..126) for the
 * PNG plots, so they need no font files or FreeType.
 *
 *   xt_font_draw(&img, 10, 10, "Actual 7", (xt_rgb){0, 0, 255}, 1);
 *   int w = xt_font_width("Actual 7", 1);    // to centre or fit text
 *
 * Each character is a 6-pixel advance (5 of ink, 1 of spacing) by 12 rows:
 * caps and digits 9 rows tall, lowercase x-height 6, 2 rows of descender, so
 * a line is XT_FONT_LINE_H pixels with leading. It is the classic terminal
 * size (like X11's 6x13), legible at 100% zoom; `scale` multiplies it for
 * headings. '\n' starts a new line; bytes outside 32..126 draw as a box.
 * Not here: anti-aliased or proportional text.
 */
#ifndef XT_IO_FONT_H
#define XT_IO_FONT_H

#include "io/png.h"

#define XT_FONT_ADVANCE 6  /* horizontal pixels per character at scale 1 */
#define XT_FONT_ROWS 12      /* glyph cell rows at scale 1 */
#define XT_FONT_LINE_H 14  /* line advance at scale 1 */
#define XT_FONT_CAP_TOP 1  /* first row of a capital inside the cell */
#define XT_FONT_BASELINE 9 /* last row of a capital inside the cell */

/* Draw `text` with the top-left of its first cell at (x, y), clipped. */
void xt_font_draw(xt_image *img, int x, int y, const char *text, xt_rgb color, int scale);

/* Same, emboldened by doubling each stroke one pixel to the right (titles). */
void xt_font_draw_bold(xt_image *img, int x, int y, const char *text, xt_rgb color, int scale);

/* Draw rotated 90 degrees counter-clockwise (reading bottom to top, for a
 * y-axis label); (x, y) is the top-left of the rotated text's box, which is
 * XT_FONT_ROWS*scale wide and xt_font_width(text, scale) tall. Single line. */
void xt_font_draw_up(xt_image *img, int x, int y, const char *text, xt_rgb color, int scale);

/* Width in pixels of the widest line (without the trailing spacing column),
 * and the height of all lines (last line without leading). */
int xt_font_width(const char *text, int scale);
int xt_font_height(const char *text, int scale);

/* 1 when pixel (gx, gy) of character c's cell is ink; for tests and layout. */
int xt_font_ink(unsigned char c, int gx, int gy);

#endif
