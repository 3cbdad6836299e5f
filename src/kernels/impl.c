/* impl.c — the table of candidate implementations (impl.h): each one's
 * validity, scratch, tile state and run function, and today's fixed rule.
 *
 * The run functions call the k_conv2d_*_m / k_sgemm_m / k_gemm_bf16_m entry
 * points with the method fixed, so a node runs what was chosen for it when
 * its graph compiled, on every call, whatever a rule would say now.
 */
#include "kernels/impl.h"

#include <stdio.h>
#include <string.h>

#include "kernels/conv.h"
#include "kernels/conv_rows.h"
#include "kernels/conv_sparse.h"
#include "kernels/onednn.h"
#include "kernels/simd.h"

static int is_conv(const k_op_desc *d) { return d->kind != K_OP_MATMUL; }
static int pass_of(int kind) {
    return kind == K_OP_CONV_FWD || kind == K_OP_CONV_FWD_POOL2           ? K_CONV_FWD
           : kind == K_OP_CONV_BWD_DATA || kind == K_OP_CONV_BWD_DATA_UNPOOL2 ? K_CONV_BWD_DATA
                                                                          : K_CONV_BWD_WEIGHT;
}
static int unpooled(int kind) { return kind == K_OP_CONV_BWD_DATA_UNPOOL2 || kind == K_OP_CONV_BWD_WEIGHT_UNPOOL2; }
static int method_of(int impl) { return impl <= K_IMPL_F32_SPARSE ? impl - K_IMPL_F32_IM2COL : impl - K_IMPL_BF16_REF; }

/* A forced bf16 path (tests, XLATRAIN_BF16_PATH=ref) leaves only itself. */
static int bf16_allowed(int impl) {
    int forced = k_bf16_forced();
    if (forced >= 0) return method_of(impl) == forced;
    return impl == K_IMPL_BF16_REF || k_bf16_path() != K_BF16_REF;
}

/* ---- validity ------------------------------------------------------------- */

/* The own convolutions read NCHW: a dy the layout pass blocked is for a library row */
static int own_conv(const k_op_desc *d) { return is_conv(d) && !d->ddst_block; }
static int valid_f32_conv(const k_op_desc *d) { return own_conv(d) && !d->bf16; }
static int valid_f32_rows(const k_op_desc *d) {
    return valid_f32_conv(d) && pass_of(d->kind) != K_CONV_BWD_DATA && k_conv_rows_fits(&d->s);
}
static int valid_f32_sparse(const k_op_desc *d) {
    if (!valid_f32_conv(d)) return 0;
    if (d->kind == K_OP_CONV_BWD_WEIGHT_UNPOOL2) return k_conv_sparse_runs(&d->s);
    return d->kind == K_OP_CONV_BWD_DATA_UNPOOL2 && k_conv_sparse_data_runs(&d->s);
}
static int valid_bf16_ref(const k_op_desc *d) { return own_conv(d) && d->bf16 && bf16_allowed(K_IMPL_BF16_REF); }
static int valid_bf16_gemm(const k_op_desc *d) { return own_conv(d) && d->bf16 && bf16_allowed(K_IMPL_BF16_GEMM); }
static int valid_bf16_direct(const k_op_desc *d) { return own_conv(d) && d->bf16 && bf16_allowed(K_IMPL_BF16_DIRECT); }
static int valid_sgemm_own(const k_op_desc *d) {
    return d->kind == K_OP_MATMUL && !d->bf16 && d->K > 0 && k_sgemm_own(d->M, d->N, d->K);
}
static int valid_sgemm_blas(const k_op_desc *d) { return d->kind == K_OP_MATMUL && !d->bf16; }
static int valid_gemm_bf16(const k_op_desc *d) {
    return d->kind == K_OP_MATMUL && d->bf16 && k_bf16_path() != K_BF16_REF;
}
static int valid_gemm_bf16_ref(const k_op_desc *d) {
    return d->kind == K_OP_MATMUL && d->bf16 && (k_bf16_forced() < 0 || k_bf16_forced() == K_BF16_REF);
}

static int onednn_variant(int impl) { return impl - K_IMPL_ONEDNN_F32; }
static int valid_onednn(const k_op_desc *d) { return k_onednn_valid(K_ONEDNN_F32, d); }
static int valid_onednn_any(const k_op_desc *d) { return k_onednn_valid(K_ONEDNN_F32_ANY, d); }
/* A forced bf16 path (tests, XLATRAIN_BF16_PATH) leaves oneDNN's bf16 out too. */
static int valid_onednn_bf16(const k_op_desc *d) { return k_bf16_forced() < 0 && k_onednn_valid(K_ONEDNN_BF16, d); }
static int valid_onednn_bf16_any(const k_op_desc *d) {
    return k_bf16_forced() < 0 && k_onednn_valid(K_ONEDNN_BF16_ANY, d);
}

/* ---- scratch and state ----------------------------------------------------- */

static size_t scratch_f32(int impl, const k_op_desc *d) {
    return k_conv2d_method_scratch(method_of(impl), d->kind, &d->s) * sizeof(float);
}
static size_t state_f32(int impl, const k_op_desc *d) {
    return k_conv2d_method_state(method_of(impl), d->kind, &d->s) * sizeof(float);
}
static size_t scratch_bf16(int impl, const k_op_desc *d) {
    return k_conv2d_bf16_method_scratch(method_of(impl), d->kind, &d->s);
}
static size_t state_bf16(int impl, const k_op_desc *d) {
    return k_conv2d_bf16_method_state(method_of(impl), d->kind, &d->s) * sizeof(float);
}
static size_t scratch_sgemm(int impl, const k_op_desc *d) {
    return impl == K_IMPL_SGEMM_OWN ? k_sgemm_scratch_bytes(d->M, d->N, d->K) : 0;
}
static size_t scratch_gemm_bf16(int impl, const k_op_desc *d) {
    (void)impl;
    return k_gemm_bf16_scratch(d->M, d->N, d->K);
}
static size_t scratch_onednn(int impl, const k_op_desc *d) { return k_onednn_scratch(onednn_variant(impl), d); }
static size_t state_onednn(int impl, const k_op_desc *d) { return k_onednn_state(onednn_variant(impl), d); }
static size_t no_state(int impl, const k_op_desc *d) {
    (void)impl, (void)d;
    return 0;
}

/* ---- run ------------------------------------------------------------------- */

static void run_f32(int impl, const k_op_desc *d, const k_op_args *a) {
    int m = method_of(impl);
    const k_conv_shape *s = &d->s;
    switch (d->kind) {
    case K_OP_CONV_FWD:
        k_conv2d_fwd_act_m(m, s, a->out, a->x, a->w, a->bias, d->relu, a->scratch, a->pk, a->pro);
        break;
    case K_OP_CONV_FWD_POOL2:
        k_conv2d_fwd_pool2_m(m, s, a->out, a->argmax, a->x, a->w, a->bias, d->relu, a->scratch, a->pk, a->pro);
        break;
    case K_OP_CONV_BWD_DATA:
    case K_OP_CONV_BWD_DATA_UNPOOL2:
        k_conv2d_bwd_data_masked_m(m, s, a->out, a->dy, a->up, a->w, a->relu_mask, a->scratch, a->pk);
        break;
    case K_OP_CONV_BWD_WEIGHT:
        k_conv2d_bwd_weight_part_m(m, s, a->out, a->x, a->dy, a->scratch, a->acc, a->first, a->last, a->pro);
        break;
    case K_OP_CONV_BWD_WEIGHT_UNPOOL2:
        k_conv2d_bwd_weight_unpool2_part_m(m, s, a->out, a->x, a->up, a->scratch, a->acc, a->first, a->last, a->pro);
        break;
    default: break;
    }
}

static void run_bf16(int impl, const k_op_desc *d, const k_op_args *a) {
    int m = method_of(impl);
    const k_conv_shape *s = &d->s;
    switch (d->kind) {
    case K_OP_CONV_FWD: k_conv2d_fwd_bf16_act_m(m, s, a->out, a->x, a->w, a->bias, d->relu, a->scratch); break;
    case K_OP_CONV_FWD_POOL2:
        k_conv2d_fwd_pool2_bf16_m(m, s, a->out, a->argmax, a->x, a->w, a->bias, d->relu, a->scratch);
        break;
    case K_OP_CONV_BWD_DATA: k_conv2d_bwd_data_bf16_m(m, s, a->out, a->dy, a->w, a->scratch); break;
    case K_OP_CONV_BWD_DATA_UNPOOL2: k_conv2d_bwd_data_unpool2_bf16_m(m, s, a->out, a->up, a->w, a->scratch); break;
    case K_OP_CONV_BWD_WEIGHT:
        k_conv2d_bwd_weight_bf16_part_m(m, s, a->out, a->x, a->dy, a->scratch, a->acc, a->first, a->last);
        break;
    case K_OP_CONV_BWD_WEIGHT_UNPOOL2:
        k_conv2d_bwd_weight_unpool2_bf16_part_m(m, s, a->out, a->x, a->up, a->scratch, a->acc, a->first, a->last);
        break;
    default: break;
    }
}

static void run_sgemm(int impl, const k_op_desc *d, const k_op_args *a) {
    k_sgemm_m(impl == K_IMPL_SGEMM_OWN, d->tA, d->tB, d->M, d->N, d->K, a->x, a->lda, a->w, a->ldb, a->out, d->N,
              a->scratch);
}
static void run_gemm_bf16(int impl, const k_op_desc *d, const k_op_args *a) {
    k_gemm_bf16_m(impl == K_IMPL_GEMM_BF16, d->tA, d->tB, d->M, d->N, d->K, a->x, a->lda, a->w, a->ldb, 0, a->out,
                  d->N, a->scratch);
}

static void run_onednn(int impl, const k_op_desc *d, const k_op_args *a) { k_onednn_run(onednn_variant(impl), d, a); }
static const char *detail_onednn(int impl, const k_op_desc *d) { return k_onednn_impl(onednn_variant(impl), d); }

const k_impl_info k_impls[K_IMPL_COUNT] = {
    [K_IMPL_F32_IM2COL] = {"fp32-im2col", 0, valid_f32_conv, scratch_f32, state_f32, run_f32, NULL},
    [K_IMPL_F32_DIRECT] = {"fp32-direct", 0, valid_f32_conv, scratch_f32, state_f32, run_f32, NULL},
    [K_IMPL_F32_ROWS] = {"fp32-rows", 0, valid_f32_rows, scratch_f32, state_f32, run_f32, NULL},
    [K_IMPL_F32_SPARSE] = {"fp32-sparse", 0, valid_f32_sparse, scratch_f32, state_f32, run_f32, NULL},
    [K_IMPL_BF16_REF] = {"bf16-widened", 1, valid_bf16_ref, scratch_bf16, state_bf16, run_bf16, NULL},
    [K_IMPL_BF16_GEMM] = {"bf16-im2col-gemm", 1, valid_bf16_gemm, scratch_bf16, state_bf16, run_bf16, NULL},
    [K_IMPL_BF16_DIRECT] = {"bf16-direct", 1, valid_bf16_direct, scratch_bf16, state_bf16, run_bf16, NULL},
    [K_IMPL_SGEMM_OWN] = {"fp32-own-gemm", 0, valid_sgemm_own, scratch_sgemm, no_state, run_sgemm, NULL},
    [K_IMPL_SGEMM_BLAS] = {"fp32-openblas", 0, valid_sgemm_blas, scratch_sgemm, no_state, run_sgemm, NULL},
    [K_IMPL_GEMM_BF16] = {"bf16-gemm", 1, valid_gemm_bf16, scratch_gemm_bf16, no_state, run_gemm_bf16, NULL},
    [K_IMPL_GEMM_BF16_REF] = {"bf16-widened-gemm", 1, valid_gemm_bf16_ref, scratch_gemm_bf16, no_state, run_gemm_bf16, NULL},
    [K_IMPL_ONEDNN_F32] = {"onednn-fp32", 0, valid_onednn, scratch_onednn, state_onednn, run_onednn, detail_onednn},
    [K_IMPL_ONEDNN_F32_ANY] = {"onednn-fp32-blocked", 0, valid_onednn_any, scratch_onednn, state_onednn, run_onednn,
                               detail_onednn},
    [K_IMPL_ONEDNN_BF16] = {"onednn-bf16", 1, valid_onednn_bf16, scratch_onednn, state_onednn, run_onednn, detail_onednn},
    [K_IMPL_ONEDNN_BF16_ANY] = {"onednn-bf16-blocked", 1, valid_onednn_bf16_any, scratch_onednn, state_onednn, run_onednn,
                                detail_onednn},
};

int k_impl_rule(const k_op_desc *d) {
    if (d->kind == K_OP_MATMUL) {
        if (d->bf16) return k_bf16_path() != K_BF16_REF ? K_IMPL_GEMM_BF16 : K_IMPL_GEMM_BF16_REF;
        return d->K > 0 && k_sgemm_own(d->M, d->N, d->K) ? K_IMPL_SGEMM_OWN : K_IMPL_SGEMM_BLAS;
    }
    int pass = pass_of(d->kind);
    if (d->bf16) return K_IMPL_BF16_REF + k_conv_bf16_choose(&d->s, pass);
    return K_IMPL_F32_IM2COL + (unpooled(d->kind) ? k_conv_choose_unpool2(&d->s, pass) : k_conv_choose(&d->s, pass));
}

int k_impl_candidates(const k_op_desc *d, int *out, int cap) {
    int n = 0, rule = k_impl_rule(d);
    if (cap > 0) out[n++] = rule;
    for (int i = 1; i < K_IMPL_COUNT && n < cap; i++)
        if (i != rule && k_impls[i].valid && k_impls[i].valid(d)) out[n++] = i;
    return n;
}

int k_impl_by_name(const char *name) {
    for (int i = 1; i < K_IMPL_COUNT; i++)
        if (k_impls[i].name && !strcmp(k_impls[i].name, name)) return i;
    return K_IMPL_NONE;
}

double k_impl_macs_executed(int impl, const k_op_desc *d) {
    if (d->kind == K_OP_MATMUL) return (double)d->M * d->N * d->K;
    if (d->bf16 || impl >= K_IMPL_ONEDNN_F32) return (double)d->s.N * d->s.Co * d->s.Ho * d->s.Wo * d->s.Ci * d->s.kh * d->s.kw;
    return k_conv2d_method_macs(method_of(impl), d->kind, &d->s);
}

size_t k_impl_unpool2_share_floats(const k_conv_shape *s, int data, int weight) {
    if (data < K_IMPL_F32_IM2COL || data > K_IMPL_F32_SPARSE || weight < K_IMPL_F32_IM2COL || weight > K_IMPL_F32_SPARSE)
        return 0;
    return k_conv2d_method_share_floats(s, method_of(data), method_of(weight));
}

const char *k_impl_isa(int bf16) {
    if (bf16 && k_bf16_path() != K_BF16_REF) return "AVX512-BF16";
    switch (k_simd_level()) {
    case K_SIMD_AVX512: return "AVX-512";
    case K_SIMD_AVX2: return "AVX2";
    default: return "x86-64";
    }
}

const char *k_impl_node_isa(int impl, const k_op_desc *d) {
    const char *lib = k_impls[impl].detail ? k_impls[impl].detail(impl, d) : NULL;
    if (lib && *lib) { /* oneDNN names the ISA its code was generated for */
        if (strstr(lib, "amx")) return "AMX-BF16";
        if (strstr(lib, "avx512_core_bf16")) return "AVX512-BF16";
        if (strstr(lib, "avx512")) return "AVX-512";
        if (strstr(lib, "avx2")) return "AVX2";
        if (strstr(lib, "sse41")) return "SSE4.1";
        return k_impl_isa(0); /* gemm:jit and the like: the widest the cap allows */
    }
    return k_impl_isa(k_impls[impl].bf16);
}

int k_impl_ddst_block(int impl, const k_op_desc *d) {
    if (impl >= K_IMPL_ONEDNN_F32 && impl < K_IMPL_ONEDNN_F32 + K_ONEDNN_VARIANTS)
        return k_onednn_ddst_block(onednn_variant(impl), d);
    return 0;
}

int k_impl_reorders(int impl, const k_op_desc *d, char *buf, size_t cap) {
    if (impl >= K_IMPL_ONEDNN_F32 && impl < K_IMPL_ONEDNN_F32 + K_ONEDNN_VARIANTS)
        return k_onednn_reorders(onednn_variant(impl), d, buf, cap);
    buf[0] = 0;
    return 0; /* the own kernels reorder as they pack, inside their loops */
}

void k_impl_describe(int impl, const k_op_desc *d, char *buf, size_t cap) {
    const char *lib = k_impls[impl].detail ? k_impls[impl].detail(impl, d) : NULL;
    if (lib && *lib) snprintf(buf, cap, "%s [%s]", k_impls[impl].name, lib);
    else snprintf(buf, cap, "%s", k_impls[impl].name);
}
