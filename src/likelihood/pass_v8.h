/* pass_v8.h — 8-lane fp64 vectors of the likelihood kernels (adr/0035): the type, loads,
 * masks, the lane sum in one fixed order, and the functions the kernels need per lane
 * (sin and cos, exp, sqrt) and per frame pair (kernel.h's xf_pair_integral and
 * xf_pair_diffusion over 8 pairs).
 *
 * Every file that includes it is compiled for one instruction set (baseline x86-64,
 * AVX2, AVX-512; CMakeLists.txt) and gets the widest registers of that set: one AVX-512
 * register, two AVX, four SSE2 or eight scalars make the 8 logical lanes. The results are
 * the same bits on every set: sqrt and the arithmetic are IEEE operations (contraction off,
 * -ffp-contract=off), and sin, cos and exp are SLEEF's cinz ("deterministic, no FMA")
 * u10 variants (≤ 1.0 ULP), whose sse2, avx, avx512fnofma and purec versions return the
 * same bits (adr/0035). */
#ifndef XPCSFIT_LIKELIHOOD_PASS_V8_H
#define XPCSFIT_LIKELIHOOD_PASS_V8_H

#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <sleef.h>

#include "model/kernel.h"

/* 8-lane vectors pass between static inline functions only (never across a call that
 * is not inlined), so GCC's note on their ABI without AVX-512 does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define XF_LANES 8

typedef double xf_v8 __attribute__((vector_size(64)));
typedef long long xf_m8 __attribute__((vector_size(64)));

/* The registers that make one xf_v8 on this instruction set, and the name of a function
 * among its versions for 8, 4, 2 and 1 lanes. */
#if defined(__AVX512F__)
typedef __m512d xf_v8_reg;
#define XF_V8_PICK(f8, f4, f2, f1) f8
#elif defined(__AVX__)
typedef __m256d xf_v8_reg;
#define XF_V8_PICK(f8, f4, f2, f1) f4
#elif defined(__SSE2__)
typedef __m128d xf_v8_reg;
#define XF_V8_PICK(f8, f4, f2, f1) f2
#else
typedef double xf_v8_reg;
#define XF_V8_PICK(f8, f4, f2, f1) f1
#endif
#define XF_V8_REGS ((int)(sizeof(xf_v8) / sizeof(xf_v8_reg)))
typedef union xf_v8_regs {
	xf_v8 v;
	xf_v8_reg r[XF_V8_REGS];
} xf_v8_regs;

/* sin and cos of 8 lanes: SLEEF cinz u10. */
static inline __attribute__((always_inline)) void xf_v8_sincos(xf_v8 x, xf_v8 *sn, xf_v8 *cs)
{
	xf_v8_regs in = { x }, s, c;
	for (int q = 0; q < XF_V8_REGS; q++) {
		typeof(XF_V8_PICK(Sleef_cinz_sincosd8_u10avx512fnofma, Sleef_cinz_sincosd4_u10avx,
				  Sleef_cinz_sincosd2_u10sse2,
				  Sleef_cinz_sincosd1_u10purec)(in.r[q])) r =
			XF_V8_PICK(Sleef_cinz_sincosd8_u10avx512fnofma, Sleef_cinz_sincosd4_u10avx,
				   Sleef_cinz_sincosd2_u10sse2,
				   Sleef_cinz_sincosd1_u10purec)(in.r[q]);
		s.r[q] = r.x;
		c.r[q] = r.y;
	}
	*sn = s.v;
	*cs = c.v;
}

/* exp of 8 lanes: SLEEF cinz u10. */
static inline __attribute__((always_inline)) xf_v8 v8_exp(xf_v8 x)
{
	xf_v8_regs in = { x }, out;
	for (int q = 0; q < XF_V8_REGS; q++)
		out.r[q] = XF_V8_PICK(Sleef_cinz_expd8_u10avx512fnofma, Sleef_cinz_expd4_u10avx,
				      Sleef_cinz_expd2_u10sse2, Sleef_cinz_expd1_u10purec)(in.r[q]);
	return out.v;
}

/* sqrt of 8 lanes: the IEEE square root (correctly rounded on every set). */
static inline __attribute__((always_inline)) xf_v8 v8_sqrt(xf_v8 x)
{
	xf_v8_regs in = { x }, out;
	for (int q = 0; q < XF_V8_REGS; q++)
		out.r[q] = XF_V8_PICK(_mm512_sqrt_pd, _mm256_sqrt_pd, _mm_sqrt_pd, sqrt)(in.r[q]);
	return out.v;
}

static inline __attribute__((always_inline)) xf_v8 v8_load(const double *p)
{
	xf_v8 v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline __attribute__((always_inline)) void v8_store(double *p, xf_v8 v)
{
	memcpy(p, &v, sizeof v);
}

static inline __attribute__((always_inline)) void v8_add_to(double *p, xf_v8 v)
{
	v8_store(p, v8_load(p) + v);
}

/* m ? a : b, lane by lane (m from a comparison: all bits set or clear). */
static inline __attribute__((always_inline)) xf_v8 v8_select(xf_m8 m, xf_v8 a, xf_v8 b)
{
	return (xf_v8)(((xf_m8)a & m) | ((xf_m8)b & ~m));
}

/* a where m, else +0.0 */
static inline __attribute__((always_inline)) xf_v8 v8_keep(xf_m8 m, xf_v8 a)
{
	return (xf_v8)((xf_m8)a & m);
}

/* 1 when any lane of m is set. */
static inline __attribute__((always_inline)) int v8_any(xf_m8 m)
{
	return ((m[0] | m[1]) | (m[2] | m[3]) | (m[4] | m[5]) | (m[6] | m[7])) != 0;
}

/* The lanes' sum in one fixed order. */
static inline __attribute__((always_inline)) double v8_sum(xf_v8 v)
{
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/* kernel.h's xf_pair_integral for 8 pairs, with the same operations in the same order,
 * from diff = C_i − C_j and ddiff[m] = ∂C_i − ∂C_j of each pair. */
static inline __attribute__((always_inline)) xf_v8
v8_pair_integral(xf_v8 diff, const xf_v8 ddiff[3], xf_v8 d_integral[3])
{
	xf_v8 integral = v8_sqrt(diff * diff + XF_INTEGRAL_EPS2);
	xf_v8 k = diff / integral;
	for (int m = 0; m < 3; m++)
		d_integral[m] = k * ddiff[m];
	return integral;
}

/* kernel.h's xf_pair_diffusion for 8 pairs (exp: SLEEF's instead of libm's), from the
 * differences of C^D and its derivatives; w = ½q²dt. */
static inline __attribute__((always_inline)) xf_v8
v8_pair_diffusion(double w, xf_v8 diff, const xf_v8 ddiff[3], xf_v8 dlog_g1d[3])
{
	xf_v8 di[3];
	xf_v8 integral = v8_pair_integral(diff, ddiff, di);
	xf_v8 log_g1d = -w * integral;
	xf_m8 clip = log_g1d < XF_LOG_G1_MIN; /* g1_D = exp(−700), no slope */
	for (int m = 0; m < 3; m++)
		dlog_g1d[m] = v8_keep(~clip, -w * di[m]);
	return v8_exp(v8_select(clip, (xf_v8){ 0 } + XF_LOG_G1_MIN, log_g1d));
}

#endif
