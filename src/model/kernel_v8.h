/* kernel_v8.h — kernel.h's per-pair functions (xf_pair_integral, xf_pair_diffusion) over
 * one native vector of pairs (simd/v8.h's xf_vn), with the same operations in the same
 * order as the scalar ones, so every instruction set gives the same bits (adr/0035). Used
 * by the model's row evaluator (model_rows_kernel.h) and the likelihood's laminar kernel
 * (likelihood/pass_laminar_kernel.h). */
#ifndef XPCSFIT_MODEL_KERNEL_V8_H
#define XPCSFIT_MODEL_KERNEL_V8_H

#include "model/kernel.h"
#include "simd/v8.h"

/* kernel.h's xf_pair_integral for one native vector of pairs, with the same operations in the same order,
 * from diff = C_i − C_j and ddiff[m] = ∂C_i − ∂C_j of each pair. */
static inline __attribute__((always_inline)) xf_vn
vn_pair_integral(xf_vn diff, const xf_vn ddiff[3], xf_vn d_integral[3])
{
	xf_vn integral = vn_sqrt(diff * diff + XF_INTEGRAL_EPS2);
	xf_vn k = diff / integral;
	for (int m = 0; m < 3; m++)
		d_integral[m] = k * ddiff[m];
	return integral;
}

/* kernel.h's xf_pair_diffusion for one native vector of pairs (exp: SLEEF's instead of libm's), from the
 * differences of C^D and its derivatives; w = ½q²dt. */
static inline __attribute__((always_inline)) xf_vn
vn_pair_diffusion(double w, xf_vn diff, const xf_vn ddiff[3], xf_vn dlog_g1d[3])
{
	xf_vn di[3];
	xf_vn integral = vn_pair_integral(diff, ddiff, di);
	xf_vn log_g1d = -w * integral;
	xf_mn clip = log_g1d < XF_LOG_G1_MIN; /* g1_D = exp(−700), no slope */
	for (int m = 0; m < 3; m++)
		dlog_g1d[m] = vn_keep(~clip, -w * di[m]);
	return vn_exp(vn_select(clip, (xf_vn){ 0 } + XF_LOG_G1_MIN, log_g1d));
}

#endif
