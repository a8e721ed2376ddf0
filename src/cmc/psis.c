/* psis.c — Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao, Gabry,
 * JMLR 2024): the largest importance ratios are replaced by the expected order
 * statistics of a generalized Pareto distribution fitted to them, which stabilises the
 * weights, and the fitted shape k̂ says whether the estimate can be trusted (k̂ ≤ 0.7).
 * The shape is fitted by the empirical-Bayes method of Zhang & Stephens (2009,
 * Technometrics 51(3)) with the weakly informative prior on k of the PSIS paper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"

/* Grid over θ = −1/σ·… of Zhang & Stephens: m = 30 + √n points; prior scale 3 on θ
 * relative to the first quartile; the prior on k adds 10 pseudo-observations at 0.5. */
#define XF_GPD_PRIOR_B	3.0
#define XF_GPD_PRIOR_K	10.0
#define XF_GPD_PRIOR_K0 0.5

/* mean over x of log(1 − θx): the profile estimate of k for a given θ */
static double k_of_theta(const double *x, int n, double theta)
{
	double s = 0.0;
	for (int i = 0; i < n; i++)
		s += log1p(-theta * x[i]);
	return s / n;
}

int xf_gpd_fit(const double *x, int n, double *k, double *sigma)
{
	if (n < 5 || !(x[n - 1] > 0.0))
		return -1;
	int m = 30 + (int)sqrt((double)n);
	double *theta = malloc(sizeof(double) * (size_t)m),
	       *ll = malloc(sizeof(double) * (size_t)m);
	if (!theta || !ll) {
		free(theta);
		free(ll);
		return -1;
	}
	double quartile = x[(int)(n / 4.0 + 0.5) - 1];
	for (int j = 0; j < m; j++) {
		theta[j] =
			1.0 / x[n - 1] + (1.0 - sqrt(m / (j + 0.5))) / (XF_GPD_PRIOR_B * quartile);
		double kj = k_of_theta(x, n, theta[j]);
		/* profile log likelihood of θ: n·(log(−θ/k) − k − 1) */
		ll[j] = n * (log(-theta[j] / kj) - kj - 1.0);
	}
	/* posterior weights w_j = 1 / Σ_l exp(ll_l − ll_j), then the posterior mean of θ */
	double theta_post = 0.0, w_sum = 0.0;
	for (int j = 0; j < m; j++) {
		double s = 0.0;
		for (int l = 0; l < m; l++)
			s += exp(ll[l] - ll[j]);
		double w = isfinite(s) && s > 0.0 ? 1.0 / s : 0.0;
		if (w < 10.0 * 2.220446049250313e-16)
			continue; /* negligible */
		theta_post += w * theta[j];
		w_sum += w;
	}
	free(theta);
	free(ll);
	if (!(w_sum > 0.0))
		return -1;
	theta_post /= w_sum;
	double k_hat = k_of_theta(x, n, theta_post);
	*sigma = -k_hat / theta_post;
	*k = (n * k_hat + XF_GPD_PRIOR_K * XF_GPD_PRIOR_K0) / (n + XF_GPD_PRIOR_K);
	return isfinite(*k) && *sigma > 0.0 ? 0 : -1;
}

/* Quantile p of the generalized Pareto (shape k, scale σ, location 0). */
static double gpd_quantile(double p, double k, double sigma)
{
	if (fabs(k) < 2.220446049250313e-16)
		return -sigma * log1p(-p);
	return sigma * expm1(-k * log1p(-p)) / k;
}

int xf_cmp_ranked(const void *a, const void *b)
{
	const xf_ranked *x = a, *y = b;
	if (x->v != y->v)
		return (x->v > y->v) - (x->v < y->v);
	return (x->i > y->i) - (x->i < y->i); /* ties in index order: deterministic */
}

double xf_psis(double *log_w, int n)
{
	double k = INFINITY, mx = -INFINITY;
	for (int i = 0; i < n; i++)
		mx = log_w[i] > mx ? log_w[i] : mx;
	if (n < 2 || !isfinite(mx))
		return INFINITY;
	for (int i = 0; i < n; i++)
		log_w[i] -= mx;
	/* tail: the M = ceil(min(0.2n, 3√n)) largest ratios above the (M+1)-th largest */
	int tail = (int)ceil(fmin(0.2 * n, 3.0 * sqrt((double)n)));
	xf_ranked *r = malloc(sizeof(xf_ranked) * (size_t)n);
	double *x = malloc(sizeof(double) * (size_t)(tail > 0 ? tail : 1));
	if (!r || !x) {
		free(r);
		free(x);
		return INFINITY;
	}
	for (int i = 0; i < n; i++)
		r[i] = (xf_ranked){ log_w[i], i };
	qsort(r, (size_t)n, sizeof(xf_ranked), xf_cmp_ranked);
	int cut = n - tail - 1;
	double cutoff = cut >= 0 ? r[cut].v : -INFINITY;
	if (cutoff < log(2.2250738585072014e-308))
		cutoff = log(2.2250738585072014e-308);
	/* the tail in ascending order: ranks cut+1 … n−1, those above the cutoff */
	int first = n;
	for (int j = n - 1; j > cut && r[j].v > cutoff; j--)
		first = j;
	int n_tail = n - first;
	if (n_tail == 0)
		k = 0.0; /* no ratio above the cutoff: the weights are flat, nothing to smooth */
	if (n_tail > 4) {
		double exp_cut = exp(cutoff), sigma;
		for (int j = 0; j < n_tail; j++)
			x[j] = exp(r[first + j].v) - exp_cut;
		if (xf_gpd_fit(x, n_tail, &k, &sigma) == 0) {
			for (int j = 0; j < n_tail; j++) {
				double q = gpd_quantile((j + 0.5) / n_tail, k, sigma);
				double lw = log(q + exp_cut);
				log_w[r[first + j].i] = lw > 0.0 ? 0.0 : lw; /* ≤ the largest raw */
			}
		} else {
			k = INFINITY;
		}
	}
	free(r);
	free(x);
	/* normalise: Σ exp(log_w) = 1 (fixed order) */
	double s = 0.0;
	for (int i = 0; i < n; i++)
		s += exp(log_w[i]);
	double ls = log(s);
	for (int i = 0; i < n; i++)
		log_w[i] -= ls;
	return k;
}
