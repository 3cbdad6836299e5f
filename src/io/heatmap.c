/* heatmap.c — the confusion-matrix heatmap; see heatmap.h.
 *
 * Layout, left to right: the rotated "true class" label, the row names
 * (right-aligned), the grid; top to bottom: the title, the grid, the
 * column names (rotated, so long names such as FashionMNIST's "Ankle boot"
 * fit under narrow cells), the "predicted class" label. A cell is wide
 * enough for the longest count.
 */
#include "io/heatmap.h"

#include <stdio.h>
#include <string.h>

#include "io/font.h"
#include "io/png.h"

enum { MARGIN = 14, GAP = 8, TITLE_H = 30 };

static const xt_rgb k_text = {40, 40, 40};
static const xt_rgb k_line = {200, 200, 200};

/* White to matplotlib's "Blues" darkest (8, 48, 107) as share goes 0 -> 1. */
static xt_rgb shade(double share) {
    if (share < 0) share = 0;
    if (share > 1) share = 1;
    return (xt_rgb){(uint8_t)(255 - share * (255 - 8)), (uint8_t)(255 - share * (255 - 48)), (uint8_t)(255 - share * (255 - 107))};
}

static int widest(const char *const *names, int k) {
    int w = 0;
    for (int i = 0; i < k; i++) {
        int n = xt_font_width(names[i], 1);
        if (n > w) w = n;
    }
    return w;
}

static void draw_cells(xt_image *img, const long long *m, int k, int x0, int y0, int cell) {
    for (int t = 0; t < k; t++) {
        long long row = 0;
        for (int p = 0; p < k; p++) row += m[t * k + p];
        for (int p = 0; p < k; p++) {
            double share = row ? (double)m[t * k + p] / (double)row : 0;
            int x = x0 + p * cell, y = y0 + t * cell;
            xt_image_fill_rect(img, x, y, cell, cell, shade(share));
            xt_image_rect(img, x, y, cell + 1, cell + 1, k_line);
            char txt[24];
            snprintf(txt, sizeof txt, "%lld", m[t * k + p]);
            xt_font_draw(img, x + (cell - xt_font_width(txt, 1)) / 2, y + (cell - XT_FONT_ROWS) / 2, txt,
                         share > 0.5 ? XT_WHITE : k_text, 1);
        }
    }
}

int xt_heatmap_render(xt_image *img, const long long *m, int k, const char *const *names, const char *title, xt_err *e) {
    img->px = NULL;
    if (k < 1 || k > 256) return xt_fail(e, XT_EIO, "cannot draw a confusion matrix of %d classes", k);
    long long most = 0;
    for (int i = 0; i < k * k; i++)
        if (m[i] > most) most = m[i];
    char widest_count[24];
    snprintf(widest_count, sizeof widest_count, "%lld", most);
    int cell = xt_font_width(widest_count, 1) + 16;
    if (cell < 36) cell = 36;
    int names_w = widest(names, k);
    int x0 = MARGIN + XT_FONT_ROWS + GAP + names_w + GAP, y0 = MARGIN + TITLE_H;
    int grid = k * cell;
    int w = x0 + grid + MARGIN, h = y0 + grid + GAP + names_w + GAP + XT_FONT_LINE_H + MARGIN;
    if (w < xt_font_width(title, 1) * 2 + 2 * MARGIN) w = xt_font_width(title, 1) * 2 + 2 * MARGIN;
    int rc = xt_image_init(img, w, h, XT_WHITE, e);
    if (rc) return rc;
    xt_font_draw_bold(img, MARGIN, MARGIN, title, k_text, 1);
    draw_cells(img, m, k, x0, y0, cell);
    for (int i = 0; i < k; i++) {
        int nw = xt_font_width(names[i], 1);
        xt_font_draw(img, x0 - GAP - nw, y0 + i * cell + (cell - XT_FONT_ROWS) / 2, names[i], k_text, 1); /* rows */
        xt_font_draw_up(img, x0 + i * cell + (cell - XT_FONT_ROWS) / 2, y0 + grid + GAP, names[i], k_text, 1); /* columns */
    }
    const char *ylab = "true class", *xlab = "predicted class";
    xt_font_draw_up(img, MARGIN, y0 + (grid - xt_font_width(ylab, 1)) / 2, ylab, k_text, 1);
    xt_font_draw(img, x0 + (grid - xt_font_width(xlab, 1)) / 2, h - MARGIN - XT_FONT_LINE_H, xlab, k_text, 1);
    return 0;
}

int xt_heatmap_write(const char *path, const long long *m, int k, const char *const *names, const char *title, xt_err *e) {
    xt_image img;
    int rc = xt_heatmap_render(&img, m, k, names, title, e);
    if (rc) return rc;
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
}
