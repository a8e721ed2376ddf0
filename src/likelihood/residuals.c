/* residuals.c — data − model point by point over a pair set (likelihood.h), for robust
 * noise scales; the fits themselves never need the residuals one by one. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "model/kernel.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/likelihood.h"

/* Visits data and model at every point of a pair set (pair by pair, the angles inside);
 * stops when visit returns nonzero. One home for the point-by-point model of this file. */
typedef int (*point_visit)(void *ctx, size_t k, int p, int i, int j, double data, double model);

/* The pairs walked: an explicit set's list, or `count` pairs of every pair, row by row,
 * from (i0, j0) (all of them, or a band's, adr/0027). */
typedef struct walk_range {
	const xf_pairset *ps;
	size_t count;
	int i0, j0;
} walk_range;

static int walk_points(const xf_problem *pr, const walk_range *wr, const double *x,
		       point_visit visit, void *visit_ctx)
{
	const xf_pairset *ps = wr->ps;
	const xf_dataset *ds = pr->ds;
	int n = ds->n_frames, n_phi = pr->n_phi, laminar = pr->model->shear;
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
	int i = wr->i0, j = wr->j0, stop = 0;
	for (size_t k = 0; k < wr->count && !stop; k++) {
		if (ps->pair_i) {
			i = (int)ps->pair_i[k];
			j = (int)ps->pair_j[k];
		}
		assert(i >= 1 && i < j && j < n);
		double a[3], b[3], dfactor, g1d = 0.0, s_ig = 0.0;
		size_t idx = xf_packed_index((size_t)n, (size_t)i, (size_t)j);
		for (int p = 0; p < n_phi && !stop; p++) {
			if (p == pr->ring_first[pr->slot_ring[p]]) { /* a ring's q: adr/0064 */
				xf_frames_set_q(&f, &pr->grid, pr->ring_q[pr->slot_ring[p]]);
				g1d = xf_pair_diffusion(&f, i, j, a);
				s_ig = laminar ? f.s * xf_pair_integral(f.cg, f.dcg, i, j, b) : 0.0;
			}
			double g1 = laminar ? g1d * xf_shear_factor(s_ig * cos_a[p],
								    pr->grid.shear_model, &dfactor)
					    : g1d;
			if (pr->model->g1) { /* a model given by its point function (adr/0116) */
				xf_model_grid g = pr->grid;
				g.q = pr->ring_q[pr->slot_ring[p]];
				g1 = pr->model->g1(&g, x, ds->phi_deg[p], i, j, NULL);
			}
			if (g1 < XF_G1_FLOOR)
				g1 = XF_G1_FLOOR;
			stop = visit(visit_ctx, k, p, i, j, xf_dataset_c2(ds, p, idx),
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
	walk_range wr = { ps, ps->n_pairs, 1, 2 };
	assert(!pr->ds->band);
	return walk_points(pr, &wr, x, store_residual, &r);
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

/* The search over the pairs the dataset holds, from the state the rank before left. */
typedef struct search_state {
	xf_non_finite where;
	int failed; /* a rank could not allocate */
} search_state;

typedef struct search_ctx {
	const xf_problem *pr;
	const double *x;
	non_finite_ctx *c;
} search_ctx;

static void search_step(void *ctx, void *state)
{
	search_ctx *sc = ctx;
	search_state *st = state;
	const xf_dataset *ds = sc->pr->ds;
	if (st->failed || st->where.kind != XF_NON_FINITE_NONE)
		return; /* found (or failed) before this rank's pairs */
	xf_pairset all;
	xf_pairset_all(&all, ds->n_frames);
	walk_range wr = { &all, all.n_pairs, 1, 2 };
	if (ds->band)
		wr = (walk_range){ &all, ds->pair_count, ds->pair_i0, ds->pair_j0 };
	sc->c->where = &st->where;
	if (walk_points(sc->pr, &wr, sc->x, first_non_finite, sc->c))
		st->failed = 1;
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
	non_finite_ctx c = { 1.0 / (pr->sigma * pr->sigma), where };
	search_ctx sc = { pr, x, &c };
	int rc = 0;
	if (pr->ds->band) {
		/* a band (adr/0027): each rank goes on from where the rank before stopped */
		search_state st = { *where, 0 };
		rc = xf_dist_chain(&st, sizeof st, search_step, &sc);
		*where = st.where;
		rc = rc || st.failed ? -1 : 0;
	} else {
		search_state st = { *where, 0 };
		search_step(&sc, &st);
		*where = st.where;
		rc = st.failed ? -1 : 0;
	}
	if (rc == 0 && where->kind == XF_NON_FINITE_NONE && !isfinite(c.inv_sigma2)) {
		where->kind = XF_NON_FINITE_RESIDUAL; /* σ² underflows: every point overflows */
		where->chi2 = NAN;
	}
	return rc;
}
