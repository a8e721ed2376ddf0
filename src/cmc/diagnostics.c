/* diagnostics.c — R̂, ESS and E-BFMI (diagnostics.h) as Vehtari et al. (2021) define them,
 * with the conventions of Stan and of the paper authors' `posterior` package where the
 * paper leaves a choice open:
 *   - split chains: the first and the last floor(n_draws/2) draws of every chain (the
 *     middle draw of an odd chain is dropped), so a trend inside a chain shows up as a
 *     disagreement between its halves;
 *   - rank normalisation with Blom's offsets, z = Φ⁻¹((r − 3/8)/(S + 1/4)), average ranks
 *     for ties, S the number of split draws;
 *   - the folding median and the tail quantiles are those of all the given draws, by
 *     linear interpolation between order statistics (NumPy's default, R's type 7);
 *   - autocovariances by FFT (GSL, radix 2), combined over chains with Geyer's initial
 *     positive and monotone sequences as Stan does (see geyer_tau).
 *
 * Degenerate inputs, in every function (tests/test_cmc_diagnostics.c checks each):
 *   - draws NULL, n_chains < 1, n_draws < 4, or any draw NaN or ±inf: NAN;
 *   - all draws equal (no variance at all): NAN;
 *   - R̂ when every split chain is constant but they differ: +INFINITY (the chains are
 *     stuck apart: the worst possible R̂, not an undefined one);
 *   - xf_diag_rhat and xf_diag_ess_tail combine two parts with fmax / fmin, which skip a
 *     part that is undefined on its own (e.g. the folded draws of a symmetric two-valued
 *     parameter are constant; ≥ 5 % of the draws at the maximum make I(x ≤ q95) ≡ 1);
 *     NAN only when both parts are;
 *   - any allocation failure: NAN.
 * Everything is allocated per call: no static state, safe to call from many threads. */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fft_halfcomplex.h>
#include <gsl/gsl_fft_real.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/diagnostics.h"

/* m chains of n draws, chain-major: v[c * n + i]. */
typedef struct chains {
	int m, n;
	double *v;
} chains;

static int finite_and_large_enough(const double *x, int n_chains, int n_draws)
{
	if (!x || n_chains < 1 || n_draws < 4)
		return 0;
	size_t total = (size_t)n_chains * (size_t)n_draws;
	for (size_t k = 0; k < total; k++)
		if (!isfinite(x[k]))
			return 0;
	return 1;
}

/* 2·n_chains halves of floor(n_draws/2) draws. 0, or −1 when out of memory. */
static int split_chains(const double *draws, int n_chains, int n_draws, chains *s)
{
	s->m = 2 * n_chains;
	s->n = n_draws / 2;
	s->v = malloc(sizeof(double) * (size_t)s->m * (size_t)s->n);
	if (!s->v)
		return -1;
	size_t half = sizeof(double) * (size_t)s->n;
	for (int c = 0; c < n_chains; c++) {
		const double *x = draws + (size_t)c * n_draws;
		memcpy(s->v + (size_t)(2 * c) * s->n, x, half);
		memcpy(s->v + (size_t)(2 * c + 1) * s->n, x + (n_draws - s->n), half);
	}
	return 0;
}

/* Mean and sum of squared deviations of x[0..n−1]. A constant chain gets exactly
 * (x[0], 0): a rounded mean would otherwise give constant draws a tiny variance. */
static void mean_ss(const double *x, int n, double *mean, double *ss)
{
	int constant = 1;
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		sum += x[i];
		constant = constant && x[i] == x[0];
	}
	*mean = constant ? x[0] : sum / n;
	*ss = 0.0;
	for (int i = 0; !constant && i < n; i++)
		*ss += (x[i] - *mean) * (x[i] - *mean);
}

/* W, the mean within-chain variance, and B/n, the variance of the chain means (both
 * with ddof 1). The grand mean is the mean of the chain means, exactly their common
 * value when they are all equal (as for mean_ss). */
static void within_between(const chains *s, double *w, double *b_over_n)
{
	double mean, ss, first = 0.0, grand = 0.0, sum_var = 0.0, sum_dev2 = 0.0;
	int equal = 1;
	for (int c = 0; c < s->m; c++) {
		mean_ss(s->v + (size_t)c * s->n, s->n, &mean, &ss);
		first = c == 0 ? mean : first;
		equal = equal && mean == first;
		grand += mean;
	}
	grand = equal ? first : grand / s->m;
	for (int c = 0; c < s->m; c++) {
		mean_ss(s->v + (size_t)c * s->n, s->n, &mean, &ss);
		sum_var += ss / (s->n - 1);
		sum_dev2 += (mean - grand) * (mean - grand);
	}
	*w = sum_var / s->m;
	*b_over_n = sum_dev2 / (s->m - 1);
}

/* Gelman-Rubin R̂ of the chains as given: sqrt(((n−1)/n·W + B/n) / W). */
static double rhat_of(const chains *s)
{
	double w, b_over_n;
	within_between(s, &w, &b_over_n);
	if (w > 0.0)
		return sqrt(((s->n - 1.0) / s->n * w + b_over_n) / w);
	return b_over_n > 0.0 ? INFINITY : NAN;
}

typedef struct ranked {
	double value;
	size_t index;
} ranked;

static int by_value(const void *a, const void *b)
{
	const ranked *x = a, *y = b;
	return (x->value > y->value) - (x->value < y->value);
}

/* Replace every value by Φ⁻¹((r − 3/8)/(S + 1/4)), r its rank among all S values; tied
 * values share their average rank, so ties stay ties (and qsort's unstable order among
 * them cannot matter). 0, or −1 when out of memory. */
static int rank_normalise(double *v, size_t s)
{
	ranked *r = malloc(sizeof(ranked) * s);
	if (!r)
		return -1;
	for (size_t k = 0; k < s; k++)
		r[k] = (ranked){ v[k], k };
	qsort(r, s, sizeof(ranked), by_value);
	size_t first = 0;
	while (first < s) {
		size_t end = first + 1; /* r[first..end−1] tie */
		while (end < s && r[end].value == r[first].value)
			end++;
		double rank = 0.5 * (double)(first + 1 + end); /* mean of ranks first+1..end */
		double z = gsl_cdf_ugaussian_Pinv((rank - 0.375) / ((double)s + 0.25));
		for (size_t k = first; k < end; k++)
			v[r[k].index] = z;
		first = end;
	}
	free(r);
	return 0;
}

static int ascending(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Quantile p of sorted[0..s−1], interpolating linearly at position (s − 1)·p. */
static double quantile_sorted(const double *sorted, size_t s, double p)
{
	double h = (double)(s - 1) * p;
	size_t lo = (size_t)h;
	if (lo + 1 >= s)
		return sorted[s - 1];
	return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* q[j] = quantile p[j] of x[0..s−1], j < k. 0, or −1 when out of memory. */
static int quantiles(const double *x, size_t s, const double *p, double *q, int k)
{
	double *sorted = malloc(sizeof(double) * s);
	if (!sorted)
		return -1;
	memcpy(sorted, x, sizeof(double) * s);
	qsort(sorted, s, sizeof(double), ascending);
	for (int j = 0; j < k; j++)
		q[j] = quantile_sorted(sorted, s, p[j]);
	free(sorted);
	return 0;
}

/* buf: the halfcomplex output of gsl_fft_real_radix2_transform (re 0..len/2, then the
 * imaginary parts backwards); replace it by the power spectrum |F_k|², same layout. */
static void power_spectrum(double *buf, size_t len)
{
	buf[0] *= buf[0];
	buf[len / 2] *= buf[len / 2];
	for (size_t k = 1; k < len / 2; k++) {
		buf[k] = buf[k] * buf[k] + buf[len - k] * buf[len - k];
		buf[len - k] = 0.0;
	}
}

/* Autocovariances at lags 0..n−1 averaged over the chains: each chain's biased estimate
 * (1/n) Σ_i d_i d_{i+t}, d = x − mean, as the inverse FFT of the power spectrum; zero
 * padding to len ≥ 2n makes the circular correlation the linear one. NULL when out of
 * memory. */
static double *mean_autocov(const chains *s)
{
	size_t len = 4;
	while (len < 2 * (size_t)s->n)
		len *= 2;
	double *acov = calloc((size_t)s->n, sizeof(double));
	double *buf = malloc(sizeof(double) * len);
	int bad = !acov || !buf;
	for (int c = 0; !bad && c < s->m; c++) {
		const double *x = s->v + (size_t)c * s->n;
		double mean, ss;
		mean_ss(x, s->n, &mean, &ss);
		for (size_t i = 0; i < len; i++)
			buf[i] = i < (size_t)s->n ? x[i] - mean : 0.0;
		/* radix 2 fails only for lengths that are not powers of two */
		bad = gsl_fft_real_radix2_transform(buf, 1, len) != 0;
		power_spectrum(buf, len);
		bad = bad || gsl_fft_halfcomplex_radix2_inverse(buf, 1, len) != 0;
		for (int t = 0; t < s->n; t++)
			acov[t] += buf[t] / s->n;
	}
	for (int t = 0; !bad && t < s->n; t++)
		acov[t] /= s->m;
	free(buf);
	if (bad) {
		free(acov);
		return NULL;
	}
	return acov;
}

/* τ = 1 + 2 Σ_{t≥1} ρ_t by Geyer's initial monotone sequence, as Stan and posterior
 * compute it: the pairs P_k = ρ_2k + ρ_2k+1 are summed from k = 0 while they stay
 * positive, each capped by the one before it (monotone), stopping at the first pair
 * ≤ 0 or at the first pair at lag ≥ n − 5 (Stan's bound: the noisiest last lags never
 * enter the sum). The even lag of
 * that first pair left out is added once when positive (or when its pair is), which
 * reduces the variance for antithetic chains. When not even P_0 is summed, ρ_0 alone is
 * counted, so τ = 2 for split chains of ≤ 5 draws. */
static double geyer_tau(const double *rho, int n)
{
	double head = 0.0, cap = INFINITY;
	int t = 0; /* even lag of the pair under test */
	double pair = rho[0] + rho[1];
	while (t < n - 5 && pair > 0.0) {
		cap = fmin(cap, pair);
		head += cap;
		t += 2;
		pair = rho[t] + rho[t + 1];
	}
	if (t == 0)
		head = rho[0];
	double tail = rho[t] > 0.0 || pair >= 0.0 ? rho[t] : 0.0;
	return -1.0 + 2.0 * head + tail;
}

/* ESS of the chains as given: m·n/τ with ρ_t = 1 − (W − mean autocov_t)/var⁺ and
 * var⁺ = (n−1)/n·W + B/n; capped at m·n·log10(m·n) as Stan does (τ can be tiny for
 * antithetic chains). *ess is NAN when var⁺ = 0. 0, or −1 when out of memory. */
static int ess_of(const chains *s, double *ess)
{
	double w, b_over_n;
	within_between(s, &w, &b_over_n);
	double var_plus = (s->n - 1.0) / s->n * w + b_over_n;
	*ess = NAN;
	if (!(var_plus > 0.0))
		return 0;
	double *rho = mean_autocov(s);
	if (!rho)
		return -1;
	for (int t = 1; t < s->n; t++)
		rho[t] = 1.0 - (w - rho[t]) / var_plus;
	rho[0] = 1.0;
	double total = (double)s->m * s->n;
	*ess = total / fmax(geyer_tau(rho, s->n), 1.0 / log10(total));
	free(rho);
	return 0;
}

double xf_diag_rhat_basic(const double *draws, int n_chains, int n_draws)
{
	chains s;
	if (!finite_and_large_enough(draws, n_chains, n_draws) ||
	    split_chains(draws, n_chains, n_draws, &s))
		return NAN;
	double r = rhat_of(&s);
	free(s.v);
	return r;
}

double xf_diag_ess(const double *draws, int n_chains, int n_draws)
{
	chains s;
	double e = NAN;
	if (!finite_and_large_enough(draws, n_chains, n_draws) ||
	    split_chains(draws, n_chains, n_draws, &s))
		return NAN;
	int bad = ess_of(&s, &e);
	free(s.v);
	return bad ? NAN : e;
}

double xf_diag_rhat(const double *draws, int n_chains, int n_draws)
{
	chains bulk = { 0 }, folded = { 0 };
	const double half = 0.5;
	double median, r = NAN;
	if (!finite_and_large_enough(draws, n_chains, n_draws))
		return NAN;
	size_t total = (size_t)n_chains * n_draws;
	if (quantiles(draws, total, &half, &median, 1) ||
	    split_chains(draws, n_chains, n_draws, &bulk) ||
	    split_chains(draws, n_chains, n_draws, &folded))
		goto done;
	size_t s = (size_t)bulk.m * bulk.n;
	for (size_t k = 0; k < s; k++)
		folded.v[k] = fabs(folded.v[k] - median);
	if (rank_normalise(bulk.v, s) || rank_normalise(folded.v, s))
		goto done;
	/* the folded R̂ sees chains that differ in scale, which the bulk R̂ misses */
	r = fmax(rhat_of(&bulk), rhat_of(&folded));
done:
	free(bulk.v);
	free(folded.v);
	return r;
}

double xf_diag_ess_bulk(const double *draws, int n_chains, int n_draws)
{
	chains s;
	double e = NAN;
	if (!finite_and_large_enough(draws, n_chains, n_draws) ||
	    split_chains(draws, n_chains, n_draws, &s))
		return NAN;
	int bad = rank_normalise(s.v, (size_t)s.m * s.n) || ess_of(&s, &e);
	free(s.v);
	return bad ? NAN : e;
}

double xf_diag_ess_tail(const double *draws, int n_chains, int n_draws)
{
	chains s = { 0 }, ind = { 0 };
	const double p[2] = { 0.05, 0.95 };
	double q[2], e[2], out = NAN;
	if (!finite_and_large_enough(draws, n_chains, n_draws))
		return NAN;
	if (quantiles(draws, (size_t)n_chains * n_draws, p, q, 2) ||
	    split_chains(draws, n_chains, n_draws, &s) ||
	    split_chains(draws, n_chains, n_draws, &ind))
		goto done;
	size_t total = (size_t)s.m * s.n;
	for (int j = 0; j < 2; j++) {
		for (size_t k = 0; k < total; k++)
			ind.v[k] = s.v[k] <= q[j] ? 1.0 : 0.0;
		if (ess_of(&ind, &e[j]))
			goto done;
	}
	out = fmin(e[0], e[1]);
done:
	free(s.v);
	free(ind.v);
	return out;
}

double xf_diag_ebfmi(const double *energy, int n)
{
	double mean, ss, jumps = 0.0;
	if (!finite_and_large_enough(energy, 1, n))
		return NAN;
	mean_ss(energy, n, &mean, &ss);
	if (!(ss > 0.0))
		return NAN;
	for (int i = 1; i < n; i++)
		jumps += (energy[i] - energy[i - 1]) * (energy[i] - energy[i - 1]);
	return jumps / ss;
}

/* sample mean and sd (n − 1) of n values */
static void mean_sd(const double *x, size_t n, double *mean, double *sd)
{
	double m = 0.0, ss = 0.0;
	for (size_t k = 0; k < n; k++)
		m += x[k];
	m /= (double)n;
	for (size_t k = 0; k < n; k++)
		ss += (x[k] - m) * (x[k] - m);
	*mean = m;
	*sd = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
}

double xf_diag_mcse_mean(const double *draws, int n_chains, int n_draws)
{
	if (!finite_and_large_enough(draws, n_chains, n_draws))
		return NAN;
	double mean, sd;
	mean_sd(draws, (size_t)n_chains * n_draws, &mean, &sd);
	return sd / sqrt(xf_diag_ess(draws, n_chains, n_draws));
}

double xf_diag_mcse_sd(const double *draws, int n_chains, int n_draws)
{
	if (!finite_and_large_enough(draws, n_chains, n_draws))
		return NAN;
	size_t total = (size_t)n_chains * n_draws;
	double *sq = malloc(sizeof(double) * total);
	if (!sq)
		return NAN;
	double mean, sd, e_var, sd_sq; /* e_var = E[d²], the mean of the squares */
	mean_sd(draws, total, &mean, &sd);
	for (size_t k = 0; k < total; k++)
		sq[k] = (draws[k] - mean) * (draws[k] - mean);
	mean_sd(sq, total, &e_var, &sd_sq);
	double ess = xf_diag_ess(sq, n_chains, n_draws);
	free(sq);
	/* delta method: Var(sd) ≈ Var(d²) / (ESS(d²) · 4 E[d²]) */
	return sqrt(sd_sq * sd_sq / ess / (4.0 * e_var));
}
