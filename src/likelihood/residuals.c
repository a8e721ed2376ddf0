/* residuals.c — data − model point by point over a pair set (likelihood.h), for robust
 * noise scales; the fits themselves never need the residuals one by one. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "model/kernel.h"
#include "xpcsfit/likelihood.h"

/* Visits data and model at every point of a pair set (pair by pair, the angles inside);
 * stops when visit returns nonzero. One home for the point-by-point model of this file. */
typedef int (*point_visit)(void *ctx, size_t k, int p, int i, int j, double data, double model);

static int walk_points(const xf_problem *pr, const xf_pairset *ps, const double *x,
		       point_visit visit, void *visit_ctx)
{
	const xf_dataset *ds = pr->ds;
	int n = ds->n_frames, n_phi = pr->n_phi, laminar = pr->mode == XF_MODE_LAMINAR;
	assert(n_phi > 0 && n >= 3);
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
	int i = 1, j = 2, stop = 0;
	for (size_t k = 0; k < ps->n_pairs && !stop; k++) {
		if (ps->pair_i) {
			i = (int)ps->pair_i[k];
			j = (int)ps->pair_j[k];
		}
		assert(i >= 1 && i < j && j < n);
		double a[3], b[3], dfactor;
		double g1d = xf_pair_diffusion(&f, i, j, a);
		double s_ig = laminar ? f.s * xf_pair_integral(f.cg, f.dcg, i, j, b) : 0.0;
		size_t idx = xf_packed_index((size_t)n, (size_t)i, (size_t)j);
		for (int p = 0; p < n_phi && !stop; p++) {
			double g1 = laminar ? g1d * xf_shear_factor(s_ig * cos_a[p],
								    pr->grid.shear_model, &dfactor)
					    : g1d;
			if (g1 < XF_G1_FLOOR)
				g1 = XF_G1_FLOOR;
			stop = visit(visit_ctx, k, p, i, j, ds->c2[p][idx],
				     off[p] + con[p] * g1 * g1);
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

typedef struct residual_ctx {
	double *res;
	int n_phi;
} residual_ctx;

static int store_residual(void *ctx, size_t k, int p, int i, int j, double data, double model)
{
	residual_ctx *r = ctx;
	(void)i;
	(void)j;
	r->res[k * (size_t)r->n_phi + (size_t)p] = data - model;
	return 0;
}

int xf_problem_residuals(const xf_problem *pr, const xf_pairset *ps, const double *x, double *res)
{
	residual_ctx r = { res, pr->n_phi };
	return walk_points(pr, ps, x, store_residual, &r);
}

typedef struct non_finite_ctx {
	double inv_sigma2;
	xf_non_finite *where;
} non_finite_ctx;

static int first_non_finite(void *ctx, size_t k, int p, int i, int j, double data, double model)
{
	non_finite_ctx *c = ctx;
	double r = data - model;
	(void)k;
	xf_non_finite_kind kind = !isfinite(model)		     ? XF_NON_FINITE_MODEL
				  : !isfinite(data)		     ? XF_NON_FINITE_DATA
				  : !isfinite(r * r * c->inv_sigma2) ? XF_NON_FINITE_RESIDUAL
								     : XF_NON_FINITE_NONE;
	if (kind == XF_NON_FINITE_NONE) {
		c->where->chi2 += r * r * c->inv_sigma2;
		return 0;
	}
	*c->where = (xf_non_finite){ kind, -1, p, i, j, data, model, NAN };
	return 1;
}

int xf_problem_find_non_finite(const xf_problem *pr, const double *x, xf_non_finite *where)
{
	*where = (xf_non_finite){ XF_NON_FINITE_NONE, -1, -1, -1, -1, NAN, NAN, 0.0 };
	for (int k = 0; k < pr->n_full; k++)
		if (!isfinite(x[k])) {
			where->kind = XF_NON_FINITE_PARAMETER;
			where->param = k;
			where->chi2 = NAN;
			return 0;
		}
	xf_pairset all;
	if (xf_pairset_all(&all, pr->ds->n_frames))
		return -1;
	non_finite_ctx c = { 1.0 / (pr->sigma * pr->sigma), where };
	int rc = walk_points(pr, &all, x, first_non_finite, &c);
	xf_pairset_free(&all);
	if (rc == 0 && where->kind == XF_NON_FINITE_NONE && !isfinite(c.inv_sigma2)) {
		where->kind = XF_NON_FINITE_RESIDUAL; /* σ² underflows: every point overflows */
		where->chi2 = NAN;
	}
	return rc;
}
