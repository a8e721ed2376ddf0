/* target.c — the shard posterior of target.h: transforms, tempered priors, the shard
 * noise and the likelihood from one gradient pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/target.h"
#include "xpcsfit/cmc.h"

#define XF_LOG_2PI 1.8378770664093453

int xf_cmc_target_alloc(xf_cmc_target *t, const xf_problem *pr)
{
	memset(t, 0, sizeof *t);
	t->pr = pr;
	t->x = malloc(sizeof(double) * (size_t)pr->n_full);
	t->b = malloc(sizeof(double) * (size_t)pr->n_full);
	return !(t->x && t->b);
}

void xf_cmc_target_free(xf_cmc_target *t)
{
	free(t->x);
	free(t->b);
	t->x = t->b = NULL;
}

/* sigmoid(u) and log sigmoid(u), stable for large |u| */
static double sigmoid(double u)
{
	return u >= 0.0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
}

static double log_sigmoid(double u)
{
	return u >= 0.0 ? -log1p(exp(-u)) : u - log1p(exp(u));
}

double xf_cmc_u_to_x(double lower, double upper, double u)
{
	double x = lower + (upper - lower) * sigmoid(u);
	/* rounding must not step outside the box */
	return x < lower ? lower : x > upper ? upper : x;
}

int xf_cmc_near_bound(double lower, double upper, double x)
{
	double f = (x - lower) / (upper - lower);
	return f < 1e-3 || f > 1.0 - 1e-3;
}

static double to_x(const xf_problem *pr, int k, double u)
{
	return xf_cmc_u_to_x(pr->lower[k], pr->upper[k], u);
}

void xf_cmc_result_to_physical(const xf_cmc_result *res, const double *u, double *x)
{
	for (int m = 0; m < res->n_theta; m++) {
		int k = res->theta[m];
		x[m] = xf_cmc_u_to_x(res->lower[k], res->upper[k], u[m]);
	}
	x[res->n_theta] = exp(u[res->n_theta]);
}

double xf_cmc_dx_du(const xf_problem *pr, int k, double u_k)
{
	double s = sigmoid(u_k);
	return (pr->upper[k] - pr->lower[k]) * s * (1.0 - s);
}

void xf_cmc_theta_physical(const xf_problem *pr, const int *theta, int n_theta, const double *u,
			   double *x_theta)
{
	for (int m = 0; m < n_theta; m++)
		x_theta[m] = to_x(pr, theta[m], u[m]);
}

void xf_cmc_to_physical(const xf_cmc_target *t, const double *u, double *x_full, double *sigma)
{
	memcpy(x_full, t->x_fixed, sizeof(double) * (size_t)t->pr->n_full);
	for (int m = 0; m < t->n_theta; m++)
		x_full[t->theta[m]] = to_x(t->pr, t->theta[m], u[m]);
	*sigma = exp(u[t->n_theta]);
}

void xf_cmc_to_u(const xf_cmc_target *t, const double *x_full, double sigma, double *u)
{
	const xf_problem *pr = t->pr;
	for (int m = 0; m < t->n_theta; m++) {
		int k = t->theta[m];
		double f = (x_full[k] - pr->lower[k]) / (pr->upper[k] - pr->lower[k]);
		u[m] = log(f) - log1p(-f);
	}
	u[t->n_theta] = log(sigma);
}

double xf_cmc_target_prior(const xf_cmc_target *t, const double *u, double *x_full)
{
	const xf_problem *pr = t->pr;
	double prior = 0.0;
	memcpy(x_full, t->x_fixed, sizeof(double) * (size_t)pr->n_full);
	for (int m = 0; m < t->n_theta; m++) {
		int k = t->theta[m];
		double x = to_x(pr, k, u[m]);
		double z = (x - pr->prior_mu[k]) / pr->prior_sigma[k];
		x_full[k] = x;
		/* log TN(x) + log|dx/du| = −z²/2 + log w + log s(u) + log s(−u) (+ const) */
		prior += -0.5 * z * z + log(pr->upper[k] - pr->lower[k]) + log_sigmoid(u[m]) +
			 log_sigmoid(-u[m]);
	}
	return prior;
}

double xf_cmc_target_combine(const xf_cmc_target *t, const double *u, double prior, double chi2)
{
	double log_sigma = u[t->n_theta], sigma = exp(log_sigma);
	double ratio = sigma / t->sigma_scale;
	double n = (double)t->n_points, inv_s2 = 1.0 / (sigma * sigma);
	if (!isfinite(sigma) || !(sigma > 0.0) || !isfinite(chi2))
		return NAN;
	return t->temper * prior + (-0.5 * ratio * ratio + log_sigma) +
	       (-n * log_sigma - 0.5 * chi2 * inv_s2 - 0.5 * n * XF_LOG_2PI);
}

int xf_cmc_target_from_pass(const xf_cmc_target *t, const double *u, double prior, double chi2,
			    const double *b, double *logp, double *grad)
{
	const xf_problem *pr = t->pr;
	int nt = t->n_theta;
	double sigma = exp(u[nt]);
	double ratio = sigma / t->sigma_scale;
	double n = (double)t->n_points, inv_s2 = 1.0 / (sigma * sigma);
	double lp = xf_cmc_target_combine(t, u, prior, chi2);
	*logp = lp;
	if (!isfinite(lp))
		return -1;
	if (!grad)
		return 0;
	for (int m = 0; m < nt; m++) {
		int k = t->theta[m];
		double s = sigmoid(u[m]);
		double dxdu = (pr->upper[k] - pr->lower[k]) * s * (1.0 - s);
		double dprior_dx =
			-(t->x[k] - pr->prior_mu[k]) / (pr->prior_sigma[k] * pr->prior_sigma[k]);
		/* d/du [log s(u) + log s(−u)] = 1 − 2s */
		grad[m] = t->temper * (dprior_dx * dxdu + (1.0 - 2.0 * s)) + b[k] * inv_s2 * dxdu;
	}
	grad[nt] = -ratio * ratio + 1.0 - n + chi2 * inv_s2;
	return 0;
}

int xf_cmc_target_logp(void *ctx, const double *u, double *logp, double *grad)
{
	xf_cmc_target *t = ctx;
	t->evals++;
	if (t->evals_total) /* progress and time only (eta.h) */
		__atomic_add_fetch(t->evals_total, 1, __ATOMIC_RELAXED);
	double prior = xf_cmc_target_prior(t, u, t->x);
	double sigma = exp(u[t->n_theta]);
	xf_lik_out out = { 0.0, NULL, grad ? t->b : NULL, 0.0 };
	if (xf_lik_eval(t->lik, t->x, &out) || !isfinite(sigma) || !(sigma > 0.0))
		return -1;
	return xf_cmc_target_from_pass(t, u, prior, out.chi2, t->b, logp, grad);
}
