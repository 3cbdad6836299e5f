/* onednn.h — oneDNN (Debian's libdnnl, the library PyTorch's CPU kernels use)
 * as candidate implementations of a convolution pass or a matrix product.
 *
 * Is: four variants the engine can choose beside the project's own kernels
 * (impl.h's K_IMPL_ONEDNN_* rows): fp32 or bf16 operands, each either on the
 * engine's own layouts (NCHW activations, OIHW weights, row-major matrices:
 * oneDNN runs them in place) or with oneDNN's preferred blocked layouts
 * (`_ANY`: the operands are reordered into them and the result back, inside
 * the call). On a CPU with AMX the bf16 variants run AMX tiles
 * (brgconv:avx512_core_amx_bf16); elsewhere AVX512-BF16, AVX-512 or AVX2 code;
 * oneDNN dispatches at run time and k_onednn_impl says what it picked.
 * Is not: the choice between them and the own kernels (engine/pass_choose.c
 * times every valid candidate), nor a layout pass: activations stay NCHW
 * between nodes.
 *
 * Primitives are created once per node shape and process (the first
 * k_onednn_valid / _scratch / _run for it), never per call; one thread per
 * process (the workers are the parallelism), so oneDNN's OpenMP runtime is
 * set to one thread before the engine exists.
 */
#ifndef XT_KERNELS_ONEDNN_H
#define XT_KERNELS_ONEDNN_H

#include <stddef.h>

#include "kernels/op.h"

enum k_onednn_variant { K_ONEDNN_F32, K_ONEDNN_F32_ANY, K_ONEDNN_BF16, K_ONEDNN_BF16_ANY, K_ONEDNN_VARIANTS };

/* Whether the variant runs d on this CPU with one of oneDNN's optimized
 * implementations (never its reference code; an `_ANY` variant only where a
 * blocked layout differs from the plain one). */
int k_onednn_valid(int variant, const k_op_desc *d);
/* Bytes of scratch one call needs: oneDNN's scratchpad, the reordered
 * operands, a weight gradient's part. */
size_t k_onednn_scratch(int variant, const k_op_desc *d);
/* Bytes a tiled weight gradient keeps between tiles (its fp32 sums). */
size_t k_onednn_state(int variant, const k_op_desc *d);
void k_onednn_run(int variant, const k_op_desc *d, const k_op_args *a);
/* oneDNN's name for the implementation it picked for d ("brgconv:avx512_core_amx_bf16"), or "". */
const char *k_onednn_impl(int variant, const k_op_desc *d);
/* The channel block (8, 16) of the nChw{B}c layout in which the variant's
 * backward pass of d (fp32, d->ddst_block 0) wants dy, so that a dy handed
 * over so (d->ddst_block = B) is read without a reorder; 0: none such. */
int k_onednn_ddst_block(int variant, const k_op_desc *d);
/* The operands the variant reorders on every call of d (the engine keeps
 * most activations NCHW between nodes: engine/pass_layout.c), as "src,dst", then the share of the calls' time so far spent in
 * those reorders ("src,dst 21%"); "" and 0 when it reorders nothing. The
 * time is per prepared call, which every node of the same description
 * shares. */
int k_onednn_reorders(int variant, const k_op_desc *d, char *buf, size_t cap);
/* The linked library's version, "2.6.3" (creates nothing). */
const char *k_onednn_version(void);
/* Whether oneDNN can make a CPU engine here (made on the first call). */
int k_onednn_available(void);

#endif
