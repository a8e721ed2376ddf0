/* kernel.h — the model's building blocks shared by every evaluator (model.c, the NLSQ
 * accumulator, the CUDA backend): per-frame cumulative rate integrals and their parameter
 * derivatives (O(N) per parameter set), and per-pair / per-angle pieces of c2.
 *
 * Notation (spec/model.md): C_k cumulative trapezoid of the floored rate in grid steps;
 * I_ij = sqrt((C_i − C_j)² + 1e-12); g1_D = exp(clip(−w·I^D, −700, 0)), w = ½q²dt;
 * Φ = s·cos((φ0 − φ)·π/180)·I^γ, s = q·L·dt/(2π); g1 = max(g1_D·F(Φ), 1e-10) with
 * F = sinc(Φ)² (homodyne) or sinc(πΦ) (pnas2024); c2 = offset + contrast·g1².
 *
 * The inline functions are plain C that nvcc also compiles for the GPU (XF_HD): the CPU
 * scalar path (model.c) and the CUDA backend (src/gpu/, docs/gpu.md) run one copy of
 * the formulas; the vectorised CPU kernels (pass_laminar_kernel.h, model_rows_kernel.h)
 * restate them lane-wise and are tested against these. */
#ifndef XPCSFIT_MODEL_KERNEL_H
#define XPCSFIT_MODEL_KERNEL_H

#include <math.h>
#include "xpcsfit/model.h"

/* host and device under nvcc, plain C otherwise */
#ifdef __CUDACC__
#define XF_HD __host__ __device__
#else
#define XF_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define XF_RATE_FLOOR	 1e-10	  /* D_k and γ_k are floored here (homodyne) */
#define XF_T_FLOOR_MIN	 1e-8	  /* smallest ε of the t̃ floor */
#define XF_INTEGRAL_EPS2 1e-12	  /* smooth |C_i − C_j|: sqrt(d² + 1e-12) */
#define XF_LOG_G1_MIN	 (-700.0) /* clip of log g1_D, keeps exp() normal */
#define XF_G1_FLOOR	 1e-10	  /* g1 floor */
#define XF_SINC_TAYLOR_X 1e-4	  /* below: 1 − x²/6 + x⁴/120 */
#define XF_DEG2RAD	 (M_PI / 180.0)

/* Per-frame state of one parameter set: cumulative integrals and their derivatives. */
typedef struct xf_frames {
	int n;		/* frames N */
	int with_shear; /* laminar_flow: shear arrays are valid */
	double w;	/* ½ q² dt (diffusion weight per grid-step integral) */
	double s;	/* q L dt / (2π) (shear phase per grid-step integral) */
	double *cd;	/* C^D_k */
	double *dcd[3]; /* ∂C^D_k / ∂(D0, alpha, D_offset) */
	double *cg;	/* C^γ_k */
	double *dcg[3]; /* ∂C^γ_k / ∂(gamma_dot_t0, beta, gamma_dot_t_offset) */
	double *log_t;	/* log t̃_k of the grid in log_t_dt (cached: t̃^e = exp(e·log t̃)) */
	double log_t_dt;
	double *store; /* one allocation behind the arrays */
} xf_frames;

int xf_frames_alloc(xf_frames *f, int n_frames, int with_shear);
void xf_frames_free(xf_frames *f);
/* Fill f for theta (canonical order) on grid. */
void xf_frames_compute(xf_frames *f, const xf_model_grid *grid, const double *theta);
/* The q-dependent weights w and s of f for scattering vector q (Å⁻¹) on grid: the
 * cumulative integrals do not depend on q, so the rings of a joint fit share them and
 * differ only here (adr/0064). xf_frames_compute sets them for grid->q. */
void xf_frames_set_q(xf_frames *f, const xf_model_grid *grid, double q);
#ifdef __cplusplus
}
#endif

/* I_ij of a cumulative array and its 3 derivatives. */
XF_HD static inline double xf_pair_integral(const double *c, double *const dc[3], int i, int j,
					    double d_integral[3])
{
	double diff = c[i] - c[j];
	double integral = sqrt(diff * diff + XF_INTEGRAL_EPS2);
	double k = diff / integral;
	for (int m = 0; m < 3; m++)
		d_integral[m] = k * (dc[m][i] - dc[m][j]);
	return integral;
}

/* g1_D of a pair and ∂ log g1_D / ∂(D0, alpha, D_offset) (zero where clipped). */
XF_HD static inline double xf_pair_diffusion(const xf_frames *f, int i, int j, double dlog_g1d[3])
{
	double di[3];
	double integral = xf_pair_integral(f->cd, f->dcd, i, j, di);
	double log_g1d = -f->w * integral;
	if (log_g1d < XF_LOG_G1_MIN) {
		dlog_g1d[0] = dlog_g1d[1] = dlog_g1d[2] = 0.0;
		return exp(XF_LOG_G1_MIN);
	}
	for (int m = 0; m < 3; m++)
		dlog_g1d[m] = -f->w * di[m];
	return exp(log_g1d);
}

/* Unnormalised sinc and its derivative, Taylor branch near 0 (model.md). */
XF_HD static inline double xf_sinc(double x, double *dsinc)
{
	if (fabs(x) < XF_SINC_TAYLOR_X) {
		double x2 = x * x;
		*dsinc = -x / 3.0 + x2 * x / 30.0;
		return 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
	}
	double sn, cs;
	sincos(x, &sn, &cs);
	double inv = 1.0 / x, sinc = sn * inv; /* one division: this runs for every point */
	*dsinc = (cs - sinc) * inv;
	return sinc;
}

/* Shear factor F(Φ) and dF/dΦ for the chosen shear model. */
XF_HD static inline double xf_shear_factor(double phase, xf_shear_model model, double *dfactor)
{
	double ds;
	if (model == XF_SHEAR_PNAS2024) {
		/* c2 carries F², so |sinc| gives the same c2 and keeps g1 ≥ 0 for the floor */
		double sc = xf_sinc(M_PI * phase, &ds);
		double sign = sc < 0.0 ? -1.0 : 1.0;
		*dfactor = sign * M_PI * ds;
		return sign * sc;
	}
	double sc = xf_sinc(phase, &ds);
	*dfactor = 2.0 * sc * ds;
	return sc * sc;
}

/* g1 of pair (i, j) at one angle (cos_a, sin_a of (φ0 − φ) in radians) and, when dg1 is
 * given, ∂g1/∂theta[0..6] (zeros past the mode's parameters and under the floor). */
XF_HD static inline double xf_pair_g1(const xf_frames *f, xf_mode mode, xf_shear_model shear_model,
				      double cos_a, double sin_a, int i, int j,
				      double dg1[XF_N_PHYS])
{
	double dlog_g1d[3];
	double g1d = xf_pair_diffusion(f, i, j, dlog_g1d);
	double g1, factor = 1.0, dfactor = 0.0, ig = 0.0, dig[3] = { 0, 0, 0 };
	if (mode == XF_MODE_LAMINAR) {
		ig = xf_pair_integral(f->cg, f->dcg, i, j, dig);
		factor = xf_shear_factor(f->s * cos_a * ig, shear_model, &dfactor);
	}
	g1 = g1d * factor;
	if (!dg1)
		return g1 < XF_G1_FLOOR ? XF_G1_FLOOR : g1;
	for (int m = 0; m < XF_N_PHYS; m++)
		dg1[m] = 0.0;
	if (g1 < XF_G1_FLOOR)
		return XF_G1_FLOOR; /* hard floor: zero derivative */
	for (int m = 0; m < 3; m++)
		dg1[m] = g1 * dlog_g1d[m];
	if (mode == XF_MODE_LAMINAR) {
		double shear = g1d * dfactor * f->s;
		for (int m = 0; m < 3; m++)
			dg1[3 + m] = shear * cos_a * dig[m];
		dg1[XF_P_PHI0] = -shear * sin_a * XF_DEG2RAD * ig;
	}
	return g1;
}

/* One data point of a fit: its residual data − c2 and, in jrow, the physical part of its
 * Jacobian row ∂c2/∂theta[0..6]; *g1sq receives g1² (∂c2/∂contrast). */
XF_HD static inline double xf_point_row(const xf_frames *f, xf_mode mode,
					xf_shear_model shear_model, double cos_a, double sin_a,
					double contrast, double offset, int i, int j, double data,
					double jrow[XF_N_PHYS], double *g1sq)
{
	double dg1[XF_N_PHYS];
	double g1 = xf_pair_g1(f, mode, shear_model, cos_a, sin_a, i, j, dg1);
	double two_cg1 = 2.0 * contrast * g1;
	for (int m = 0; m < XF_N_PHYS; m++)
		jrow[m] = two_cg1 * dg1[m];
	*g1sq = g1 * g1;
	return data - (offset + contrast * *g1sq);
}

#endif
