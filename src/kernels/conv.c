/* conv.c — k_conv2d_*: picks the measured-fastest method per shape and pass.
 *
 * Is: the dispatcher (k_conv_choose) and the scratch size the engine reserves.
 * Is not: a convolution algorithm — those are conv_im2col.c, conv_direct.c and
 * the reference loops in conv_ref.c; nor what the methods share (conv_common.c).
 *
 * Every choice here is measured, in GFLOP/s per method, shape and pass on
 * one core at batch 128, by tests/bench/kernel_bench.c's conv section (the
 * seed CNN's and wide_cnn's layers), and in whole steps by train_bench
 * --kernels (make bench); the figures and their runs are in
 * tests/bench/HISTORY.md. Figures on a shared machine move by ~10%: re-run
 * the bench before re-deciding.
 *
 * So: the batch-blocked direct method everywhere except bwd_data with Ci < 8,
 * and im2col everywhere when the CPU lacks AVX2 (OpenBLAS dispatches to its own
 * AVX kernels, our portable loops are 4 lanes wide). The direct method
 * measured faster than im2col+GEMM at every pass of those layers but that
 * one, where its one-pixel tile cannot hide the FMA latency; and a first
 * layer's bwd_data is never needed in training (the input needs no gradient).
 * im2col runs one image per GEMM: packing several images into one wider GEMM
 * measured slower at every shape (the reshuffle of y/dy and the larger patch
 * matrix cost more than the GEMM gains). A first direct variant vectorized
 * along output rows ("wide" rows over the padded width, no transposes) was
 * slower than the best method at every pass and was dropped.
 * Stride-1 bwd_data runs the fwd tiles over a column-padded dy where that
 * wastes < 1/4 of the multiplies (conv_direct.c, use_bwd_rows): faster than
 * one pixel at a time (kernel_bench's "wide conv2").
 * One input channel with few taps goes to conv_rows.c (vectors along the
 * output plane, no transposes): faster than the direct kernel, fwd and
 * bwd_weight, on wide_cnn's conv1 (9 taps), slower on the seed CNN's conv1
 * (25 taps give the direct kernel's transposes less weight); ROWS_MAX_TAPS
 * sits between.
 * Under a 2x2 max pool the weight gradient may visit only the pixel each
 * window kept (conv_sparse.c; k_conv_choose_unpool2 asks its cost model):
 * the same bits in less time on wide_cnn's conv2, while the seed CNN's conv2
 * stays dense at 16 lanes (at AVX2's 8 the dense pass is twice as dear and
 * sparse wins there too). Backward-data likewise (conv_sparse_data.c, its own cost
 * model; not the dense pass's bits), faster on both models' conv2 in
 * train_bench --kernels.
 */
#include "kernels/conv.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_im2col.h"
#include "kernels/conv_rows.h"
#include "kernels/conv_sparse.h"
#include "kernels/simd.h"

/* The most taps (kh*kw) for which the rows method runs a one-channel
 * convolution: it won at 9, lost at 25 (see above). */
#define ROWS_MAX_TAPS 16

/* Images per GEMM for the im2col method (one: see above). */
#define IM2COL_GROUP 1

const char *k_conv_method_name(int method) {
    return method == K_CONV_DIRECT ? "direct" : method == K_CONV_ROWS ? "rows" : method == K_CONV_SPARSE ? "sparse" : "im2col";
}

int k_conv_choose(const k_conv_shape *s, int pass) {
    /* OpenBLAS picks its own AVX2/AVX-512 kernels at run time: with neither, its
     * GEMMs beat our 4-lane loops */
    if (k_simd_level() == K_SIMD_GENERIC) return K_CONV_IM2COL;
    /* a one-pixel tile of fewer than 8 input channels cannot hide the FMA latency */
    if (pass == K_CONV_BWD_DATA && s->Ci < 8) return K_CONV_IM2COL;
    /* one input channel and few taps: vectors along the output plane, no
     * transposes (conv_rows.c; see ROWS_MAX_TAPS) */
    if (pass != K_CONV_BWD_DATA && s->kh * s->kw <= ROWS_MAX_TAPS && k_conv_rows_fits(s)) return K_CONV_ROWS;
    return K_CONV_DIRECT;
}

int k_conv_choose_unpool2(const k_conv_shape *s, int pass) {
    if (pass == K_CONV_BWD_WEIGHT && k_conv_sparse_fits(s)) return K_CONV_SPARSE;
    if (pass == K_CONV_BWD_DATA && k_conv_sparse_data_fits(s)) return K_CONV_SPARSE;
    return k_conv_choose(s, pass);
}

/* Where im2col runs (no AVX2) the passes that take x go image by image, as
 * im2col's GEMMs do anyway (one image each, so the bits are those of one
 * call over the batch): image n of x, or with a prologue (k_conv_prologue)
 * image n made through it into the scratch's last Ci*H*W floats. */
static size_t methods_scratch(const k_conv_shape *s) {
    size_t a = k_conv_direct_scratch(s), b = k_conv_im2col_scratch(s, IM2COL_GROUP), c = k_conv_rows_scratch(s);
    a = a > b ? a : b;
    return a > c ? a : c;
}
static k_conv_shape one_image(const k_conv_shape *s) {
    k_conv_shape one = *s;
    one.N = 1;
    return one;
}
static const float *image_of(const k_conv_shape *s, const k_conv_prologue *pro, const float *x, int n, float *scratch) {
    int HW = s->H * s->W;
    x += (size_t)n * s->Ci * HW;
    if (!pro->scale) return x;
    float *img = scratch + methods_scratch(s);
    for (int c = 0; c < s->Ci; c++)
        for (int i = 0; i < HW; i++) {
            float t = x[(size_t)c * HW + i] * pro->scale[c];
            t = t + pro->shift[c]; /* a statement of its own: never contracted into an FMA */
            img[(size_t)c * HW + i] = pro->relu ? (t > 0.0f ? t : 0.0f) : t;
        }
    return img;
}

/* Both methods' needs, whatever k_conv_choose says now: the engine reserves this
 * once, and the choice follows the SIMD level, which tests and benches can force. */
size_t k_conv2d_scratch(const k_conv_shape *s) {
    return methods_scratch(s) + (size_t)s->Ci * s->H * s->W + 16; /* + the prologue's image */
}

static size_t packed_floats(const k_conv_shape *s, int pass) {
    return k_conv_choose(s, pass) == K_CONV_DIRECT ? k_conv_direct_packed_floats(s, pass) : 0;
}
size_t k_conv2d_fwd_packed_floats(const k_conv_shape *s) { return packed_floats(s, K_CONV_FWD); }
size_t k_conv2d_bwd_data_packed_floats(const k_conv_shape *s) { return packed_floats(s, K_CONV_BWD_DATA); }
size_t k_conv2d_bwd_data_unpool2_packed_floats(const k_conv_shape *s) {
    if (k_conv_choose_unpool2(s, K_CONV_BWD_DATA) == K_CONV_SPARSE) return k_conv_sparse_data_packed_floats(s);
    return packed_floats(s, K_CONV_BWD_DATA);
}

void k_conv2d_fwd_act(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, int relu,
                      float *scratch, k_conv_packed pk, k_conv_prologue pro) {
    k_conv2d_fwd_act_m(k_conv_choose(s, K_CONV_FWD), s, y, x, w, b, relu, scratch, pk, pro);
}
void k_conv2d_fwd_act_m(int method, const k_conv_shape *s, float *y, const float *x, const float *w, const float *b,
                        int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro) {
    if (method == K_CONV_DIRECT) {
        k_conv_direct_fwd_act(s, y, x, w, b, relu, scratch, pk, pro);
        return;
    }
    if (method == K_CONV_ROWS) {
        k_conv_rows_fwd_act(s, y, x, w, b, relu, scratch, pro);
        return;
    }
    k_conv_shape one = one_image(s);
    size_t img_y = (size_t)s->Co * s->Ho * s->Wo;
    for (int n = 0; n < s->N; n++)
        k_conv_im2col_fwd(&one, IM2COL_GROUP, y + n * img_y, image_of(s, &pro, x, n, scratch), w, b, scratch);
    if (relu) k_relu_inplace(y, (size_t)s->N * s->Co * s->Ho * s->Wo);
}

/* the conv scratch, then one image's conv output for the per-image path */
size_t k_conv2d_pool2_scratch(const k_conv_shape *s) {
    return k_conv2d_scratch(s) + (size_t)s->Co * s->Ho * s->Wo + 16;
}

void k_conv_pool2_image_by_image(const k_conv_shape *s, float *vals, uint8_t *argmax, const void *x, size_t x_elem,
                                 const void *w, const float *b, int relu, void *scratch, float *y,
                                 k_conv_fwd_act_fn fwd) {
    k_conv_shape one = one_image(s);
    k_pool_shape ps = k_conv_pool2_shape(s, 1);
    size_t img_x = (size_t)s->Ci * s->H * s->W * x_elem, img_p = (size_t)s->Co * ps.Ho * ps.Wo;
    for (int n = 0; n < s->N; n++) {
        fwd(&one, y, (const char *)x + n * img_x, w, b, relu, scratch);
        k_maxpool2d_fwd(&ps, vals + n * img_p, argmax + n * img_p, y);
    }
}

/* the per-image forward of the image-by-image pool path, one per method it serves */
static void fwd_act_rows(const k_conv_shape *s, float *y, const void *x, const void *w, const float *b, int relu,
                         void *scratch) {
    k_conv2d_fwd_act_m(K_CONV_ROWS, s, y, x, w, b, relu, scratch, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
}
static void fwd_act_im2col(const k_conv_shape *s, float *y, const void *x, const void *w, const float *b, int relu,
                           void *scratch) {
    k_conv2d_fwd_act_m(K_CONV_IM2COL, s, y, x, w, b, relu, scratch, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
}

void k_conv2d_fwd_pool2(const k_conv_shape *s, float *vals, uint8_t *argmax, const float *x, const float *w,
                        const float *b, int relu, float *scratch, k_conv_packed pk, k_conv_prologue pro) {
    k_conv2d_fwd_pool2_m(k_conv_choose(s, K_CONV_FWD), s, vals, argmax, x, w, b, relu, scratch, pk, pro);
}
void k_conv2d_fwd_pool2_m(int method, const k_conv_shape *s, float *vals, uint8_t *argmax, const float *x,
                          const float *w, const float *b, int relu, float *scratch, k_conv_packed pk,
                          k_conv_prologue pro) {
    if (method == K_CONV_DIRECT) {
        k_conv_direct_fwd_pool(s, vals, argmax, x, w, b, relu, scratch, pk, pro);
        return;
    }
    /* else image by image: the conv output (through k_conv2d_fwd_act, so the
     * rows method's where it runs) pooled from scratch while it is in cache */
    k_conv_shape one = one_image(s);
    size_t img_p = (size_t)s->Co * (s->Ho / 2) * (s->Wo / 2);
    for (int n = 0; n < s->N; n++)
        k_conv_pool2_image_by_image(&one, vals + n * img_p, argmax + n * img_p, image_of(s, &pro, x, n, scratch),
                                    sizeof *x, w, b, relu, scratch, scratch + k_conv2d_scratch(s),
                                    method == K_CONV_ROWS ? fwd_act_rows : fwd_act_im2col);
}

void k_conv2d_fwd(const k_conv_shape *s, float *y, const float *x, const float *w, const float *b, float *scratch) {
    k_conv2d_fwd_act(s, y, x, w, b, 0, scratch, K_CONV_PACK_PER_CALL, K_CONV_NO_PROLOGUE);
}

static void bwd_data_m(int method, const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch);
void k_conv2d_bwd_data(const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch) {
    bwd_data_m(k_conv_choose(s, K_CONV_BWD_DATA), s, dx, dy, w, scratch);
}
static void bwd_data_m(int method, const k_conv_shape *s, float *dx, const float *dy, const float *w, float *scratch) {
    if (method == K_CONV_DIRECT)
        k_conv_direct_bwd_data(s, dx, dy, w, scratch);
    else
        k_conv_im2col_bwd_data(s, IM2COL_GROUP, dx, dy, w, scratch);
}

void k_conv2d_bwd_weight(const k_conv_shape *s, float *dw, float *db, const float *x, const float *dy,
                         float *scratch) {
    int method = k_conv_choose(s, K_CONV_BWD_WEIGHT);
    if (method == K_CONV_ROWS)
        k_conv_rows_bwd_weight_part(s, dw, db, x, dy, (k_unpool2){0}, scratch, NULL, 1, 1, K_CONV_NO_PROLOGUE);
    else if (method == K_CONV_DIRECT)
        k_conv_direct_bwd_weight(s, dw, db, x, dy, scratch);
    else
        k_conv_im2col_bwd_weight(s, IM2COL_GROUP, dw, db, x, dy, scratch);
}

size_t k_conv2d_bwd_weight_acc_floats(const k_conv_shape *s) {
    size_t a = k_conv_direct_bwd_weight_acc_floats(s), b = k_conv_rows_bwd_weight_acc_floats(s);
    size_t c = k_conv_sparse_fits(s) ? k_conv_sparse_acc_floats(s) : 0; /* the unpooled pass's */
    a = a > b ? a : b;
    return a > c ? a : c; /* im2col accumulates in dw itself */
}

void k_conv2d_bwd_weight_part(const k_conv_shape *s, float *dw, const float *x, const float *dy, float *scratch,
                              float *acc, int first, int last, k_conv_prologue pro) {
    k_conv2d_bwd_weight_part_m(k_conv_choose(s, K_CONV_BWD_WEIGHT), s, dw, x, dy, scratch, acc, first, last, pro);
}
void k_conv2d_bwd_weight_part_m(int method, const k_conv_shape *s, float *dw, const float *x, const float *dy,
                                float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    if (method == K_CONV_ROWS) {
        k_conv_rows_bwd_weight_part(s, dw, NULL, x, dy, (k_unpool2){0}, scratch, acc, first, last, pro);
        return;
    }
    if (method == K_CONV_DIRECT) {
        k_conv_direct_bwd_weight_part(s, dw, NULL, x, dy, scratch, acc, first, last, pro);
        return;
    }
    k_conv_shape one = one_image(s);
    size_t img_y = (size_t)s->Co * s->Ho * s->Wo;
    for (int n = 0; n < s->N; n++)
        k_conv_im2col_bwd_weight_part(&one, IM2COL_GROUP, dw, image_of(s, &pro, x, n, scratch), dy + n * img_y, scratch,
                                      first && n == 0);
}

/* ---- dy as a 2x2/2 max pool's gradient and argmax (k_unpool2) ---------------------- */

/* The conv scratch, then one image's dy for the image-by-image path. */
size_t k_conv2d_unpool2_scratch(const k_conv_shape *s) {
    size_t dense = k_conv2d_scratch(s) + (size_t)s->Co * s->Ho * s->Wo + 16;
    size_t sparse = k_conv_sparse_fits(s) ? k_conv_sparse_scratch(s) : 0;
    size_t data = k_conv_sparse_data_fits(s) ? k_conv_sparse_data_scratch(s) : 0;
    sparse = sparse > data ? sparse : data;
    return dense > sparse ? dense : sparse;
}

/* Where im2col runs (no AVX2, or backward-data into fewer than 8 channels),
 * one image at a time: its dy scattered by the pool's backward into scratch,
 * then the plain pass (im2col runs one image per GEMM anyway). */
typedef struct {
    k_conv_shape one;
    k_pool_shape pool;
    size_t img_x, img_g;
    float *dy1;
} unpool_images;

static unpool_images unpool_images_of(const k_conv_shape *s, float *scratch) {
    unpool_images u = {.one = one_image(s), .pool = k_conv_pool2_shape(s, 1)};
    u.img_x = (size_t)s->Ci * s->H * s->W;
    u.img_g = (size_t)s->Co * u.pool.Ho * u.pool.Wo;
    u.dy1 = scratch + k_conv2d_scratch(s);
    return u;
}

static void bwd_data_unpool2_m(int method, const k_conv_shape *s, float *dx, k_unpool2 dy, const float *w,
                               float *scratch);
void k_conv2d_bwd_data_unpool2(const k_conv_shape *s, float *dx, k_unpool2 dy, const float *w, float *scratch) {
    bwd_data_unpool2_m(k_conv_choose_unpool2(s, K_CONV_BWD_DATA), s, dx, dy, w, scratch);
}
static void bwd_data_unpool2_m(int method, const k_conv_shape *s, float *dx, k_unpool2 dy, const float *w,
                               float *scratch) {
    if (method == K_CONV_SPARSE) {
        k_conv_sparse_bwd_data_unpool2(s, dx, dy, w, NULL, scratch, K_CONV_PACK_PER_CALL);
        return;
    }
    if (method == K_CONV_DIRECT) {
        k_conv_direct_bwd_data_masked(s, dx, NULL, dy, w, NULL, scratch, K_CONV_PACK_PER_CALL);
        return;
    }
    unpool_images u = unpool_images_of(s, scratch);
    for (int n = 0; n < s->N; n++) {
        k_maxpool2d_bwd(&u.pool, u.dy1, dy.g + n * u.img_g, dy.argmax + n * u.img_g);
        k_conv_im2col_bwd_data(&u.one, IM2COL_GROUP, dx + n * u.img_x, u.dy1, w, scratch);
    }
}

void k_conv2d_bwd_weight_unpool2_part(const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy, float *scratch,
                                      float *acc, int first, int last, k_conv_prologue pro) {
    k_conv2d_bwd_weight_unpool2_part_m(k_conv_choose_unpool2(s, K_CONV_BWD_WEIGHT), s, dw, x, dy, scratch, acc, first,
                                       last, pro);
}
void k_conv2d_bwd_weight_unpool2_part_m(int method, const k_conv_shape *s, float *dw, const float *x, k_unpool2 dy,
                                        float *scratch, float *acc, int first, int last, k_conv_prologue pro) {
    if (method == K_CONV_SPARSE) {
        k_conv_sparse_bwd_weight_unpool2_part(s, dw, x, dy, scratch, acc, first, last, pro);
        return;
    }
    if (method == K_CONV_ROWS) {
        k_conv_rows_bwd_weight_part(s, dw, NULL, x, NULL, dy, scratch, acc, first, last, pro);
        return;
    }
    if (method == K_CONV_DIRECT) {
        k_conv_direct_bwd_weight_unpool2_part(s, dw, x, dy, scratch, acc, first, last, pro);
        return;
    }
    unpool_images u = unpool_images_of(s, scratch);
    for (int n = 0; n < s->N; n++) {
        k_maxpool2d_bwd(&u.pool, u.dy1, dy.g + n * u.img_g, dy.argmax + n * u.img_g);
        k_conv_im2col_bwd_weight_part(&u.one, IM2COL_GROUP, dw, image_of(s, &pro, x, n, scratch), u.dy1, scratch,
                                      first && n == 0);
    }
}

double k_conv2d_bwd_data_unpool2_macs(const k_conv_shape *s) {
    if (k_conv_choose_unpool2(s, K_CONV_BWD_DATA) == K_CONV_SPARSE) return k_conv_sparse_data_executed_macs(s);
    return (double)s->N * s->Co * s->Ho * s->Wo * s->Ci * s->kh * s->kw;
}

double k_conv2d_bwd_weight_unpool2_macs(const k_conv_shape *s) {
    if (k_conv_choose_unpool2(s, K_CONV_BWD_WEIGHT) == K_CONV_SPARSE) return k_conv_sparse_executed_macs(s);
    return (double)s->N * s->Co * s->Ho * s->Wo * s->Ci * s->kh * s->kw;
}

size_t k_conv2d_unpool2_share_floats(const k_conv_shape *s) {
    if (k_conv_choose_unpool2(s, K_CONV_BWD_DATA) != K_CONV_DIRECT || /* the sparse passes read (g, argmax) */
        k_conv_choose_unpool2(s, K_CONV_BWD_WEIGHT) != K_CONV_DIRECT)   /* themselves */
        return 0;
    return k_conv_direct_unpool2_share_floats(s);
}

void k_conv2d_bwd_data_masked(const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up, const float *w,
                              const float *relu_mask, float *scratch, k_conv_packed pk) {
    int method = up.g ? k_conv_choose_unpool2(s, K_CONV_BWD_DATA) : k_conv_choose(s, K_CONV_BWD_DATA);
    k_conv2d_bwd_data_masked_m(method, s, dx, dy, up, w, relu_mask, scratch, pk);
}
void k_conv2d_bwd_data_masked_m(int method, const k_conv_shape *s, float *dx, const float *dy, k_unpool2 up,
                                const float *w, const float *relu_mask, float *scratch, k_conv_packed pk) {
    if (up.g && method == K_CONV_SPARSE) {
        k_conv_sparse_bwd_data_unpool2(s, dx, up, w, relu_mask, scratch, pk);
        return;
    }
    if (method == K_CONV_DIRECT) {
        k_conv_direct_bwd_data_masked(s, dx, dy, up, w, relu_mask, scratch, pk);
        return;
    }
    if (up.g) bwd_data_unpool2_m(method, s, dx, up, w, scratch);
    else bwd_data_m(method, s, dx, dy, w, scratch);
    if (relu_mask) k_relu_bwd_inplace(dx, relu_mask, (size_t)s->N * s->Ci * s->H * s->W);
}

/* ---- one method's needs (the engine's choice at compile time, impl.c) ------------ */

/* Floats of scratch the method needs for a node of this kind (enum
 * k_op_kind). The image-by-image paths (im2col, and rows under a pool) keep
 * the layouts above: the whole k_conv2d_*_scratch. */
size_t k_conv2d_method_scratch(int method, int kind, const k_conv_shape *s) {
    switch (method) {
    case K_CONV_DIRECT: return k_conv_direct_scratch(s) + 16;
    case K_CONV_SPARSE:
        return (kind == K_OP_CONV_BWD_DATA_UNPOOL2 ? k_conv_sparse_data_scratch(s) : k_conv_sparse_scratch(s)) + 16;
    case K_CONV_ROWS:
        if (kind != K_OP_CONV_FWD_POOL2) return k_conv_rows_scratch(s) + 16;
        break;
    default: break;
    }
    if (kind == K_OP_CONV_FWD_POOL2) return k_conv2d_pool2_scratch(s);
    if (kind == K_OP_CONV_BWD_DATA_UNPOOL2 || kind == K_OP_CONV_BWD_WEIGHT_UNPOOL2) return k_conv2d_unpool2_scratch(s);
    return k_conv2d_scratch(s);
}

/* Floats a tiled node of this kind keeps between tiles under the method: a
 * weight gradient's running sums, or the weights a forward or backward-data
 * pass packs once per step. */
size_t k_conv2d_method_state(int method, int kind, const k_conv_shape *s) {
    switch (kind) {
    case K_OP_CONV_BWD_WEIGHT:
    case K_OP_CONV_BWD_WEIGHT_UNPOOL2:
        return method == K_CONV_DIRECT ? k_conv_direct_bwd_weight_acc_floats(s)
               : method == K_CONV_ROWS ? k_conv_rows_bwd_weight_acc_floats(s)
               : method == K_CONV_SPARSE ? k_conv_sparse_acc_floats(s)
                                         : 0; /* im2col accumulates in dw itself */
    case K_OP_CONV_FWD:
    case K_OP_CONV_FWD_POOL2: return method == K_CONV_DIRECT ? k_conv_direct_packed_floats(s, K_CONV_FWD) : 0;
    case K_OP_CONV_BWD_DATA:
    case K_OP_CONV_BWD_DATA_UNPOOL2:
        if (method == K_CONV_SPARSE) return k_conv_sparse_data_packed_floats(s);
        return method == K_CONV_DIRECT ? k_conv_direct_packed_floats(s, K_CONV_BWD_DATA) : 0;
    default: return 0;
    }
}

double k_conv2d_method_macs(int method, int kind, const k_conv_shape *s) {
    if (method == K_CONV_SPARSE && kind == K_OP_CONV_BWD_DATA_UNPOOL2) return k_conv_sparse_data_executed_macs(s);
    if (method == K_CONV_SPARSE && kind == K_OP_CONV_BWD_WEIGHT_UNPOOL2) return k_conv_sparse_executed_macs(s);
    return (double)s->N * s->Co * s->Ho * s->Wo * s->Ci * s->kh * s->kw;
}

size_t k_conv2d_method_share_floats(const k_conv_shape *s, int data, int weight) {
    if (data != K_CONV_DIRECT || weight != K_CONV_DIRECT) return 0; /* the sparse passes read (g, argmax) themselves */
    return k_conv_direct_unpool2_share_floats(s);
}
