/* held_scaling.c — what held per-angle scaling costs (adr/0048). The `constant` mode
 * holds each angle's contrast and offset at the quantile estimates (or the config's
 * per_angle_scaling); when those are off, the physical parameters absorb the error and
 * the fit can look converged and good while χ² is several times what it could be.
 *
 * At the fit's physical parameters the model is linear in each angle's contrast and
 * offset, so what freeing them would give is exact and cheap: one pass of the same data
 * in individual mode, at the held values, gives per angle the 2×2 block of JᵀJ and the
 * gradient, and the bounded least-squares minimum of that quadratic is the χ² that free
 * scaling reaches at these physical parameters. A gain beyond what noise gives freeing
 * 2·n_φ parameters lowers the grade; a gain that halves χ² makes it poor. The joint
 * Gauss-Newton step of that pass also says how far the physical parameters would move. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/covariance.h"
#include "nlsq/nlsq_internal.h"

/* Freeing k = 2·n_φ parameters lowers χ² by about a χ²_k variable in noise units (mean
 * k, sd sqrt(2k)) when the held values are right: a gain beyond k + this many sd is
 * not chance. */
#define XF_HELD_SIGMAS 5.0
/* χ² with the held scaling at least this many times the freed one: poor. */
#define XF_HELD_POOR_RATIO 2.0

/* min over the box lo ≤ δ ≤ hi of q(δ) = δᵀHδ − 2bᵀδ for one angle's 2×2 block (H
 * positive semi-definite): the interior minimum if it lies in the box, else the best
 * point on the four edges (each a one-dimensional minimum, clipped). Returns −min q ≥ 0,
 * the χ² reduction. */
static double box_reduction(const double h[2][2], const double b[2], const double lo[2],
			    const double hi[2])
{
	double best = 0.0; /* δ = 0 */
	double det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
	if (det > 0.0) {
		double d0 = (h[1][1] * b[0] - h[0][1] * b[1]) / det;
		double d1 = (h[0][0] * b[1] - h[1][0] * b[0]) / det;
		if (d0 >= lo[0] && d0 <= hi[0] && d1 >= lo[1] && d1 <= hi[1])
			return fmax(0.0, b[0] * d0 + b[1] * d1);
	}
	for (int fixed = 0; fixed < 2; fixed++) {
		int other = 1 - fixed;
		for (int side = 0; side < 2; side++) {
			double d[2];
			d[fixed] = side ? hi[fixed] : lo[fixed];
			double hoo = h[other][other];
			double v = hoo > 0.0 ? (b[other] - h[other][fixed] * d[fixed]) / hoo : 0.0;
			d[other] = fmin(fmax(v, lo[other]), hi[other]);
			double q = h[0][0] * d[0] * d[0] + 2.0 * h[0][1] * d[0] * d[1] +
				   h[1][1] * d[1] * d[1] - 2.0 * (b[0] * d[0] + b[1] * d[1]);
			if (-q > best)
				best = -q;
		}
	}
	return best;
}

/* The request of the check: individual scaling started at the held values, the
 * physical parameters held at x. */
static void free_scaling_request(const xf_fit_ctx *ctx, const double *x, xf_request *req)
{
	const xf_problem *pr = ctx->pr;
	*req = *ctx->req;
	req->per_angle_mode = XF_SCALING_INDIVIDUAL;
	req->anti_degeneracy = 1;
	for (int k = 0; k < pr->n_phys; k++) {
		req->start[k] = x[k];
		req->value_given[k] = 1;
		req->fixed[k] = 1;
	}
	req->n_contrast_start = pr->n_phi;
	req->contrast_start = pr->base_contrast;
	req->n_offset_start = pr->n_phi;
	req->offset_start = pr->base_offset;
}

typedef struct held_cost {
	double chi2_held, chi2_free; /* at the fit's physical parameters */
	double noise_units;	     /* the gain over s² of the freed fit */
	double shift_sd;	     /* largest move of a free physical parameter, in its sd */
	int shift_param;	     /* which (−1: none computed) */
} held_cost;

/* The largest move of a free physical parameter in the joint Gauss-Newton step of the
 * freed problem, in units of its sd there. */
static void physical_shift(const xf_problem *pr, const xf_problem *pf, const double *jtj,
			   const double *b, double s2, held_cost *c)
{
	int n = pf->n_full;
	int *mask = malloc(sizeof(int) * (size_t)n);
	double *cov = malloc(sizeof(double) * (size_t)n * n);
	int rank;
	c->shift_param = -1;
	if (!mask || !cov) {
		xf_note_no_memory();
		goto done;
	}
	for (int k = 0; k < n; k++)
		mask[k] = k >= pf->n_phys || !pr->fixed[k];
	if (xf_covariance(jtj, n, mask, 1.0, cov, &rank, NULL))
		goto done;
	for (int k = 0; k < pf->n_phys; k++) {
		if (!mask[k] || !(cov[(size_t)k * n + k] > 0.0))
			continue;
		double step = 0.0;
		for (int l = 0; l < n; l++)
			if (mask[l])
				step += cov[(size_t)k * n + l] * b[l];
		double sd = sqrt(cov[(size_t)k * n + k] * s2);
		if (fabs(step) / sd > c->shift_sd || c->shift_param < 0) {
			c->shift_sd = fabs(step) / sd;
			c->shift_param = k;
		}
	}
done:
	free(mask);
	free(cov);
}

/* One pass of the freed problem at the held point; 0, or −1 (out of memory). */
static int measure(const xf_fit_ctx *ctx, const double *x, int n_free, held_cost *c)
{
	const xf_problem *pr = ctx->pr;
	xf_request req;
	xf_problem pf;
	xf_pairset all = { 0 };
	xf_error err = { 0 };
	xf_lik *lik = NULL;
	free_scaling_request(ctx, x, &req);
	if (xf_problem_build(&pf, &req, pr->ds, &err)) {
		if (err.code == XF_ERR_NOMEM)
			xf_note_no_memory(); /* the fit then has no result (tests/faults/) */
		else
			xf_info("nlsq: held scaling not checked: %s", err.msg);
		return -1;
	}
	int n = pf.n_full, na = pr->n_phi, rc = -1;
	double *xf = malloc(sizeof(double) * (size_t)n);
	double *jtj = malloc(sizeof(double) * (size_t)n * n);
	double *b = malloc(sizeof(double) * (size_t)n);
	if (!xf || !jtj || !b || xf_pairset_all(&all, pr->ds->n_frames) ||
	    !(lik = xf_lik_create(&pf, &all, ctx->pool, &err)) || xf_lik_distribute(lik))
		goto done;
	memcpy(xf, x, sizeof(double) * (size_t)pr->n_phys);
	for (int a = 0; a < na; a++) {
		xf[pf.n_phys + a] = pr->base_contrast[a];
		xf[pf.n_phys + na + a] = pr->base_offset[a];
	}
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	if (xf_lik_eval(lik, xf, &out))
		goto done;
	double gain = 0.0;
	for (int a = 0; a < na; a++) {
		int i[2] = { pf.n_phys + a, pf.n_phys + na + a };
		double h[2][2], g[2], lo[2], hi[2];
		for (int r = 0; r < 2; r++) {
			for (int s = 0; s < 2; s++)
				h[r][s] = jtj[(size_t)i[r] * n + i[s]];
			g[r] = b[i[r]];
			lo[r] = pf.lower[i[r]] - xf[i[r]];
			hi[r] = pf.upper[i[r]] - xf[i[r]];
		}
		gain += box_reduction(h, g, lo, hi);
	}
	c->chi2_held = out.chi2;
	c->chi2_free = fmax(out.chi2 - gain, 0.0);
	double s2 = c->chi2_free / fmax(1.0, (double)pr->n_points - n_free - 2.0 * na);
	c->noise_units = s2 > 0.0 ? gain / s2 : (gain > 0.0 ? INFINITY : 0.0);
	physical_shift(pr, &pf, jtj, b, s2, c);
	rc = 0;
done:
	xf_lik_destroy(lik);
	xf_pairset_free(&all);
	xf_problem_free(&pf);
	free(xf);
	free(jtj);
	free(b);
	if (rc)
		xf_note_no_memory();
	return rc;
}

xf_quality_level xf_fit_held_scaling(const xf_fit_ctx *ctx, const xf_fit_point *best,
				     xf_nlsq_result *res)
{
	const xf_problem *pr = ctx->pr;
	if (!pr->scaling->held_at_start || pr->n_basis > 0 || !ctx->req || !ctx->pool)
		return XF_QUALITY_GOOD;
	if (ctx->opt->loss != XF_LOSS_LINEAR) {
		xf_info("nlsq: held scaling not checked: the loss is not linear");
		return XF_QUALITY_GOOD;
	}
	held_cost c = { 0 };
	if (measure(ctx, best->x, res->n_free, &c))
		return XF_QUALITY_GOOD; /* out of memory: noted, the fit has no result */
	double k = 2.0 * pr->n_phi, chance = k + XF_HELD_SIGMAS * sqrt(2.0 * k);
	double ratio = c.chi2_free > 0.0 ? c.chi2_held / c.chi2_free : INFINITY;
	xf_info("nlsq: held scaling: chi2 %.6g held, %.6g with each angle's contrast and offset "
		"free at these parameters (x%.3g, %.3g noise units, chance up to %.3g)",
		c.chi2_held, c.chi2_free, ratio, c.noise_units, chance);
	if (!(c.noise_units > chance))
		return XF_QUALITY_GOOD;
	char shift[96] = "";
	if (c.shift_param >= 0)
		snprintf(shift, sizeof shift, "; %s would move by about %.3g sd",
			 pr->names[c.shift_param], c.shift_sd);
	xf_quality_add_reason(&res->quality,
			      "held contrast/offset cost chi2 x%.3g (%.3g noise units) against "
			      "each angle's fitted at these parameters%s: fit with per_angle_mode "
			      "individual or auto",
			      ratio, c.noise_units, shift);
	return ratio >= XF_HELD_POOR_RATIO ? XF_QUALITY_POOR : XF_QUALITY_MARGINAL;
}
