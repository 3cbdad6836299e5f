/* unroll.h — XT_UNROLL: unroll the next loop fully, in the spelling of the
 * compiler at hand. For the register-tile loops of the SIMD kernels
 * (conv_direct_simd.h, conv_direct_bf16.c, conv_rows.c): their trip counts
 * are constants once inlined, and only fully unrolled do the accumulator
 * arrays become registers. clang ignores GCC's spelling and then keeps the
 * arrays on the stack (measured 3x slower), so each gets its own.
 */
#ifndef XT_KERNELS_UNROLL_H
#define XT_KERNELS_UNROLL_H

#if defined(__clang__)
#define XT_UNROLL _Pragma("clang loop unroll(full)")
#else
#define XT_UNROLL _Pragma("GCC unroll 24")
#endif

#endif
