/* impl.h — the candidate implementations of one convolution pass or matrix
 * product, as a table the engine chooses from when it compiles a graph
 * (engine/pass_choose.c), instead of each k_conv2d_* deciding per call.
 *
 * Is: the kinds of node that have a choice (k_op_desc), the candidates
 * (k_impls: a name, the precision of the operands it reads, a validity check,
 * its scratch and tile-state sizes, and the function that runs it), today's
 * fixed rule as one more function (k_impl_rule: what `kernel_choice: fixed`
 * runs, bit for bit the choice the k_conv2d_* entry points make), and the
 * candidates valid for a node (k_impl_candidates, the rule's first).
 * Is not: the timing or the agreement between workers (the engine's), nor
 * the methods themselves (conv.c, conv_bf16.c, sgemm.c, gemm_bf16.c).
 *
 * Adding a back end (oneDNN, #55) is one more enum value and one more row of
 * k_impls: its name, validity (the CPU, the shape), its scratch and state and
 * its run function over k_op_args. The engine then times it beside the rest.
 */
#ifndef XT_KERNELS_IMPL_H
#define XT_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "kernels/kernels.h"
#include "kernels/op.h"


enum k_impl {
    K_IMPL_NONE = 0,
    K_IMPL_F32_IM2COL,      /* order matters: F32_* - F32_IM2COL is conv.h's enum k_conv_method */
    K_IMPL_F32_DIRECT,
    K_IMPL_F32_ROWS,
    K_IMPL_F32_SPARSE,
    K_IMPL_BF16_REF,        /* and BF16_* - BF16_REF is bf16.h's enum k_bf16_path */
    K_IMPL_BF16_GEMM,
    K_IMPL_BF16_DIRECT,
    K_IMPL_SGEMM_OWN,
    K_IMPL_SGEMM_BLAS,
    K_IMPL_GEMM_BF16,
    K_IMPL_GEMM_BF16_REF,
    K_IMPL_ONEDNN_F32,      /* oneDNN (onednn.h), in the order of its enum k_onednn_variant */
    K_IMPL_ONEDNN_F32_ANY,
    K_IMPL_ONEDNN_BF16,
    K_IMPL_ONEDNN_BF16_ANY,
    K_IMPL_COUNT
};

typedef struct k_impl_info {
    const char *name;                              /* stable: checkpoints and the choice cache record it */
    int bf16;                                      /* reads bf16 operands */
    int (*valid)(const k_op_desc *d);              /* can it run this node on this CPU now */
    size_t (*scratch)(int impl, const k_op_desc *d); /* bytes */
    size_t (*state)(int impl, const k_op_desc *d);   /* bytes a tiled node keeps from tile to tile */
    void (*run)(int impl, const k_op_desc *d, const k_op_args *a);
    const char *(*detail)(int impl, const k_op_desc *d); /* a library's own name for what runs d (or NULL) */
} k_impl_info;
extern const k_impl_info k_impls[K_IMPL_COUNT];

/* Today's fixed rule: k_conv_choose, k_conv_choose_unpool2, k_conv_bf16_choose, k_sgemm_own. */
int k_impl_rule(const k_op_desc *d);
/* The candidates valid for d, the rule's first; returns how many (<= cap). */
int k_impl_candidates(const k_op_desc *d, int *out, int cap);
/* K_IMPL_* by name, or K_IMPL_NONE. */
int k_impl_by_name(const char *name);
/* Multiply-adds impl executes for d (fewer than dense where it skips zeros). */
double k_impl_macs_executed(int impl, const k_op_desc *d);
/* Floats of the hand-off two unpooling passes of one convolution share
 * (k_unpool2.share) when bwd-data runs `data` and bwd-weight `weight`: 0 unless both are direct. */
size_t k_impl_unpool2_share_floats(const k_conv_shape *s, int data, int weight);
/* The ISA names for the log: "AVX512-BF16", "AVX-512", "AVX2", "x86-64". */
const char *k_impl_isa(int bf16);
/* The ISA impl runs d on: k_impl_isa's, or for a library's row what its
 * implementation's name says ("AMX-BF16" for oneDNN's avx512_core_amx). */
const char *k_impl_node_isa(int impl, const k_op_desc *d);
/* The channel block in which impl's backward pass of d wants dy handed over
 * (onednn.h's k_onednn_ddst_block); 0 for the own rows, which read NCHW. */
int k_impl_ddst_block(int impl, const k_op_desc *d);
/* What a library row reorders per call and the share of its time that takes
 * (onednn.h's k_onednn_reorders: "src,dst 21%"); 0 and "" for the own rows. */
int k_impl_reorders(int impl, const k_op_desc *d, char *buf, size_t cap);
/* "name", or "name [detail]" where the row has one ("onednn-bf16 [brgconv:avx512_core_amx_bf16]"). */
void k_impl_describe(int impl, const k_op_desc *d, char *buf, size_t cap);

#endif
