/* model.c — plain c2 evaluation for simulation, plots and tests (model.h). Fits use the
 * fused accumulators in src/nlsq/, built from the same kernel.h pieces. */
#include "xpcsfit/model.h"
#include "model/kernel.h"

/* cos and sin of (φ0 − φ) in radians: one angle, computed once per evaluation */
typedef struct angle_terms {
	double cos_a, sin_a;
} angle_terms;

static angle_terms angle_of(const double *theta, double phi_deg)
{
	double angle = (theta[XF_P_PHI0] - phi_deg) * XF_DEG2RAD;
	return (angle_terms){ cos(angle), sin(angle) };
}

/* g1 of pair (i, j) at one angle and, when dg1 is given, ∂g1/∂theta[0..6]. */
static double pair_g1(const xf_frames *f, const xf_model_grid *grid, angle_terms at, int i, int j,
		      double dg1[XF_N_PHYS])
{
	double dlog_g1d[3];
	double g1d = xf_pair_diffusion(f, i, j, dlog_g1d);
	double g1, factor = 1.0, dfactor = 0.0, ig = 0.0, dig[3] = { 0, 0, 0 };
	double cos_a = at.cos_a, sin_a = at.sin_a;
	if (grid->mode == XF_MODE_LAMINAR) {
		ig = xf_pair_integral(f->cg, f->dcg, i, j, dig);
		factor = xf_shear_factor(f->s * cos_a * ig, grid->shear_model, &dfactor);
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
	if (grid->mode == XF_MODE_LAMINAR) {
		double shear = g1d * dfactor * f->s;
		for (int m = 0; m < 3; m++)
			dg1[3 + m] = shear * cos_a * dig[m];
		dg1[XF_P_PHI0] = -shear * sin_a * XF_DEG2RAD * ig;
	}
	return g1;
}

int xf_model_c2_rows(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, int row0, int row1, double *c2_out)
{
	xf_frames f;
	int n = grid->n_frames;
	if (xf_frames_alloc(&f, n, grid->mode == XF_MODE_LAMINAR))
		return -1;
	xf_frames_compute(&f, grid, theta);
	angle_terms at = angle_of(theta, phi_deg);
	for (int i = row0; i < row1; i++)
		for (int j = 0; j < n; j++) {
			double g1 = pair_g1(&f, grid, at, i < j ? i : j, i < j ? j : i, NULL);
			c2_out[(size_t)(i - row0) * n + j] = offset + contrast * g1 * g1;
		}
	xf_frames_free(&f);
	return 0;
}

int xf_model_c2_full(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, double *c2_out)
{
	xf_frames f;
	int n = grid->n_frames;
	if (xf_frames_alloc(&f, n, grid->mode == XF_MODE_LAMINAR))
		return -1;
	xf_frames_compute(&f, grid, theta);
	angle_terms at = angle_of(theta, phi_deg);
	for (int i = 0; i < n; i++)
		for (int j = i; j < n; j++) {
			double g1 = pair_g1(&f, grid, at, i, j, NULL);
			double c2 = offset + contrast * g1 * g1;
			c2_out[(size_t)i * n + j] = c2;
			c2_out[(size_t)j * n + i] = c2;
		}
	xf_frames_free(&f);
	return 0;
}

int xf_model_c2_point(const xf_model_grid *grid, const double *theta, double phi_deg,
		      double contrast, double offset, int i, int j, double *c2_out, double *grad)
{
	xf_frames f;
	if (xf_frames_alloc(&f, grid->n_frames, grid->mode == XF_MODE_LAMINAR))
		return -1;
	xf_frames_compute(&f, grid, theta);
	double dg1[XF_N_PHYS];
	double g1 = pair_g1(&f, grid, angle_of(theta, phi_deg), i, j, grad ? dg1 : NULL);
	*c2_out = offset + contrast * g1 * g1;
	if (grad) {
		for (int m = 0; m < XF_N_PHYS; m++)
			grad[m] = 2.0 * contrast * g1 * dg1[m];
		grad[XF_P_CONTRAST] = g1 * g1;
		grad[XF_P_OFFSET] = 1.0;
	}
	xf_frames_free(&f);
	return 0;
}
