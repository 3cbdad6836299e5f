/* vecw.h — one SIMD flavour's vector operations, for kernels written once over
 * the vector width (x86-64 with GCC/clang only; private to src/kernels).
 *
 * Is: define VW (8: AVX2 + FMA, 16 ymm registers; 16: AVX-512, 32 zmm) and
 * include this header, then the kernel's body header, then vecw_end.h, which
 * undefines what this one defined; again for the other width. The body names
 * its functions with VFN(name) (name_avx2, name_avx512) and compiles them
 * with TGT. Lane masks are plain unsigned bit sets (bit l: lane l), so a body
 * never sees __mmask16 or a compare vector.
 * What a body gets:
 *   VL, vec, veci                the lanes, the float and the int32 vector
 *   VZERO() VSET1(s) VLOAD(p) VLOADA(p) VSTORE(p,v) VSTOREA(p,v)   (A: aligned to the vector)
 *   VADD VMUL VFMA(a,b,c)=a*b+c VMAX0(v) (max(v, +0): +0 for NaN and -0, the engine's RELU)
 *   VLOADN(p,n) VSTOREN(p,n,v)   the first n lanes (the rest read as +0, not written)
 *   VBITS_NEQ0(v)                lanes != 0 (NaN included: unordered)
 *   VKEEP_GT0(m,v)               v where m > 0, else +0 (NaN in m: +0)
 *   VI_SET1 VI_ADD VI_SUB VI_MUL VI_IOTA() (0, 1, .., VL-1) VI_STORE(p,v) VI_AS_F(v) VF_AS_I(v)
 *   VI_U8(p)                     VL bytes widened to int32 lanes (all VL read)
 *   VI_U8N(p,n)                  the first n of them (no byte past p+n read), the rest 0
 *   VI_BITS_EQ(v,q)              lanes equal to the int q
 *   VCOMPRESS(bits,v) VICOMPRESS(bits,v)  the lanes of bits moved to the front, in order
 *   VTRANSPOSE(r)                VL x VL in place (transpose8.h, transpose16.h)
 *   VALL                         the bit set of all VL lanes
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/transpose16.h"
#include "kernels/transpose8.h"

#define VCAT_(a, b) a##b
#define VCAT(a, b) VCAT_(a, b)
#define VFN(name) VCAT(name, SFX)

#if VW == 8

#ifndef XT_KERNELS_VECW8_FNS
#define XT_KERNELS_VECW8_FNS
/* lane l is in the first n */
__attribute__((target("avx2,fma"))) static inline __m256i vw8_first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__attribute__((target("avx2,fma"))) static inline __m256i vw8_u8n(const uint8_t *p, int n) {
    uint8_t b[8] = {0};
    memcpy(b, p, (size_t)(n < 8 ? n : 8));
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)b));
}
/* AVX2 has no compress: the lanes' indices, a nibble each, from a table of
 * the 256 masks, for one lane permute */
__attribute__((target("avx2,fma"))) static inline __m256i vw8_compress_idx(unsigned bits) {
    static const uint32_t idx[256] = {
        0x00000000, 0x00000000, 0x00000001, 0x00000010, 0x00000002, 0x00000020, 0x00000021, 0x00000210,
        0x00000003, 0x00000030, 0x00000031, 0x00000310, 0x00000032, 0x00000320, 0x00000321, 0x00003210,
        0x00000004, 0x00000040, 0x00000041, 0x00000410, 0x00000042, 0x00000420, 0x00000421, 0x00004210,
        0x00000043, 0x00000430, 0x00000431, 0x00004310, 0x00000432, 0x00004320, 0x00004321, 0x00043210,
        0x00000005, 0x00000050, 0x00000051, 0x00000510, 0x00000052, 0x00000520, 0x00000521, 0x00005210,
        0x00000053, 0x00000530, 0x00000531, 0x00005310, 0x00000532, 0x00005320, 0x00005321, 0x00053210,
        0x00000054, 0x00000540, 0x00000541, 0x00005410, 0x00000542, 0x00005420, 0x00005421, 0x00054210,
        0x00000543, 0x00005430, 0x00005431, 0x00054310, 0x00005432, 0x00054320, 0x00054321, 0x00543210,
        0x00000006, 0x00000060, 0x00000061, 0x00000610, 0x00000062, 0x00000620, 0x00000621, 0x00006210,
        0x00000063, 0x00000630, 0x00000631, 0x00006310, 0x00000632, 0x00006320, 0x00006321, 0x00063210,
        0x00000064, 0x00000640, 0x00000641, 0x00006410, 0x00000642, 0x00006420, 0x00006421, 0x00064210,
        0x00000643, 0x00006430, 0x00006431, 0x00064310, 0x00006432, 0x00064320, 0x00064321, 0x00643210,
        0x00000065, 0x00000650, 0x00000651, 0x00006510, 0x00000652, 0x00006520, 0x00006521, 0x00065210,
        0x00000653, 0x00006530, 0x00006531, 0x00065310, 0x00006532, 0x00065320, 0x00065321, 0x00653210,
        0x00000654, 0x00006540, 0x00006541, 0x00065410, 0x00006542, 0x00065420, 0x00065421, 0x00654210,
        0x00006543, 0x00065430, 0x00065431, 0x00654310, 0x00065432, 0x00654320, 0x00654321, 0x06543210,
        0x00000007, 0x00000070, 0x00000071, 0x00000710, 0x00000072, 0x00000720, 0x00000721, 0x00007210,
        0x00000073, 0x00000730, 0x00000731, 0x00007310, 0x00000732, 0x00007320, 0x00007321, 0x00073210,
        0x00000074, 0x00000740, 0x00000741, 0x00007410, 0x00000742, 0x00007420, 0x00007421, 0x00074210,
        0x00000743, 0x00007430, 0x00007431, 0x00074310, 0x00007432, 0x00074320, 0x00074321, 0x00743210,
        0x00000075, 0x00000750, 0x00000751, 0x00007510, 0x00000752, 0x00007520, 0x00007521, 0x00075210,
        0x00000753, 0x00007530, 0x00007531, 0x00075310, 0x00007532, 0x00075320, 0x00075321, 0x00753210,
        0x00000754, 0x00007540, 0x00007541, 0x00075410, 0x00007542, 0x00075420, 0x00075421, 0x00754210,
        0x00007543, 0x00075430, 0x00075431, 0x00754310, 0x00075432, 0x00754320, 0x00754321, 0x07543210,
        0x00000076, 0x00000760, 0x00000761, 0x00007610, 0x00000762, 0x00007620, 0x00007621, 0x00076210,
        0x00000763, 0x00007630, 0x00007631, 0x00076310, 0x00007632, 0x00076320, 0x00076321, 0x00763210,
        0x00000764, 0x00007640, 0x00007641, 0x00076410, 0x00007642, 0x00076420, 0x00076421, 0x00764210,
        0x00007643, 0x00076430, 0x00076431, 0x00764310, 0x00076432, 0x00764320, 0x00764321, 0x07643210,
        0x00000765, 0x00007650, 0x00007651, 0x00076510, 0x00007652, 0x00076520, 0x00076521, 0x00765210,
        0x00007653, 0x00076530, 0x00076531, 0x00765310, 0x00076532, 0x00765320, 0x00765321, 0x07653210,
        0x00007654, 0x00076540, 0x00076541, 0x00765410, 0x00076542, 0x00765420, 0x00765421, 0x07654210,
        0x00076543, 0x00765430, 0x00765431, 0x07654310, 0x00765432, 0x07654320, 0x07654321, 0x76543210,
    };
    __m256i v = _mm256_set1_epi32((int)idx[bits & 0xff]);
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_and_si256(v, _mm256_set1_epi32(7));
}
#endif

#define SFX _avx2
#define TGT __attribute__((target("avx2,fma")))
#define VL 8
#define VALL 0xffu
#define vec __m256
#define veci __m256i
#define VZERO() _mm256_setzero_ps()
#define VSET1(s) _mm256_set1_ps(s)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VLOADA(p) _mm256_load_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSTOREA(p, v) _mm256_store_ps(p, v)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VMAX0(v) _mm256_max_ps(v, _mm256_setzero_ps())
#define VLOADN(p, n) _mm256_maskload_ps(p, vw8_first(n))
#define VSTOREN(p, n, v) _mm256_maskstore_ps(p, vw8_first(n), v)
#define VBITS_NEQ0(v) ((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_NEQ_UQ)))
#define VKEEP_GT0(m, v) _mm256_and_ps(_mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ), v)
#define VI_SET1(s) _mm256_set1_epi32(s)
#define VI_ADD(a, b) _mm256_add_epi32(a, b)
#define VI_SUB(a, b) _mm256_sub_epi32(a, b)
#define VI_MUL(a, b) _mm256_mullo_epi32(a, b)
#define VI_IOTA() _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
#define VI_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define VI_AS_F(v) _mm256_castsi256_ps(v)
#define VF_AS_I(v) _mm256_castps_si256(v)
#define VI_U8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define VI_U8N(p, n) vw8_u8n(p, n)
#define VI_BITS_EQ(v, q) ((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_set1_epi32(q)))))
#define VCOMPRESS(bits, v) _mm256_permutevar8x32_ps(v, vw8_compress_idx(bits))
#define VICOMPRESS(bits, v) _mm256_permutevar8x32_epi32(v, vw8_compress_idx(bits))
#define VTRANSPOSE(r) transpose_avx2(r)

#elif VW == 16

#define SFX _avx512
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define VL 16
#define VALL 0xffffu
#define vec __m512
#define veci __m512i
#define VFIRST(n) ((__mmask16)((n) >= 16 ? 0xffffu : (1u << (n)) - 1))
#define VZERO() _mm512_setzero_ps()
#define VSET1(s) _mm512_set1_ps(s)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VLOADA(p) _mm512_load_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSTOREA(p, v) _mm512_store_ps(p, v)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VMAX0(v) _mm512_max_ps(v, _mm512_setzero_ps())
#define VLOADN(p, n) _mm512_maskz_loadu_ps(VFIRST(n), p)
#define VSTOREN(p, n, v) _mm512_mask_storeu_ps(p, VFIRST(n), v)
#define VBITS_NEQ0(v) ((unsigned)_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ))
#define VKEEP_GT0(m, v) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), v)
#define VI_SET1(s) _mm512_set1_epi32(s)
#define VI_ADD(a, b) _mm512_add_epi32(a, b)
#define VI_SUB(a, b) _mm512_sub_epi32(a, b)
#define VI_MUL(a, b) _mm512_mullo_epi32(a, b)
#define VI_IOTA() _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define VI_STORE(p, v) _mm512_storeu_si512(p, v)
#define VI_AS_F(v) _mm512_castsi512_ps(v)
#define VF_AS_I(v) _mm512_castps_si512(v)
#define VI_U8(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define VI_U8N(p, n) _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(VFIRST(n), p))
#define VI_BITS_EQ(v, q) ((unsigned)_mm512_cmpeq_epi32_mask(v, _mm512_set1_epi32(q)))
#define VCOMPRESS(bits, v) _mm512_maskz_compress_ps((__mmask16)(bits), v)
#define VICOMPRESS(bits, v) _mm512_maskz_compress_epi32((__mmask16)(bits), v)
#define VTRANSPOSE(r) transpose_avx512(r)

#else
#error "vecw.h: define VW as 8 or 16"
#endif
