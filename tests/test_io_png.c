/* test_io_png.c — raster primitives, the font, the PNG writer, the
 * predictions grid and the curves plot (src/io/png.c, font.c, grid.c,
 * curves.c). PNGs are decoded back with libpng.
 * Set XLATRAIN_IO_SAMPLES=DIR to keep the grid and curves PNGs for a look. */
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <string.h>
#include <sys/stat.h>

#include "io/curves.h"
#include "io/font.h"
#include "io/grid.h"
#include "io/png.h"
#include "test.h"

static const char *out_path(const char *name) {
    static char bufs[4][1024];
    static int next;
    char *p = bufs[next++ % 4];
    const char *keep = getenv("XLATRAIN_IO_SAMPLES");
    if (keep && *keep) {
        mkdir(keep, 0755);
        snprintf(p, 1024, "%s/%s", keep, name);
    } else {
        snprintf(p, 1024, "%s/%s", test_tmpdir(), name);
    }
    return p;
}

typedef struct decoded {
    int w, h;
    unsigned char *px; /* RGB */
} decoded;

static int decode(const char *path, decoded *d) {
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    d->px = NULL;
    if (!png_image_begin_read_from_file(&im, path)) return -1;
    im.format = PNG_FORMAT_RGB;
    d->px = malloc(PNG_IMAGE_SIZE(im));
    if (!png_image_finish_read(&im, NULL, d->px, 0, NULL)) {
        free(d->px);
        d->px = NULL;
        return -1;
    }
    d->w = (int)im.width;
    d->h = (int)im.height;
    return 0;
}

static const unsigned char *at(const decoded *d, int x, int y) { return d->px + 3 * ((size_t)y * d->w + x); }

/* Pixels in [x0,x1) x [y0,y1) that are clearly blue / clearly red. */
static void count_colours(const decoded *d, int x0, int y0, int x1, int y1, int *blue, int *red) {
    *blue = *red = 0;
    for (int y = y0; y < y1 && y < d->h; y++)
        for (int x = x0; x < x1 && x < d->w; x++) {
            const unsigned char *p = at(d, x, y);
            if (p[2] > 150 && p[2] > p[0] + 100 && p[2] > p[1] + 100) (*blue)++;
            if (p[0] > 150 && p[0] > p[1] + 100 && p[0] > p[2] + 100) (*red)++;
        }
}

/* 28x28 white-on-black images showing a digit, like MNIST. */
static void fake_digits(uint8_t *out, int n) {
    for (int i = 0; i < n; i++) {
        xt_image img;
        xt_err e = {0};
        xt_image_init(&img, 28, 28, XT_BLACK, &e);
        char s[2] = {(char)('0' + i % 10), 0};
        xt_font_draw(&img, 9, 3, s, XT_WHITE, 2);
        for (int p = 0; p < 28 * 28; p++) out[i * 784 + p] = img.px[3 * p];
        xt_image_free(&img);
    }
}

static int temp_files_in(const char *dir) {
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dp))) n += strstr(de->d_name, ".tmp.") != NULL;
    closedir(dp);
    return n;
}

/* ------------------------------------------------------------------ raster + PNG */

TEST(png_round_trips_pixels) {
    xt_image img;
    xt_err e = {0};
    CHECK_EQ(xt_image_init(&img, 37, 21, (xt_rgb){10, 20, 30}, &e), 0);
    xt_image_fill_rect(&img, 3, 4, 5, 6, (xt_rgb){200, 0, 100});
    xt_image_fill_rect(&img, -10, -10, 12, 12, (xt_rgb){1, 2, 3});   /* clipped */
    xt_image_fill_rect(&img, 30, 15, 100, 100, (xt_rgb){4, 5, 6});   /* clipped */
    xt_image_line(&img, 20, -50, 20, 500, 3, XT_WHITE);               /* clipped, no crash */
    xt_image_disc(&img, 1e9, NAN, 3, XT_WHITE);                       /* off-image: ignored */
    const char *p = out_path("roundtrip.png");
    CHECK_EQ(xt_png_write(p, &img, &e), 0);
    decoded d;
    CHECK_EQ(decode(p, &d), 0);
    CHECK_EQ(d.w, 37);
    CHECK_EQ(d.h, 21);
    if (d.px) CHECK(memcmp(d.px, img.px, 37 * 21 * 3) == 0);
    CHECK(at(&d, 5, 5)[0] == 200 && at(&d, 5, 5)[2] == 100);
    CHECK(at(&d, 0, 20)[0] == 10);
    CHECK(at(&d, 1, 1)[0] == 1);
    free(d.px);
    xt_image_free(&img);
}

/* The in-memory encoder (TensorBoard's image summaries) gives the very bytes
 * the file writer writes, and they decode to the same pixels. */
TEST(png_encode_in_memory_is_the_file_s_bytes) {
    xt_image img;
    xt_err e = {0};
    CHECK_EQ(xt_image_init(&img, 19, 7, (xt_rgb){10, 20, 30}, &e), 0);
    xt_image_fill_rect(&img, 2, 1, 5, 3, (xt_rgb){250, 5, 90});
    const char *p = out_path("encoded.png");
    CHECK_EQ(xt_png_write(p, &img, &e), 0);
    uint8_t *mem = NULL;
    size_t len = 0;
    CHECK_EQ(xt_png_encode(&img, &mem, &len, &e), 0);
    FILE *f = fopen(p, "rb");
    static unsigned char file[1 << 16];
    size_t n = f ? fread(file, 1, sizeof file, f) : 0;
    if (f) fclose(f);
    CHECK(len > 8 && !memcmp(mem, "\x89PNG\r\n\x1a\n", 8));
    CHECK_EQ(len, n);
    CHECK(mem && n == len && !memcmp(mem, file, n));
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    CHECK(mem && png_image_begin_read_from_memory(&im, mem, len));
    im.format = PNG_FORMAT_RGB;
    unsigned char px[19 * 7 * 3];
    CHECK(png_image_finish_read(&im, NULL, px, 0, NULL));
    CHECK(!memcmp(px, img.px, sizeof px));
    free(mem);
    xt_image empty = {0};
    CHECK_EQ(xt_png_encode(&empty, &mem, &len, &e), XT_EIO);
    CHECK(mem == NULL && len == 0);
    xt_image_free(&img);
}

TEST(png_write_failure_is_eio_and_leaves_nothing) {
    xt_image img;
    xt_err e = {0};
    CHECK_EQ(xt_image_init(&img, 4, 4, XT_WHITE, &e), 0);
    char file[1024], p[1100];
    snprintf(file, sizeof file, "%s/afile", test_tmpdir());
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(p, sizeof p, "%s/x.png", file);
    CHECK_EQ(xt_png_write(p, &img, &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, p);
    CHECK_STR_CONTAINS(e.msg, "Not a directory");
    CHECK_EQ(temp_files_in(test_tmpdir()), 0);
    xt_image_free(&img);
    CHECK_EQ(xt_image_init(&img, 0, 4, XT_WHITE, &e), XT_EIO);
    CHECK(img.px == NULL);
}

TEST(png_primitives_hit_the_right_pixels) {
    xt_image img;
    xt_err e = {0};
    CHECK_EQ(xt_image_init(&img, 12, 12, XT_WHITE, &e), 0);
    const uint8_t g[4] = {0, 255, 128, 64};
    xt_image_blit_gray(&img, 1, 1, g, 2, 2, 3);
    CHECK_EQ(img.px[3 * (1 * 12 + 1)], 0);      /* (1,1) <- g[0] */
    CHECK_EQ(img.px[3 * (3 * 12 + 3)], 0);      /* still g[0]'s 3x3 block */
    CHECK_EQ(img.px[3 * (1 * 12 + 4)], 255);    /* g[1] */
    CHECK_EQ(img.px[3 * (4 * 12 + 1)], 128);    /* g[2] */
    CHECK_EQ(img.px[3 * (6 * 12 + 6)], 64);     /* g[3] */
    CHECK_EQ(img.px[3 * (7 * 12 + 7)], 255);    /* outside: background */
    xt_image_free(&img);

    CHECK_EQ(xt_image_init(&img, 12, 12, XT_WHITE, &e), 0);
    xt_image_line(&img, 2, 5.5, 10, 5.5, 1, XT_BLACK);
    CHECK_EQ(img.px[3 * (5 * 12 + 6)], 0);      /* on the line: full coverage */
    CHECK_EQ(img.px[3 * (3 * 12 + 6)], 255);    /* two rows away: untouched */
    xt_image_disc(&img, 6, 9, 2, (xt_rgb){255, 0, 0});
    CHECK(img.px[3 * (8 * 12 + 5) + 1] == 0);   /* inside the disc */
    xt_image_free(&img);
}

TEST(font_covers_printable_ascii) {
    for (int c = 32; c <= 126; c++) {
        int ink = 0;
        for (int y = 0; y < XT_FONT_ROWS; y++)
            for (int x = 0; x < XT_FONT_ADVANCE; x++) ink += xt_font_ink((unsigned char)c, x, y);
        if (c == ' ')
            CHECK_EQ(ink, 0);
        else
            CHECK_MSG(ink > 0, "glyph '%c' is empty", c);
        for (int y = 0; y < XT_FONT_ROWS; y++) CHECK(!xt_font_ink((unsigned char)c, 5, y)); /* spacing column */
    }
    CHECK(xt_font_ink(200, 0, 1)); /* non-ASCII: the box */
    CHECK_EQ(xt_font_width("abc", 1), 17);
    CHECK_EQ(xt_font_width("abc", 2), 34);
    CHECK_EQ(xt_font_width("ab\nlonger", 1), 35);
    CHECK_EQ(xt_font_width("", 1), 0);
    CHECK_EQ(xt_font_height("a\nb", 1), XT_FONT_LINE_H + XT_FONT_ROWS);
    /* distinct glyphs for look-alikes */
    int diff = 0;
    for (int y = 0; y < XT_FONT_ROWS; y++)
        for (int x = 0; x < 5; x++) diff += xt_font_ink('0', x, y) != xt_font_ink('O', x, y);
    CHECK(diff > 0);
}

TEST(font_draws_upright_and_rotated) {
    xt_image img;
    xt_err e = {0};
    CHECK_EQ(xt_image_init(&img, 40, 40, XT_WHITE, &e), 0);
    xt_font_draw(&img, 2, 2, "I", XT_BLACK, 1);
    /* 'I' has its stem in column 2, rows 2..8 */
    CHECK_EQ(img.px[3 * ((2 + 5) * 40 + 2 + 2)], 0);
    xt_font_draw_up(&img, 20, 10, "L", XT_BLACK, 1);
    /* 'L' rotated CCW: its stem (column 0) becomes the bottom row of the box */
    int w = xt_font_width("L", 1);
    CHECK_EQ(img.px[3 * ((10 + w - 1) * 40 + 20 + 5)], 0);
    xt_image_free(&img);
}

/* ------------------------------------------------------------------ the grid */

TEST(grid_digits_layout_and_colours) {
    enum { N = 25 };
    static uint8_t imgs[N * 784];
    fake_digits(imgs, N);
    int actual[N], pred[N];
    for (int i = 0; i < N; i++) actual[i] = pred[i] = i % 10;
    pred[3] = 8; /* one wrong, in the first row */
    const char *p = out_path("grid-digits.png");
    xt_err e = {0};
    CHECK_EQ(xt_grid_write(p, imgs, 1, 28, 28, actual, pred, N, NULL, &e), 0);
    decoded d;
    CHECK_EQ(decode(p, &d), 0);
    if (!d.px) return;
    /* cells are as wide as "Actual 0 / Predicted 0" (22 chars * 6 - 1 = 131 px,
     * wider than the 112-px images): 5 * 131 + 4 gaps of 14 + 2 margins of 16 */
    CHECK_EQ(d.w, 5 * 131 + 4 * 14 + 2 * 16);
    /* heading 12 + gap 12, 5 rows of (title 12 + 4 + image 112), 4 gaps of 14, margins */
    CHECK_EQ(d.h, 2 * 16 + 12 + 12 + 5 * (12 + 4 + 112) + 4 * 14);
    int title_y = 16 + 12 + 12, blue, red;
    count_colours(&d, 16, title_y, 16 + 131, title_y + 12, &blue, &red);       /* cell 0: right */
    CHECK_MSG(blue > 50 && red == 0, "cell 0 title: %d blue, %d red pixels", blue, red);
    count_colours(&d, 16 + 3 * 145, title_y, 16 + 3 * 145 + 131, title_y + 12, &blue, &red); /* cell 3: wrong */
    CHECK_MSG(red > 50 && blue == 0, "cell 3 title: %d blue, %d red pixels", blue, red);
    /* the image under cell 0's title: white strokes on black, scaled 4x */
    int ix = 16 + (131 - 112) / 2, iy = title_y + 12 + 4;
    CHECK(at(&d, ix + 1, iy + 1)[0] == 0);
    int white = 0;
    for (int y = iy; y < iy + 112; y++)
        for (int x = ix; x < ix + 112; x++) white += at(&d, x, y)[0] == 255 && at(&d, x, y)[2] == 255;
    CHECK(white > 0 && white % 16 == 0); /* whole 4x4 blocks */
    /* the background is white */
    CHECK(at(&d, 2, 2)[0] == 255 && at(&d, d.w - 3, d.h - 3)[1] == 255);
    free(d.px);
}

TEST(grid_fashion_titles_wrap_to_two_lines) {
    static const char *const names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    enum { N = 25 };
    static uint8_t imgs[N * 784];
    fake_digits(imgs, N);
    int actual[N], pred[N];
    for (int i = 0; i < N; i++) actual[i] = pred[i] = i % 10;
    actual[0] = 5, pred[0] = 7; /* "Actual Sandal / Predicted Sneaker" */
    const char *p = out_path("grid-fashion.png");
    xt_err e = {0};
    CHECK_EQ(xt_grid_write(p, imgs, 1, 28, 28, actual, pred, N, names, &e), 0);
    decoded d;
    CHECK_EQ(decode(p, &d), 0);
    if (!d.px) return;
    /* two lines; cells as wide as the longest line, "Predicted T-shirt/top" (125 px) */
    CHECK_EQ(d.w, 5 * 125 + 4 * 14 + 2 * 16);
    CHECK_EQ(d.h, 2 * 16 + 12 + 12 + 5 * (14 + 12 + 4 + 112) + 4 * 14);
    int y1 = 16 + 12 + 12, blue, red;
    count_colours(&d, 16, y1, 16 + 125, y1 + 12, &blue, &red); /* "Actual Sandal" */
    CHECK(red > 40 && blue == 0);
    count_colours(&d, 16, y1 + 14, 16 + 125, y1 + 26, &blue, &red); /* "Predicted Sneaker" */
    CHECK(red > 40 && blue == 0);
    count_colours(&d, 16 + 139, y1 + 14, 16 + 139 + 125, y1 + 26, &blue, &red); /* cell 1: right */
    CHECK(blue > 40 && red == 0);
    free(d.px);
}

TEST(grid_handles_few_and_too_many) {
    static uint8_t imgs[30 * 784];
    fake_digits(imgs, 30);
    int a[30] = {0}, b[30] = {0};
    xt_err e = {0};
    const char *p = out_path("grid-small.png");
    CHECK_EQ(xt_grid_write(p, imgs, 1, 28, 28, a, b, 2, NULL, &e), 0);
    decoded d;
    CHECK_EQ(decode(p, &d), 0);
    CHECK_EQ(d.w, 2 * 131 + 14 + 2 * 16);
    free(d.px);
    CHECK_EQ(xt_grid_write(p, imgs, 1, 28, 28, a, b, 30, NULL, &e), 0); /* first 25 drawn */
    CHECK_EQ(xt_grid_write(p, imgs, 1, 28, 28, a, b, 0, NULL, &e), 0);
    CHECK_EQ(xt_grid_write(p, NULL, 1, 28, 28, a, b, 3, NULL, &e), XT_EIO);
}

/* ------------------------------------------------------------------ curves */

static int count_near(const decoded *d, xt_rgb c) {
    int n = 0;
    for (int i = 0; i < d->w * d->h; i++) {
        const unsigned char *p = d->px + 3 * i;
        n += abs(p[0] - c.r) < 8 && abs(p[1] - c.g) < 8 && abs(p[2] - c.b) < 8;
    }
    return n;
}

TEST(curves_one_and_many_epochs) {
    double loss[100], acc[100];
    for (int i = 0; i < 100; i++) {
        loss[i] = 0.05 + 2.0 * exp(-i / 3.0);
        acc[i] = 99 - 20 * exp(-i / 2.0);
    }
    int ns[] = {1, 2, 10, 100};
    for (int k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, "curves-%d.png", ns[k]);
        const char *p = out_path(name);
        xt_err e = {0};
        CHECK_EQ(xt_curves_write(p, loss, acc, ns[k], &e), 0);
        decoded d;
        CHECK_EQ(decode(p, &d), 0);
        if (!d.px) continue;
        CHECK_EQ(d.w, XT_CURVES_W);
        CHECK_EQ(d.h, XT_CURVES_H);
        CHECK_MSG(count_near(&d, (xt_rgb){31, 119, 180}) > 10, "no loss series in %s", name);
        CHECK_MSG(count_near(&d, (xt_rgb){255, 127, 14}) > 10, "no accuracy series in %s", name);
        free(d.px);
    }
    xt_err e = {0};
    double bad[3] = {0.5, NAN, INFINITY};
    CHECK_EQ(xt_curves_write(out_path("curves-gaps.png"), bad, NULL, 3, &e), 0);
    CHECK_EQ(xt_curves_write(out_path("curves-none.png"), loss, acc, 0, &e), XT_EIO);
}

TEST(curves_nice_steps) {
    CHECK_NEAR(xt_curves_nice_step(1.0, 5), 0.2, 1e-12);
    CHECK_NEAR(xt_curves_nice_step(2.3, 5), 0.5, 1e-12);
    CHECK_NEAR(xt_curves_nice_step(100, 5), 20, 1e-9);
    CHECK_NEAR(xt_curves_nice_step(0.004, 5), 0.001, 1e-15);
    CHECK_NEAR(xt_curves_nice_step(7, 5), 1, 1e-12);
    CHECK_NEAR(xt_curves_nice_step(0, 5), 1, 0);
}

/* Several runs in one figure (fp32 beside bf16): each run in its own colour
 * in both panels and the legend, on axes that span every run (the third
 * run's loss is 4x the others'). */
TEST(curves_several_runs_in_one_figure) {
    double loss[3][10], acc[3][10];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 10; i++) {
            loss[k][i] = (k == 2 ? 4.0 : 1.0) * (0.05 + 2.0 * exp(-i / 3.0)) + 0.01 * k;
            acc[k][i] = 99 - 20 * exp(-i / 2.0) - k;
        }
    xt_curve_series s[3] = {{"fp32", loss[0], acc[0]}, {"bf16", loss[1], acc[1]}, {"other", loss[2], acc[2]}};
    const char *p = out_path("curves-runs.png");
    xt_err e = {0};
    CHECK_EQ(xt_curves_write_runs(p, s, 3, 10, &e), 0);
    decoded d;
    CHECK_EQ(decode(p, &d), 0);
    if (!d.px) return;
    static const xt_rgb colours[3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}};
    for (int k = 0; k < 3; k++) CHECK_MSG(count_near(&d, colours[k]) > 40, "run %d's colour is missing", k);
    free(d.px);
    CHECK_EQ(xt_curves_write_runs(out_path("curves-runs-none.png"), s, 0, 10, &e), XT_EIO);
}

/* Pixels of colour c (within 40 per channel) in the box. */
static int count_in_box(const decoded *d, int x0, int y0, int x1, int y1, const unsigned char c[3]) {
    int n = 0;
    for (int y = y0; y < y1 && y < d->h; y++)
        for (int x = x0; x < x1 && x < d->w; x++) {
            const unsigned char *p = at(d, x, y);
            n += abs(p[0] - c[0]) < 40 && abs(p[1] - c[1]) < 40 && abs(p[2] - c[2]) < 40;
        }
    return n;
}

/* One run's figure: the per-step loss (faint and smoothed) and the learning
 * rate on the left, test accuracy and test loss on the right, each series
 * in its panel; with no logged steps the epochs stand in. */
TEST(curves_run_figure_has_its_four_panels) {
    enum { E = 12, S = 120 };
    double loss[E], acc[E], tl[E], lr[E], sl[S], slr[S];
    long long es[E], st[S];
    for (int i = 0; i < E; i++) loss[i] = 2.0 / (i + 1), acc[i] = 50 + 4 * i, tl[i] = 2.2 / (i + 1), lr[i] = 0.1, es[i] = 10 * (i + 1);
    for (int i = 0; i < S; i++) st[i] = i + 1, sl[i] = 2.0 / (1 + i / 10.0) + 0.2 * ((i * 7) % 5 - 2) / 5.0, slr[i] = 0.1 * (1 - i / (double)S);
    xt_curves_run d = {.nepochs = E, .loss = loss, .acc = acc, .test_loss = tl, .lr = lr, .epoch_step = es,
                       .nsteps = S, .step = st, .step_loss = sl, .step_lr = slr};
    xt_err e = {0};
    const char *p = out_path("curves-run.png");
    CHECK_EQ(xt_curves_write_run(p, &d, &e), 0);
    decoded im;
    CHECK_EQ(decode(p, &im), 0);
    CHECK_EQ(im.w, XT_CURVES_W);
    CHECK_EQ(im.h, XT_CURVES_RUN_H);
    static const unsigned char blue[3] = {31, 119, 180}, faint[3] = {174, 199, 232}, purple[3] = {148, 103, 189},
                               orange[3] = {255, 127, 14}, red[3] = {214, 39, 40};
    int half = XT_CURVES_W / 2, mid = 30 + 380;
    CHECK(count_in_box(&im, 0, 0, half, mid, blue) > 200);      /* smoothed loss, top left */
    CHECK(count_in_box(&im, 0, 0, half, mid, faint) > 50);      /* raw loss */
    CHECK(count_in_box(&im, 0, mid, half, im.h, purple) > 200); /* learning rate, bottom left */
    CHECK(count_in_box(&im, half, 0, im.w, mid, orange) > 200); /* accuracy, top right */
    CHECK(count_in_box(&im, half, mid, im.w, im.h, red) > 200); /* test loss, bottom right */
    CHECK_EQ(count_in_box(&im, half, 0, im.w, im.h, purple), 0);
    free(im.px);
    /* log_steps: 0 — no steps: the epochs' loss and rate, nothing missing */
    d.nsteps = 0;
    d.test_loss = NULL;
    p = out_path("curves-run-epochs.png");
    CHECK_EQ(xt_curves_write_run(p, &d, &e), 0);
    CHECK_EQ(decode(p, &im), 0);
    CHECK(count_in_box(&im, 0, 0, half, mid, blue) > 100);
    CHECK(count_in_box(&im, 0, mid, half, im.h, purple) > 100);
    CHECK_EQ(count_in_box(&im, half, mid, im.w, im.h, red), 0);
    free(im.px);
    d.nepochs = 0;
    CHECK_EQ(xt_curves_write_run(out_path("curves-run-none.png"), &d, &e), XT_EIO);
}
