/* curves.c — the loss/accuracy plot; see curves.h.
 *
 * Each panel maps data to pixels through its axis ranges: x from 1 to the
 * number of epochs (with half an epoch of air at the ends), y from a range
 * padded by 5% and widened to whole tick steps, as matplotlib's autoscale does.
 */
#include "io/curves.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/font.h"
#include "io/png.h"

enum {
    PAD_LEFT = 74,   /* panel edge to plot area: y label + tick labels */
    PAD_RIGHT = 22,
    PAD_TOP = 34,    /* panel title */
    PAD_BOTTOM = 52, /* tick labels + x label */
    FIG_TITLE_H = 30,
    TICK = 5,
};

static const xt_rgb k_axis = {40, 40, 40};
static const xt_rgb k_grid = {228, 228, 228};
static const xt_rgb k_label = {60, 60, 60};
static const xt_rgb k_loss = {31, 119, 180}; /* matplotlib's tab:blue and tab:orange */
static const xt_rgb k_acc = {255, 127, 14};
/* one colour per run when several share a figure (matplotlib's tab10 order) */
static const xt_rgb k_runs[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {214, 39, 40}, {148, 103, 189}, {140, 86, 75}};

typedef struct panel {
    int px, py, pw, ph;          /* plot area in pixels */
    double xlo, xhi, ylo, yhi;   /* data range mapped onto it */
    double ystep;                /* y tick step */
    int xstep;                   /* x tick step (epochs) */
} panel;

double xt_curves_nice_step(double span, int target) {
    if (!(span > 0) || !isfinite(span) || target < 1) return 1;
    double raw = span / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double nf = f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10;
    return nf * mag;
}

/* Decimals needed to print multiples of step exactly (0.25 -> 2, 5 -> 0). */
static int decimals_for(double step) {
    for (int d = 0; d < 8; d++) {
        double s = step * pow(10, d);
        if (fabs(s - round(s)) < 1e-6 * s) return d;
    }
    return 8;
}

static int xpix(const panel *p, double x) {
    return p->px + (int)lround((x - p->xlo) / (p->xhi - p->xlo) * (p->pw - 1));
}
static double xpixf(const panel *p, double x) { return p->px + 0.5 + (x - p->xlo) / (p->xhi - p->xlo) * (p->pw - 1); }
static int ypix(const panel *p, double y) {
    return p->py + p->ph - 1 - (int)lround((y - p->ylo) / (p->yhi - p->ylo) * (p->ph - 1));
}
static double ypixf(const panel *p, double y) {
    return p->py + p->ph - 0.5 - (y - p->ylo) / (p->yhi - p->ylo) * (p->ph - 1);
}

/* y range of the finite values in v, padded and snapped to ticks, kept in
 * [floor_lim, ceil_lim]. */
static void y_range(panel *p, const double *v, int n, double floor_lim, double ceil_lim) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = fmin(lo, v[i]);
            hi = fmax(hi, v[i]);
        }
    if (!isfinite(lo)) lo = floor_lim > -INFINITY ? floor_lim : 0, hi = lo + 1;
    double span = hi - lo;
    if (span <= 1e-9 * fmax(1, fabs(hi))) {
        /* flat (or one epoch): +-10% around the value, so it sits mid-panel */
        double d = hi != 0 ? 0.1 * fabs(hi) : 0.5;
        lo -= d;
        hi += d;
    } else {
        lo -= 0.05 * span;
        hi += 0.05 * span;
    }
    lo = fmax(lo, floor_lim);
    hi = fmin(hi, ceil_lim);
    if (hi <= lo) hi = lo + 1;
    double step = xt_curves_nice_step(hi - lo, 5);
    p->ystep = step;
    p->ylo = fmax(floor(lo / step + 1e-9) * step, floor_lim);
    p->yhi = fmin(ceil(hi / step - 1e-9) * step, ceil_lim);
    if (p->yhi <= p->ylo) p->yhi = p->ylo + step;
}

static void draw_axes(xt_image *img, const panel *p, const char *title, const char *ylabel) {
    char buf[64];
    int dec = decimals_for(p->ystep);
    int widest = 0;
    /* horizontal grid lines and y tick labels */
    /* tick k is at k * step: no accumulated rounding, no "-0.0" */
    long k0 = lround(ceil(p->ylo / p->ystep - 1e-9)), k1 = lround(floor(p->yhi / p->ystep + 1e-9));
    for (long k = k0; k <= k1; k++) {
        double y = (double)k * p->ystep;
        int yy = ypix(p, y);
        xt_image_fill_rect(img, p->px, yy, p->pw, 1, k_grid);
        xt_image_fill_rect(img, p->px - TICK, yy, TICK, 1, k_axis);
        snprintf(buf, sizeof buf, "%.*f", dec, k == 0 ? 0.0 : y);
        int tw = xt_font_width(buf, 1);
        if (tw > widest) widest = tw;
        xt_font_draw(img, p->px - TICK - 4 - tw, yy - (XT_FONT_BASELINE + XT_FONT_CAP_TOP) / 2, buf, k_label, 1);
    }
    /* vertical grid lines and x tick labels (whole epochs) */
    for (int x = p->xstep; x <= (int)p->xhi; x += p->xstep) {
        if (x < p->xlo) continue;
        int xx = xpix(p, x);
        xt_image_fill_rect(img, xx, p->py, 1, p->ph, k_grid);
        xt_image_fill_rect(img, xx, p->py + p->ph, 1, TICK, k_axis);
        snprintf(buf, sizeof buf, "%d", x);
        xt_font_draw(img, xx - xt_font_width(buf, 1) / 2, p->py + p->ph + TICK + 4, buf, k_label, 1);
    }
    xt_image_rect(img, p->px - 1, p->py - 1, p->pw + 2, p->ph + 2, k_axis);
    /* labels: x under the tick labels, y rotated left of them, title above */
    xt_font_draw(img, p->px + (p->pw - xt_font_width("epoch", 1)) / 2, p->py + p->ph + TICK + 4 + XT_FONT_LINE_H + 6,
                 "epoch", k_axis, 1);
    int lw = xt_font_width(ylabel, 1);
    xt_font_draw_up(img, p->px - TICK - 4 - widest - 10 - XT_FONT_ROWS, p->py + (p->ph - lw) / 2, ylabel, k_axis, 1);
    int tw = xt_font_width(title, 1) + 1;
    xt_font_draw_bold(img, p->px + (p->pw - tw) / 2, p->py - XT_FONT_ROWS - 10, title, k_axis, 1);
}

static void draw_series(xt_image *img, const panel *p, const double *v, int n, xt_rgb c) {
    double spacing = n > 1 ? (xpixf(p, 2) - xpixf(p, 1)) : p->pw;
    double r = spacing >= 12 ? 3.5 : spacing >= 6 ? 2.2 : 0; /* markers that would merge are noise */
    for (int i = 0; i + 1 < n; i++)
        if (isfinite(v[i]) && isfinite(v[i + 1]))
            xt_image_line(img, xpixf(p, i + 1), ypixf(p, v[i]), xpixf(p, i + 2), ypixf(p, v[i + 1]), 2.0, c);
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        /* a lone point (1 epoch, or between gaps) needs a marker to be seen at all */
        int lone = (i == 0 || !isfinite(v[i - 1])) && (i + 1 >= n || !isfinite(v[i + 1]));
        double rr = r > 0 ? r : lone ? 2.5 : 0;
        if (rr > 0) xt_image_disc(img, xpixf(p, i + 1), ypixf(p, v[i]), rr, c);
    }
}

static void layout(panel *p, int x0, int y0, int w, int h, int nepochs) {
    p->px = x0 + PAD_LEFT;
    p->py = y0 + PAD_TOP;
    p->pw = w - PAD_LEFT - PAD_RIGHT;
    p->ph = h - PAD_TOP - PAD_BOTTOM;
    double air = nepochs > 1 ? fmax(0.5, 0.02 * (nepochs - 1)) : 0.5;
    p->xlo = 1 - air;
    p->xhi = nepochs + air;
    /* whole-epoch ticks, at most one per ~40 px so labels never collide */
    int max_ticks = p->pw / 40 > 1 ? p->pw / 40 : 1;
    static const int mult[3] = {1, 2, 5};
    p->xstep = 1;
    for (long base = 1; base < 1000000000L; base *= 10) {
        int k;
        for (k = 0; k < 3; k++) {
            p->xstep = (int)(mult[k] * base);
            if (nepochs / p->xstep <= max_ticks) break;
        }
        if (k < 3) break;
    }
}

/* The panels' titles: one run's summary, or just the quantity when several
 * runs share the panel (the legend names them). */
static void loss_title(char *t, size_t cap, const xt_curve_series *s, int ns, int nepochs) {
    int last = nepochs - 1;
    while (ns == 1 && last >= 0 && !isfinite(s[0].loss[last])) last--;
    if (ns == 1 && last >= 0) snprintf(t, cap, "Training loss (last %.4g)", s[0].loss[last]);
    else snprintf(t, cap, "Training loss");
}
static void acc_title(char *t, size_t cap, const xt_curve_series *s, int ns, int nepochs) {
    int best = -1;
    for (int i = 0; ns == 1 && i < nepochs; i++)
        if (isfinite(s[0].acc[i]) && (best < 0 || s[0].acc[i] > s[0].acc[best])) best = i;
    if (best >= 0) snprintf(t, cap, "Test accuracy (best %.2f%% at epoch %d)", s[0].acc[best], best + 1);
    else snprintf(t, cap, "Test accuracy");
}

/* y range over every series of one quantity (loss: which = 0, accuracy: 1) */
static int y_range_all(panel *p, const xt_curve_series *s, int ns, int nepochs, int which, double lo, double hi) {
    double *all = malloc((size_t)ns * nepochs * sizeof *all);
    if (!all) return -1;
    for (int k = 0; k < ns; k++) memcpy(all + (size_t)k * nepochs, which ? s[k].acc : s[k].loss, (size_t)nepochs * sizeof *all);
    y_range(p, all, ns * nepochs, lo, hi);
    free(all);
    return 0;
}

/* "-- fp32  -- bf16" in the runs' colours, right of the figure title */
static void legend(xt_image *img, const xt_curve_series *s, int ns, int x) {
    for (int k = 0; k < ns; k++) {
        xt_rgb c = k_runs[k % (int)(sizeof k_runs / sizeof *k_runs)];
        xt_image_line(img, x, 10 + XT_FONT_ROWS / 2.0, x + 18, 10 + XT_FONT_ROWS / 2.0, 2.5, c);
        xt_font_draw_bold(img, x + 24, 10, s[k].name, c, 1);
        x += 24 + xt_font_width(s[k].name, 1) + 20;
    }
}

int xt_curves_write_runs(const char *path, const xt_curve_series *s, int ns, int nepochs, xt_err *e) {
    if (nepochs < 1 || ns < 1 || !s[0].loss)
        return xt_fail(e, XT_EIO, "cannot write %s: no epochs to plot (nepochs=%d); this is a bug, please report it", path,
                       nepochs);
    xt_image img;
    int rc = xt_image_init(&img, XT_CURVES_W, XT_CURVES_H, XT_WHITE, e);
    if (rc) return rc;

    char title[128];
    snprintf(title, sizeof title, "Training curves: %d epoch%s", nepochs, nepochs == 1 ? "" : "s");
    int tw = xt_font_width(title, 1), tx = (XT_CURVES_W - tw) / 2;
    if (ns > 1) tx = XT_CURVES_W / 4 - tw / 2;
    xt_font_draw_bold(&img, tx, 10, title, XT_BLACK, 1);
    if (ns > 1) legend(&img, s, ns, XT_CURVES_W / 2 + 40);

    int half = XT_CURVES_W / 2, top = FIG_TITLE_H, ph = XT_CURVES_H - FIG_TITLE_H;
    panel pl, pa;
    layout(&pl, 0, top, half, ph, nepochs);
    layout(&pa, half, top, half, ph, nepochs);
    const xt_rgb *pal = k_runs;
    int npal = (int)(sizeof k_runs / sizeof *k_runs);

    if (y_range_all(&pl, s, ns, nepochs, 0, 0, INFINITY)) goto oom;
    loss_title(title, sizeof title, s, ns, nepochs);
    draw_axes(&img, &pl, title, "loss");
    for (int k = 0; k < ns; k++) draw_series(&img, &pl, s[k].loss, nepochs, ns == 1 ? k_loss : pal[k % npal]);

    if (s[0].acc) {
        if (y_range_all(&pa, s, ns, nepochs, 1, 0, 100)) goto oom;
        acc_title(title, sizeof title, s, ns, nepochs);
        draw_axes(&img, &pa, title, "accuracy %");
        for (int k = 0; k < ns; k++) draw_series(&img, &pa, s[k].acc, nepochs, ns == 1 ? k_acc : pal[k % npal]);
    } else {
        pa.ylo = 0, pa.yhi = 100, pa.ystep = 20;
        draw_axes(&img, &pa, "Test accuracy", "accuracy %");
        const char *msg = "no test data";
        xt_font_draw(&img, pa.px + (pa.pw - xt_font_width(msg, 1)) / 2, pa.py + pa.ph / 2, msg, k_label, 1);
    }
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
oom:
    xt_image_free(&img);
    return xt_fail(e, XT_EIO, "cannot write %s: out of memory", path);
}

int xt_curves_write(const char *path, const double *loss, const double *acc, int nepochs, xt_err *e) {
    xt_curve_series one = {.name = "", .loss = loss, .acc = acc};
    return xt_curves_write_runs(path, &one, 1, nepochs, e);
}
