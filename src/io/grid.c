/* grid.c — the predictions grid; see grid.h.
 *
 * Layout, top to bottom: margin, heading, then rows of cells; a cell is the
 * title (1 or 2 lines, centred) over the scaled image (centred). Every cell
 * has the same size, computed from the widest title, so columns line up.
 */
#include "io/grid.h"

#include <stdio.h>
#include <string.h>

#include "io/font.h"
#include "io/png.h"

enum {
    MARGIN = 16,     /* around the whole figure */
    GAP_X = 14,      /* between cells, horizontally */
    GAP_Y = 14,      /* between rows of cells */
    TITLE_GAP = 4,   /* between a title and its image */
    HEAD_GAP = 12,   /* below the heading */
    NAME_MAX = 24,   /* characters of a class name shown */
};

static const xt_rgb k_right = {0, 0, 255}; /* matplotlib's 'blue' and 'red', as the seed */
static const xt_rgb k_wrong = {255, 0, 0};
static const xt_rgb k_text = {0, 0, 0};

/* Titles of one grid (separate arrays: snprintf from one member of a struct
 * into another trips GCC's -Wrestrict). */
typedef struct titles {
    char actual[XT_GRID_MAX][48];     /* "Actual 7" */
    char predicted[XT_GRID_MAX][48];  /* "Predicted 7" */
    char one_line[XT_GRID_MAX][100];  /* "Actual 7 / Predicted 7" */
} titles;

static void label_text(char *out, size_t cap, const char *what, int label, const char *const *names) {
    if (names && label >= 0 && names[label])
        snprintf(out, cap, "%s %.*s", what, NAME_MAX, names[label]);
    else
        snprintf(out, cap, "%s %d", what, label);
}

int xt_grid_render(xt_image *img, const uint8_t *images, int channels, int h, int w, const int *actual,
                   const int *predicted, int n, const char *const *class_names, xt_err *e) {
    img->px = NULL;
    if (n < 0 || h < 1 || w < 1 || h > 256 || w > 256 || (channels != 1 && channels != 3) ||
        (n > 0 && (!images || !actual || !predicted)))
        return xt_fail(e, XT_EIO, "cannot draw the predictions grid: bad arguments (n=%d, %dx%dx%d images); this is a bug, please report it",
                       n, channels, h, w);
    if (n > XT_GRID_MAX) n = XT_GRID_MAX;

    titles t;
    int correct = 0, widest_one = 0, widest_two = 0;
    for (int i = 0; i < n; i++) {
        label_text(t.actual[i], sizeof t.actual[i], "Actual", actual[i], class_names);
        label_text(t.predicted[i], sizeof t.predicted[i], "Predicted", predicted[i], class_names);
        char line[sizeof t.one_line[0]]; /* a separate buffer: gcc -Wrestrict cannot tell t's fields apart */
        snprintf(line, sizeof line, "%s / %s", t.actual[i], t.predicted[i]);
        memcpy(t.one_line[i], line, sizeof line);
        int w1 = xt_font_width(t.one_line[i], 1);
        int w2a = xt_font_width(t.actual[i], 1), w2b = xt_font_width(t.predicted[i], 1);
        if (w1 > widest_one) widest_one = w1;
        if (w2a > widest_two) widest_two = w2a;
        if (w2b > widest_two) widest_two = w2b;
        correct += actual[i] == predicted[i];
    }

    /* One line, as the seed, unless that makes cells much wider than the
     * images (long class names): then two lines keep the grid compact. */
    int img_w = w * XT_GRID_SCALE, img_h = h * XT_GRID_SCALE;
    int two_lines = widest_one > img_w * 3 / 2;
    int text_w = two_lines ? widest_two : widest_one;
    int cell_w = text_w > img_w ? text_w : img_w;
    int title_h = two_lines ? XT_FONT_LINE_H + XT_FONT_ROWS : XT_FONT_ROWS;
    int cell_h = title_h + TITLE_GAP + img_h;
    int cols = n < XT_GRID_COLS ? (n > 0 ? n : 1) : XT_GRID_COLS;
    int rows = n > 0 ? (n + cols - 1) / cols : 0;

    char heading[96];
    if (n > 0)
        snprintf(heading, sizeof heading, "Predictions: %d of %d correct", correct, n);
    else
        snprintf(heading, sizeof heading, "Predictions: no samples");
    int head_w = xt_font_width(heading, 1) + 1; /* +1: the bold stroke */
    int grid_w = cols * cell_w + (cols - 1) * GAP_X;
    int fig_w = 2 * MARGIN + (grid_w > head_w ? grid_w : head_w);
    int fig_h = 2 * MARGIN + XT_FONT_ROWS + HEAD_GAP + rows * cell_h + (rows > 0 ? (rows - 1) * GAP_Y : 0);

    int rc = xt_image_init(img, fig_w, fig_h, XT_WHITE, e);
    if (rc) return rc;
    xt_font_draw_bold(img, (fig_w - head_w) / 2, MARGIN, heading, k_text, 1);

    int x0 = (fig_w - grid_w) / 2, y0 = MARGIN + XT_FONT_ROWS + HEAD_GAP;
    for (int i = 0; i < n; i++) {
        int cx = x0 + (i % cols) * (cell_w + GAP_X), cy = y0 + (i / cols) * (cell_h + GAP_Y);
        xt_rgb col = actual[i] == predicted[i] ? k_right : k_wrong;
        if (two_lines) {
            xt_font_draw(img, cx + (cell_w - xt_font_width(t.actual[i], 1)) / 2, cy, t.actual[i], col, 1);
            xt_font_draw(img, cx + (cell_w - xt_font_width(t.predicted[i], 1)) / 2, cy + XT_FONT_LINE_H,
                         t.predicted[i], col, 1);
        } else {
            xt_font_draw(img, cx + (cell_w - xt_font_width(t.one_line[i], 1)) / 2, cy, t.one_line[i], col, 1);
        }
        int ix = cx + (cell_w - img_w) / 2, iy = cy + title_h + TITLE_GAP;
        xt_image_blit_planar(img, ix, iy, images + (size_t)i * (size_t)channels * (size_t)h * (size_t)w, channels, w, h,
                             XT_GRID_SCALE);
    }
    return 0;
}

int xt_grid_write(const char *path, const uint8_t *images, int channels, int h, int w, const int *actual, const int *predicted,
                  int n, const char *const *class_names, xt_err *e) {
    xt_image img;
    int rc = xt_grid_render(&img, images, channels, h, w, actual, predicted, n, class_names, e);
    if (rc) return rc;
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
}
