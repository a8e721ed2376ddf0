/* warm.c — what NLSQ gives CMC (cmc.md "Model per shard"): the start (NLSQ's values in
 * the CMC layout, moved 1 % inside the bounds), the initial metric (NLSQ's covariance in
 * the sampler's space, scaled to a shard's share of the data) and, only when the config
 * asks for them, NLSQ-informed priors. NLSQ never sets the prior otherwise: building the
 * prior from the same data would count the data twice. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"

#define XF_INSIDE_BOUNDS 0.01 /* starts are moved this fraction of the width inside */

/* Index of a parameter name in the NLSQ result, or −1. */
static int nlsq_index(const xf_estimate *nlsq, const char *name)
{
	for (int k = 0; k < nlsq->n_params; k++)
		if (!strcmp(nlsq->names[k], name))
			return k;
	return -1;
}

/* Scaling coefficients of pr that best reproduce NLSQ's per-angle values: least squares
 * through the basis (individual: the values themselves; auto: their mean). */
static void scaling_from_angles(const xf_problem *pr, const double *per_angle, double *coef)
{
	int nb = pr->n_basis, na = pr->n_phi;
	/* normal equations BᵀB c = Bᵀv, solved by Gauss-Jordan (nb is small) */
	double *m = calloc((size_t)nb * (nb + 1), sizeof(double));
	if (!m)
		return;
	for (int r = 0; r < nb; r++) {
		for (int c = 0; c < nb; c++)
			for (int a = 0; a < na; a++)
				m[r * (nb + 1) + c] +=
					pr->basis[a * nb + r] * pr->basis[a * nb + c];
		for (int a = 0; a < na; a++)
			m[r * (nb + 1) + nb] += pr->basis[a * nb + r] * per_angle[a];
	}
	for (int p = 0; p < nb; p++) {
		double piv = m[p * (nb + 1) + p];
		if (fabs(piv) < 1e-300)
			continue;
		for (int c = 0; c <= nb; c++)
			m[p * (nb + 1) + c] /= piv;
		for (int r = 0; r < nb; r++)
			if (r != p) {
				double f = m[r * (nb + 1) + p];
				for (int c = 0; c <= nb; c++)
					m[r * (nb + 1) + c] -= f * m[p * (nb + 1) + c];
			}
	}
	for (int r = 0; r < nb; r++)
		coef[r] = m[r * (nb + 1) + nb];
	free(m);
}

/* 1 when an estimate's per-angle values are there (a fit that failed has NaN for all) */
static int has_values(const double *v, int n)
{
	for (int a = 0; v && a < n; a++)
		if (!isnan(v[a]))
			return 1;
	return 0;
}

void xf_cmc_warm_start(const xf_problem *pr, const xf_estimate *nlsq, double *x_nlsq, double *x)
{
	memcpy(x, pr->start, sizeof(double) * (size_t)pr->n_full);
	memcpy(x_nlsq, pr->start, sizeof(double) * (size_t)pr->n_full);
	for (int k = 0; k < pr->n_phys && k < nlsq->n_phys; k++)
		if (!pr->fixed[k])
			x[k] = nlsq->values[k];
	if (pr->n_basis > 0 && has_values(nlsq->contrast, nlsq->n_phi) &&
	    has_values(nlsq->offset, nlsq->n_phi) && nlsq->n_phi == pr->n_phi) {
		scaling_from_angles(pr, nlsq->contrast, x + pr->n_phys);
		scaling_from_angles(pr, nlsq->offset, x + pr->n_phys + pr->n_basis);
	}
	/* Only a value on (or outside) a bound moves, 1 % of the width inside, where the
	 * logit transform is finite. Clamping every value to 1 % of the width moved a
	 * γ̇0 of 0.002 in [1e-6, 0.5] to 0.005, far from the mode, and made the noise
	 * estimate 44× too large. */
	for (int k = 0; k < pr->n_full; k++) {
		double lo = pr->lower[k], hi = pr->upper[k], w = hi - lo;
		if (pr->fixed[k])
			continue;
		if (!isfinite(x[k]))
			x[k] = 0.5 * (lo + hi);
		x[k] = fmin(fmax(x[k], lo), hi);
		x_nlsq[k] = x[k];
		if (x[k] <= lo)
			x[k] = lo + XF_INSIDE_BOUNDS * w;
		else if (x[k] >= hi)
			x[k] = hi - XF_INSIDE_BOUNDS * w;
	}
}

void xf_cmc_nlsq_slopes(const xf_problem *pr, const xf_estimate *nlsq, int *known, double *q,
			double *sd_q)
{
	const int a_of[2] = { XF_P_D0, XF_P_GAMMA_DOT_T0 };
	for (int i = 0; i < 2; i++) {
		known[i] = 0;
		q[i] = sd_q[i] = 0.0;
		if (a_of[i] + 1 >= pr->n_phys)
			continue;
		int ja = nlsq_index(nlsq, pr->names[a_of[i]]);
		int je = nlsq_index(nlsq, pr->names[a_of[i] + 1]);
		if (ja < 0 || je < 0 || !nlsq->covariance)
			continue;
		size_t n = (size_t)nlsq->n_params;
		double a = nlsq->values[ja], e = nlsq->values[je];
		double vaa = nlsq->covariance[(size_t)ja * n + ja],
		       vee = nlsq->covariance[(size_t)je * n + je],
		       vae = nlsq->covariance[(size_t)ja * n + je];
		/* q = e·A: var q = e²·var A + A²·var e + 2eA·cov(A, e) */
		double var_q = e * e * vaa + a * a * vee + 2.0 * e * a * vae;
		if (!isfinite(a) || !isfinite(e) || !isfinite(var_q) || !(vaa > 0.0) ||
		    !(vee > 0.0))
			continue;
		known[i] = 1;
		q[i] = e * a;
		sd_q[i] = sqrt(fmax(var_q, 0.0));
	}
}

/* NLSQ's variance of parameter k of pr (0 when unknown). */
static double nlsq_variance(const xf_problem *pr, const xf_estimate *nlsq, int k)
{
	int j = nlsq_index(nlsq, pr->names[k]);
	if (j >= 0) {
		double v = nlsq->covariance[(size_t)j * nlsq->n_params + j];
		return isfinite(v) && v > 0.0 ? v : 0.0;
	}
	/* another scaling layout: the mean per-angle variance */
	int is_contrast = k < pr->n_phys + pr->n_basis;
	const double *unc = is_contrast ? nlsq->contrast_sd : nlsq->offset_sd;
	double v = 0.0;
	for (int a = 0; unc && a < nlsq->n_phi; a++)
		v += isfinite(unc[a]) ? unc[a] * unc[a] / nlsq->n_phi : 0.0;
	return v;
}

/* the factor on parameter k's covariances when its u-space variance v becomes the metric's
 * 1: 1/√v for a start against a bound, 1 otherwise */
static double bound_scale(const xf_problem *pr, int k, const double *x_start, double v)
{
	int at_bound = xf_cmc_near_bound(pr->lower[k], pr->upper[k], x_start[k]);
	return at_bound && v > 1e2 && isfinite(v) ? 1.0 / sqrt(v) : 1.0;
}

/* NLSQ's covariance of θ through du/dx at the start, divided by the share (d × d dense).
 * A covariance is kept for every pair NLSQ fitted under the same names — the physical
 * parameters always — also where the scaling's layout differs (NLSQ per angle, the
 * posterior shared): dropping them all there left a D0–D_offset ridge without its
 * correlation, and NUTS failed to find it (SBC `static` replicate 32: R̂ 1.59 after
 * 50 s; converged in 4 s with it, adr/0093). */
static void nlsq_cov_u(const xf_problem *pr, const xf_estimate *nlsq, const int *theta, int n_theta,
		       const double *x_start, double share, double *cov)
{
	int d = n_theta + 1;
	memset(cov, 0, sizeof(double) * (size_t)d * d);
	for (int r = 0; r < n_theta; r++) {
		int kr = theta[r];
		/* du/dx = 1/(dx/du) at the start */
		double f = (x_start[kr] - pr->lower[kr]) / (pr->upper[kr] - pr->lower[kr]);
		double jr = 1.0 / ((pr->upper[kr] - pr->lower[kr]) * f * (1.0 - f));
		for (int c = 0; c < n_theta; c++) {
			int kc = theta[c];
			double fc = (x_start[kc] - pr->lower[kc]) / (pr->upper[kc] - pr->lower[kc]);
			double jc = 1.0 / ((pr->upper[kc] - pr->lower[kc]) * fc * (1.0 - fc));
			double v;
			int jr_n = nlsq_index(nlsq, pr->names[kr]),
			    jc_n = nlsq_index(nlsq, pr->names[kc]);
			if (r == c)
				v = nlsq_variance(pr, nlsq, kr);
			else if (jr_n >= 0 && jc_n >= 0)
				v = nlsq->covariance[(size_t)jr_n * nlsq->n_params + jc_n];
			else
				v = 0.0;
			/* a shard sees a share of the data: its posterior is ~1/share wider */
			cov[(size_t)r * d + c] = isfinite(v) ? v * jr * jc / share : 0.0;
		}
	}
}

/* NLSQ's metric as it was before adr/0084 (m: d × d, the θ block; raw: the same before
 * this step): a start against a bound (within 1e-3 of its width) has a huge du/dx, so
 * its variance in u is too large to inform although NLSQ measured it; it becomes 1 and
 * its row and column are rescaled with it, keeping NLSQ's correlations (still positive
 * semi-definite) — the power-law coordinates read them (plaw_coords.c). Any other unknown
 * or uninformative variance becomes 1 too, without its covariances. Returns how many
 * variances were so capped while NLSQ correlated them with another parameter. */
static int capped_metric(const xf_problem *pr, const int *theta, int n_theta, const double *x_start,
			 int d, const double *raw, double *m)
{
	int lost = 0;
	for (int r = 0; r < n_theta; r++)
		for (int c = 0; c < n_theta; c++)
			if (c != r)
				m[(size_t)r * d + c] *=
					bound_scale(pr, theta[r], x_start, m[(size_t)r * d + r]) *
					bound_scale(pr, theta[c], x_start, m[(size_t)c * d + c]);
	for (int r = 0; r < n_theta; r++) {
		size_t rr = (size_t)r * d + r;
		if (m[rr] > 0.0 && isfinite(m[rr]) && m[rr] <= 1e2)
			continue;
		int k = theta[r], correlated = 0;
		for (int c = 0; c < n_theta; c++)
			correlated |= c != r && raw[(size_t)r * d + c] != 0.0;
		lost += correlated && !xf_cmc_near_bound(pr->lower[k], pr->upper[k], x_start[k]);
		m[rr] = 1.0; /* unknown or uninformative: the sampler learns it */
	}
	return lost;
}

/* 1 when the θ block of m (leading dimension d) is not positive definite */
static int not_positive(int n_theta, int d, const double *m)
{
	double *l = malloc(sizeof(double) * (size_t)d * d);
	if (!l)
		return 0;
	memcpy(l, m, sizeof(double) * (size_t)d * d);
	int bad = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n_theta, l, d) != 0;
	free(l);
	return bad;
}

int xf_cmc_initial_metric(const xf_problem *pr, const xf_estimate *nlsq, const int *theta,
			  int n_theta, const double *x_start, double share, size_t n_points,
			  int dense, const double *jtj, double *cov)
{
	int laplace = 0;
	int d = n_theta + 1;
	size_t n_cov = dense ? (size_t)d * d : (size_t)d;
	double *raw = malloc(sizeof(double) * (size_t)d * d);
	double *m = malloc(sizeof(double) * (size_t)d * d);
	memset(cov, 0, sizeof(double) * n_cov);
	if (!raw || !m) { /* out of memory: the sampler learns the metric from 1 */
		for (int r = 0; r < d; r++)
			cov[dense ? (size_t)r * d + r : (size_t)r] = 1.0;
		free(raw);
		free(m);
		return 0;
	}
	nlsq_cov_u(pr, nlsq, theta, n_theta, x_start, share, raw);
	memcpy(m, raw, sizeof(double) * (size_t)d * d);
	if (!dense) /* a diagonal metric: NLSQ's variances alone */
		for (int r = 0; r < n_theta; r++)
			for (int c = 0; c < n_theta; c++)
				if (c != r)
					m[(size_t)r * d + c] = 0.0;
	/* NLSQ on a ridge: the target's own curvature at the start, priors in (laplace.c) */
	int lost = capped_metric(pr, theta, n_theta, x_start, d, raw, m);
	/* a rank-deficient JᵀJ: NLSQ's covariance is its pseudo-inverse, which lies along
	 * what the data identify (D0 + D_offset: a correlation of +1) and says nothing of the
	 * ridge across it (SBC replicate 175: R̂ 1.89, bulk ESS 6) */
	int n_free = 0;
	for (int k = 0; k < nlsq->n_params; k++)
		n_free += !nlsq->is_fixed[k];
	int deficient = nlsq->cov_rank > 0 && nlsq->cov_rank < n_free;
	if ((lost || deficient || (dense && not_positive(n_theta, d, m))) &&
	    xf_cmc_laplace_metric(pr, theta, n_theta, x_start, share, jtj, raw, d, m) == 0)
		laplace = 1;
	/* log σ of a Gaussian likelihood: sd ≈ 1/√(2n) */
	m[(size_t)n_theta * d + n_theta] = 1.0 / (2.0 * (double)(n_points > 0 ? n_points : 1));
	for (int r = 0; r < d; r++)
		for (int c = 0; c < d; c++)
			if (dense)
				cov[(size_t)r * d + c] = m[(size_t)r * d + c];
			else if (r == c)
				cov[r] = m[(size_t)r * d + r];
	free(raw);
	free(m);
	return laplace;
}

int xf_cmc_informed_priors(xf_problem *pr, const xf_estimate *nlsq, double width_factor)
{
	int changed = 0;
	for (int k = 0; k < pr->n_full; k++) {
		int j = nlsq_index(nlsq, pr->names[k]);
		if (pr->fixed[k] || j < 0 || !isfinite(nlsq->sd[j]))
			continue;
		double w = pr->upper[k] - pr->lower[k];
		double s = width_factor * nlsq->sd[j];
		pr->prior_mu[k] = nlsq->values[j];
		pr->prior_sigma[k] = fmin(fmax(s, 0.01 * w), 0.5 * w);
		changed++;
	}
	return changed;
}
