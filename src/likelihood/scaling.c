/* scaling.c — the four per-angle scaling modes of nlsq.md as type records (likelihood.h):
 * how many coefficients, the basis row of an angle, and each coefficient's name, bounds
 * and start. Everything else works on the basis and never asks which mode it is. */
#include <math.h>
#include <stdio.h>

#include "xpcsfit/likelihood.h"

static double clip(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static double mean_of(const double *v, int n)
{
	double sum = 0.0;
	for (int a = 0; a < n; a++)
		sum += v[a] / n;
	return sum;
}

/* individual: one contrast and one offset per angle */
static int individual_n(int n_phi, int order)
{
	(void)order;
	return n_phi;
}

static void individual_row(int a, double phi_rad, int n, double *row)
{
	(void)phi_rad;
	for (int k = 0; k < n; k++)
		row[k] = k == a ? 1.0 : 0.0;
}

static void individual_coef(const char *quantity, int k, const xf_bound *b, const double *start,
			    int n_phi, char *name, size_t size, double *lo, double *hi, double *x0,
			    double *mu, double *sd)
{
	(void)n_phi;
	snprintf(name, size, "%s_%03d", quantity, k);
	*lo = b->lower;
	*hi = b->upper;
	*x0 = clip(start[k], b->lower, b->upper);
	*mu = b->prior_mu;
	*sd = b->prior_sigma;
}

/* auto: one value shared by every angle, started at the mean of the per-angle starts */
static int shared_n(int n_phi, int order)
{
	(void)n_phi;
	(void)order;
	return 1;
}

static void shared_row(int a, double phi_rad, int n, double *row)
{
	(void)a;
	(void)phi_rad;
	(void)n;
	row[0] = 1.0;
}

static void shared_coef(const char *quantity, int k, const xf_bound *b, const double *start,
			int n_phi, char *name, size_t size, double *lo, double *hi, double *x0,
			double *mu, double *sd)
{
	(void)k;
	snprintf(name, size, "%s", quantity);
	*lo = b->lower;
	*hi = b->upper;
	*x0 = clip(mean_of(start, n_phi), b->lower, b->upper);
	*mu = b->prior_mu;
	*sd = b->prior_sigma;
}

/* constant: no coefficient, the per-angle values are held at their starts */
static int constant_n(int n_phi, int order)
{
	(void)n_phi;
	(void)order;
	return 0;
}

/* fourier: [1, cos φ, sin φ, cos 2φ, sin 2φ, ...] (φ in radians) */
static int fourier_n(int n_phi, int order)
{
	(void)n_phi;
	return 2 * order + 1;
}

static void fourier_row(int a, double phi_rad, int n, double *row)
{
	(void)a;
	row[0] = 1.0;
	for (int k = 1; 2 * k < n; k++) {
		row[2 * k - 1] = cos(k * phi_rad);
		row[2 * k] = sin(k * phi_rad);
	}
}

/* the constant term takes the scalar bounds and prior, the harmonics ± half the bound
 * width with a prior centred on 0 (a quarter of their width) */
static void fourier_coef(const char *quantity, int k, const xf_bound *b, const double *start,
			 int n_phi, char *name, size_t size, double *lo, double *hi, double *x0,
			 double *mu, double *sd)
{
	if (k == 0) {
		snprintf(name, size, "%s_c0", quantity);
		*lo = b->lower;
		*hi = b->upper;
		*x0 = clip(mean_of(start, n_phi), b->lower, b->upper);
		*mu = b->prior_mu;
		*sd = b->prior_sigma;
		return;
	}
	snprintf(name, size, "%s_%s%d", quantity, k % 2 ? "cos" : "sin", (k + 1) / 2);
	*hi = 0.5 * (b->upper - b->lower);
	*lo = -*hi;
	*x0 = 0.0;
	*mu = 0.0;
	*sd = 0.25 * (*hi - *lo);
}

static const xf_scaling_type types[] = {
	{ XF_SCALING_AUTO, "auto", 1, shared_n, shared_row, shared_coef, 0 },
	{ XF_SCALING_INDIVIDUAL, "individual", 0, individual_n, individual_row, individual_coef,
	  0 },
	{ XF_SCALING_CONSTANT, "constant", 1, constant_n, shared_row, shared_coef, 1 },
	{ XF_SCALING_FOURIER, "fourier", 0, fourier_n, fourier_row, fourier_coef, 0 },
};

const xf_scaling_type *xf_scaling_type_of(xf_scaling_mode mode)
{
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
		if (types[k].mode == mode)
			return &types[k];
	return &types[0];
}
