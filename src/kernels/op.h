/* op.h — one convolution pass or matrix product as its kernel is called: its
 * description (k_op_desc) and its operands (k_op_args).
 *
 * Is: the two records every implementation of such a node takes, the
 * project's own (impl.c) and a library's (onednn.c), so that neither table
 * nor back end includes the other. Is not: the implementations, nor the
 * choice between them (impl.h).
 */
#ifndef XT_KERNELS_OP_H
#define XT_KERNELS_OP_H

#include <stdint.h>

#include "kernels/kernels.h"

/* One node as its kernel is called: the shape per call (a micro-batch tile's
 * samples in s.N) and what is fused into it. */
typedef struct k_op_desc {
    int kind;               /* enum k_op_kind */
    int bf16;               /* the operands are bf16 */
    k_conv_shape s;         /* convolutions */
    int relu;               /* forward: ReLU epilogue; backward-data: a ReLU backward's mask */
    int prologue;           /* forward / weight gradient (fp32): x read through batch norm's apply (2: and a ReLU) */
    int ddst_block;         /* backward passes (fp32): dy arrives in nChw{8,16}c, not NCHW (the engine's layout
                               pass, only for a row that wants it so: k_impl_ddst_block); 0: NCHW */
    int M, N, K, tA, tB;    /* matrix products */
} k_op_desc;

/* What a run function reads and writes: the operands of the node's kernel
 * (pointers already at the call's first sample). */
typedef struct k_op_args {
    void *out;              /* y, dx, dw, C; the pool values for FWD_POOL2 */
    uint8_t *argmax;        /* FWD_POOL2 */
    const void *x, *w, *dy; /* by pass; MATMUL: x = A, w = B */
    const float *bias;      /* forward (or NULL) */
    const float *relu_mask; /* backward-data (or NULL) */
    k_unpool2 up;           /* the _UNPOOL2 passes */
    k_conv_prologue pro;
    k_conv_packed pk;
    void *scratch;          /* k_impls[impl].scratch(d) bytes */
    size_t scratch_cap;     /* the bytes at scratch when known (0: not told); a library call whose needs for a
                               tile's rows exceed what was planned for the whole batch uses a buffer of its own */
    float *acc;             /* weight gradients over parts: the tile state (or NULL: one part) */
    int first, last;
    int lda, ldb;           /* MATMUL */
} k_op_args;

#endif
