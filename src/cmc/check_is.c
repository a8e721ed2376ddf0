/* check_is.c — the importance-sampling core of the self-check (check.h; cmc.md "When the
 * combination can be trusted"; adr/0039), on any log target so that tests can give it
 * known ones: points from the t proposal (proposal.c), M doubled from check_draws until
 * k̂ and IS-ESS/M are stable, Pareto smoothing (psis.c), and the three checks. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/check.h"
#include "cmc/isprop.h"
#include "cmc/proposal.h"
#include "cmc/tmap.h"
#include "util/interrupt.h"

int xf_check_m_max(int m0)
{
	int m_max = m0; /* the largest m0·2^j within the cap (m0 itself when above it) */
	while (m_max > 0 && m_max <= XF_CHECK_M_MAX / 2)
		m_max *= 2;
	return m_max;
}

/* k̂ and IS-ESS of the first n raw log ratios (smoothed copy in lw). */
static double psis_of(const double *lr, int n, double *lw, double *ess)
{
	memcpy(lw, lr, sizeof(double) * (size_t)n);
	double k = xf_psis(lw, n), s2 = 0.0;
	for (int i = 0; i < n; i++)
		s2 += exp(2.0 * lw[i]);
	*ess = s2 > 0.0 ? 1.0 / s2 : 0.0;
	return k;
}

/* The axis check (cmc.md): along each principal direction of the approximation (the
 * eigenvectors of the combined covariance L·Lᵀ), from the corrected centre (the weighted
 * mean) at ± the corrected sd along that direction (√(vᵀ Σ_w v), Σ_w the weighted
 * covariance), the exact log posterior's drop (the mean of the two sides') against the
 * Gaussian's 0.5. Why this mix
 * (adr/0039): the consensus scales are known to be 5–20 % off on data every shard
 * identifies — that is what the correction fixes — and would fail a check meant for
 * shape; the eigenvectors of Σ_w itself are chosen by its own noise (IS-ESS ≈ 1 000: its
 * small eigenvalues come out low and the drops there ≈ 0.4), the fixed consensus
 * directions are not. 2·dim + 1 values-only passes. */
static int axis_check(xf_check_logp f, void *ctx, const double *u, const double *w, int m, int nt,
		      const double *chol, xf_cmc_check *c)
{
	double *mu = calloc((size_t)nt, sizeof(double)),
	       *cov = calloc((size_t)nt * nt, sizeof(double));
	double *vec = calloc((size_t)nt * nt, sizeof(double));
	double *ev = malloc(sizeof(double) * (size_t)nt);
	/* the centre, then both sides of every axis: one batch of 2·nt + 1 points */
	double *p = malloc(sizeof(double) * (size_t)(2 * nt + 1) * nt);
	double *lp = malloc(sizeof(double) * (size_t)(2 * nt + 1));
	int rc = -1;
	if (!mu || !cov || !vec || !ev || !p || !lp)
		goto done;
	for (int i = 0; i < m; i++)
		for (int k = 0; k < nt; k++)
			mu[k] += w[i] * u[(size_t)i * nt + k];
	for (int i = 0; i < m; i++)
		for (int k = 0; k < nt; k++)
			for (int l = 0; l < nt; l++)
				cov[(size_t)k * nt + l] += w[i] * (u[(size_t)i * nt + k] - mu[k]) *
							   (u[(size_t)i * nt + l] - mu[l]);
	for (int k = 0; k < nt; k++) /* the combined covariance L·Lᵀ (lower triangle) */
		for (int l = 0; l <= k; l++) {
			double s = 0.0;
			for (int j = 0; j <= l; j++)
				s += chol[(size_t)k * nt + j] * chol[(size_t)l * nt + j];
			vec[(size_t)k * nt + l] = s;
		}
	c->axis_dev = INFINITY;
	c->axis = c->axis_param = -1;
	c->axis_drop = c->axis_drop_plus = c->axis_drop_minus = NAN;
	rc = 0;
	/* eigenvalues ascending, eigenvectors in the columns */
	if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'L', nt, vec, nt, ev) != 0)
		goto done;
	memcpy(p, mu, sizeof(double) * (size_t)nt);
	for (int a = 0; a < nt; a++) {
		int j = nt - 1 - a; /* axis 0: the largest variance */
		double var = 0.0;
		for (int k = 0; k < nt; k++)
			for (int l = 0; l < nt; l++)
				var += vec[(size_t)k * nt + j] * cov[(size_t)k * nt + l] *
				       vec[(size_t)l * nt + j];
		double sd = var > 0.0 ? sqrt(var) : NAN;
		for (int side = 0; side < 2; side++) {
			double *q = p + (size_t)(1 + 2 * a + side) * nt;
			for (int k = 0; k < nt; k++)
				q[k] = mu[k] + (side ? -sd : sd) * vec[(size_t)k * nt + j];
		}
	}
	if (f(ctx, 2 * nt + 1, p, lp)) {
		rc = -1;
		goto done;
	}
	c->axis_dev = 0.0;
	for (int a = 0; a < nt; a++) {
		int j = nt - 1 - a;
		double d[2] = { lp[0] - lp[1 + 2 * a], lp[0] - lp[2 + 2 * a] };
		/* the even part: a Gaussian's (d₊ + d₋)/2 is 0.5 wherever its centre is, so
		 * the centre's IS noise (≈ 1/√IS-ESS sd, in d₊ − d₋) does not count; a curved
		 * ridge raises both sides */
		double drop = 0.5 * (d[0] + d[1]), dev = fabs(drop - 0.5);
		if (!(dev <= c->axis_dev)) { /* NaN counts as the worst */
			c->axis_dev = isnan(dev) ? INFINITY : dev;
			c->axis = a;
			c->axis_drop = drop;
			c->axis_drop_plus = d[0];
			c->axis_drop_minus = d[1];
			int big = 0;
			for (int k = 1; k < nt; k++)
				if (fabs(vec[(size_t)k * nt + j]) > fabs(vec[(size_t)big * nt + j]))
					big = k;
			c->axis_param = big;
		}
	}
done:
	free(mu);
	free(cov);
	free(vec);
	free(ev);
	free(p);
	free(lp);
	return rc;
}

/* The axis check of a curved map (tmap.h), in its base coordinates z, where the
 * approximation is N(0, I) and its principal axes are z's own: from the weighted mean of
 * the points' z at ± their weighted sd along each axis (axis 0: the widest of the fitted
 * Gaussian, the ridge), the exact log density in z — log p(u(z)) + log|du/dz| — drops
 * against the Gaussian's 0.5, as axis_check does in u for a linear map. */
static int axis_check_z(xf_check_logp f, void *ctx, const xf_is_prop *prop, const double *z,
			const double *w, int m, xf_cmc_check *c)
{
	int d = prop->d, np = 2 * d + 1;
	double *mu = calloc((size_t)d, sizeof(double)), *sd = calloc((size_t)d, sizeof(double));
	double *pz = malloc(sizeof(double) * (size_t)np * d);
	double *pu = malloc(sizeof(double) * (size_t)np * d);
	double *lj = malloc(sizeof(double) * (size_t)np), *lp = malloc(sizeof(double) * (size_t)np);
	int rc = -1;
	if (!mu || !sd || !pz || !pu || !lj || !lp)
		goto done;
	for (int i = 0; i < m; i++)
		for (int k = 0; k < d; k++)
			mu[k] += w[i] * z[(size_t)i * d + k];
	for (int i = 0; i < m; i++)
		for (int k = 0; k < d; k++) {
			double e = z[(size_t)i * d + k] - mu[k];
			sd[k] += w[i] * e * e;
		}
	for (int p = 0; p < np; p++)
		memcpy(pz + (size_t)p * d, mu, sizeof(double) * (size_t)d);
	for (int a = 0; a < d; a++) {
		double s = sqrt(sd[a]);
		pz[(size_t)(1 + 2 * a) * d + a] += s;
		pz[(size_t)(2 + 2 * a) * d + a] -= s;
	}
	if (prop->to_u(prop->ctx, np, pz, pu, lj) || f(ctx, np, pu, lp))
		goto done;
	rc = 0;
	c->axis_dev = 0.0;
	c->axis = c->axis_param = -1;
	c->axis_drop = c->axis_drop_plus = c->axis_drop_minus = NAN;
	for (int a = 0; a < d; a++) {
		double l0 = lp[0] + lj[0];
		double dr[2] = { l0 - (lp[1 + 2 * a] + lj[1 + 2 * a]),
				 l0 - (lp[2 + 2 * a] + lj[2 + 2 * a]) };
		double drop = 0.5 * (dr[0] + dr[1]), dev = fabs(drop - 0.5);
		if (!(dev <= c->axis_dev)) {
			c->axis_dev = isnan(dev) ? INFINITY : dev;
			c->axis = a;
			c->axis_drop = drop;
			c->axis_drop_plus = dr[0];
			c->axis_drop_minus = dr[1];
			int big = 0; /* the coordinate the axis moves most, between its two sides */
			const double *up = pu + (size_t)(1 + 2 * a) * d, *um = up + d;
			for (int k = 1; k < d; k++)
				if (fabs(up[k] - um[k]) > fabs(up[big] - um[big]))
					big = k;
			c->axis_param = big;
		}
	}
done:
	free(mu);
	free(sd);
	free(pz);
	free(pu);
	free(lj);
	free(lp);
	return rc;
}

/* The tail probe of the route (adr/0085): along each axis of the base that the mixture
 * covers, at these distances either side of 0 (the rest of z at 0: the scaling at its
 * conditional mean), the log importance ratio log p(u(z)) + log|du/dz| − log base(z),
 * against the largest of the m points' (lr, raw). The axis check looks at ±1 sd; a
 * posterior with a long low shelf beyond the points' reach (D0 up a prior-decided ridge
 * towards its prior's centre: small static replicate 15, exact NUTS's sd 13 × the
 * points', k̂ 0.61) passes it and k̂ alike, because no point went there. A probe there
 * outweighing every point says that more points would find mass the round never saw. */
static const double xf_tail_z[] = { 4.0, 8.0, 16.0, 32.0 };
#define XF_TAIL_N ((int)(sizeof xf_tail_z / sizeof xf_tail_z[0]))

static int tail_probe(xf_check_logp f, void *ctx, const xf_is_prop *prop, double core,
		      const double *lr, int m, xf_cmc_check *c)
{
	int d = prop->d, dm = prop->d_mix, np = 2 * dm * XF_TAIL_N;
	double *z = calloc((size_t)np * d, sizeof(double)), *u = malloc(sizeof(double) * np * d);
	double *lj = malloc(sizeof(double) * np), *lp = malloc(sizeof(double) * np);
	double *eye = calloc((size_t)dm * dm, sizeof(double));
	int rc = -1;
	if (!z || !u || !lj || !lp || !eye)
		goto done;
	for (int k = 0; k < dm; k++)
		eye[(size_t)k * dm + k] = 1.0;
	for (int k = 0; k < dm; k++)
		for (int side = 0; side < 2; side++)
			for (int r = 0; r < XF_TAIL_N; r++)
				z[(size_t)((k * 2 + side) * XF_TAIL_N + r) * d + k] =
					side ? -xf_tail_z[r] : xf_tail_z[r];
	if (prop->to_u(prop->ctx, np, z, u, lj) || f(ctx, np, u, lp))
		goto done;
	rc = 0;
	double top = -INFINITY;
	for (int i = 0; i < m; i++)
		if (lr[i] > top)
			top = lr[i];
	/* the scaling's ε at 0: its standard normals' log density there */
	double lb_s = -0.5 * (d - dm) * log(2.0 * M_PI);
	c->tail_excess = -INFINITY;
	c->tail_axis = -1;
	c->tail_z = 0.0;
	for (int p = 0; p < np; p++) {
		int k = p / (2 * XF_TAIL_N);
		double zk = z[(size_t)p * d + k];
		double lw = lp[p] + lj[p] - (xf_mix_logpdf(dm, eye, core, zk * zk) + lb_s);
		if (!isfinite(lj[p]) || !(lp[p] > -INFINITY))
			continue; /* no density there */
		if (!(lw - top <= c->tail_excess)) {
			c->tail_excess = isnan(lw) ? INFINITY : lw - top;
			c->tail_axis = k;
			c->tail_z = zk;
		}
	}
done:
	free(z);
	free(u);
	free(lj);
	free(lp);
	free(eye);
	return rc;
}

/* The smallest ESS of the weighted mean of one coordinate (the importance-sampling ESS of
 * that expectation: Var_w(u_k) / Σ w²(u_k − μ_k)², Owen's "effective sample size for a
 * function"), and which coordinate. */
static double coord_ess_min(const double *u, const double *w, int m, int d, int *which)
{
	double best = INFINITY;
	*which = -1;
	for (int k = 0; k < d; k++) {
		double mu = 0.0, var = 0.0, s2 = 0.0;
		for (int i = 0; i < m; i++)
			mu += w[i] * u[(size_t)i * d + k];
		for (int i = 0; i < m; i++) {
			double e = u[(size_t)i * d + k] - mu;
			var += w[i] * e * e;
			s2 += w[i] * w[i] * e * e;
		}
		/* at most the points drawn: with all the weight on one point var and s2 are
		 * both rounding noise and their ratio anything (seen: 2.7e20 of M = 500) */
		double ess = s2 > 0.0 ? fmin(var / s2, (double)m) : 0.0;
		if (!(ess >= best)) {
			best = ess;
			*which = k;
		}
	}
	return best;
}

int xf_check_importance(xf_check_logp f, void *ctx, int d, const double *mean, const double *chol,
			uint64_t seed, int m0, double min_ess, double *w, xf_cmc_check *c)
{
	xf_tmap map;
	if (xf_tmap_alloc(&map, d))
		return -1;
	xf_tmap_linear(&map, mean, chol);
	int rc = xf_check_importance_map(f, ctx, &map, seed, m0, xf_check_m_max(m0), min_ess, w, c);
	xf_tmap_free(&map);
	return rc;
}

int xf_check_importance_map(xf_check_logp f, void *ctx, const xf_tmap *map, uint64_t seed, int m0,
			    int m_cap, double min_ess, double *w, xf_cmc_check *c)
{
	xf_is_prop p;
	xf_is_prop_tmap(&p, (xf_tmap *)map); /* the check only draws from it */
	return xf_check_importance_prop(f, ctx, &p, seed, m0, m_cap, min_ess, w, c);
}

/* The next M: twice this one — or, on a large file (c->sized_m) where only the route's
 * ESS floor is short (k̂ and IS-ESS/M stable and inside their gates), what that floor
 * needs at this IS-ESS/M with 5 % to spare (short by chance: one more step), in whole
 * sweeps of XF_CHECK_M_STEP points. Each point is a pass over all the data, and doubling
 * to reach 1 000 from 903 paid 1 000 passes (23 × 1 000 laminar, adr/0092). The gates
 * are judged at that M as at any other. */
static int next_m(const xf_cmc_check *c, int m, double min_ess, int enough, int ratio_low)
{
	double have = fmin(c->ess, c->ess_coord_min);
	if (!c->sized_m || !(min_ess > 0.0) || enough || ratio_low || !c->stable ||
	    !(c->khat <= XF_KHAT_MAX) || !(have > 0.0))
		return 2 * m;
	double need = XF_CHECK_ESS_SPARE * (double)m * min_ess / have;
	long n = ((long)ceil(need) + XF_CHECK_M_STEP - 1) / XF_CHECK_M_STEP * XF_CHECK_M_STEP;
	if (n < m + XF_CHECK_M_STEP)
		n = m + XF_CHECK_M_STEP;
	return n < 2L * m ? (int)n : 2 * m;
}

int xf_check_importance_prop(xf_check_logp f, void *ctx, const xf_is_prop *prop, uint64_t seed,
			     int m0, int m_cap, double min_ess, double *w, xf_cmc_check *c)
{
	int d = prop->d, m_max = m0, m = 0, want = m0;
	int in_z = prop->in_z || prop->map->kind == XF_TMAP_CURVED;
	while (2 * m_max <= m_cap && m_max <= XF_CHECK_M_MAX / 2)
		m_max *= 2; /* m0·2^j within both caps */
	double *lr = malloc(sizeof(double) * (size_t)m_max);
	double *lq = malloc(sizeof(double) * (size_t)m_max);
	double *z = in_z ? malloc(sizeof(double) * (size_t)m_max * d) : NULL;
	if (!lr || !lq || (in_z && !z)) {
		free(lr);
		free(lq);
		free(z);
		return -1;
	}
	c->dim = d;
	c->ess_ref = xf_mix_gauss_ess_ratio(prop->d_mix, c->core);
	c->m_first = m0;
	c->seed = seed;
	c->nu = XF_MVT_NU;
	c->scale = XF_MVT_SCALE;
	c->min_ess = min_ess;
	int rc = 0;
	for (;;) {
		xf_info("cmc: the full-data posterior at %d points of a t proposal", want - m);
		if (prop->draw(prop->ctx, seed, m, want, c->core, z ? z + (size_t)m * d : NULL,
			       c->u + (size_t)m * d, lq + m, lr + m)) {
			rc = -1;
			break;
		}
		/* the new points in one batch (the target sweeps the data once per few), unless
		 * the proposal's draw gave their values */
		if (!prop->gives_logp && f(ctx, want - m, c->u + (size_t)m * d, lr + m)) {
			rc = -1;
			break;
		}
		if (xf_interrupted()) {
			rc = XF_ERR_INTERRUPTED;
			break;
		}
		if (c->log_p) /* the target's values, kept (the route's sensitivity) */
			memcpy(c->log_p + m, lr + m, sizeof(double) * (size_t)(want - m));
		for (int i = m; i < want; i++)
			lr[i] -= lq[i];
		m = want;
		/* stable: the estimates at M/2 (the first half: the points are nested) and M
		 * agree — k̂ within 0.05, or both well below the threshold (k̂ is noisy, sd ≈
		 * 0.1 at M = 4 000, and what more points change is a k̂ near 0.7) — and IS-ESS/M
		 * within 10 %; k̂ above the threshold already is a verdict, more points only
		 * raise it */
		double ess_h, ess_m, k_h = psis_of(lr, m / 2, c->log_w, &ess_h);
		c->khat = psis_of(lr, m, c->log_w, &ess_m);
		c->ess = ess_m;
		for (int i = 0; i < m; i++)
			w[i] = exp(c->log_w[i]);
		c->ess_coord_min = coord_ess_min(c->u, w, m, d, &c->ess_coord);
		double rel_h = ess_h / (m / 2), rel_m = ess_m / m;
		/* the route (an ESS floor) also takes both k̂ inside PSIS's sample-size
		 * threshold min(0.7, 1 − 1/log₁₀ S) (Vehtari et al. 2024): its mixture's
		 * weights are near-log-normal when the approximation fits, and their k̂
		 * wanders in 0.3–0.55 at these M without meaning anything (measured: 0.43,
		 * 0.55, 0.35, 0.27 at M = 1 000–8 000 on one file, IS-ESS/M 0.85 throughout) */
		double lim_h = fmin(XF_KHAT_MAX, 1.0 - 1.0 / log10((double)(m / 2)));
		double lim_m = fmin(XF_KHAT_MAX, 1.0 - 1.0 / log10((double)m));
		int k_inside = min_ess > 0.0 && k_h <= lim_h && c->khat <= lim_m;
		c->stable = (fabs(c->khat - k_h) < XF_CHECK_KHAT_STABLE ||
			     fmax(c->khat, k_h) <= XF_CHECK_KHAT_LOW || k_inside) &&
			    fabs(rel_m - rel_h) <= XF_CHECK_ESS_STABLE * rel_m;
		int enough = c->ess >= min_ess && c->ess_coord_min >= min_ess;
		/* stable and too few per point: more points give more of the same; with an
		 * ESS floor (the route, where each point is a pass over all the data) also
		 * when M/2 and M both fall below a quarter of the gate: a verdict already */
		int ratio_low = (c->stable ||
				 (min_ess > 0.0 &&
				  fmax(rel_m, rel_h) < 0.25 * XF_ESS_REF_FRACTION * c->ess_ref)) &&
				rel_m < XF_ESS_REF_FRACTION * c->ess_ref;
		xf_info("cmc: importance check at M = %d: k-hat %.3f (%.3f at M/2), IS-ESS %.0f "
			"(IS-ESS/M %.3f, %.3f at M/2), smallest coordinate ESS %.0f",
			m, c->khat, k_h, ess_m, rel_m, rel_h, c->ess_coord_min);
		/* k̂ above 0.7 is a verdict (more points only raise a heavy tail's k̂) — unless
		 * it is a jump from a k̂ inside the threshold at M/2 with IS-ESS/M at the
		 * gate: a near-uniform set of weights whose tail fit came out high (measured
		 * on the CHX matrix: k̂ 0.37 at M = 500, 0.84 at 1 000, IS-ESS/M 0.94 at both;
		 * the next round, as good, read 0.27–0.59 up to M = 4 000): more points
		 * decide */
		int k_jump = c->khat > XF_KHAT_MAX && k_h <= XF_KHAT_MAX &&
			     fmin(rel_m, rel_h) >= XF_ESS_REF_FRACTION * c->ess_ref;
		int next = next_m(c, m, min_ess, enough, ratio_low);
		int last = (!(c->khat <= XF_KHAT_MAX) && !k_jump) || next > m_max;
		if ((c->stable && enough) || last || ratio_low) {
			c->m = m;
			c->pass_khat = c->khat <= XF_KHAT_MAX;
			c->pass_ess = rel_m >= XF_ESS_REF_FRACTION * c->ess_ref && enough;
			if (z ? axis_check_z(f, ctx, prop, z, w, m, c)
			      : axis_check(f, ctx, c->u, w, m, d, prop->map->a, c)) {
				rc = -1;
				break;
			}
			if (xf_interrupted()) {
				rc = XF_ERR_INTERRUPTED;
				break;
			}
			c->pass_axis = c->axis_dev <= XF_AXIS_DEV_MAX;
			xf_info("cmc: importance check at M = %d: axis deviation %.3f (axis %d)", m,
				c->axis_dev, c->axis);
			c->tail_axis = -1;
			/* the route's points each cost a pass over the data; its probe costs
			 * 6 per axis, once the other gates pass */
			if (min_ess > 0.0 && c->pass_axis && c->pass_khat && c->pass_ess) {
				if (tail_probe(f, ctx, prop, c->core, lr, m, c)) {
					rc = -1;
					break;
				}
				c->pass_axis = !(c->tail_excess > 0.0);
				xf_info("cmc: importance check at M = %d: tail probe %+.2f (axis "
					"%d at "
					"z %+g): %s",
					m, c->tail_excess, c->tail_axis, c->tail_z,
					c->pass_axis
						? "no point there outweighs the points drawn"
						: "a point there would outweigh every point drawn");
			}
			/* the corrected sd along each axis is a weighted moment, with
			 * IS-ESS ≈ 1 000 at M = 4 000 noisy enough to move a drop by ≈ 0.03;
			 * when only the axis check fails, more points settle it */
			if (last || c->pass_axis || !c->pass_khat || !c->pass_ess)
				break;
			/* … up to twice the ESS floor (the route, adr/0078): an axis that still
			 * fails there is a shape the next round's map must fit, not noise
			 * (measured on demo_cmc: 0.144, 0.141, 0.134 at M = 4 000–16 000) */
			if (min_ess > 0.0 && c->ess >= 2.0 * min_ess)
				break;
		}
		want = next;
	}
	free(lr);
	free(lq);
	free(z);
	return rc;
}
