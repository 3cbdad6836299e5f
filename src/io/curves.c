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
    int xstep;                   /* x tick step (epochs or steps) */
    const char *xlabel;          /* "epoch" or "step" */
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
    const char *xl = p->xlabel ? p->xlabel : "epoch";
    xt_font_draw(img, p->px + (p->pw - xt_font_width(xl, 1)) / 2, p->py + p->ph + TICK + 4 + XT_FONT_LINE_H + 6, xl,
                 k_axis, 1);
    int lw = xt_font_width(ylabel, 1);
    xt_font_draw_up(img, p->px - TICK - 4 - widest - 10 - XT_FONT_ROWS, p->py + (p->ph - lw) / 2, ylabel, k_axis, 1);
    int tw = xt_font_width(title, 1) + 1;
    xt_font_draw_bold(img, p->px + (p->pw - tw) / 2, p->py - XT_FONT_ROWS - 10, title, k_axis, 1);
}

/* A line through (x[i], y[i]) of `width`, broken at non-finite values;
 * markers of radius r (0: none; a lone point gets one anyway). */
static void draw_xy(xt_image *img, const panel *p, const double *x, const double *y, int n, xt_rgb c, double width, double r) {
    for (int i = 0; width > 0 && i + 1 < n; i++)
        if (isfinite(y[i]) && isfinite(y[i + 1]))
            xt_image_line(img, xpixf(p, x[i]), ypixf(p, y[i]), xpixf(p, x[i + 1]), ypixf(p, y[i + 1]), width, c);
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) continue;
        int lone = (i == 0 || !isfinite(y[i - 1])) && (i + 1 >= n || !isfinite(y[i + 1]));
        double rr = r > 0 ? r : lone ? 2.5 : 0;
        if (rr > 0) xt_image_disc(img, xpixf(p, x[i]), ypixf(p, y[i]), rr, c);
    }
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

/* Whole-number x ticks (1, 2 or 5 x 10^k) for a span of `n`, at most one
 * per ~40 px so labels never collide. */
static void x_ticks(panel *p, long long n) {
    int max_ticks = p->pw / 40 > 1 ? p->pw / 40 : 1;
    static const int mult[3] = {1, 2, 5};
    p->xstep = 1;
    for (long base = 1; base < 1000000000L; base *= 10) {
        int k;
        for (k = 0; k < 3; k++) {
            p->xstep = (int)(mult[k] * base);
            if (n / p->xstep <= max_ticks) break;
        }
        if (k < 3) break;
    }
}

static void layout(panel *p, int x0, int y0, int w, int h, int nepochs) {
    p->px = x0 + PAD_LEFT;
    p->py = y0 + PAD_TOP;
    p->pw = w - PAD_LEFT - PAD_RIGHT;
    p->ph = h - PAD_TOP - PAD_BOTTOM;
    p->xlabel = "epoch";
    double air = nepochs > 1 ? fmax(0.5, 0.02 * (nepochs - 1)) : 0.5;
    p->xlo = 1 - air;
    p->xhi = nepochs + air;
    x_ticks(p, nepochs);
}

/* A panel over global steps 0 .. last (with 2% air on the right). */
static void layout_steps(panel *p, int x0, int y0, int w, int h, long long last) {
    layout(p, x0, y0, w, h, 1);
    p->xlabel = "step";
    if (last < 1) last = 1;
    p->xlo = 0;
    p->xhi = (double)last * 1.02 + 0.5;
    x_ticks(p, last);
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

/* ---- one run's figure: per-step loss, learning rate, test accuracy and loss ---- */

static const xt_rgb k_raw = {174, 199, 232};   /* tab:blue, faint: every logged loss */
static const xt_rgb k_mean = {44, 160, 44};    /* tab:green: the epochs' mean losses */
static const xt_rgb k_lr = {148, 103, 189};    /* tab:purple */
static const xt_rgb k_test_loss = {214, 39, 40}; /* tab:red */

/* out[i]: the mean of the finite v[i-k .. i+k] (k = 2% of n, at least 1),
 * the window cut at the ends; NaN where v[i] is. */
static void centred_mean(const double *v, int n, double *out) {
    int k = n / 50 > 1 ? n / 50 : 1;
    for (int i = 0; i < n; i++) {
        double sum = 0;
        int m = 0;
        for (int j = i - k; j <= i + k; j++)
            if (j >= 0 && j < n && isfinite(v[j])) sum += v[j], m++;
        out[i] = isfinite(v[i]) && m ? sum / m : NAN;
    }
}

/* Marker radius for n points over the panel: none when they would merge. */
static double marker_r(const panel *p, double xspan, int n) {
    double spacing = n > 1 ? (p->pw - 1) * (xspan / (n - 1)) / (p->xhi - p->xlo) : p->pw;
    return spacing >= 12 ? 3.5 : spacing >= 6 ? 2.2 : 0;
}

/* "-- raw  -- smoothed  o epoch mean" under a panel's title */
static void panel_legend(xt_image *img, const panel *p, const char *const *names, const xt_rgb *cols, int n) {
    int x = p->px + 8, y = p->py + 6;
    for (int k = 0; k < n; k++) {
        xt_image_line(img, x, y + XT_FONT_ROWS / 2.0, x + 14, y + XT_FONT_ROWS / 2.0, 2.0, cols[k]);
        xt_font_draw(img, x + 18, y, names[k], k_label, 1);
        x += 18 + xt_font_width(names[k], 1) + 14;
    }
}

/* The training loss over steps: every logged loss faint, its moving average,
 * and each epoch's mean at the step it ended (over epochs when the steps are
 * unknown). */
static int draw_train_loss(xt_image *img, panel *p, const xt_curves_run *d, long long last) {
    int n = d->nsteps, ok = 0;
    double *x = malloc(((size_t)n + (size_t)d->nepochs + 1) * sizeof *x), *sm = malloc(((size_t)n + 1) * sizeof *sm);
    double *all = malloc(((size_t)2 * n + (size_t)d->nepochs + 1) * sizeof *all);
    if (!x || !sm || !all) goto out;
    centred_mean(d->step_loss, n, sm);
    for (int i = 0; i < n; i++) {
        x[i] = (double)d->step[i];
        all[i] = d->step_loss[i];
        all[n + i] = sm[i];
    }
    memcpy(all + 2 * n, d->loss, (size_t)d->nepochs * sizeof *all);
    if (last > 0) layout_steps(p, p->px - PAD_LEFT, p->py - PAD_TOP, p->pw + PAD_LEFT + PAD_RIGHT, p->ph + PAD_TOP + PAD_BOTTOM, last);
    y_range(p, all, 2 * n + d->nepochs, 0, INFINITY);
    char title[128];
    int li = n - 1;
    while (li >= 0 && !isfinite(sm[li])) li--;
    if (li >= 0) snprintf(title, sizeof title, "Training loss (smoothed %.4g at step %lld)", sm[li], d->step[li]);
    else {
        int le = d->nepochs - 1;
        while (le >= 0 && !isfinite(d->loss[le])) le--;
        if (le >= 0) snprintf(title, sizeof title, "Training loss (last %.4g)", d->loss[le]);
        else snprintf(title, sizeof title, "Training loss");
    }
    draw_axes(img, p, title, "loss");
    draw_xy(img, p, x, d->step_loss, n, k_raw, 1.0, 0);
    draw_xy(img, p, x, sm, n, k_loss, 2.0, 0);
    /* an epoch's mean is over its steps: drawn midway between its start and end */
    for (int i = 0; i < d->nepochs; i++)
        x[i] = last > 0 && d->epoch_step ? ((i ? (double)d->epoch_step[i - 1] : 0) + (double)d->epoch_step[i]) / 2 : i + 1;
    if (last > 0 && !d->epoch_step) { /* steps known, epoch ends not: epochs alone */
        ok = 1;
        goto out;
    }
    /* over the per-step lines the means are markers only, small but never gone */
    double r = marker_r(p, x[d->nepochs - 1] - x[0], d->nepochs);
    draw_xy(img, p, x, d->loss, d->nepochs, n ? k_mean : k_loss, n ? 0 : 2.0, n ? fmax(r, 1.8) : r);
    static const char *const names[3] = {"raw", "smoothed", "epoch mean"};
    const xt_rgb cols[3] = {k_raw, k_loss, k_mean};
    if (n) panel_legend(img, p, names, cols, 3);
    ok = 1;
out:
    free(x);
    free(sm);
    free(all);
    return ok ? 0 : -1;
}

/* The learning rate over steps (or epochs), from 0. */
static int draw_lr(xt_image *img, panel *p, const xt_curves_run *d, long long last) {
    int n = d->nsteps;
    double *x = malloc(((size_t)n + (size_t)d->nepochs + 1) * sizeof *x);
    if (!x) return -1;
    if (last > 0) layout_steps(p, p->px - PAD_LEFT, p->py - PAD_TOP, p->pw + PAD_LEFT + PAD_RIGHT, p->ph + PAD_TOP + PAD_BOTTOM, last);
    const double *y = n ? d->step_lr : d->lr;
    int m = n ? n : d->nepochs;
    for (int i = 0; i < m; i++) x[i] = n ? (double)d->step[i] : last > 0 && d->epoch_step ? (double)d->epoch_step[i] : i + 1;
    y_range(p, y ? y : d->loss, y ? m : 0, 0, INFINITY);
    char title[96];
    if (y && m) snprintf(title, sizeof title, "Learning rate (last %.4g)", y[m - 1]);
    else snprintf(title, sizeof title, "Learning rate");
    draw_axes(img, p, title, "lr");
    if (y) draw_xy(img, p, x, y, m, k_lr, 2.0, 0);
    free(x);
    return 0;
}

/* Test loss per epoch: lower is better, so its title names the lowest. */
static void draw_test_loss(xt_image *img, panel *p, const xt_curves_run *d) {
    int best = -1;
    for (int i = 0; d->test_loss && i < d->nepochs; i++)
        if (isfinite(d->test_loss[i]) && (best < 0 || d->test_loss[i] < d->test_loss[best])) best = i;
    char title[96];
    if (best >= 0) snprintf(title, sizeof title, "Test loss (lowest %.4g at epoch %d)", d->test_loss[best], best + 1);
    else snprintf(title, sizeof title, "Test loss");
    y_range(p, d->test_loss ? d->test_loss : d->loss, d->test_loss ? d->nepochs : 0, 0, INFINITY);
    draw_axes(img, p, title, "loss");
    if (d->test_loss) draw_series(img, p, d->test_loss, d->nepochs, k_test_loss);
    if (best < 0) {
        const char *msg = "no test loss recorded";
        xt_font_draw(img, p->px + (p->pw - xt_font_width(msg, 1)) / 2, p->py + p->ph / 2, msg, k_label, 1);
    }
}

int xt_curves_write_run(const char *path, const xt_curves_run *d, xt_err *e) {
    if (d->nepochs < 1 || !d->loss)
        return xt_fail(e, XT_EIO, "cannot write %s: no epochs to plot (nepochs=%d); this is a bug, please report it", path,
                       d->nepochs);
    xt_image img;
    int rc = xt_image_init(&img, XT_CURVES_W, XT_CURVES_RUN_H, XT_WHITE, e);
    if (rc) return rc;
    char title[128];
    snprintf(title, sizeof title, "Training curves: %d epoch%s", d->nepochs, d->nepochs == 1 ? "" : "s");
    xt_font_draw_bold(&img, (XT_CURVES_W - xt_font_width(title, 1)) / 2, 10, title, XT_BLACK, 1);
    long long last = 0; /* the last step known: the step panels' x extent */
    for (int i = 0; i < d->nsteps; i++) last = d->step[i] > last ? d->step[i] : last;
    for (int i = 0; d->epoch_step && i < d->nepochs; i++) last = d->epoch_step[i] > last ? d->epoch_step[i] : last;
    int half = XT_CURVES_W / 2, top = FIG_TITLE_H, big = 380, small = XT_CURVES_RUN_H - FIG_TITLE_H - big;
    panel tl, acc, lr, tst;
    layout(&tl, 0, top, half, big, d->nepochs);
    layout(&acc, half, top, half, big, d->nepochs);
    layout(&lr, 0, top + big, half, small, d->nepochs);
    layout(&tst, half, top + big, half, small, d->nepochs);
    if (draw_train_loss(&img, &tl, d, last) || draw_lr(&img, &lr, d, last)) {
        xt_image_free(&img);
        return xt_fail(e, XT_EIO, "cannot write %s: out of memory", path);
    }
    if (d->acc) {
        xt_curve_series one = {.name = "", .loss = d->loss, .acc = d->acc};
        y_range(&acc, d->acc, d->nepochs, 0, 100);
        acc_title(title, sizeof title, &one, 1, d->nepochs);
        draw_axes(&img, &acc, title, "accuracy %");
        draw_series(&img, &acc, d->acc, d->nepochs, k_acc);
    } else {
        acc.ylo = 0, acc.yhi = 100, acc.ystep = 20;
        draw_axes(&img, &acc, "Test accuracy", "accuracy %");
        const char *msg = "no test data";
        xt_font_draw(&img, acc.px + (acc.pw - xt_font_width(msg, 1)) / 2, acc.py + acc.ph / 2, msg, k_label, 1);
    }
    draw_test_loss(&img, &tst, d);
    rc = xt_png_write(path, &img, e);
    xt_image_free(&img);
    return rc;
}
