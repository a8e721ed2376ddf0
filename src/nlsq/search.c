/* search.c — finding the optimum (docs/nlsq.md "Finding the optimum", adr/0007).
 *
 * The landscape has real wrong minima (a shear rate a decade or two too high that
 * decorrelates the flow-direction angles; a start so fast that every correlation is gone
 * and the model is flat), and one local fit from a poor start ends in them. So every fit
 * screens a set of starts on a deterministic subsample of frame pairs — the config's
 * start, the start estimated from the data, a spread over decades of D0 and γ̇0 around the
 * estimate, and the Latin hypercube of multi_start — and refines the best few basins on
 * all the data. Starts where the model is flat are moved to slower rates before they are
 * screened. Screening is two rounds: a few iterations for every start, then the most
 * promising ones to convergence. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"
#include "xpcsfit/rng.h"

#define XF_SCREEN_ROUND1_ITERATIONS 10	 /* every start */
#define XF_SCREEN_ROUND1_FTOL	    1e-6 /* a rough position is enough to rank */
#define XF_SCREEN_KEEP		    4	 /* starts continued to convergence */
#define XF_SCREEN_ROUND2_ITERATIONS 40
#define XF_SCREEN_STALL_WINDOW	    6
#define XF_REFINE_STALL_WINDOW	    10
#define XF_REFINE_MAX		    3 /* basins refined on all the data at most */
/* Refinement starts next to an optimum, where the Gauss-Newton step is right: little
 * damping (a refused step raises it) */
#define XF_REFINE_LAMBDA0 1e-6
/* A basin is refined on all the data when its subsample χ² is within this many noise
 * units (s²) of the best: the sampling sd of a χ² difference Δ between two end points is
 * about 2·sqrt(Δ·s²), so 25 s² puts a misranking 2.5 sd away. */
#define XF_REFINE_MARGIN_NOISE 25.0
#define XF_BASIN_NOISE	       0.1 /* end points closer than this in χ²/s² share a basin */
/* A start is flat when the model keeps less than this fraction of the correlation the
 * data show (mean g1² against the mean normalised c2: it decays within a few frames
 * where the data do not), or a whole rate block has no derivative (every rate on its
 * floor). */
#define XF_FLAT_FRACTION 0.05
#define XF_LOG_SPACED	 100.0 /* Latin hypercube: log spacing above upper/lower */

typedef struct candidate {
	char label[48];
	double *x;
	double chi2; /* on the screening subsample */
	xf_stop_reason stop;
	int alive;
} candidate;

typedef struct cand_list {
	candidate *c;
	int n, cap, n_full;
} cand_list;

/* End points a search path races against: it stops when even a full Gauss-Newton step,
 * counted twice, cannot bring it within `margin_noise` noise units of the best (it will
 * end worse), or when it has come within XF_JOINED_SE standard errors of one of them (it
 * will end there). */
#define XF_RACE_MAX  (XF_SCREEN_KEEP + XF_REFINE_MAX)
#define XF_JOINED_SE 3.0

typedef enum race_verdict { RACE_ON = 0, RACE_WORSE, RACE_JOINED } race_verdict;

#define XF_CRAWL_WINDOW 10 /* trials over which a path's progress rate is measured */

typedef struct race {
	const xf_problem *pr;
	size_t n_points;     /* of the pass the paths use */
	double margin_noise; /* noise units */
	int n_ref;
	const xf_fit_point *ref[XF_RACE_MAX];
	race_verdict verdict; /* why the last watched run stopped */
	/* the watched run: its trial budget and recent χ² (race_start resets them) */
	int budget, n_calls;
	double recent[XF_CRAWL_WINDOW];
} race;

static void race_start(race *r, int budget)
{
	r->verdict = RACE_ON;
	r->budget = budget;
	r->n_calls = 0;
}

static double race_best(const race *r)
{
	double best = INFINITY;
	for (int k = 0; k < r->n_ref; k++)
		best = fmin(best, r->ref[k]->chi2);
	return best;
}

/* (x − ref)ᵀ H_ref (x − ref) over the free parameters. */
static double mahalanobis2(const xf_problem *pr, const double *x, const xf_fit_point *ref)
{
	int n = pr->n_full;
	double d2 = 0.0;
	for (int k = 0; k < n; k++) {
		if (pr->fixed[k])
			continue;
		double dk = x[k] - ref->x[k], row = 0.0;
		for (int l = 0; l < n; l++)
			if (!pr->fixed[l])
				row += ref->jtj[(size_t)k * n + l] * (x[l] - ref->x[l]);
		d2 += dk * row;
	}
	return d2;
}

static int race_watch(void *ctx, const double *x, double chi2, double gn_reduction)
{
	race *r = ctx;
	if (r->n_ref == 0)
		return 0;
	double best = race_best(r);
	double s2 = best / fmax(1.0, (double)r->n_points - r->pr->n_full);
	double gap = chi2 - (best + r->margin_noise * s2);
	if (gn_reduction >= 0.0 && gap - 2.0 * gn_reduction > 0.0) {
		r->verdict = RACE_WORSE;
		return 1;
	}
	/* crawling along a valley too slowly to come within the margin in its budget */
	int n = r->n_calls++;
	if (n >= XF_CRAWL_WINDOW && gap > 0.0) {
		double rate = (r->recent[n % XF_CRAWL_WINDOW] - chi2) / XF_CRAWL_WINDOW;
		if (rate * (r->budget - n) < gap) {
			r->verdict = RACE_WORSE;
			return 1;
		}
	}
	r->recent[n % XF_CRAWL_WINDOW] = chi2;
	for (int k = 0; k < r->n_ref; k++) {
		double s2_ref = r->ref[k]->chi2 / fmax(1.0, (double)r->n_points - r->pr->n_full);
		if (mahalanobis2(r->pr, x, r->ref[k]) < XF_JOINED_SE * XF_JOINED_SE * s2_ref) {
			r->verdict = RACE_JOINED;
			return 1;
		}
	}
	return 0;
}

static int free_mask_of(const xf_problem *pr, int *mask)
{
	for (int k = 0; k < pr->n_full; k++)
		mask[k] = !pr->fixed[k];
	return 0;
}

/* ---- candidates ---- */

static int add_candidate(cand_list *cl, const xf_problem *pr, const char *label, const double *phys)
{
	if (cl->n == cl->cap) {
		int cap = cl->cap ? 2 * cl->cap : 32;
		candidate *c = realloc(cl->c, sizeof(candidate) * (size_t)cap);
		if (!c)
			return -1;
		cl->c = c;
		cl->cap = cap;
	}
	candidate *c = &cl->c[cl->n];
	memset(c, 0, sizeof *c);
	c->x = malloc(sizeof(double) * (size_t)cl->n_full);
	if (!c->x)
		return -1;
	memcpy(c->x, pr->start, sizeof(double) * (size_t)cl->n_full);
	for (int k = 0; k < pr->n_phys; k++)
		if (!pr->fixed[k])
			c->x[k] = fmin(fmax(phys[k], pr->lower[k]), pr->upper[k]);
	/* the same point twice is screened once */
	for (int m = 0; m < cl->n; m++)
		if (!memcmp(cl->c[m].x, c->x, sizeof(double) * (size_t)pr->n_phys)) {
			free(c->x);
			return 0;
		}
	snprintf(c->label, sizeof c->label, "%s", label);
	c->chi2 = NAN;
	c->alive = 1;
	cl->n++;
	return 0;
}

static void cand_list_free(cand_list *cl)
{
	for (int m = 0; m < cl->n; m++)
		free(cl->c[m].x);
	free(cl->c);
}

/* Latin-hypercube value of start s (1..m) for parameter k: stratum from a seeded
 * permutation, log-spaced for positive bounds spanning more than two decades. */
static double lhs_value(const xf_problem *pr, uint64_t seed, int m, int s, int k)
{
	int *perm = malloc(sizeof(int) * (size_t)m);
	if (!perm) {
		xf_note_no_memory();
		return pr->start[k];
	}
	for (int q = 0; q < m; q++)
		perm[q] = q;
	for (int q = m - 1; q > 0; q--) { /* Fisher-Yates keyed by (parameter, position) */
		int r = (int)(xf_rng_uniform(seed, XF_RNG_MULTI_START, (uint64_t)k, (uint64_t)q,
					     0) *
			      (q + 1));
		int t = perm[q];
		perm[q] = perm[r];
		perm[r] = t;
	}
	double u = (perm[s - 1] +
		    xf_rng_uniform(seed, XF_RNG_MULTI_START, (uint64_t)k, (uint64_t)s, 1)) /
		   m;
	free(perm);
	double lo = pr->lower[k], hi = pr->upper[k];
	if (lo > 0.0 && hi / lo > XF_LOG_SPACED)
		return exp(log(lo) + u * (log(hi) - log(lo)));
	return lo + u * (hi - lo);
}

/* Point s (1..m) of m spread evenly over parameter k's bounds, at the middles of m equal
 * strata: log-spaced for positive bounds spanning more than two decades, as lhs_value. */
static double bounds_value(const xf_problem *pr, int m, int s, int k)
{
	double u = (s - 0.5) / m, lo = pr->lower[k], hi = pr->upper[k];
	if (lo > 0.0 && hi / lo > XF_LOG_SPACED)
		return exp(log(lo) + u * (log(hi) - log(lo)));
	return lo + u * (hi - lo);
}

/* A model searched over its bounds (adr/0123): each free physical parameter in turn at
 * 2S + 1 points over its bounds, the others at the estimate (the request's start). */
static int spread_over_bounds(const xf_fit_ctx *ctx, const double *estimate, cand_list *cl)
{
	const xf_problem *pr = ctx->pr;
	int m = 2 * ctx->opt->search_spread + 1;
	for (int k = 0; k < pr->n_phys; k++)
		for (int s = 1; s <= m && !pr->fixed[k]; s++) {
			double phys[XF_N_PHYS];
			char label[64];
			memcpy(phys, estimate, sizeof phys);
			phys[k] = bounds_value(pr, m, s, k);
			snprintf(label, sizeof label, "spread %.24s %d/%d", pr->names[k], s, m);
			if (add_candidate(cl, pr, label, phys))
				return -1;
		}
	return 0;
}

/* The built-in models' rates (adr/0007): D0 over decades around the estimate, and γ̇0
 * for laminar flow (α at the estimate and at 0 for static) */
static int spread_rates(const xf_fit_ctx *ctx, const double *estimate, cand_list *cl)
{
	const xf_problem *pr = ctx->pr;
	int S = ctx->opt->search_spread, laminar = pr->model->shear;
	int n_alpha = laminar ? 1 : 2;
	double phys[XF_N_PHYS];
	for (int dd = -S; dd <= S; dd++)
		for (int dg = laminar ? -S : 0; dg <= (laminar ? S : 0); dg++)
			for (int va = 0; va < n_alpha; va++) {
				char label[48];
				memcpy(phys, estimate, sizeof phys);
				phys[XF_P_D0] *= pow(10.0, dd);
				if (laminar) {
					phys[XF_P_GAMMA_DOT_T0] *= pow(10.0, dg);
					snprintf(label, sizeof label, "spread D0 1e%+d, gdot 1e%+d",
						 dd, dg);
				} else {
					if (va)
						phys[XF_P_ALPHA] = 0.0;
					snprintf(label, sizeof label, "spread D0 1e%+d%s", dd,
						 va ? ", alpha 0" : "");
				}
				if (add_candidate(cl, pr, label, phys))
					return -1;
			}
	return 0;
}

/* The config's start (when it gives one), the estimate, the spread (of the rates, or
 * over the bounds for a model without an estimator), the hypercube. */
static int make_candidates(const xf_fit_ctx *ctx, const double *estimate, cand_list *cl)
{
	const xf_problem *pr = ctx->pr;
	const xf_nlsq_options *o = ctx->opt;
	double phys[XF_N_PHYS];
	int any_given = 0;
	for (int k = 0; k < pr->n_phys; k++)
		any_given |= pr->value_given[k] && !pr->fixed[k];
	if (any_given) {
		for (int k = 0; k < pr->n_phys; k++)
			phys[k] = pr->value_given[k] ? pr->start[k] : estimate[k];
		if (add_candidate(cl, pr, "config", phys))
			return -1;
	}
	if (add_candidate(cl, pr, "estimate", estimate))
		return -1;
	if (xf_nlsq_model_estimated(pr) ? spread_rates(ctx, estimate, cl)
					: spread_over_bounds(ctx, estimate, cl))
		return -1;
	if (o->multi_start && o->n_starts > 1)
		for (int s = 1; s < o->n_starts; s++) {
			char label[48];
			memcpy(phys, any_given ? pr->start : estimate, sizeof(double) * XF_N_PHYS);
			for (int k = 0; k < pr->n_phys; k++)
				if (!pr->fixed[k])
					phys[k] = lhs_value(pr, o->multi_start_seed,
							    o->n_starts - 1, s, k);
			snprintf(label, sizeof label, "multi_start %d/%d", s + 1, o->n_starts);
			if (add_candidate(cl, pr, label, phys))
				return -1;
		}
	return 0;
}

/* ---- flat starts ---- */

static int block_flat(const double *jtj, int n, const int *fixed, int first)
{
	int any_free = 0;
	for (int k = first; k < first + 3; k++) {
		if (fixed[k])
			continue;
		any_free = 1;
		if (jtj[(size_t)k * n + k] > 0.0)
			return 0;
	}
	return any_free;
}

static int is_flat(const xf_fit_ctx *ctx, const xf_lik_out *out)
{
	const xf_problem *pr = ctx->pr;
	if (out->mean_g1sq < XF_FLAT_FRACTION * ctx->data_mean_g1sq)
		return 1;
	if (!xf_nlsq_model_estimated(pr)) /* its parameters are no rate blocks */
		return 0;
	if (block_flat(out->jtj, pr->n_full, pr->fixed, XF_P_D0))
		return 1;
	return pr->model->shear && block_flat(out->jtj, pr->n_full, pr->fixed, XF_P_GAMMA_DOT_T0);
}

/* The model is linear in the scaling coefficients: with the physics held, one
 * Gauss-Newton step on their block of JᵀJ lands on the best contrast and offset for this
 * start (clipped into their bounds; also phi0_profile.c). Quantile estimates can be far off when the window
 * never decays to the baseline, and a start carrying them slides into the wrong
 * contrast–decay trade-off. */
void xf_fit_profile_scaling(const xf_problem *pr, double *x, const double *jtj, const double *b)
{
	int n = pr->n_full, m = 0;
	int *idx = malloc(sizeof(int) * (size_t)n);
	double *a = malloc(sizeof(double) * (size_t)n * n), *rhs = malloc(sizeof(double) * n);
	if (!idx || !a || !rhs)
		xf_note_no_memory();
	if (idx && a && rhs) {
		for (int k = pr->n_phys; k < n; k++)
			if (!pr->fixed[k])
				idx[m++] = k;
		for (int p = 0; p < m; p++) {
			for (int q = 0; q < m; q++)
				a[p * m + q] = jtj[(size_t)idx[p] * n + idx[q]];
			rhs[p] = b[idx[p]];
		}
		if (m > 0 && LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', m, 1, a, m, rhs, 1) == 0)
			for (int p = 0; p < m; p++) {
				int k = idx[p];
				x[k] = fmin(fmax(x[k] + rhs[p], pr->lower[k]), pr->upper[k]);
			}
	}
	free(idx);
	free(a);
	free(rhs);
}

/* Move a flat start towards slower rates (a decade at a time, offsets to 0) until the
 * model has correlations and derivatives again; a start that stays flat is dropped. The
 * scaling of a start that can move is profiled (profile_scaling). Returns 1 when the
 * start was moved, 0 when it was fine, −1 when dropped. */
static int prepare_start(xf_fit_ctx *ctx, candidate *c, double *jtj, double *b)
{
	const xf_problem *pr = ctx->pr;
	for (int move = 0; move <= XF_FLAT_MOVES; move++) {
		xf_lik_out out = { 0.0, jtj, b, 0.0 };
		int bad = xf_fit_pass(ctx, XF_ROLE_COARSE, c->x, &out);
		if (!bad && !is_flat(ctx, &out)) {
			xf_fit_profile_scaling(pr, c->x, jtj, b);
			return move > 0;
		}
		if (!xf_nlsq_model_estimated(pr)) /* no rates to slow: dropped */
			return -1;
		const int slower[4] = { XF_P_D0, XF_P_D_OFFSET, XF_P_GAMMA_DOT_T0,
					XF_P_GAMMA_DOT_T_OFFSET };
		for (int q = 0; q < (pr->model->shear ? 4 : 2); q++) {
			int k = slower[q];
			if (pr->fixed[k])
				continue;
			double v = q % 2 ? 0.0 : c->x[k] / 10.0;
			c->x[k] = fmin(fmax(v, pr->lower[k]), pr->upper[k]);
		}
	}
	return -1;
}

/* ---- screening ---- */

/* Alive candidates by subsample χ², ties by their place in the list (deterministic:
 * insertion sort is stable, and n is a few dozen). */
static void order_candidates(cand_list *cl, candidate **order)
{
	for (int m = 0; m < cl->n; m++)
		order[m] = &cl->c[m];
	for (int m = 1; m < cl->n; m++) {
		candidate *t = order[m];
		int q = m;
		while (q > 0 &&
		       (order[q - 1]->alive < t->alive ||
			(order[q - 1]->alive == t->alive && order[q - 1]->chi2 > t->chi2))) {
			order[q] = order[q - 1];
			q--;
		}
		order[q] = t;
	}
}

/* One screening run of a candidate on a subsample, from c->x into p. */
static int screen_run(xf_fit_ctx *ctx, xf_fit_role role, candidate *c, const int *mask,
		      xf_fit_point *p, int max_iterations, double ftol, race *rc, const char *phase)
{
	int nf = ctx->pr->n_full;
	xf_fit_run run = { .role = role,
			   .free_mask = mask,
			   .max_iterations = max_iterations,
			   .ftol = ftol,
			   .stall_window = XF_SCREEN_STALL_WINDOW,
			   .watch = rc ? race_watch : NULL,
			   .watch_ctx = rc,
			   .phase = phase };
	memcpy(p->x, c->x, sizeof(double) * (size_t)nf);
	if (rc)
		race_start(rc, max_iterations);
	if (xf_fit_lm(ctx, &run, p)) {
		c->alive = 0;
		return 0;
	}
	memcpy(c->x, p->x, sizeof(double) * (size_t)nf);
	c->chi2 = p->chi2;
	c->stop = p->stop;
	return xf_interrupted();
}

/* Round 1: every start, moved off flat regions first, a few iterations. */
static int screen_round1(xf_fit_ctx *ctx, cand_list *cl, const int *mask, xf_fit_point *work)
{
	char phase[64];
	for (int m = 0; m < cl->n; m++) {
		candidate *c = &cl->c[m];
		int moved = prepare_start(ctx, c, work->jtj, work->b);
		if (moved < 0) {
			xf_info("nlsq screen: start '%s' is flat at every slower rate: dropped",
				c->label);
			c->alive = 0;
			ctx->search.n_replaced++;
			continue;
		}
		if (moved) {
			xf_info("nlsq screen: start '%s' was flat (every correlation gone or every "
				"rate floored): moved to slower rates",
				c->label);
			ctx->search.n_replaced++;
		}
		snprintf(phase, sizeof phase, "screen %d/%d", m + 1, cl->n);
		if (screen_run(ctx, XF_ROLE_COARSE, c, mask, work, XF_SCREEN_ROUND1_ITERATIONS,
			       XF_SCREEN_ROUND1_FTOL, NULL, phase))
			return -1;
		/* effective: the start led somewhere (it did not stall where it began) */
		ctx->search.n_effective += c->alive && c->stop != XF_STOP_STALLED;
	}
	return 0;
}

/* Round 2: the most promising starts to convergence, each racing the end points found
 * so far. ends[] receives the distinct converged end points (basins), best first;
 * returns their count, or −1 when interrupted. */
static int screen_round2(xf_fit_ctx *ctx, candidate **order, int keep, const int *mask,
			 xf_fit_point *ends)
{
	const xf_problem *pr = ctx->pr;
	char phase[64];
	double ftol = fmin(ctx->opt->ftol, 1e-8);
	race rc = { .pr = pr,
		    .n_points = xf_lik_points(ctx->lik[XF_ROLE_SCREEN]),
		    .margin_noise = XF_REFINE_MARGIN_NOISE };
	int n_ends = 0;
	for (int m = 0; m < keep; m++) {
		xf_fit_point *p = &ends[n_ends];
		snprintf(phase, sizeof phase, "screen+ %d/%d", m + 1, keep);
		if (screen_run(ctx, XF_ROLE_SCREEN, order[m], mask, p, XF_SCREEN_ROUND2_ITERATIONS,
			       ftol, &rc, phase))
			return -1;
		if (!order[m]->alive || p->stop == XF_STOP_WORSE)
			continue;
		/* a path out of budget is a basin only when it already beats every converged
		 * end point by more than a noise unit (refinement takes it from there); with
		 * none yet it does (adr/0046: the first path, stalled next to the optimum,
		 * was dropped by ∞ − ∞ and a worse basin reported converged) */
		double s2 = race_best(&rc) / fmax(1.0, (double)rc.n_points - pr->n_full);
		if (!xf_stop_on_tolerance(p->stop) && rc.n_ref > 0 &&
		    !(p->chi2 < race_best(&rc) - s2))
			continue;
		/* an end point next to an earlier one is the same basin */
		race_start(&rc, 0);
		if (race_watch(&rc, p->x, p->chi2, NAN) && rc.verdict == RACE_JOINED)
			continue;
		rc.ref[rc.n_ref++] = p;
		n_ends++;
	}
	/* best first (insertion sort on χ², stable) */
	for (int m = 1; m < n_ends; m++)
		for (int q = m; q > 0 && ends[q - 1].chi2 > ends[q].chi2; q--) {
			xf_fit_point t = ends[q];
			ends[q] = ends[q - 1];
			ends[q - 1] = t;
		}
	return n_ends;
}

/* ---- refinement ---- */

/* Refine the screened basins within the margin of the best on all the data, each later
 * one racing the refined ones; best receives the lowest χ². */
static int refine(xf_fit_ctx *ctx, const xf_fit_point *ends, int n_ends, const int *mask,
		  const char *const *labels, xf_fit_point *best, xf_fit_point *refined)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full;
	double s2_sub =
		ends[0].chi2 / fmax(1.0, (double)xf_lik_points(ctx->lik[XF_ROLE_SCREEN]) - nf);
	race rc = { .pr = pr,
		    .n_points = xf_lik_points(ctx->lik[XF_ROLE_FULL]),
		    .margin_noise = XF_AMBIGUOUS_NOISE };
	best->chi2 = INFINITY;
	for (int r = 0; r < n_ends && r < XF_REFINE_MAX; r++) {
		char phase[64];
		int budget = ctx->opt->max_iterations - ctx->full_iterations;
		if (budget < 1 || xf_interrupted())
			break;
		if (ends[r].chi2 > ends[0].chi2 + XF_REFINE_MARGIN_NOISE * s2_sub)
			break;
		snprintf(phase, sizeof phase, "refine %d", r + 1);
		xf_fit_point *p = &refined[r];
		memcpy(p->x, ends[r].x, sizeof(double) * (size_t)nf);
		xf_fit_run run = { .role = XF_ROLE_FULL,
				   .free_mask = mask,
				   .max_iterations = budget,
				   .ftol = ctx->opt->ftol,
				   .stall_window = XF_REFINE_STALL_WINDOW,
				   .lambda0 = XF_REFINE_LAMBDA0,
				   .watch = race_watch,
				   .watch_ctx = &rc,
				   .phase = phase };
		race_start(&rc, budget);
		if (xf_fit_lm(ctx, &run, p))
			continue;
		ctx->search.n_refined++;
		if (rc.verdict == RACE_JOINED)
			continue; /* the same end point as an earlier refinement */
		if (p->chi2 < best->chi2) {
			double previous = best->chi2;
			xf_fit_point_copy(best, p, nf);
			best->competitor_chi2 = isfinite(previous) ? previous : NAN;
			snprintf(ctx->search.chosen, sizeof ctx->search.chosen, "%s", labels[r]);
		} else if (!(p->chi2 >= best->competitor_chi2)) {
			best->competitor_chi2 = p->chi2;
		}
		if (rc.verdict == RACE_ON)
			rc.ref[rc.n_ref++] = p;
	}
	return isfinite(best->chi2) ? 0 : -1;
}

/* A start lost to a failed allocation is not a start the model rejected. */
static int fail_no_memory(xf_error *err)
{
	return xf_fail(err, XF_ERR_NOMEM, "out of memory during the fit: no result written");
}

int xf_fit_search(xf_fit_ctx *ctx, const double *estimate, xf_fit_point *best, xf_error *err)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full, rc = 0, n_alloc = 0;
	cand_list cl = { NULL, 0, 0, nf };
	candidate **order = NULL;
	const char *labels[XF_REFINE_MAX] = { 0 };
	int *mask = malloc(sizeof(int) * (size_t)nf);
	xf_fit_point work = { 0 }, ends[XF_SCREEN_KEEP] = { { 0 } },
		     refined[XF_REFINE_MAX] = { { 0 } };
	int ok = mask && !xf_fit_point_alloc(&work, nf);
	for (; ok && n_alloc < XF_SCREEN_KEEP; n_alloc++)
		ok = !xf_fit_point_alloc(&ends[n_alloc], nf);
	for (int k = 0; ok && k < XF_REFINE_MAX; k++)
		ok = !xf_fit_point_alloc(&refined[k], nf);
	if (!ok || make_candidates(ctx, estimate, &cl) ||
	    !(order = malloc(sizeof(candidate *) * (size_t)cl.n))) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory searching for the optimum");
		goto done;
	}
	for (int k = 0; k < nf; k++)
		mask[k] = !pr->fixed[k];
	ctx->search.n_candidates = cl.n;
	xf_info("nlsq: screening %d starts on %zu, the best %d on %zu of %zu points", cl.n,
		xf_lik_points(ctx->lik[XF_ROLE_COARSE]), XF_SCREEN_KEEP,
		xf_lik_points(ctx->lik[XF_ROLE_SCREEN]), xf_lik_points(ctx->lik[XF_ROLE_FULL]));
	if (screen_round1(ctx, &cl, mask, &work)) {
		rc = xf_fail(err, XF_ERR_INTERRUPTED, "interrupted: no result written");
		goto done;
	}
	order_candidates(&cl, order);
	int keep = 0;
	while (keep < cl.n && keep < XF_SCREEN_KEEP && order[keep]->alive)
		keep++;
	int n_ends = keep ? screen_round2(ctx, order, keep, mask, ends) : 0;
	if (n_ends < 0) {
		rc = xf_fail(err, XF_ERR_INTERRUPTED, "interrupted: no result written");
		goto done;
	}
	if (n_ends == 0 && keep > 0) {
		/* nothing converged on the subsample: refine the best screened point */
		memcpy(ends[0].x, order[0]->x, sizeof(double) * (size_t)nf);
		ends[0].chi2 = order[0]->chi2;
		n_ends = 1;
	}
	if (n_ends == 0) {
		rc = xf_no_memory() ? fail_no_memory(err)
				    : xf_fit_fail_non_finite(ctx, cl.c[0].x, "at every start", err);
		goto done;
	}
	ctx->search.n_basins = n_ends;
	for (int r = 0; r < n_ends && r < XF_REFINE_MAX; r++)
		for (int m = 0, found = 0; m < cl.n && !found; m++)
			if ((found = !memcmp(cl.c[m].x, ends[r].x, sizeof(double) * (size_t)nf)))
				labels[r] = cl.c[m].label;
	if (refine(ctx, ends, n_ends, mask, labels, best, refined)) {
		rc = xf_interrupted()
			     ? xf_fail(err, XF_ERR_INTERRUPTED, "interrupted: no result written")
		     : xf_no_memory() ? fail_no_memory(err)
		     /* finite on the screening subsample, not on all the data: say where */
		     : xf_fit_non_finite_at(ctx, ends[0].x)
			     ? xf_fit_fail_non_finite(ctx, ends[0].x,
						      "on all the data at the best screened point",
						      err)
			     : xf_fail(err, XF_ERR_DATA,
				       "no start could be refined on all the data, in %s",
				       pr->ds->path ? pr->ds->path : "data");
		goto done;
	}
	xf_info("nlsq: %d starts screened (%d moved from flat), %d basins, %d refined; "
		"best from '%s'",
		cl.n, ctx->search.n_replaced, ctx->search.n_basins, ctx->search.n_refined,
		ctx->search.chosen);
done:
	free(order);
	free(mask);
	cand_list_free(&cl);
	xf_fit_point_free(&work);
	for (int k = 0; k < n_alloc; k++)
		xf_fit_point_free(&ends[k]);
	for (int k = 0; k < XF_REFINE_MAX; k++)
		xf_fit_point_free(&refined[k]);
	return rc;
}

/* ---- one path, for start_search off ---- */

static int physical_at_bound(const xf_problem *pr, const double *x)
{
	for (int k = 0; k < pr->n_phys; k++) {
		double tol = 1e-9 * (pr->upper[k] - pr->lower[k]);
		if (!pr->fixed[k] && (x[k] <= pr->lower[k] + tol || x[k] >= pr->upper[k] - tol))
			return 1;
	}
	return 0;
}

/* Physical parameters with the scaling held at its start, then everything. */
static int hierarchical_path(xf_fit_ctx *ctx, const double *start, const int *mask, xf_fit_point *p)
{
	const xf_problem *pr = ctx->pr;
	int *phys_only = malloc(sizeof(int) * (size_t)pr->n_full);
	if (!phys_only) {
		xf_note_no_memory();
		return -1;
	}
	for (int k = 0; k < pr->n_full; k++)
		phys_only[k] = k < pr->n_phys && mask[k];
	memcpy(p->x, start, sizeof(double) * (size_t)pr->n_full);
	/* the first stage only prepares a start: with the scaling held it cannot reach the
	 * final χ², so polishing it to 1e-8 wastes passes */
	xf_fit_run run = { .role = XF_ROLE_FULL,
			   .free_mask = phys_only,
			   .max_iterations = ctx->opt->max_iterations - ctx->full_iterations,
			   .ftol = fmax(ctx->opt->ftol, 1e-4),
			   .stall_window = XF_REFINE_STALL_WINDOW,
			   .phase = "hierarchical" };
	int rc = xf_fit_lm(ctx, &run, p);
	free(phys_only);
	if (rc)
		return rc;
	run.free_mask = mask;
	run.max_iterations = ctx->opt->max_iterations - ctx->full_iterations;
	run.ftol = ctx->opt->ftol;
	run.phase = "full";
	return xf_fit_lm(ctx, &run, p);
}

static int ends_badly(const xf_problem *pr, const xf_fit_point *p)
{
	return !xf_stop_on_tolerance(p->stop) || physical_at_bound(pr, p->x);
}

/* The direct path from start into p. */
static int direct_path(xf_fit_ctx *ctx, const double *start, const int *mask, xf_fit_point *p)
{
	xf_fit_run run = { .role = XF_ROLE_FULL,
			   .free_mask = mask,
			   .max_iterations = ctx->opt->max_iterations - ctx->full_iterations,
			   .ftol = ctx->opt->ftol,
			   .stall_window = XF_REFINE_STALL_WINDOW,
			   .phase = "direct" };
	memcpy(p->x, start, sizeof(double) * (size_t)ctx->pr->n_full);
	return xf_fit_lm(ctx, &run, p);
}

int xf_fit_single_path(xf_fit_ctx *ctx, const double *start, xf_fit_point *best, xf_error *err)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full, rc = 0;
	int *mask = malloc(sizeof(int) * (size_t)nf);
	xf_fit_point other = { 0 };
	if (!mask || xf_fit_point_alloc(&other, nf)) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory");
		goto done;
	}
	free_mask_of(pr, mask);
	snprintf(ctx->search.chosen, sizeof ctx->search.chosen, "config");
	ctx->search.n_candidates = 1;
	ctx->search.n_refined = 1;
	int hierarchical = ctx->opt->hierarchical && pr->model->shear && pr->n_basis > 0;
	int bad = hierarchical ? hierarchical_path(ctx, start, mask, best)
			       : direct_path(ctx, start, mask, best);
	/* held scaling can be poor (a short window that never decays to the baseline) and
	 * pull the hierarchical path onto a bound: then the direct path too, the better kept */
	if (hierarchical && (bad || ends_badly(pr, best)) && !xf_interrupted()) {
		xf_info("nlsq: the hierarchical path ended %s; also fitting directly from the "
			"same start",
			bad ? "on a non-finite model" : "badly");
		if (direct_path(ctx, start, mask, &other) == 0 &&
		    (bad || other.chi2 < best->chi2)) {
			xf_fit_point_copy(best, &other, nf);
			bad = 0;
		}
	}
	if (bad)
		rc = xf_no_memory()
			     ? fail_no_memory(err)
			     : xf_fit_fail_non_finite(ctx, start, "at the start values", err);
	else
		ctx->search.n_effective = xf_stop_on_tolerance(best->stop);
done:
	free(mask);
	xf_fit_point_free(&other);
	return rc;
}
