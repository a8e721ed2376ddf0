/* adapt.c — warmup adaptation (sampler.h): the dual-averaging step size of Hoffman &
 * Gelman (2014) and Stan's windowed estimate of the metric. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/sampler.h"

/* Stan's defaults for dual averaging */
#define XF_DA_GAMMA 0.05
#define XF_DA_T0    10.0
#define XF_DA_KAPPA 0.75

void xf_step_adapt_init(xf_step_adapt *a, double delta, double epsilon)
{
	a->mu = log(10.0 * epsilon); /* bias towards larger steps */
	a->gamma = XF_DA_GAMMA;
	a->t0 = XF_DA_T0;
	a->kappa = XF_DA_KAPPA;
	a->delta = delta;
	a->s_bar = 0.0;
	a->x_bar = 0.0;
	a->counter = 0;
}

double xf_step_adapt_learn(xf_step_adapt *a, double accept_stat)
{
	a->counter++;
	if (accept_stat > 1.0)
		accept_stat = 1.0;
	double t = (double)a->counter;
	double eta = 1.0 / (t + a->t0);
	a->s_bar = (1.0 - eta) * a->s_bar + eta * (a->delta - accept_stat);
	double x = a->mu - a->s_bar * sqrt(t) / a->gamma;
	double x_eta = pow(t, -a->kappa);
	a->x_bar = (1.0 - x_eta) * a->x_bar + x_eta * x;
	return exp(x);
}

double xf_step_adapt_final(const xf_step_adapt *a)
{
	return exp(a->x_bar);
}

/* Stan's defaults, and the fallback for short warmups */
#define XF_WINDOW_INIT 75
#define XF_WINDOW_TERM 50
#define XF_WINDOW_BASE 25

int xf_window_init(xf_window_adapt *w, int n_warmup, int d, int dense)
{
	memset(w, 0, sizeof *w);
	w->n_warmup = n_warmup;
	w->d = d;
	w->dense = dense;
	w->init_buffer = XF_WINDOW_INIT;
	w->term_buffer = XF_WINDOW_TERM;
	w->base_window = XF_WINDOW_BASE;
	if (n_warmup < 20) {
		/* too short to adapt the metric at all: no window ever ends */
		w->init_buffer = n_warmup;
		w->term_buffer = 0;
		w->base_window = 0;
	} else if (w->init_buffer + w->base_window + w->term_buffer > n_warmup) {
		w->init_buffer = (int)(0.15 * n_warmup);
		w->term_buffer = (int)(0.1 * n_warmup);
		w->base_window = n_warmup - (w->init_buffer + w->term_buffer);
	}
	w->window_size = w->base_window;
	w->next_window = w->init_buffer + w->window_size - 1;
	w->mean = calloc((size_t)d, sizeof(double));
	w->delta = calloc((size_t)d, sizeof(double));
	w->m2 = calloc(dense ? (size_t)d * d : (size_t)d, sizeof(double));
	return !(w->mean && w->delta && w->m2);
}

void xf_window_free(xf_window_adapt *w)
{
	free(w->mean);
	free(w->delta);
	free(w->m2);
	w->mean = w->delta = w->m2 = NULL;
}

/* Stan's compute_next_window: windows double; one that would leave too little room for
 * the next absorbs the rest of the slow phase. */
static void next_window(xf_window_adapt *w)
{
	int last = w->n_warmup - w->term_buffer - 1;
	if (w->next_window == last)
		return;
	w->window_size *= 2;
	w->next_window = w->counter + w->window_size;
	if (w->next_window != last && w->next_window + 2 * w->window_size >= last + 1)
		w->next_window = last;
}

/* Welford's running mean and co-moments (full matrix for a dense metric). */
static void welford_add(xf_window_adapt *w, const double *q)
{
	int d = w->d;
	w->n++;
	double inv_n = 1.0 / (double)w->n;
	for (int k = 0; k < d; k++)
		w->delta[k] = q[k] - w->mean[k];
	for (int k = 0; k < d; k++)
		w->mean[k] += w->delta[k] * inv_n;
	if (!w->dense) {
		for (int k = 0; k < d; k++)
			w->m2[k] += w->delta[k] * (q[k] - w->mean[k]);
		return;
	}
	for (int k = 0; k < d; k++)
		for (int l = 0; l < d; l++)
			w->m2[(size_t)k * d + l] += w->delta[k] * (q[l] - w->mean[l]);
}

void xf_window_add(xf_window_adapt *w, const double *q)
{
	welford_add(w, q);
}

int xf_window_learn(xf_window_adapt *w, const double *q, double *cov)
{
	int d = w->d;
	size_t n_cov = w->dense ? (size_t)d * d : (size_t)d;
	int in_window = w->base_window > 0 && w->counter >= w->init_buffer &&
			w->counter < w->n_warmup - w->term_buffer && w->counter != w->n_warmup;
	int end_window =
		w->base_window > 0 && w->counter == w->next_window && w->counter != w->n_warmup;
	if (in_window)
		welford_add(w, q);
	if (!end_window) {
		w->counter++;
		return 0;
	}
	next_window(w);
	double n = (double)w->n;
	for (size_t k = 0; k < n_cov; k++)
		cov[k] = (n > 1.0 ? w->m2[k] / (n - 1.0) : 0.0) * n / (n + 5.0);
	/* regularized towards a small multiple of the identity (Stan) */
	for (int k = 0; k < d; k++)
		cov[w->dense ? (size_t)k * d + k : (size_t)k] += 1e-3 * 5.0 / (n + 5.0);
	if (w->dense) /* exact symmetry for the Cholesky factorisation */
		for (int k = 0; k < d; k++)
			for (int l = k + 1; l < d; l++) {
				double s = 0.5 * (cov[(size_t)k * d + l] + cov[(size_t)l * d + k]);
				cov[(size_t)k * d + l] = cov[(size_t)l * d + k] = s;
			}
	w->n = 0;
	memset(w->mean, 0, sizeof(double) * (size_t)d);
	memset(w->m2, 0, sizeof(double) * n_cov);
	w->counter++;
	return 1;
}

/* Lower Cholesky factor in place (row-major d×d, upper triangle zeroed); −1 when not
 * positive definite. */
static int cholesky(double *a, int d)
{
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, a, d) != 0)
		return -1;
	for (int r = 0; r < d; r++)
		for (int c = r + 1; c < d; c++)
			a[(size_t)r * d + c] = 0.0;
	return 0;
}

int xf_metric_settled(const double *inv, const double *cov, int d, int dense, long n, double *kappa)
{
	*kappa = NAN;
	double ratio = (double)d / (double)n;
	if (n <= d || !(ratio < 1.0))
		return 0;
	double edge = (1.0 + sqrt(ratio)) / (1.0 - sqrt(ratio));
	double limit = XF_SETTLE_FACTOR * edge * edge, lo = INFINITY, hi = 0.0;
	if (!dense) {
		for (int k = 0; k < d; k++) {
			double l = cov[k] / inv[k];
			lo = fmin(lo, l);
			hi = fmax(hi, l);
		}
	} else {
		size_t dd = (size_t)d * d;
		double *l = malloc(sizeof(double) * dd), *a = malloc(sizeof(double) * dd);
		double *ev = malloc(sizeof(double) * (size_t)d);
		int ok = l && a && ev;
		if (ok) {
			memcpy(l, inv, sizeof(double) * dd);
			ok = cholesky(l, d) == 0;
		}
		if (ok) { /* A = L⁻¹ C L⁻ᵀ: two triangular solves */
			memcpy(a, cov, sizeof(double) * dd);
			ok = LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, 'L', 'N', 'N', d, d, l, d, a, d) == 0;
			for (int r = 0; ok && r < d;
			     r++) /* transpose: solve again from the right */
				for (int c = r + 1; c < d; c++) {
					double t = a[(size_t)r * d + c];
					a[(size_t)r * d + c] = a[(size_t)c * d + r];
					a[(size_t)c * d + r] = t;
				}
			ok = ok &&
			     LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, 'L', 'N', 'N', d, d, l, d, a, d) == 0;
			ok = ok && LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'L', d, a, d, ev) == 0;
		}
		if (ok) {
			lo = ev[0];
			hi = ev[d - 1];
		}
		free(l);
		free(a);
		free(ev);
		if (!ok)
			return 0;
	}
	if (!(lo > 0.0) || !isfinite(hi))
		return 0;
	*kappa = hi / lo;
	return *kappa <= limit;
}
