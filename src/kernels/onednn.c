/* onednn.c — oneDNN primitives as candidate kernels (onednn.h).
 *
 * Is: a process-wide table of prepared calls, one per (variant, node shape,
 * leading dimensions): the primitive descriptor, the primitive, for each
 * operand a memory object on the engine's buffer and, where oneDNN wants
 * another layout, a reorder into (or out of) a buffer in the call's scratch;
 * oneDNN's scratchpad in the call's scratch too (user scratchpad mode), so
 * the engine's memory plan accounts for every byte a call touches.
 * Is not: a cache of results or of reordered weights, nor anything
 * multi-threaded: one stream, one thread, one process.
 *
 * What the engine's own kernels fuse and oneDNN has no counterpart for (a 2x2
 * max pool after the convolution, the pool's gradient scattered into its
 * backward passes) leaves the node to the own kernels: those kinds are not
 * valid here. A ReLU after a forward convolution is oneDNN's eltwise post-op;
 * a ReLU's backward after bwd-data is the engine's mask, applied after the
 * call; batch norm's apply read into a convolution (the prologue) is made
 * into the scratch first, one elementwise pass, the measured choice then
 * weighing that against the own kernels' fused packing. Where the primitive
 * wants x blocked, that pass writes it blocked and there is no reorder
 * (block_layout.h), as there is none for a mask read out of a blocked dx or
 * for a dy the engine's layout pass hands over blocked (k_op_desc.ddst_block).
 */
#include "kernels/onednn.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/block_layout.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

/* ---- the engine -------------------------------------------------------------- */

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static int engine_state; /* 0: not tried, 1: ready, -1: the library cannot run here */

/* oneDNN's OpenMP runtime would start a thread per core in every worker
 * process, each of which already is one core's worth of work: one thread. The
 * runtime is libdnnl's own dependency, so it is looked up, not linked. */
static void one_thread(void) {
    void *sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    void (*set)(int);
    if (!sym) return;
    memcpy(&set, &sym, sizeof set);
    set(1);
}

/* The ISA the project's kernels are capped at (k_simd_level) caps oneDNN's
 * too, so a capped run measures what a CPU of that kind would run. */
static void cap_isa(void) {
    int lvl = k_simd_level();
    if (lvl == K_SIMD_AVX2) dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
    else if (lvl != K_SIMD_AVX512) dnnl_set_max_cpu_isa(dnnl_cpu_isa_sse41);
}

static int engine_ready(void) {
    if (engine_state) return engine_state > 0;
    engine_state = -1;
    one_thread();
    cap_isa();
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) return 0;
    if (dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) return 0;
    engine_state = 1;
    return 1;
}

int k_onednn_available(void) { return engine_ready(); }

/* The linked library's own: no engine, so the supervising process (results.json,
 * the choice cache's key) never initializes oneDNN before it forks workers. */
const char *k_onednn_version(void) {
    static char version[32];
    if (!version[0]) {
        const dnnl_version_t *v = dnnl_version();
        snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    }
    return version;
}

/* ---- one prepared call ----------------------------------------------------------- */

enum { ARG_MAX = 4, ALIGN = 64 };

typedef struct operand {
    int arg;                   /* DNNL_ARG_* */
    int out;                   /* written by the primitive */
    dnnl_memory_t user;        /* on the engine's buffer, in the engine's layout */
    dnnl_memory_t inner;       /* in the primitive's layout (NULL: the same as user) */
    dnnl_primitive_t reorder;  /* user -> inner for inputs, inner -> user for outputs */
    size_t off;                /* inner's place in the scratch */
    size_t bytes;              /* inner's size */
} operand;

typedef struct call {
    int variant, lda, ldb;
    int src_block;             /* fp32 x in nChw8c / nChw16c (8, 16; else 0): a prologue writes it there */
    int dsrc_block;            /* the same for backward-data's dx: read out of it through a ReLU's mask */
    int ddst_block;            /* the same for a backward pass's dy: the layout pass may hand it over so */
    uint64_t reorder_ns, all_ns; /* time in those reorders, and in whole calls, since the call was made */
    k_op_desc d;
    int ok;                    /* an optimized implementation in the wanted layouts */
    char impl[96];
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    operand op[ARG_MAX];
    int nop;
    dnnl_memory_t pad;         /* the scratchpad */
    size_t pad_bytes;
    size_t part_off, part_bytes; /* a weight gradient's part, summed into the tile state */
    size_t used;               /* bytes from the aligned base: the above */
    size_t scratch;            /* bytes in all, with room to align the base */
    float *zero_bias;          /* a forward call given no bias */
    void *own_scratch;         /* when the caller's is smaller than this call needs (k_op_args.scratch_cap) */
    struct call *next;
} call;

enum { BUCKETS = 256 };
static call *table[BUCKETS];

static int is_any(int variant) { return variant == K_ONEDNN_F32_ANY || variant == K_ONEDNN_BF16_ANY; }
static int is_bf16(int variant) { return variant == K_ONEDNN_BF16 || variant == K_ONEDNN_BF16_ANY; }
static size_t up64(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* The fields a primitive depends on (a ReLU's backward is applied after the call). */
static k_op_desc key_of(const k_op_desc *d) {
    k_op_desc k;
    memset(&k, 0, sizeof k);
    k.kind = d->kind;
    k.bf16 = d->bf16;
    if (d->kind == K_OP_MATMUL) {
        k.M = d->M, k.N = d->N, k.K = d->K, k.tA = d->tA, k.tB = d->tB;
    } else {
        k.s = d->s;
        k.relu = d->kind == K_OP_CONV_FWD ? d->relu : 0;
        k.ddst_block = d->kind == K_OP_CONV_FWD ? 0 : d->ddst_block; /* the user's layout of dy */
    }
    return k;
}

static unsigned bucket_of(const k_op_desc *k, int variant, int lda, int ldb) {
    const unsigned char *b = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(variant * 31 + lda * 7 + ldb);
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return (unsigned)(h % BUCKETS);
}

static int set_tag(dnnl_memory_desc_t *md, int ndims, const dnnl_dims_t dims, dnnl_data_type_t t, dnnl_format_tag_t tag) {
    return dnnl_memory_desc_init_by_tag(md, ndims, dims, t, tag) == dnnl_success;
}

/* The channel block of an fp32 activation the primitive wants in nChw16c or
 * nChw8c with no padded channels (block_layout.h writes and reads exactly
 * those), else 0. */
static int channel_block(const dnnl_memory_desc_t *inner, const dnnl_dims_t dims) {
    static const struct {
        dnnl_format_tag_t tag;
        int block;
    } blocked[] = {{dnnl_nChw16c, 16}, {dnnl_nChw8c, 8}};
    for (size_t i = 0; i < sizeof blocked / sizeof *blocked; i++) {
        dnnl_memory_desc_t md;
        if (dims[1] % blocked[i].block == 0 && set_tag(&md, 4, dims, dnnl_f32, blocked[i].tag) &&
            dnnl_memory_desc_equal(inner, &md))
            return blocked[i].block;
    }
    return 0;
}

static const char *arg_name(int arg) {
    switch (arg) {
    case DNNL_ARG_SRC: return "src";
    case DNNL_ARG_WEIGHTS: return "wei";
    case DNNL_ARG_DST: return "dst";
    case DNNL_ARG_DIFF_SRC: return "dsrc";
    case DNNL_ARG_DIFF_DST: return "ddst";
    case DNNL_ARG_DIFF_WEIGHTS: return "dwei";
    default: return "bias";
    }
}

/* The operand in the engine's layout (user) and as the primitive wants it. */
static int add_operand(call *c, int arg, int out, const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *inner_md,
                       size_t *off) {
    operand *o = &c->op[c->nop++];
    o->arg = arg;
    o->out = out;
    if (dnnl_memory_create(&o->user, user_md, engine, DNNL_MEMORY_NONE) != dnnl_success) return 0;
    if (dnnl_memory_desc_equal(user_md, inner_md)) return 1;
    const dnnl_memory_desc_t *from = out ? inner_md : user_md, *to = out ? user_md : inner_md;
    dnnl_primitive_desc_t rpd;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, engine, to, engine, NULL) != dnnl_success) return 0;
    dnnl_status_t st = dnnl_primitive_create(&o->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (st != dnnl_success) return 0;
    if (dnnl_memory_create(&o->inner, inner_md, engine, DNNL_MEMORY_NONE) != dnnl_success) return 0;
    o->off = *off;
    o->bytes = dnnl_memory_desc_get_size(inner_md);
    *off += up64(o->bytes);
    return 1;
}

/* The primitive descriptor oneDNN ranks first for desc, with its name. */
static dnnl_primitive_desc_t make_pd(const void *desc, const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint,
                                     char *impl, size_t cap) {
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, desc, attr, engine, hint) != dnnl_success) return NULL;
    const char *name = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(impl, cap, "%s", name ? name : "");
    return pd;
}

static dnnl_primitive_attr_t make_attr(int relu) {
    dnnl_primitive_attr_t attr;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (relu) {
        dnnl_post_ops_t po;
        dnnl_post_ops_create(&po);
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
        dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    return attr;
}

/* A convolution pass: x (N,Ci,H,W), w (Co,Ci,kh,kw), y (N,Co,Ho,Wo), NCHW/OIHW
 * for the engine; `any` lets oneDNN pick the three layouts. */
static int prepare_conv(call *c) {
    const k_conv_shape *s = &c->d.s;
    int bf = is_bf16(c->variant);
    dnnl_data_type_t lo = bf ? dnnl_bf16 : dnnl_f32; /* the operands read; results are fp32 */
    dnnl_dims_t xd = {s->N, s->Ci, s->H, s->W}, wd = {s->Co, s->Ci, s->kh, s->kw}, yd = {s->N, s->Co, s->Ho, s->Wo},
                bd = {s->Co};
    dnnl_dims_t strides = {s->sh, s->sw}, pl = {s->ph, s->pw},
                pr = {(s->Ho - 1) * s->sh + s->kh - s->H - s->ph, (s->Wo - 1) * s->sw + s->kw - s->W - s->pw};
    /* negative where the last window stops short of the edge (1x1, stride 2, even H): oneDNN takes it */
    int kind = c->d.kind;
    /* the types by role: forward reads x, w (lo) and writes y (f32); bwd-data
     * reads dy, w (lo) and writes dx (f32); bwd-weight reads x, dy (lo), writes dw (f32) */
    dnnl_data_type_t xt = kind == K_OP_CONV_BWD_DATA ? dnnl_f32 : lo, wt = kind == K_OP_CONV_BWD_WEIGHT ? dnnl_f32 : lo,
                     yt = kind == K_OP_CONV_FWD ? dnnl_f32 : lo;
    dnnl_format_tag_t act = is_any(c->variant) ? dnnl_format_tag_any : dnnl_nchw,
                      wei = is_any(c->variant) ? dnnl_format_tag_any : dnnl_oihw;
    dnnl_format_tag_t dy_user = c->d.ddst_block == 16 ? dnnl_nChw16c : c->d.ddst_block == 8 ? dnnl_nChw8c : dnnl_nchw;
    if (c->d.ddst_block && (bf || kind == K_OP_CONV_FWD)) return 0;
    dnnl_memory_desc_t xm, wm, ym, bm, xu, wu, yu;
    if (!set_tag(&xm, 4, xd, xt, act) || !set_tag(&wm, 4, wd, wt, wei) || !set_tag(&ym, 4, yd, yt, act) ||
        !set_tag(&bm, 1, bd, dnnl_f32, dnnl_a) || !set_tag(&xu, 4, xd, xt, dnnl_nchw) ||
        !set_tag(&wu, 4, wd, wt, dnnl_oihw) || !set_tag(&yu, 4, yd, yt, kind == K_OP_CONV_FWD ? dnnl_nchw : dy_user))
        return 0;

    /* backward passes are described against a forward one (their hint): it reads lo, writes y as dy is */
    dnnl_memory_desc_t fxm, fwm, fym;
    if (!set_tag(&fxm, 4, xd, lo, act) || !set_tag(&fwm, 4, wd, lo, wei) ||
        !set_tag(&fym, 4, yd, kind == K_OP_CONV_FWD ? dnnl_f32 : lo, act))
        return 0;
    dnnl_convolution_desc_t fwd, bwd;
    if (dnnl_convolution_forward_desc_init(&fwd, dnnl_forward_training, dnnl_convolution_direct, &fxm, &fwm, &bm, &fym,
                                           strides, pl, pr) != dnnl_success)
        return 0;
    dnnl_primitive_attr_t attr = make_attr(kind == K_OP_CONV_FWD && c->d.relu);
    if (!attr) return 0;
    char hint_impl[96];
    dnnl_primitive_desc_t hint = NULL;
    if (kind == K_OP_CONV_FWD) {
        c->pd = make_pd(&fwd, attr, NULL, c->impl, sizeof c->impl);
    } else {
        hint = make_pd(&fwd, NULL, NULL, hint_impl, sizeof hint_impl);
        dnnl_status_t st = kind == K_OP_CONV_BWD_DATA
                               ? dnnl_convolution_backward_data_desc_init(&bwd, dnnl_convolution_direct, &xm, &wm, &ym,
                                                                          strides, pl, pr)
                               : dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &xm, &wm,
                                                                             NULL, &ym, strides, pl, pr);
        if (hint && st == dnnl_success) c->pd = make_pd(&bwd, attr, hint, c->impl, sizeof c->impl);
        if (hint) dnnl_primitive_desc_destroy(hint);
    }
    dnnl_primitive_attr_destroy(attr);
    if (!c->pd || strstr(c->impl, "ref")) return 0;

    dnnl_query_t xq = kind == K_OP_CONV_BWD_DATA ? dnnl_query_diff_src_md : dnnl_query_src_md,
                 wq = kind == K_OP_CONV_BWD_WEIGHT ? dnnl_query_diff_weights_md : dnnl_query_weights_md,
                 yq = kind == K_OP_CONV_FWD ? dnnl_query_dst_md : dnnl_query_diff_dst_md;
    const dnnl_memory_desc_t *xi = dnnl_primitive_desc_query_md(c->pd, xq, 0),
                             *wi = dnnl_primitive_desc_query_md(c->pd, wq, 0),
                             *yi = dnnl_primitive_desc_query_md(c->pd, yq, 0);
    /* an `any` variant whose layouts are the plain ones is the plain variant again */
    if (is_any(c->variant) && dnnl_memory_desc_equal(xi, &xu) && dnnl_memory_desc_equal(wi, &wu) &&
        dnnl_memory_desc_equal(yi, &yu))
        return 0;
    const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(c->pd, dnnl_query_scratchpad_md, 0);
    c->pad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
    if (pad && dnnl_memory_create(&c->pad, pad, engine, DNNL_MEMORY_NONE) != dnnl_success) return 0;
    size_t off = up64(c->pad_bytes);
    int ok = 1;
    if (kind == K_OP_CONV_FWD)
        ok = add_operand(c, DNNL_ARG_SRC, 0, &xu, xi, &off) && add_operand(c, DNNL_ARG_WEIGHTS, 0, &wu, wi, &off) &&
             add_operand(c, DNNL_ARG_DST, 1, &yu, yi, &off) && add_operand(c, DNNL_ARG_BIAS, 0, &bm, &bm, &off);
    else if (kind == K_OP_CONV_BWD_DATA)
        ok = add_operand(c, DNNL_ARG_DIFF_DST, 0, &yu, yi, &off) && add_operand(c, DNNL_ARG_WEIGHTS, 0, &wu, wi, &off) &&
             add_operand(c, DNNL_ARG_DIFF_SRC, 1, &xu, xi, &off);
    else {
        ok = add_operand(c, DNNL_ARG_SRC, 0, &xu, xi, &off) && add_operand(c, DNNL_ARG_DIFF_DST, 0, &yu, yi, &off) &&
             add_operand(c, DNNL_ARG_DIFF_WEIGHTS, 1, &wu, wi, &off);
        c->part_off = off;
        c->part_bytes = up64((size_t)s->Co * s->Ci * s->kh * s->kw * sizeof(float));
        off += c->part_bytes;
    }
    /* the layout changes the engine's own passes can make on the way (block_layout.h) */
    if (kind == K_OP_CONV_BWD_DATA) c->dsrc_block = channel_block(xi, xd);
    else if (!bf) c->src_block = channel_block(xi, xd);
    if (kind != K_OP_CONV_FWD && !bf) c->ddst_block = channel_block(yi, yd);
    c->used = off, c->scratch = off + ALIGN;
    return ok;
}

/* C (M,N) = op(A) op(B), row-major with leading dimensions lda, ldb, ldc = N. */
static int prepare_matmul(call *c) {
    const k_op_desc *d = &c->d;
    dnnl_data_type_t lo = is_bf16(c->variant) ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t ad = {d->M, d->K}, bd = {d->K, d->N}, cd = {d->M, d->N};
    dnnl_dims_t as = {d->tA ? 1 : c->lda, d->tA ? c->lda : 1}, bs = {d->tB ? 1 : c->ldb, d->tB ? c->ldb : 1},
                cs = {d->N, 1};
    dnnl_memory_desc_t am, bm, cm;
    if (dnnl_memory_desc_init_by_strides(&am, 2, ad, lo, as) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&bm, 2, bd, lo, bs) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&cm, 2, cd, dnnl_f32, cs) != dnnl_success)
        return 0;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &am, &bm, NULL, &cm) != dnnl_success) return 0;
    dnnl_primitive_attr_t attr = make_attr(0);
    if (!attr) return 0;
    c->pd = make_pd(&md, attr, NULL, c->impl, sizeof c->impl);
    dnnl_primitive_attr_destroy(attr);
    if (!c->pd || strstr(c->impl, "ref")) return 0;
    const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(c->pd, dnnl_query_scratchpad_md, 0);
    c->pad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
    if (pad && dnnl_memory_create(&c->pad, pad, engine, DNNL_MEMORY_NONE) != dnnl_success) return 0;
    size_t off = up64(c->pad_bytes);
    int ok = add_operand(c, DNNL_ARG_SRC, 0, &am, &am, &off) && add_operand(c, DNNL_ARG_WEIGHTS, 0, &bm, &bm, &off) &&
             add_operand(c, DNNL_ARG_DST, 1, &cm, &cm, &off);
    c->used = off, c->scratch = off + ALIGN;
    return ok;
}

static int kind_supported(int variant, const k_op_desc *d) {
    if (!d->bf16 != !is_bf16(variant)) return 0;
    /* batch norm's apply (and a ReLU) read into the convolution: made into the
     * scratch first (fp32 forward and weight gradient, where the engine fuses it) */
    if (d->prologue && (is_bf16(variant) || (d->kind != K_OP_CONV_FWD && d->kind != K_OP_CONV_BWD_WEIGHT))) return 0;
    switch (d->kind) {
    case K_OP_CONV_FWD:
    case K_OP_CONV_BWD_DATA:
    case K_OP_CONV_BWD_WEIGHT: return 1;
    case K_OP_MATMUL: return !is_any(variant); /* oneDNN's matmul reads the engine's row-major matrices in place */
    default: return 0;
    }
}

/* The prepared call, made on first use (NULL when the variant cannot run d). */
static call *call_for(int variant, const k_op_desc *d, int lda, int ldb) {
    if (!kind_supported(variant, d) || !engine_ready()) return NULL;
    k_op_desc k = key_of(d);
    if (k.kind != K_OP_MATMUL) lda = ldb = 0;
    unsigned b = bucket_of(&k, variant, lda, ldb);
    for (call *c = table[b]; c; c = c->next)
        if (c->variant == variant && c->lda == lda && c->ldb == ldb && !memcmp(&c->d, &k, sizeof k))
            return c->ok ? c : NULL;
    call *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->variant = variant, c->lda = lda, c->ldb = ldb, c->d = k;
    c->ok = (k.kind == K_OP_MATMUL ? prepare_matmul(c) : prepare_conv(c)) &&
            dnnl_primitive_create(&c->prim, c->pd) == dnnl_success;
    c->next = table[b];
    table[b] = c; /* kept when not ok too, so the question is asked once */
    return c->ok ? c : NULL;
}

/* The engine's matrices are dense: op(A)'s rows are K (or M when transposed) long. */
static call *call_dense(int variant, const k_op_desc *d) {
    return call_for(variant, d, d->tA ? d->M : d->K, d->tB ? d->K : d->N);
}

int k_onednn_valid(int variant, const k_op_desc *d) { return call_dense(variant, d) != NULL; }

int k_onednn_ddst_block(int variant, const k_op_desc *d) {
    if (d->kind != K_OP_CONV_BWD_DATA && d->kind != K_OP_CONV_BWD_WEIGHT) return 0;
    k_op_desc plain = *d;
    plain.ddst_block = 0;
    call *c = call_dense(variant, &plain);
    return c ? c->ddst_block : 0;
}

/* A prologue written in the primitive's blocked layout replaces the src
 * reorder; a ReLU's mask read out of it, the dsrc one (block_layout.h). */
static int prologue_blocked(const call *c, const k_op_desc *d) { return d->prologue && c->src_block; }
static int mask_blocked(const call *c, const k_op_desc *d) {
    return d->kind == K_OP_CONV_BWD_DATA && d->relu && c->dsrc_block;
}

/* x through the prologue, after the call's own bytes (none when it goes
 * straight into the src operand's buffer) */
static size_t prologue_bytes(const call *c, const k_op_desc *d) {
    if (!d->prologue || prologue_blocked(c, d)) return 0;
    return up64((size_t)d->s.N * d->s.Ci * d->s.H * d->s.W * sizeof(float));
}

size_t k_onednn_scratch(int variant, const k_op_desc *d) {
    call *c = call_dense(variant, d);
    return c ? c->scratch + prologue_bytes(c, d) : 0;
}

/* The weight operand (weights or their gradient) when the call reorders it, else NULL. */
static const operand *reordered_weight(const call *c) {
    for (int i = 0; i < c->nop; i++)
        if ((c->op[i].arg == DNNL_ARG_WEIGHTS || c->op[i].arg == DNNL_ARG_DIFF_WEIGHTS) && c->op[i].inner) return &c->op[i];
    return NULL;
}

/* What a tiled node keeps from its step's first tile to its last: the
 * weights in oneDNN's layout, reordered once per step, not once per tile
 * (forward, backward-data); the weight gradient's running sum, in oneDNN's
 * layout when the primitive writes that, so it is reordered once, at the
 * last tile (the same additions per element, in the same order: the same
 * bits as summing reordered parts). */
size_t k_onednn_state(int variant, const k_op_desc *d) {
    const k_conv_shape *s = &d->s;
    call *c = d->kind == K_OP_MATMUL ? NULL : call_dense(variant, d);
    const operand *w = c ? reordered_weight(c) : NULL;
    size_t plain = (size_t)s->Co * s->Ci * s->kh * s->kw * sizeof(float);
    if (d->kind == K_OP_CONV_BWD_WEIGHT) return w && w->bytes > plain ? w->bytes : plain;
    return w ? w->bytes : 0;
}

const char *k_onednn_impl(int variant, const k_op_desc *d) {
    call *c = call_dense(variant, d);
    return c ? c->impl : "";
}

/* ---- running it ------------------------------------------------------------------ */

/* relu?(x * scale[c] + shift[c]) for every value of x, the product and the sum
 * each rounded to fp32 (never one FMA: -std=c11 does not contract, and the sum
 * is a statement of its own), as the own kernels' prologue makes them. */
static const float *through_prologue(const k_conv_shape *s, const k_conv_prologue *pro, const float *x, float *out) {
    size_t HW = (size_t)s->H * s->W;
    for (int n = 0; n < s->N; n++)
        for (int c = 0; c < s->Ci; c++) {
            const float *xi = x + ((size_t)n * s->Ci + c) * HW;
            float *o = out + ((size_t)n * s->Ci + c) * HW, sc = pro->scale[c], sh = pro->shift[c];
            for (size_t i = 0; i < HW; i++) {
                float t = xi[i] * sc;
                t = t + sh;
                o[i] = pro->relu ? (t > 0.0f ? t : 0.0f) : t;
            }
        }
    return out;
}

static void fail(const call *c, const char *what) {
    fprintf(stderr, "xlatrain: internal error: oneDNN %s failed for %s (a compiled node's primitive)\n", what, c->impl);
    abort();
}

static void exec(const call *c, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args, const char *what) {
    if (dnnl_primitive_execute(prim, stream, n, args) != dnnl_success) fail(c, what);
}

static void set_handle(const call *c, dnnl_memory_t m, const void *p) {
    if (dnnl_memory_set_data_handle(m, (void *)p) != dnnl_success) fail(c, "set_data_handle");
}

/* The buffers of each operand, in op order; the weight gradient's target is
 * the node's output, the tile state (a first part) or the part buffer. */
static void buffers(call *c, const k_op_desc *d, const k_op_args *a, const void **p, float *target) {
    switch (d->kind) {
    case K_OP_CONV_FWD:
        if (!a->bias && !c->zero_bias) {
            c->zero_bias = calloc((size_t)d->s.Co, sizeof(float));
            if (!c->zero_bias) fail(c, "zero bias allocation");
        }
        p[0] = a->x, p[1] = a->w, p[2] = a->out, p[3] = a->bias ? a->bias : c->zero_bias;
        break;
    case K_OP_CONV_BWD_DATA: p[0] = a->dy, p[1] = a->w, p[2] = a->out; break;
    case K_OP_CONV_BWD_WEIGHT: p[0] = a->x, p[1] = a->dy, p[2] = target; break;
    default: p[0] = a->x, p[1] = a->w, p[2] = a->out; break;
    }
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A reorder, timed: the CPU engine runs it before execute returns. */
static void reorder(call *c, const operand *o, int in) {
    uint64_t t0 = now_ns();
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, in ? o->user : o->inner}, {DNNL_ARG_TO, in ? o->inner : o->user}};
    exec(c, o->reorder, 2, args, "reorder");
    c->reorder_ns += now_ns() - t0;
}

/* The operands a call of d's reorders on every call ("src,wei,dst"): those
 * in another layout than the engine's, but for one a prologue writes or a
 * mask reads in that layout; with the share of the call's time in reorders
 * once it has run. */
int k_onednn_reorders(int variant, const k_op_desc *d, char *buf, size_t cap) {
    call *c = call_dense(variant, d);
    buf[0] = 0;
    if (!c) return 0;
    char names[48] = "";
    for (int i = 0; i < c->nop; i++) {
        const operand *o = &c->op[i];
        if (!o->inner || (o->arg == DNNL_ARG_SRC && prologue_blocked(c, d)) ||
            (o->arg == DNNL_ARG_DIFF_SRC && mask_blocked(c, d)))
            continue;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", len ? "," : "", arg_name(o->arg));
    }
    if (!names[0]) return 0;
    if (c->all_ns) snprintf(buf, cap, "%s %.0f%%", names, 100.0 * (double)c->reorder_ns / (double)c->all_ns);
    else snprintf(buf, cap, "%s", names);
    return 1;
}

void k_onednn_run(int variant, const k_op_desc *d, const k_op_args *a) {
    uint64_t t_call = now_ns();
    int dense = d->kind != K_OP_MATMUL || (a->lda == (d->tA ? d->M : d->K) && a->ldb == (d->tB ? d->K : d->N));
    call *c = dense ? call_dense(variant, d) : call_for(variant, d, a->lda, a->ldb);
    if (!c) {
        fprintf(stderr, "xlatrain: internal error: a node compiled for oneDNN has no primitive on this process\n");
        abort();
    }
    /* the plan reserved scratch for the whole batch; a tile's primitive could
     * (in principle) want more: then a buffer of its own, made once */
    void *scratch = a->scratch;
    size_t need = c->scratch + prologue_bytes(c, d);
    if (a->scratch_cap && need > a->scratch_cap) {
        if (!c->own_scratch && !(c->own_scratch = malloc(need))) fail(c, "scratch allocation");
        scratch = c->own_scratch;
    }
    char *base = (char *)(((uintptr_t)scratch + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    /* a weight gradient over tiles: parts summed in batch order in the tile state */
    int parts = d->kind == K_OP_CONV_BWD_WEIGHT && a->acc && !(a->first && a->last);
    float *part = (float *)(base + c->part_off);
    float *target = !parts ? a->out : a->first ? a->acc : part;

    const void *p[ARG_MAX];
    buffers(c, d, a, p, target);
    int pro_in = prologue_blocked(c, d) && a->pro.scale;                     /* straight into src's layout */
    int mask_out = d->kind == K_OP_CONV_BWD_DATA && a->relu_mask && c->dsrc_block; /* out of dsrc's */
    if (d->prologue && a->pro.scale && !pro_in) p[0] = through_prologue(&d->s, &a->pro, a->x, (float *)(base + c->used));
    /* a weight gradient over tiles that the primitive writes in its own layout: summed in that layout */
    const operand *dw = parts ? reordered_weight(c) : NULL;
    dnnl_exec_arg_t args[ARG_MAX + 1];
    int n = 0;
    for (int i = 0; i < c->nop; i++) {
        const operand *o = &c->op[i];
        set_handle(c, o->user, p[i]);
        dnnl_memory_t m = o->user;
        if (o->inner) {
            void *at = base + o->off;
            int fresh = 1;
            if (o->arg == DNNL_ARG_WEIGHTS && a->pk.buf) at = a->pk.buf, fresh = a->pk.fresh; /* once per step */
            if (o == dw && a->first) at = a->acc;
            set_handle(c, o->inner, at);
            m = o->inner;
            if (o->arg == DNNL_ARG_SRC && pro_in)
                k_block_prologue(d->s.N, d->s.Ci, d->s.H * d->s.W, c->src_block, &a->pro, a->x, at);
            else if (!o->out && fresh)
                reorder(c, o, 1);
        }
        args[n++] = (dnnl_exec_arg_t){o->arg, m};
    }
    if (c->pad) {
        set_handle(c, c->pad, base);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, c->pad};
    }
    exec(c, c->prim, n, args, "execute");
    for (int i = 0; i < c->nop; i++) {
        const operand *o = &c->op[i];
        if (o->inner && o->out && o != dw) {
            if (o->arg == DNNL_ARG_DIFF_SRC && mask_out)
                k_unblock_masked(d->s.N, d->s.Ci, d->s.H * d->s.W, c->dsrc_block, (const float *)(base + o->off), a->relu_mask,
                                 a->out);
            else
                reorder(c, o, 0);
        }
    }
    if (dnnl_stream_wait(stream) != dnnl_success) fail(c, "stream wait");

    if (d->kind == K_OP_CONV_BWD_DATA && a->relu_mask && !mask_out)
        k_relu_bwd_inplace(a->out, a->relu_mask, (size_t)d->s.N * d->s.Ci * d->s.H * d->s.W);
    if (dw) {
        const float *part_in = (const float *)(base + dw->off);
        if (!a->first)
            for (size_t i = 0; i < dw->bytes / sizeof(float); i++) a->acc[i] += part_in[i];
        if (a->last) {
            set_handle(c, dw->inner, a->acc);
            set_handle(c, dw->user, a->out);
            reorder(c, dw, 0); /* into the node's output, OIHW */
        }
    } else if (parts) {
        size_t nw = (size_t)d->s.Co * d->s.Ci * d->s.kh * d->s.kw;
        if (!a->first)
            for (size_t i = 0; i < nw; i++) a->acc[i] += part[i];
        if (a->last) memcpy(a->out, a->acc, nw * sizeof(float));
    }
    c->all_ns += now_ns() - t_call;
}
