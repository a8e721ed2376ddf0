/* v8.h — the vectors of the model and likelihood kernels (adr/0035, adr/0044): 8 logical fp64 lanes made
 * of native vectors (xf_vn: one AVX-512, two AVX2 or four SSE2 registers), loads, masks,
 * the lane sum in one fixed order, and the functions the kernels need per lane (sin and
 * cos, exp, sqrt). The per-pair functions over one native vector of pairs are
 * model/kernel_v8.h's. This floor knows no model: model/ and likelihood/ sit above it.
 *
 * Every file that includes it is compiled for one instruction set (baseline x86-64,
 * AVX2, AVX-512; CMakeLists.txt) and gets the widest registers of that set. The results
 * are the same bits on every set: sqrt and the arithmetic are IEEE operations (contraction
 * off, -ffp-contract=off), and sin, cos and exp are SLEEF's cinz ("deterministic, no FMA")
 * u10 variants (≤ 1.0 ULP), whose sse2, avx, avx512fnofma and purec versions return the
 * same bits (adr/0035). */
#ifndef XPCSFIT_SIMD_V8_H
#define XPCSFIT_SIMD_V8_H

#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <sleef.h>

#define XF_LANES 8 /* logical lanes: the same on every instruction set */

/* The native vector of this instruction set: XF_VW fp64 lanes in one register (AVX-512 8,
 * AVX2 4, SSE2 2). Vectors wider than the registers (a 64-byte type without AVX-512) are
 * lowered by GCC to memory operations, so the kernels use this type only: the 8 logical
 * lanes are XF_VR = 8 / XF_VW native vectors, lane h·XF_VW + i in lane i of part h, and a
 * loop over the parts runs a native body on pairs k + h·XF_VW (adr/0035). */
#if defined(__AVX512F__)
#define XF_VW			   8
#define XF_V8_PICK(f8, f4, f2, f1) f8
#elif defined(__AVX__)
#define XF_VW			   4
#define XF_V8_PICK(f8, f4, f2, f1) f4
#elif defined(__SSE2__)
#define XF_VW			   2
#define XF_V8_PICK(f8, f4, f2, f1) f2
#else
#define XF_VW			   2 /* a 2-lane vector (scalar pieces where there is none); purec per lane */
#define XF_V8_PICK(f8, f4, f2, f1) f1
#endif
#define XF_VR (XF_LANES / XF_VW)

typedef double xf_vn __attribute__((vector_size(8 * XF_VW)));
typedef long long xf_mn __attribute__((vector_size(8 * XF_VW)));

/* sin and cos of one native vector: SLEEF cinz u10. */
static inline __attribute__((always_inline)) void xf_vn_sincos(xf_vn x, xf_vn *sn, xf_vn *cs)
{
#if defined(__SSE2__)
	typeof(XF_V8_PICK(Sleef_cinz_sincosd8_u10avx512fnofma, Sleef_cinz_sincosd4_u10avx,
			  Sleef_cinz_sincosd2_u10sse2, Sleef_cinz_sincosd1_u10purec)(x)) r =
		XF_V8_PICK(Sleef_cinz_sincosd8_u10avx512fnofma, Sleef_cinz_sincosd4_u10avx,
			   Sleef_cinz_sincosd2_u10sse2, Sleef_cinz_sincosd1_u10purec)(x);
	*sn = r.x;
	*cs = r.y;
#else
	for (int i = 0; i < XF_VW; i++) {
		Sleef_double2 r = Sleef_cinz_sincosd1_u10purec(x[i]);
		(*sn)[i] = r.x;
		(*cs)[i] = r.y;
	}
#endif
}

/* exp of one native vector: SLEEF cinz u10. */
static inline __attribute__((always_inline)) xf_vn vn_exp(xf_vn x)
{
#if defined(__SSE2__)
	return XF_V8_PICK(Sleef_cinz_expd8_u10avx512fnofma, Sleef_cinz_expd4_u10avx,
			  Sleef_cinz_expd2_u10sse2, Sleef_cinz_expd1_u10purec)(x);
#else
	xf_vn out;
	for (int i = 0; i < XF_VW; i++)
		out[i] = Sleef_cinz_expd1_u10purec(x[i]);
	return out;
#endif
}

/* sqrt of one native vector: the IEEE square root (correctly rounded on every set). */
static inline __attribute__((always_inline)) xf_vn vn_sqrt(xf_vn x)
{
#if defined(__SSE2__)
	return XF_V8_PICK(_mm512_sqrt_pd, _mm256_sqrt_pd, _mm_sqrt_pd, sqrt)(x);
#else
	xf_vn out;
	for (int i = 0; i < XF_VW; i++)
		out[i] = sqrt(x[i]);
	return out;
#endif
}

static inline __attribute__((always_inline)) xf_vn vn_load(const double *p)
{
	xf_vn v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline __attribute__((always_inline)) void vn_store(double *p, xf_vn v)
{
	memcpy(p, &v, sizeof v);
}

static inline __attribute__((always_inline)) void vn_add_to(double *p, xf_vn v)
{
	vn_store(p, vn_load(p) + v);
}

/* m ? a : b, lane by lane (m from a comparison: all bits set or clear). */
static inline __attribute__((always_inline)) xf_vn vn_select(xf_mn m, xf_vn a, xf_vn b)
{
	return (xf_vn)(((xf_mn)a & m) | ((xf_mn)b & ~m));
}

/* |a|: the sign bit cleared */
static inline __attribute__((always_inline)) xf_vn vn_abs(xf_vn a)
{
	return (xf_vn)((xf_mn)a & ((xf_mn){ 0 } + 0x7fffffffffffffffll));
}

/* a where m, else +0.0 */
static inline __attribute__((always_inline)) xf_vn vn_keep(xf_mn m, xf_vn a)
{
	return (xf_vn)((xf_mn)a & m);
}

/* 1 when any lane of m is set. */
static inline __attribute__((always_inline)) int vn_any(xf_mn m)
{
#if defined(__AVX512F__)
	return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0;
#elif defined(__AVX__)
	return _mm256_movemask_pd((__m256d)m) != 0;
#elif defined(__SSE2__)
	return _mm_movemask_pd((__m128d)m) != 0;
#else
	long long any = 0;
	for (int i = 0; i < XF_VW; i++)
		any |= m[i];
	return any != 0;
#endif
}

/* The lanes 0 … XF_VW − 1 of this native vector, as doubles (for masks of lane indices). */
static inline __attribute__((always_inline)) xf_vn vn_iota(void)
{
	xf_vn v;
	for (int i = 0; i < XF_VW; i++)
		v[i] = i;
	return v;
}

/* The sum of 8 logical lanes (lanes[0 … 7], stored part by part) in one fixed order. */
static inline __attribute__((always_inline)) double v8_sum(const double lanes[XF_LANES])
{
	const double *v = lanes;
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

#endif
