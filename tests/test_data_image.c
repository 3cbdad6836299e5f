/* test_data_image.c — the folder dataset's decoder and resampler
 * (src/data/image_decode.c, image_resize.c): every PNG colour type and depth
 * to grey and RGB, JPEG, and the broken and hostile files, each written by
 * the test itself (tests/image_files.c). */
#include <png.h>
#include <string.h>

#include "alloc_count.h"
#include "data/image_decode.h"
#include "data/image_resize.h"
#include "image_files.h"
#include "test.h"

static const char *tmp(const char *name) {
    static char bufs[4][512];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* Decode a file written by the test. */
static int decode_file(const char *path, int channels, long long max_pixels, xt_decoded *d, xt_err *e) {
    size_t n = 0;
    uint8_t *b = timg_read(path, &n);
    CHECK(b != NULL);
    int rc = xt_image_decode(b, n, path, max_pixels, channels, d, e);
    free(b);
    return rc;
}

static void pattern_rgb(uint8_t *px, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = px + 3 * (y * w + x);
            p[0] = (uint8_t)(x * 37 + y), p[1] = (uint8_t)(y * 53), p[2] = (uint8_t)(255 - x * 11 - y * 7);
        }
}

TEST(image_decode_png_rgb_exact_and_luma) {
    enum { W = 7, H = 5 };
    uint8_t rgb[W * H * 3];
    pattern_rgb(rgb, W, H);
    const char *p = tmp("rgb.jpg"); /* a PNG under a JPEG's name: content decides */
    CHECK_EQ(timg_png_rgb(p, rgb, W, H), 0);
    xt_decoded d;
    xt_err e = {0};
    CHECK_EQ(decode_file(p, 3, 0, &d, &e), 0);
    CHECK_EQ(d.w, W);
    CHECK_EQ(d.h, H);
    CHECK(!memcmp(d.px, rgb, sizeof rgb));
    xt_decoded_free(&d);
    CHECK_EQ(decode_file(p, 1, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) { /* Pillow's L = R*299/1000 + G*587/1000 + B*114/1000 */
        double l = rgb[3 * i] * 0.299 + rgb[3 * i + 1] * 0.587 + rgb[3 * i + 2] * 0.114;
        CHECK_NEAR(d.px[i], l, 0.51);
    }
    xt_decoded_free(&d);
}

TEST(image_decode_png_gray_palette_alpha_16bit_1bit) {
    enum { W = 6, H = 4 };
    uint8_t g8[W * H], rows16[H][W * 2], rgba[W * H * 4], idx[W * H], bits[H][1];
    for (int i = 0; i < W * H; i++) {
        g8[i] = (uint8_t)(i * 10);
        idx[i] = (uint8_t)(i % 3);
        for (int c = 0; c < 4; c++) rgba[4 * i + c] = (uint8_t)(i * 9 + c * 40);
    }
    for (int y = 0; y < H; y++) {
        bits[y][0] = (uint8_t)(y % 2 ? 0xa8 : 0x54); /* 101010.. / 010101.. in the top 6 bits */
        for (int x = 0; x < W; x++) {
            unsigned v = (unsigned)(y * W + x) * 2731u; /* spans 0..62813 */
            rows16[y][2 * x] = (uint8_t)(v >> 8), rows16[y][2 * x + 1] = (uint8_t)v;
        }
    }
    xt_decoded d;
    xt_err e = {0};
    /* grey 8-bit: exact, and replicated to RGB */
    CHECK_EQ(timg_png_raw(tmp("g8.png"), W, H, PNG_COLOR_TYPE_GRAY, 8, g8, W, NULL, 0, NULL, 0), 0);
    CHECK_EQ(decode_file(tmp("g8.png"), 1, 0, &d, &e), 0);
    CHECK(!memcmp(d.px, g8, sizeof g8));
    xt_decoded_free(&d);
    CHECK_EQ(decode_file(tmp("g8.png"), 3, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) CHECK(d.px[3 * i] == g8[i] && d.px[3 * i + 1] == g8[i] && d.px[3 * i + 2] == g8[i]);
    xt_decoded_free(&d);
    /* grey 16-bit: scaled with rounding, v * 255 / 65535 */
    CHECK_EQ(timg_png_raw(tmp("g16.png"), W, H, PNG_COLOR_TYPE_GRAY, 16, &rows16[0][0], W * 2, NULL, 0, NULL, 0), 0);
    CHECK_EQ(decode_file(tmp("g16.png"), 1, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) CHECK_NEAR(d.px[i], (i * 2731.0) * 255.0 / 65535.0, 0.51);
    xt_decoded_free(&d);
    /* RGBA: alpha dropped, colour kept */
    CHECK_EQ(timg_png_raw(tmp("rgba.png"), W, H, PNG_COLOR_TYPE_RGBA, 8, rgba, W * 4, NULL, 0, NULL, 0), 0);
    CHECK_EQ(decode_file(tmp("rgba.png"), 3, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++)
        for (int c = 0; c < 3; c++) CHECK_EQ(d.px[3 * i + c], rgba[4 * i + c]);
    xt_decoded_free(&d);
    /* palette with transparency: the palette's colours, alpha dropped */
    static const uint8_t pal[9] = {255, 0, 0, 0, 200, 0, 10, 20, 30}, trans[3] = {0, 128, 255};
    CHECK_EQ(timg_png_raw(tmp("pal.png"), W, H, PNG_COLOR_TYPE_PALETTE, 8, idx, W, pal, 3, trans, 3), 0);
    CHECK_EQ(decode_file(tmp("pal.png"), 3, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) CHECK(!memcmp(d.px + 3 * i, pal + 3 * idx[i], 3));
    xt_decoded_free(&d);
    /* 1-bit grey: 0 and 255 */
    CHECK_EQ(timg_png_raw(tmp("g1.png"), W, H, PNG_COLOR_TYPE_GRAY, 1, &bits[0][0], 1, NULL, 0, NULL, 0), 0);
    CHECK_EQ(decode_file(tmp("g1.png"), 1, 0, &d, &e), 0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) CHECK_EQ(d.px[y * W + x], ((bits[y][0] >> (7 - x)) & 1) ? 255 : 0);
    xt_decoded_free(&d);
}

TEST(image_decode_jpeg_gray_and_rgb) {
    enum { W = 16, H = 16 };
    uint8_t rgb[W * H * 3], g[W * H];
    for (int i = 0; i < W * H; i++) g[i] = (uint8_t)(100 + (i % W) * 4), rgb[3 * i] = 200, rgb[3 * i + 1] = 100, rgb[3 * i + 2] = 50;
    xt_decoded d;
    xt_err e = {0};
    CHECK_EQ(timg_jpeg(tmp("g.png"), g, W, H, 1, 100), 0); /* a JPEG under a PNG's name */
    CHECK_EQ(decode_file(tmp("g.png"), 1, 0, &d, &e), 0);
    CHECK_EQ(d.w, W);
    for (int i = 0; i < W * H; i++) CHECK_NEAR(d.px[i], g[i], 3);
    xt_decoded_free(&d);
    CHECK_EQ(decode_file(tmp("g.png"), 3, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) CHECK_NEAR(d.px[3 * i + 2], g[i], 3);
    xt_decoded_free(&d);
    CHECK_EQ(timg_jpeg(tmp("c.jpg"), rgb, W, H, 3, 95), 0);
    CHECK_EQ(decode_file(tmp("c.jpg"), 3, 0, &d, &e), 0);
    for (int i = 0; i < W * H; i++) CHECK(abs(d.px[3 * i] - 200) <= 4 && abs(d.px[3 * i + 1] - 100) <= 4 && abs(d.px[3 * i + 2] - 50) <= 4);
    xt_decoded_free(&d);
    CHECK_EQ(decode_file(tmp("c.jpg"), 1, 0, &d, &e), 0); /* grey = Y of YCbCr: the same luma */
    CHECK_NEAR(d.px[0], 200 * 0.299 + 100 * 0.587 + 50 * 0.114, 4);
    xt_decoded_free(&d);
}

/* A file that must be refused with XT_EDATA naming it and saying `what`. */
static void expect_bad(const uint8_t *b, size_t n, const char *what) {
    xt_decoded d = {0};
    xt_err e = {0};
    long long a0 = test_alloc_count();
    int rc = xt_image_decode(b, n, "class/f.img", 1000000, 3, &d, &e);
    CHECK_EQ(rc, XT_EDATA);
    CHECK(d.px == NULL);
    CHECK_STR_CONTAINS(e.msg, "class/f.img: ");
    CHECK_STR_CONTAINS(e.msg, what);
    (void)a0;
}

TEST(image_decode_refuses_broken_files) {
    enum { W = 24, H = 24 };
    uint8_t rgb[W * H * 3];
    pattern_rgb(rgb, W, H);
    size_t pn = 0, jn = 0;
    CHECK_EQ(timg_png_rgb(tmp("a.png"), rgb, W, H), 0);
    uint8_t *png = timg_read(tmp("a.png"), &pn), *jpg = timg_jpeg_mem(rgb, W, H, 3, 90, &jn);
    CHECK(png && jpg);
    expect_bad(png, 0, "an empty file (0 bytes)");
    expect_bad((const uint8_t *)"hello, not an image\n", 20, "not a PNG or JPEG image (it starts with bytes 68 65 6c 6c");
    expect_bad(png, pn / 2, "corrupt PNG");
    expect_bad(png, 8, "corrupt PNG"); /* the signature alone */
    expect_bad(jpg, jn / 2, "corrupt JPEG");
    expect_bad(jpg, 3, "corrupt JPEG");
    /* flipped bytes in the middle: the PNG's chunk CRC, the JPEG's entropy data */
    uint8_t *pc = malloc(pn), *jc = malloc(jn);
    memcpy(pc, png, pn), memcpy(jc, jpg, jn);
    pc[pn / 2] ^= 0xff;
    expect_bad(pc, pn, "corrupt PNG");
    for (size_t i = jn / 2; i < jn - 2; i++) jc[i] = 0xff; /* fill bytes: no markers, no data */
    expect_bad(jc, jn, "corrupt JPEG");
    free(pc), free(jc), free(png), free(jpg);
}

TEST(image_decode_refuses_a_bomb_before_allocating) {
    xt_decoded d;
    xt_err e = {0};
    CHECK_EQ(timg_png_header_only(tmp("bomb.png"), 100000, 100000), 0);
    long long a0 = test_alloc_count();
    size_t n;
    uint8_t *b = timg_read(tmp("bomb.png"), &n);
    long long a1 = test_alloc_count();
    CHECK_EQ(xt_image_decode(b, n, "bomb.png", XT_IMAGE_MAX_PIXELS_DEFAULT, 3, &d, &e), XT_EDATA);
    CHECK_EQ(test_alloc_count(), a1); /* not one allocation of ours: refused on the header */
    CHECK(a1 > a0);
    CHECK_STR_CONTAINS(e.msg, "bomb.png: PNG header declares 100000x100000 = 10,000,000,000 pixels, over max_image_pixels (89478485)");
    free(b);
    /* a JPEG whose frame header claims 60000 x 60000 */
    enum { W = 8, H = 8 };
    uint8_t g[W * H] = {0};
    size_t jn;
    uint8_t *j = timg_jpeg_mem(g, W, H, 1, 90, &jn);
    int patched = 0;
    for (size_t i = 0; i + 9 < jn && !patched; i++)
        if (j[i] == 0xff && j[i + 1] == 0xc0) { /* SOF0: length(2) precision(1) height(2) width(2) */
            j[i + 5] = 0xea, j[i + 6] = 0x60, j[i + 7] = 0xea, j[i + 8] = 0x60;
            patched = 1;
        }
    CHECK(patched);
    a1 = test_alloc_count();
    CHECK_EQ(xt_image_decode(j, jn, "bomb.jpg", XT_IMAGE_MAX_PIXELS_DEFAULT, 1, &d, &e), XT_EDATA);
    CHECK_EQ(test_alloc_count(), a1);
    CHECK_STR_CONTAINS(e.msg, "bomb.jpg: JPEG header declares 60000x60000");
    /* a limit of 0 turns the guard off: then the small real image decodes */
    CHECK_EQ(timg_png_rgb(tmp("ok.png"), (uint8_t[12]){0}, 2, 2), 0);
    CHECK_EQ(decode_file(tmp("ok.png"), 3, 3, &d, &e), XT_EDATA); /* 4 pixels > 3 */
    CHECK_EQ(decode_file(tmp("ok.png"), 3, 0, &d, &e), 0);
    xt_decoded_free(&d);
    free(j);
}

TEST(image_resize_area_when_shrinking_bilinear_when_growing) {
    /* 4x4 grey -> 2x2: the mean of each 2x2 block */
    const uint8_t src[16] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150};
    uint8_t dst[32];
    CHECK_EQ(xt_image_resize(src, 4, 4, dst, 2, 2, 1), 0);
    CHECK_EQ(dst[0], 25);   /* (0+10+40+50)/4 */
    CHECK_EQ(dst[1], 45);
    CHECK_EQ(dst[2], 105);
    CHECK_EQ(dst[3], 125);
    /* 3 -> 2 along a row: weights 2/3, 1/3 and 1/3, 2/3 */
    const uint8_t row[3] = {0, 90, 180};
    CHECK_EQ(xt_image_resize(row, 1, 3, dst, 1, 2, 1), 0);
    CHECK_EQ(dst[0], 30);
    CHECK_EQ(dst[1], 150);
    /* 1x2 -> 1x4 bilinear, centres aligned: 0, 63.75, 191.25, 255 */
    const uint8_t two[2] = {0, 255};
    CHECK_EQ(xt_image_resize(two, 1, 2, dst, 1, 4, 1), 0);
    CHECK_EQ(dst[0], 0);
    CHECK_EQ(dst[1], 64);
    CHECK_EQ(dst[2], 191);
    CHECK_EQ(dst[3], 255);
    /* equal size: a copy, per channel */
    uint8_t rgb[2 * 3 * 3];
    for (int i = 0; i < 18; i++) rgb[i] = (uint8_t)(i * 13);
    CHECK_EQ(xt_image_resize(rgb, 2, 3, dst, 2, 3, 3), 0);
    CHECK(!memcmp(dst, rgb, 18));
    /* shrink one axis, grow the other; a constant stays constant */
    uint8_t flat[6 * 2 * 3], out[3 * 5 * 3];
    memset(flat, 77, sizeof flat);
    CHECK_EQ(xt_image_resize(flat, 6, 2, out, 3, 5, 3), 0);
    for (size_t i = 0; i < sizeof out; i++) CHECK_EQ(out[i], 77);
}
