/* residuals.c — data − model point by point over a pair set (likelihood.h), for robust
 * noise scales; the fits themselves never need the residuals one by one. */
#include <math.h>
#include <stdlib.h>

#include "model/kernel.h"
#include "xpcsfit/likelihood.h"

int xf_problem_residuals(const xf_problem *pr, const xf_pairset *ps, const double *x, double *res)
{
	const xf_dataset *ds = pr->ds;
	int n = ds->n_frames, n_phi = pr->n_phi, laminar = pr->mode == XF_MODE_LAMINAR;
	xf_frames f;
	double *con = malloc(sizeof(double) * (size_t)n_phi);
	double *off = malloc(sizeof(double) * (size_t)n_phi);
	double *cos_a = malloc(sizeof(double) * (size_t)n_phi);
	if (!con || !off || !cos_a || xf_frames_alloc(&f, n, laminar)) {
		free(con);
		free(off);
		free(cos_a);
		return -1;
	}
	xf_frames_compute(&f, &pr->grid, x);
	xf_problem_scaling(pr, x, con, off);
	for (int p = 0; p < n_phi && laminar; p++)
		cos_a[p] = cos((x[XF_P_PHI0] - ds->phi_deg[p]) * XF_DEG2RAD);
	int i = 1, j = 2;
	for (size_t k = 0; k < ps->n_pairs; k++) {
		if (ps->pair_i) {
			i = (int)ps->pair_i[k];
			j = (int)ps->pair_j[k];
		}
		double a[3], b[3], dfactor;
		double g1d = xf_pair_diffusion(&f, i, j, a);
		double s_ig = laminar ? f.s * xf_pair_integral(f.cg, f.dcg, i, j, b) : 0.0;
		size_t idx = xf_packed_index((size_t)n, (size_t)i, (size_t)j);
		for (int p = 0; p < n_phi; p++) {
			double g1 = laminar ? g1d * xf_shear_factor(s_ig * cos_a[p],
								    pr->grid.shear_model, &dfactor)
					    : g1d;
			if (g1 < XF_G1_FLOOR)
				g1 = XF_G1_FLOOR;
			res[k * (size_t)n_phi + (size_t)p] =
				ds->c2[p][idx] - (off[p] + con[p] * g1 * g1);
		}
		if (!ps->pair_i && ++j == n) { /* every pair, row by row */
			i++;
			j = i + 1;
		}
	}
	xf_frames_free(&f);
	free(con);
	free(off);
	free(cos_a);
	return 0;
}
