/* combine.c — the shard posteriors into one (cmc.md "Combination"), in the sampler's
 * space of θ: W_s = Σ_s⁻¹ from each kept shard's draws; consensus draws
 * θ_g = (Σ_s W_s)⁻¹ Σ_s W_s θ_{s,g} over the pooled draws g; the Gaussian product
 * N((ΣW)⁻¹ Σ W_s μ_s, (ΣW)⁻¹) as the cross-check (and as a method of its own); homodyne's
 * per-parameter precision weighting for comparison. Shards in id order, sums in a fixed
 * order; the draws of a shard are brought back one shard at a time, so memory holds
 * only the combined draws. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"
#include "util/select.h"
#include "xpcsfit/rng.h"

#define XF_ROBUST_Z 3.5 /* modified z-score beyond which a shard mean is an outlier */

void xf_combination_free(xf_combination *c)
{
	free(c->u_draws);
	free(c->gp_mean);
	free(c->gp_cov);
	memset(c, 0, sizeof *c);
}

/* Inverse of an SPD matrix in place (full matrix). 0, or −1 when not positive definite. */
static int spd_inverse(double *a, int n)
{
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n) != 0 ||
	    LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', n, a, n) != 0)
		return -1;
	for (int r = 0; r < n; r++)
		for (int c = r + 1; c < n; c++)
			a[r * n + c] = a[c * n + r];
	return 0;
}

/* Robust screening: a kept shard whose u-space mean of any parameter has a modified
 * z-score |μ − median| / max(MAD/0.6745, median shard sd) beyond XF_ROBUST_Z is
 * excluded. The floor matters: healthy shard means scatter by about one shard posterior
 * sd, and the MAD of a few means that happen to agree closely is far smaller, so without
 * it a shard one sd away scored 8.9 and failed a good run (adr/0010). */
static int screen_outliers(int n_theta, xf_cmc_shard *shards, long n_shards)
{
	int n_kept = 0;
	for (long s = 0; s < n_shards; s++)
		n_kept += shards[s].kept;
	if (n_kept < 3)
		return 0;
	double *v = malloc(sizeof(double) * (size_t)n_kept),
	       *z = calloc((size_t)n_shards, sizeof(double));
	int *worst = calloc((size_t)n_shards, sizeof(int));
	if (!v || !z || !worst) {
		free(v);
		free(z);
		free(worst);
		return -1;
	}
	for (int k = 0; k < n_theta; k++) {
		int m = 0;
		for (long s = 0; s < n_shards; s++)
			if (shards[s].kept)
				v[m++] = shards[s].u_mean[k];
		double med = xf_median(v, (size_t)m);
		m = 0;
		for (long s = 0; s < n_shards; s++)
			if (shards[s].kept)
				v[m++] = fabs(shards[s].u_mean[k] - med);
		double spread = xf_median(v, (size_t)m) / 0.6745;
		m = 0;
		for (long s = 0; s < n_shards; s++)
			if (shards[s].kept)
				v[m++] = sqrt(shards[s].u_cov[(size_t)k * n_theta + k]);
		double sd = xf_median(v, (size_t)m);
		if (sd > spread)
			spread = sd;
		if (!(spread > 0.0))
			continue;
		for (long s = 0; s < n_shards; s++) {
			double zk = fabs(shards[s].u_mean[k] - med) / spread;
			if (shards[s].kept && zk > z[s]) {
				z[s] = zk;
				worst[s] = k;
			}
		}
	}
	for (long s = 0; s < n_shards; s++)
		if (shards[s].kept && z[s] > XF_ROBUST_Z) {
			shards[s].kept = 0;
			snprintf(shards[s].reason, sizeof shards[s].reason,
				 "outlier mean (robust_consensus_mc): parameter %d has modified "
				 "z-score %.1f > %.1f",
				 worst[s], z[s], XF_ROBUST_Z);
		}
	free(v);
	free(z);
	free(worst);
	return 0;
}

/* Σ W_s, Σ W_s μ_s over the kept shards; W_s into w (n_shards × nt², NULL rows unused). */
static int precisions(int nt, xf_cmc_shard *shards, long n_shards, double *w, double *w_sum,
		      double *wmu_sum)
{
	size_t nn = (size_t)nt * nt;
	memset(w_sum, 0, sizeof(double) * nn);
	memset(wmu_sum, 0, sizeof(double) * (size_t)nt);
	for (long s = 0; s < n_shards; s++) {
		if (!shards[s].kept)
			continue;
		double *ws = w + (size_t)s * nn;
		memcpy(ws, shards[s].u_cov, sizeof(double) * nn);
		if (spd_inverse(ws, nt)) {
			shards[s].kept = 0;
			snprintf(shards[s].reason, sizeof shards[s].reason,
				 "its draws' covariance is not positive definite");
			continue;
		}
		for (size_t k = 0; k < nn; k++)
			w_sum[k] += ws[k];
		for (int r = 0; r < nt; r++)
			for (int c = 0; c < nt; c++)
				wmu_sum[r] += ws[r * nt + c] * shards[s].u_mean[c];
	}
	return 0;
}

static void mat_vec(const double *a, const double *x, double *y, int n)
{
	for (int r = 0; r < n; r++) {
		double s = 0.0;
		for (int c = 0; c < n; c++)
			s += a[r * n + c] * x[c];
		y[r] = s;
	}
}

/* θ_g = (ΣW)⁻¹ Σ_s W_s θ_{s,g}, shard by shard from the store. */
static int consensus_draws(int nt, xf_cmc_shard *shards, long n_shards, const double *w,
			   xf_shard_loader load, void *ctx, xf_combination *out, xf_error *err)
{
	size_t nn = (size_t)nt * nt;
	double *acc = NULL, *tmp = malloc(sizeof(double) * (size_t)nt);
	int rc = 0;
	out->n_draws = 0;
	for (long s = 0; s < n_shards && rc == 0; s++) {
		if (!shards[s].kept)
			continue;
		xf_shard_draws d;
		if ((rc = load(ctx, s, &d, err)))
			break;
		int g_max = d.n_chains * d.n_draws;
		if (!acc) {
			out->n_draws = g_max;
			acc = calloc((size_t)g_max * nt, sizeof(double));
			if (!acc || !tmp)
				rc = xf_fail(err, XF_ERR_NOMEM, "out of memory combining shards");
		}
		if (g_max < out->n_draws)
			out->n_draws = g_max; /* G = the smallest pooled draw count */
		for (int g = 0; rc == 0 && g < out->n_draws; g++) {
			mat_vec(w + (size_t)s * nn, d.draws + (size_t)g * d.dim, tmp, nt);
			for (int k = 0; k < nt; k++)
				acc[(size_t)g * nt + k] += tmp[k];
		}
		xf_shard_draws_free(&d);
	}
	if (rc == 0) {
		out->u_draws = malloc(sizeof(double) * (size_t)out->n_draws * nt);
		if (!out->u_draws)
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory combining shards");
		for (int g = 0; rc == 0 && g < out->n_draws; g++)
			mat_vec(out->gp_cov, acc + (size_t)g * nt, out->u_draws + (size_t)g * nt,
				nt);
	}
	free(acc);
	free(tmp);
	return rc;
}

/* G draws of N(mean, cov) (full) or of independent normals (diagonal only). */
static int gaussian_draws(int nt, const double *mean, const double *cov, int diagonal, int g_count,
			  uint64_t seed, xf_combination *out, xf_error *err)
{
	double *l = malloc(sizeof(double) * (size_t)nt * nt);
	out->u_draws = malloc(sizeof(double) * (size_t)g_count * nt);
	if (!l || !out->u_draws) {
		free(l);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory combining shards");
	}
	memcpy(l, cov, sizeof(double) * (size_t)nt * nt);
	for (int r = 0; r < nt; r++)
		for (int c = 0; c < nt; c++)
			if (diagonal && r != c)
				l[r * nt + c] = 0.0;
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', nt, l, nt) != 0) {
		free(l);
		return xf_fail(err, XF_ERR_DATA,
			       "the combined covariance is not positive definite");
	}
	out->n_draws = g_count;
	for (int g = 0; g < g_count; g++) {
		double *u = out->u_draws + (size_t)g * nt;
		for (int r = 0; r < nt; r++) {
			double s = mean[r];
			for (int c = 0; c <= r; c++)
				s += l[r * nt + c] * xf_rng_normal(seed, XF_RNG_CMC_GAUSS,
								   (uint64_t)g, (uint64_t)c, 0);
			u[r] = s;
		}
	}
	free(l);
	return 0;
}

/* homodyne's marginal rule: per parameter, precision-weighted mean and 1/Σ precision. */
static void marginal_product(int nt, const xf_cmc_shard *shards, long n_shards, double *mean,
			     double *cov)
{
	memset(cov, 0, sizeof(double) * (size_t)nt * nt);
	for (int k = 0; k < nt; k++) {
		double w = 0.0, wm = 0.0;
		for (long s = 0; s < n_shards; s++)
			if (shards[s].kept) {
				double p = 1.0 / shards[s].u_cov[(size_t)k * nt + k];
				w += p;
				wm += p * shards[s].u_mean[k];
			}
		mean[k] = wm / w;
		cov[(size_t)k * nt + k] = 1.0 / w;
	}
}

/* What a rule's drawing function is given: the kept shards with their precisions W_s,
 * the Gaussian product already in out->gp_mean/gp_cov. */
struct xf_combine_job {
	int nt;
	xf_cmc_shard *shards;
	long n_shards;
	const double *w; /* W_s, n_shards × nt² */
	xf_shard_loader load;
	void *load_ctx;
	uint64_t seed;
	xf_combination *out;
};

static int draw_consensus(const xf_combine_job *j, xf_error *err)
{
	return consensus_draws(j->nt, j->shards, j->n_shards, j->w, j->load, j->load_ctx, j->out,
			       err);
}

/* The Gaussian rules draw as many points as the first kept shard holds. */
static int first_kept_count(const xf_combine_job *j, int *g_count, xf_error *err)
{
	*g_count = 0;
	for (long s = 0; s < j->n_shards && *g_count == 0; s++)
		if (j->shards[s].kept) {
			xf_shard_draws d;
			int rc = j->load(j->load_ctx, s, &d, err);
			if (rc)
				return rc;
			*g_count = d.n_chains * d.n_draws;
			xf_shard_draws_free(&d);
		}
	return 0;
}

static int draw_gaussian_product(const xf_combine_job *j, xf_error *err)
{
	int g_count, rc = first_kept_count(j, &g_count, err);
	return rc ? rc
		  : gaussian_draws(j->nt, j->out->gp_mean, j->out->gp_cov, 0, g_count, j->seed,
				   j->out, err);
}

static int draw_marginal_product(const xf_combine_job *j, xf_error *err)
{
	int g_count, rc = first_kept_count(j, &g_count, err);
	if (rc)
		return rc;
	size_t nt = (size_t)j->nt;
	double *mean = malloc(sizeof(double) * nt), *cov = malloc(sizeof(double) * nt * nt);
	if (!mean || !cov)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory combining shards");
	else {
		marginal_product(j->nt, j->shards, j->n_shards, mean, cov);
		rc = gaussian_draws(j->nt, mean, cov, 1, g_count, j->seed, j->out, err);
	}
	free(mean);
	free(cov);
	return rc;
}

/* The rules' records (adr/0114), indexed by the rule; their names are in model/options.c,
 * where the config reader finds them. A new rule is a drawing function and one row. */
static const xf_combine_record records[XF_COMBINE_N] = {
	[XF_COMBINE_ROBUST_CONSENSUS] = { XF_COMBINE_ROBUST_CONSENSUS, 1, 1, draw_consensus },
	[XF_COMBINE_CONSENSUS] = { XF_COMBINE_CONSENSUS, 0, 1, draw_consensus },
	[XF_COMBINE_GAUSSIAN_PRODUCT] = { XF_COMBINE_GAUSSIAN_PRODUCT, 0, 0,
					  draw_gaussian_product },
	[XF_COMBINE_MARGINAL_PRODUCT] = { XF_COMBINE_MARGINAL_PRODUCT, 0, 0,
					  draw_marginal_product },
};

const xf_combine_record *xf_combine_record_of(xf_combination_rule rule)
{
	return rule >= 0 && rule < XF_COMBINE_N ? &records[rule] : NULL;
}

int xf_cmc_combine(xf_combination_rule rule, int n_theta, xf_cmc_shard *shards, long n_shards,
		   xf_shard_loader load, void *load_ctx, uint64_t seed, xf_combination *out,
		   xf_error *err)
{
	const xf_combine_record *how = xf_combine_record_of(rule);
	int nt = n_theta, rc = 0;
	size_t nn = (size_t)nt * nt;
	memset(out, 0, sizeof *out);
	out->n_theta = nt;
	if (!how)
		return xf_fail(err, XF_ERR_CONFIG, "no combination rule numbered %d", (int)rule);
	if (how->screens_outliers && screen_outliers(nt, shards, n_shards))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory screening shards");
	double *w = malloc(sizeof(double) * nn * (size_t)n_shards);
	double *wmu = malloc(sizeof(double) * (size_t)nt);
	out->gp_mean = malloc(sizeof(double) * (size_t)nt);
	out->gp_cov = malloc(sizeof(double) * nn);
	if (!w || !wmu || !out->gp_mean || !out->gp_cov) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory combining shards");
		goto done;
	}
	precisions(nt, shards, n_shards, w, out->gp_cov, wmu);
	long kept = 0;
	for (long s = 0; s < n_shards; s++)
		kept += shards[s].kept;
	if (kept == 0) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "no shard is left to combine (every shard excluded)");
		goto done;
	}
	if (spd_inverse(out->gp_cov, nt)) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "the summed shard precision is not positive definite");
		goto done;
	}
	mat_vec(out->gp_cov, wmu, out->gp_mean, nt);
	xf_combine_job job = { nt, shards, n_shards, w, load, load_ctx, seed, out };
	rc = how->draw(&job, err);
done:
	free(w);
	free(wmu);
	if (rc)
		xf_combination_free(out);
	return rc;
}
