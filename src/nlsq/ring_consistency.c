/* ring_consistency.c — the check of a joint fit's rings (ring_consistency.h, adr/0074).
 *
 * Why whole rings and not parameters: a ring that is off drags the joint fit of every
 * subset it belongs to, most visibly in the parameter the data pin down best (φ0, sd
 * 0.001 deg). Comparing a ring's own fit with the joint fit of the others parameter by
 * parameter then blames the innocent rings: their "others" still hold the odd one. The
 * χ² increase of sharing, χ²(A) − χ²(A∖k) − χ²(k alone), measures instead how much of
 * the whole set's misfit goes away when ring k is let go; only letting the odd ring go
 * removes the tension, so the odd ring has the largest increase whichever parameter it
 * is off in. Under the hypothesis that the rings share the parameters (Gaussian noise)
 * it is chi-square distributed with the number of free physical parameters as degrees
 * of freedom (Wilks; the scaling of ring k is its own in both fits). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/ring_consistency.h"

double xf_chi2_upper_tail(double x, int df)
{
	if (df < 1 || isnan(x))
		return NAN;
	if (!(x > 0.0))
		return 1.0;
	double h = 0.5 * x, e = exp(-h);
	if (df % 2 == 0) { /* e^−h Σ_{i<df/2} hⁱ/i! */
		double term = e, sum = e;
		for (int i = 1; i < df / 2; i++) {
			term *= h / i;
			sum += term;
		}
		return fmin(1.0, sum);
	}
	/* erfc(√h) + e^−h Σ_{i=1}^{(df−1)/2} h^{i−½}/Γ(i+½) */
	double term = e * sqrt(h) / (0.5 * sqrt(M_PI)), sum = erfc(sqrt(h));
	for (int i = 1; i <= (df - 1) / 2; i++) {
		sum += term;
		term *= h / (i + 0.5);
	}
	return fmin(1.0, sum);
}

double xf_ring_max_sd(const xf_nlsq_result *a, const xf_nlsq_result *b, int *which)
{
	double worst = 0.0;
	*which = -1;
	for (int p = 0; p < a->n_phys && p < b->n_phys; p++) {
		double sa = a->uncertainties[p], sb = b->uncertainties[p];
		double z = fabs(a->values[p] - b->values[p]) / sqrt(sa * sa + sb * sb);
		if (a->is_fixed[p] || b->is_fixed[p] || !isfinite(z))
			continue;
		if (*which < 0 || z > worst) {
			worst = z;
			*which = p;
		}
	}
	return worst;
}

/* The free physical parameters the two fits share. */
static int shared_free(const xf_nlsq_result *a, const xf_nlsq_result *b)
{
	int df = 0;
	for (int p = 0; p < a->n_phys && p < b->n_phys; p++)
		df += !a->is_fixed[p] && !b->is_fixed[p];
	return df;
}

/* Ring k judged against the others (fitted without it) in a set whose joint χ² is
 * chi2_set: the χ² increase of sharing in noise units (the noise level from the fits
 * with ring k let go: without σ, their χ² over their degrees of freedom). */
static void judge(const xf_nlsq_result *own, const xf_nlsq_result *others, double chi2_set,
		  int free_set, xf_ring_test *t)
{
	double apart = others->chi_squared + own->chi_squared;
	double dof = (double)(others->n_points + own->n_points) - others->n_free - own->n_free;
	int given = others->sigma_rule == XF_SIGMA_GIVEN;
	double s2 = given ? 1.0 : apart / fmax(1.0, dof);
	double e = (chi2_set - apart) / s2;
	/* two optimisers' tolerances: a set can end a hair below its parts */
	t->excess = e > 0.0 ? e : 0.0;
	/* the parameters ring k gains when let go: its physical ones, and its scaling when
	 * the set shared it (per_angle_mode auto can choose differently per fit) */
	t->df = others->n_free + own->n_free - free_set;
	if (t->df < 1)
		t->df = shared_free(own, others);
	t->p_value = xf_chi2_upper_tail(t->excess, t->df);
	t->z = xf_ring_max_sd(own, others, &t->param);
	t->compared = 1;
}

/* a is a worse verdict than b: the smaller p-value, then (both underflowed) the larger
 * excess */
static int worse(const xf_ring_test *a, const xf_ring_test *b)
{
	return a->p_value < b->p_value || (a->p_value == b->p_value && a->excess > b->excess);
}

int xf_ring_consistency(int n, const xf_nlsq_result *own, int *active, xf_ring_fit_fn fit,
			void *ctx, xf_ring_test *test, xf_error *err)
{
	int n_active = 0, rc = 0;
	for (int k = 0; k < n; k++) {
		memset(&test[k], 0, sizeof test[k]);
		test[k].excess = test[k].p_value = test[k].z = NAN;
		test[k].param = -1;
		n_active += active[k] != 0;
	}
	if (n_active < 3)
		return 0;
	int *use = malloc(sizeof(int) * (size_t)n);
	if (!use)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the ring check");
	xf_nlsq_result set;
	memset(&set, 0, sizeof set); /* freed whether the fit ran or not */
	double chi2_set = NAN;
	int free_set = 0;
	if (!(rc = fit(ctx, active, &set, err))) {
		chi2_set = set.chi_squared;
		free_set = set.n_free;
	}
	xf_nlsq_result_free(&set);
	for (int round = 1; n_active >= 3 && !rc; round++) {
		int worst = -1;
		double chi2_rest = NAN; /* the joint χ² of the set without the worst ring */
		int free_rest = 0;
		for (int k = 0; k < n && !rc; k++) {
			if (!active[k])
				continue;
			memcpy(use, active, sizeof(int) * (size_t)n);
			use[k] = 0;
			xf_nlsq_result others;
			memset(&others, 0, sizeof others);
			if (!(rc = fit(ctx, use, &others, err))) {
				judge(&own[k], &others, chi2_set, free_set, &test[k]);
				if (worst < 0 || worse(&test[k], &test[worst])) {
					worst = k;
					chi2_rest = others.chi_squared;
					free_rest = others.n_free;
				}
			}
			xf_nlsq_result_free(&others);
		}
		/* Bonferroni over the rings of this round */
		if (rc || worst < 0 || !(test[worst].p_value < XF_RING_FALSE_ALARM / n_active))
			break;
		test[worst].flagged = 1;
		test[worst].round = round;
		active[worst] = 0;
		n_active--;
		chi2_set = chi2_rest;
		free_set = free_rest;
	}
	free(use);
	return rc;
}
