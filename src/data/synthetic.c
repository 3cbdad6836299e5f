/* synthetic.c — procedural digit glyphs; see synthetic.h for what and why.
 *
 * Pipeline per sample: pick a style -> flatten its strokes to a polyline while
 * jittering every control value -> smooth warp in glyph space -> affine to
 * pixels -> max-coverage anti-aliased thick segments -> clutter -> noise.
 * All randomness comes from one xt_rng keyed by (seed, split, index).
 */
#include "data/synthetic.h"

#include <math.h>
#include <string.h>

#include "data/rng.h"

/* Pixels must be identical across builds, so no contraction to FMA: GCC in
 * -std=c11 mode already keeps every product rounded; clang needs telling. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define SIDE XT_SYNTH_SIDE
#define PI 3.14159265358979323846

/* Stroke programs. Coordinates are in a unit box, x right, y down; angles in
 * degrees, measured clockwise from +x (y points down). */
enum { G_END, G_MOVE, G_LINE, G_ARC, G_QUAD, G_LIFT };
#define M(x, y) G_MOVE, x, y
#define L(x, y) G_LINE, x, y
#define A(cx, cy, rx, ry, a0, a1) G_ARC, cx, cy, rx, ry, a0, a1 /* line to the start if the pen is down */
#define Q(cx, cy, x, y) G_QUAD, cx, cy, x, y                    /* quadratic Bezier from the pen */
#define LIFT G_LIFT

static const float D0a[] = {A(.5f, .5f, .28f, .45f, 0, 360), G_END};
static const float D0b[] = {A(.5f, .5f, .24f, .45f, 250, 625), G_END};
static const float D1a[] = {M(.5f, .05f), L(.5f, .95f), G_END};
static const float D1b[] = {M(.3f, .24f), L(.53f, .05f), L(.53f, .95f), G_END};
static const float D1c[] = {M(.32f, .22f), L(.52f, .05f), L(.52f, .95f), LIFT, M(.32f, .95f), L(.74f, .95f), G_END};
static const float D2a[] = {A(.5f, .3f, .27f, .25f, 190, 380), L(.2f, .95f), L(.82f, .95f), G_END};
static const float D2b[] = {A(.5f, .3f, .28f, .25f, 180, 400), Q(.25f, .75f, .2f, .93f), Q(.5f, .85f, .85f, .93f),
                            G_END};
static const float D3a[] = {A(.47f, .28f, .26f, .23f, 200, 450), A(.47f, .72f, .3f, .23f, 270, 520), G_END};
static const float D3b[] = {M(.22f, .05f), L(.75f, .05f), L(.45f, .42f), A(.47f, .7f, .3f, .25f, 270, 520), G_END};
static const float D4a[] = {M(.68f, .95f), L(.68f, .05f), L(.15f, .67f), L(.88f, .67f), G_END};
static const float D4b[] = {M(.22f, .05f), L(.18f, .6f), L(.88f, .6f), LIFT, M(.66f, .3f), L(.66f, .95f), G_END};
static const float D5a[] = {M(.78f, .05f), L(.3f, .05f), L(.28f, .45f), A(.5f, .68f, .28f, .27f, 235, 520), G_END};
static const float D5b[] = {M(.8f, .07f), Q(.5f, .02f, .32f, .08f), L(.26f, .47f), A(.5f, .69f, .29f, .26f, 230, 515),
                            G_END};
static const float D6a[] = {M(.72f, .05f), Q(.22f, .25f, .23f, .68f), A(.5f, .7f, .27f, .24f, 180, 540), G_END};
static const float D6b[] = {M(.65f, .05f), L(.27f, .6f), A(.5f, .7f, .26f, .24f, 200, 560), G_END};
static const float D7a[] = {M(.18f, .05f), L(.82f, .05f), L(.42f, .95f), G_END};
static const float D7b[] = {M(.18f, .05f), L(.82f, .05f), L(.42f, .95f), LIFT, M(.36f, .52f), L(.72f, .52f), G_END};
static const float D7c[] = {M(.18f, .16f), L(.2f, .05f), L(.82f, .05f), Q(.55f, .45f, .5f, .95f), G_END};
static const float D8a[] = {A(.5f, .27f, .22f, .22f, 0, 360), LIFT, A(.5f, .72f, .27f, .23f, 0, 360), G_END};
static const float D8b[] = {A(.5f, .3f, .18f, .25f, 90, 450), LIFT, A(.5f, .74f, .25f, .21f, 270, 630), G_END};
static const float D9a[] = {A(.5f, .3f, .25f, .25f, 0, 360), LIFT, M(.75f, .3f), L(.7f, .95f), G_END};
static const float D9b[] = {A(.5f, .3f, .25f, .25f, 0, 360), LIFT, M(.75f, .3f), Q(.75f, .8f, .45f, .95f), G_END};

static const float *const STYLES[10][3] = {
    {D0a, D0b, NULL}, {D1a, D1b, D1c}, {D2a, D2b, NULL}, {D3a, D3b, NULL}, {D4a, D4b, NULL},
    {D5a, D5b, NULL}, {D6a, D6b, NULL}, {D7a, D7b, D7c}, {D8a, D8b, NULL}, {D9a, D9b, NULL},
};

#define MAX_PTS 256
typedef struct {
    float x[MAX_PTS], y[MAX_PTS];
    unsigned char start[MAX_PTS]; /* 1: pen lifted before this point */
    int n;
} polyline;

static void put(polyline *p, double x, double y, int start) {
    if (p->n == MAX_PTS) return; /* the styles above need < 120 points */
    p->x[p->n] = (float)x;
    p->y[p->n] = (float)y;
    p->start[p->n] = (unsigned char)start;
    p->n++;
}

/* Flatten a style into points, jittering each control value: handwriting
 * varies in stroke geometry, not only in pose. */
static void flatten(const float *g, xt_rng *r, polyline *p) {
    const double jp = 0.03; /* point jitter, unit-box units (~0.6 px) */
    int down = 0;
    double cx = 0, cy = 0;
    while (*g != G_END) {
        int op = (int)*g++;
        if (op == G_LIFT) {
            down = 0;
        } else if (op == G_MOVE || op == G_LINE) {
            cx = g[0] + jp * xt_rng_gauss(r);
            cy = g[1] + jp * xt_rng_gauss(r);
            put(p, cx, cy, op == G_MOVE || !down);
            down = 1;
            g += 2;
        } else if (op == G_ARC) {
            double ox = g[0] + jp * xt_rng_gauss(r), oy = g[1] + jp * xt_rng_gauss(r);
            double rx = g[2] * (1 + 0.08 * xt_rng_gauss(r)), ry = g[3] * (1 + 0.08 * xt_rng_gauss(r));
            double a0 = g[4] + 8 * xt_rng_gauss(r), a1 = g[5] + 8 * xt_rng_gauss(r);
            int steps = (int)(fabs(a1 - a0) / 15) + 2;
            for (int i = 0; i <= steps; i++) {
                double a = (a0 + (a1 - a0) * i / steps) * (PI / 180);
                cx = ox + rx * cos(a);
                cy = oy + ry * sin(a);
                put(p, cx, cy, i == 0 && !down);
            }
            down = 1;
            g += 6;
        } else { /* G_QUAD */
            double qx = g[0] + jp * xt_rng_gauss(r), qy = g[1] + jp * xt_rng_gauss(r);
            double ex = g[2] + jp * xt_rng_gauss(r), ey = g[3] + jp * xt_rng_gauss(r);
            double sx = cx, sy = cy;
            for (int i = 1; i <= 10; i++) {
                double t = i / 10.0, u = 1 - t;
                cx = u * u * sx + 2 * u * t * qx + t * t * ex;
                cy = u * u * sy + 2 * u * t * qy + t * t * ey;
                put(p, cx, cy, 0);
            }
            g += 4;
        }
    }
}

/* Draw segment a-b into canvas with max-coverage: a pen of half-width hw whose
 * edge ramps over `soft` pixels, like a scanned pen stroke. */
static void segment(float *canvas, double ax, double ay, double bx, double by, double hw, double soft, double ink) {
    double reach = hw + soft;
    int x0 = (int)floor(fmin(ax, bx) - reach), x1 = (int)ceil(fmax(ax, bx) + reach);
    int y0 = (int)floor(fmin(ay, by) - reach), y1 = (int)ceil(fmax(ay, by) + reach);
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > SIDE - 1) x1 = SIDE - 1;
    if (y1 > SIDE - 1) y1 = SIDE - 1;
    double dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            double px = x + 0.5 - ax, py = y + 0.5 - ay;
            double t = len2 > 0 ? (px * dx + py * dy) / len2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = px - t * dx, ey = py - t * dy;
            double c = (hw - sqrt(ex * ex + ey * ey)) / soft + 0.5;
            c = (c < 0 ? 0 : c > 1 ? 1 : c) * ink;
            if (c > canvas[y * SIDE + x]) canvas[y * SIDE + x] = (float)c;
        }
    }
}

static void block_labels(uint64_t seed, int split, int64_t block, int perm[10]) {
    xt_rng r;
    xt_rng_init(&r, seed, XT_RNG_SYNTH_LABELS, (uint64_t)split, (uint64_t)block);
    for (int i = 0; i < 10; i++) perm[i] = i;
    for (int i = 9; i > 0; i--) {
        int j = (int)xt_rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int xt_synth_label(uint64_t seed, int split, int64_t index) {
    int perm[10];
    block_labels(seed, split, index / 10, perm);
    return perm[index % 10];
}

int xt_synth_sample(uint64_t seed, int split, int64_t index, uint8_t *out) {
    int label = xt_synth_label(seed, split, index);
    xt_rng r;
    xt_rng_init(&r, seed, XT_RNG_SYNTH, (uint64_t)split, (uint64_t)index);

    int nstyles = STYLES[label][2] ? 3 : 2;
    polyline p;
    p.n = 0;
    flatten(STYLES[label][xt_rng_below(&r, (uint64_t)nstyles)], &r, &p);

    /* Pose: MNIST digits are ~20 px tall, centred, often slanted. */
    double h = xt_rng_range(&r, 17, 24);              /* unit box height in px */
    double w = h * xt_rng_range(&r, 0.75, 1.15);      /* unit box width */
    double slant = xt_rng_range(&r, -0.15, 0.45);     /* x shift per px of height, rightward lean */
    double rot = xt_rng_range(&r, -0.22, 0.22);       /* radians, ~12.6 degrees */
    double tx = SIDE / 2.0 + xt_rng_range(&r, -2.5, 2.5), ty = SIDE / 2.0 + xt_rng_range(&r, -2.5, 2.5);
    /* Smooth warp: one low-frequency sine per axis. */
    double wa = xt_rng_range(&r, 0, 0.04), wf = xt_rng_range(&r, 0.5, 1.5), wp = xt_rng_range(&r, 0, 2 * PI);
    double va = xt_rng_range(&r, 0, 0.04), vf = xt_rng_range(&r, 0.5, 1.5), vp = xt_rng_range(&r, 0, 2 * PI);
    double cr = cos(rot), sr = sin(rot);
    for (int i = 0; i < p.n; i++) {
        double u = p.x[i] + wa * sin(2 * PI * wf * p.y[i] + wp) - 0.5;
        double v = p.y[i] + va * sin(2 * PI * vf * p.x[i] + vp) - 0.5;
        double x = u * w - slant * v * h, y = v * h;
        p.x[i] = (float)(tx + cr * x - sr * y);
        p.y[i] = (float)(ty + sr * x + cr * y);
    }

    /* Keep the glyph inside the frame, as MNIST's preprocessing did: shrink it
     * if it is too big, then shift it in if it crosses an edge. */
    double hw = xt_rng_range(&r, 0.7, 1.7), soft = xt_rng_range(&r, 0.7, 1.5);
    double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
    for (int i = 0; i < p.n; i++) {
        x0 = fmin(x0, p.x[i]), x1 = fmax(x1, p.x[i]);
        y0 = fmin(y0, p.y[i]), y1 = fmax(y1, p.y[i]);
    }
    const double lo = 1 + hw, hi = SIDE - 1 - hw; /* pen edge stays >= 1 px from the border */
    double fit = fmin(1.0, fmin((hi - lo) / fmax(x1 - x0, 1e-9), (hi - lo) / fmax(y1 - y0, 1e-9)));
    double mx = (x0 + x1) / 2, my = (y0 + y1) / 2;
    x0 = mx + (x0 - mx) * fit, x1 = mx + (x1 - mx) * fit;
    y0 = my + (y0 - my) * fit, y1 = my + (y1 - my) * fit;
    double sx = x0 < lo ? lo - x0 : x1 > hi ? hi - x1 : 0;
    double sy = y0 < lo ? lo - y0 : y1 > hi ? hi - y1 : 0;
    for (int i = 0; i < p.n; i++) {
        p.x[i] = (float)(mx + (p.x[i] - mx) * fit + sx);
        p.y[i] = (float)(my + (p.y[i] - my) * fit + sy);
    }

    float canvas[SIDE * SIDE];
    memset(canvas, 0, sizeof canvas);
    for (int i = 1; i < p.n; i++)
        if (!p.start[i]) segment(canvas, p.x[i - 1], p.y[i - 1], p.x[i], p.y[i], hw, soft, 1.0);

    /* Clutter: a stray short mark or a dot in a quarter of the samples. */
    if (xt_rng_uniform(&r) < 0.25) {
        int marks = 1 + (int)xt_rng_below(&r, 2);
        for (int k = 0; k < marks; k++) {
            double ax = xt_rng_range(&r, 1, SIDE - 1), ay = xt_rng_range(&r, 1, SIDE - 1);
            double len = xt_rng_range(&r, 0, 7), ang = xt_rng_range(&r, 0, 2 * PI);
            double width = xt_rng_range(&r, 0.4, 1.1), ink = xt_rng_range(&r, 0.3, 0.8); /* see xt_rng_gauss */
            segment(canvas, ax, ay, ax + len * cos(ang), ay + len * sin(ang), width, 0.8, ink);
        }
    }

    double peak = xt_rng_range(&r, 0.75, 1.0) * 255;
    double sigma = xt_rng_uniform(&r) < 0.5 ? xt_rng_range(&r, 2, 14) : 0;
    for (int i = 0; i < SIDE * SIDE; i++) {
        double v = canvas[i] * peak;
        if (sigma > 0) v += sigma * xt_rng_gauss(&r);
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        out[i] = (uint8_t)(v + 0.5); /* round; 255.5 truncates to 255 */
    }
    return label;
}

void xt_synth_generate(uint8_t *images, uint8_t *labels, int64_t first, int64_t n, uint64_t seed, int split) {
    for (int64_t i = 0; i < n; i++)
        labels[i] = (uint8_t)xt_synth_sample(seed, split, first + i, images + i * SIDE * SIDE);
}
