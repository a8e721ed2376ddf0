/* route_handoff.c — what a failed importance route hands exact NUTS (adr/0079): besides
 * the weighted covariance as the metric (route.c), one start per chain drawn from the
 * check's weighted points by systematic resampling. The points already lie in the
 * posterior's typical set, so the chains need no long walk to it, and starts from
 * different strata of the weights keep R̂'s comparison of chains meaningful. */
#include <stdlib.h>
#include <string.h>

#include "cmc/route.h"
#include "xpcsfit/rng.h"

int xf_cmc_route_handoff(const xf_cmc_check *c, const double *w, int n_chains, uint64_t seed,
			 xf_cmc_route_out *out)
{
	int d = c->dim, m = c->m;
	free(out->inits);
	out->inits = NULL;
	out->n_inits = 0;
	if (m < n_chains || n_chains < 1)
		return 0;
	double *inits = malloc(sizeof(double) * (size_t)n_chains * d);
	char *used = calloc((size_t)m, 1);
	if (!inits || !used) {
		free(inits);
		free(used);
		return -1;
	}
	/* its own position in the check's stream: the published draws use (UINT64_MAX, 0) */
	double u0 = xf_rng_uniform(seed, XF_RNG_CMC_CHECK, UINT64_MAX - 1, 0, 0);
	double cum = w[0];
	int i = 0;
	for (int g = 0; g < n_chains; g++) {
		double pos = (g + u0) / n_chains;
		while (pos > cum && i < m - 1)
			cum += w[++i];
		/* a point heavier than 1/n_chains would start two chains in one place: the
		 * next unused point with weight instead (deterministic) */
		int k = i;
		for (int step = 0; step < m && (used[k] || !(w[k] > 0.0)); step++)
			k = (k + 1) % m;
		used[k] = 1;
		memcpy(inits + (size_t)g * d, c->u + (size_t)k * d, sizeof(double) * (size_t)d);
	}
	free(used);
	out->inits = inits;
	out->n_inits = n_chains;
	return 0;
}
