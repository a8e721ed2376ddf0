/* sampler.h — No-U-Turn sampling of a log density with a Euclidean metric: the metric
 * (metric.c), the NUTS transition (nuts.c), step-size and metric adaptation (adapt.c)
 * and one chain's warmup and sampling (chain.c). Independent of the model: the target
 * is a function that returns log p and its gradient, so the sampler is tested on
 * Gaussians and bananas as well as on the XPCS shard posterior.
 *
 * The algorithm is Stan's (Hoffman & Gelman 2014; Betancourt 2017, "A conceptual
 * introduction to Hamiltonian Monte Carlo"): multinomial sampling over the trajectory,
 * biased progressive sampling between subtrees at the top level and uniform within,
 * the generalized U-turn criterion with the extra checks across subtree boundaries
 * (Stan ≥ 2.21), divergence when H − H0 > 1000; dual-averaging step size and windowed
 * metric adaptation. Every random number comes from the chain's own counter-based
 * stream, so a chain's draws are a pure function of its key. */
#ifndef XPCSFIT_CMC_SAMPLER_H
#define XPCSFIT_CMC_SAMPLER_H

#include <stdint.h>

/* log p(q) and, when grad is not NULL, ∇ log p(q). Returns 0, or nonzero when log p is
 * not finite there (the sampler treats that point as having infinite energy). */
typedef int (*xf_logp_fn)(void *ctx, const double *q, double *logp, double *grad);

/* A chain's random stream: Philox keyed by (seed, stream), counter (a, b, n++). */
typedef struct xf_chain_rng {
	uint64_t seed, a, b, n;
	uint32_t stream;
} xf_chain_rng;

double xf_chain_uniform(xf_chain_rng *r);
double xf_chain_normal(xf_chain_rng *r);

/* ---- metric (metric.c) ---- */
typedef struct xf_metric {
	int d;
	int dense;    /* 1: full inverse metric, 0: diagonal */
	double *inv;  /* M⁻¹: d×d row-major (dense) or d (diagonal) */
	double *chol; /* dense: lower Cholesky factor L of M⁻¹ (M⁻¹ = L Lᵀ) */
} xf_metric;

int xf_metric_alloc(xf_metric *m, int d, int dense);
void xf_metric_free(xf_metric *m);
/* Set M⁻¹ from a covariance (d×d; the diagonal only for a diagonal metric). Returns 0,
 * or −1 when a dense one is not positive definite (the metric is left unchanged). */
int xf_metric_set(xf_metric *m, const double *cov);
/* ½ pᵀ M⁻¹ p */
double xf_metric_kinetic(const xf_metric *m, const double *p);
/* v = M⁻¹ p */
void xf_metric_velocity(const xf_metric *m, const double *p, double *v);
/* p ~ N(0, M): p = L⁻ᵀ z with z standard normal from the stream. */
void xf_metric_sample(const xf_metric *m, xf_chain_rng *rng, double *p, double *work);

/* ---- NUTS (nuts.c) ---- */
#define XF_NUTS_MAX_DELTA_H 1000.0 /* divergence: the energy error beyond this */

typedef struct xf_nuts xf_nuts;

typedef struct xf_nuts_info {
	int depth;	    /* tree depth of the transition */
	int n_leapfrog;	    /* leapfrog steps (gradient evaluations) */
	int divergent;	    /* 1 when a divergence ended the trajectory */
	double accept_stat; /* mean Metropolis acceptance over the trajectory */
	double energy;	    /* H of the new state with its momentum */
} xf_nuts_info;

xf_nuts *xf_nuts_create(int d, int max_depth, xf_logp_fn logp, void *ctx, const xf_metric *metric);
void xf_nuts_destroy(xf_nuts *s);
void xf_nuts_set_step(xf_nuts *s, double epsilon);
double xf_nuts_step(const xf_nuts *s);
/* Set the current point (q, its log p and gradient must be valid). Returns 0, or −1
 * when log p is not finite at q. */
int xf_nuts_init(xf_nuts *s, const double *q);
/* One NUTS transition from the current point. */
void xf_nuts_transition(xf_nuts *s, xf_chain_rng *rng, xf_nuts_info *info);
/* The current point, its log p. */
const double *xf_nuts_point(const xf_nuts *s, double *logp);
/* One leapfrog step of size eps from (q, p) in place, with its gradient (exposed for the
 * reversibility and energy tests). Returns the new H, or +∞ when log p is not finite. */
double xf_nuts_leapfrog(xf_nuts *s, double *q, double *p, double *grad, double *logp, double eps);
/* Stan's initial step size heuristic: double or halve ε until the acceptance of one
 * leapfrog step crosses 0.8. */
void xf_nuts_find_step(xf_nuts *s, xf_chain_rng *rng);

/* ---- adaptation (adapt.c) ---- */
typedef struct xf_step_adapt {
	double mu, gamma, t0, kappa, delta; /* dual averaging (Hoffman & Gelman 2014) */
	double s_bar, x_bar;
	long counter;
} xf_step_adapt;

void xf_step_adapt_init(xf_step_adapt *a, double delta, double epsilon);
/* Learn from one transition's acceptance statistic; returns the next step size. */
double xf_step_adapt_learn(xf_step_adapt *a, double accept_stat);
/* The final step size: exp(x̄). */
double xf_step_adapt_final(const xf_step_adapt *a);

/* Stan's windowed metric adaptation: an initial fast interval (step size only), slow
 * windows that double in length and estimate the covariance, a terminal fast interval.
 * Defaults 75 / 25 / 50, falling back to 15 % / 75 % / 10 % of a short warmup. */
typedef struct xf_window_adapt {
	int n_warmup, init_buffer, term_buffer, base_window;
	int counter, window_size, next_window;
	int d, dense;
	long n;		   /* samples in the current window */
	double *mean, *m2; /* Welford: mean [d], co-moment [d×d] or [d] */
	double *delta;	   /* [d] scratch */
} xf_window_adapt;

int xf_window_init(xf_window_adapt *w, int n_warmup, int d, int dense);
void xf_window_free(xf_window_adapt *w);
/* Feed one warmup draw; when a slow window ends, write the regularized covariance
 * (n/(n+5))·cov + 1e-3·5/(n+5)·I into cov and return 1. */
int xf_window_learn(xf_window_adapt *w, const double *q, double *cov);
/* Feed one draw to the window's running mean and co-moments, outside its schedule (the
 * settling warmup of chain.c keeps its own). */
void xf_window_add(xf_window_adapt *w, const double *q);

/* The settled-metric rule of the shortened warmup (chain.c, adr/0079). A window's
 * covariance estimate cov (n draws) is whitened by the inverse metric in use, inv (both
 * d×d dense or d diagonal): its eigenvalues λ would all be 1 were the metric exact. A
 * finite window spreads them even then, to the Marchenko–Pastur edges
 * ((1 ± √(d/n))²); the metric has settled when λmax/λmin is at most
 * XF_SETTLE_FACTOR times that ratio: adapting further would not change the step size
 * or the trajectory length by more than sampling noise does. Writes the ratio to
 * *kappa (NAN when it cannot be computed); returns 1 when settled, 0 otherwise. */
#define XF_SETTLE_FACTOR 2.0
int xf_metric_settled(const double *inv, const double *cov, int d, int dense, long n,
		      double *kappa);

/* ---- one chain (chain.c) ---- */
#define XF_SETTLE_INIT	 50  /* the settling warmup's fast interval (step size only) */
#define XF_SETTLE_WINDOW 100 /* its first slow window; later ones double */
#define XF_SETTLE_TERM	 50  /* its terminal fast interval */
typedef struct xf_chain_setup {
	int d;
	xf_logp_fn logp;
	void *ctx;
	int n_warmup, n_samples, max_depth, dense;
	double target_accept;
	/* 1: the warmup ends once the metric has settled (xf_metric_settled): a fast
	 * interval of XF_SETTLE_INIT, windows from XF_SETTLE_WINDOW doubling, each compared
	 * with the metric in use, then XF_SETTLE_TERM; n_warmup is the cap, and a warmup
	 * too short for that runs Stan's windows. 0: Stan's fixed windows. */
	int settle;
	const double *init;	/* [d] start */
	const double *init_cov; /* [d×d] (dense) or [d] initial metric; NULL: identity. It
				  * also sets the standardised coordinates the sampler moves in
				  * (chain.c): z = L⁻¹(q − init), L its Cholesky factor when
				  * dense and positive definite, else √diag */
	xf_chain_rng rng;
	/* called after every transition (sampling: 0 in warmup, 1 after; divergent: 1 when
	 * it diverged): progress for the user, never an input to the chain; NULL: none */
	void (*tick)(void *tick_ctx, int sampling, int divergent);
	void *tick_ctx;
	/* checked after every transition (may be NULL; sampling: 0 in warmup, 1 after): 1
	 * abandons the chain (−4) */
	int (*abandon)(void *abandon_ctx, int sampling);
	void *abandon_ctx;
} xf_chain_setup;

typedef struct xf_chain_out {
	double *draws;	/* [n_samples][d] */
	double *logp;	/* [n_samples] log density of each draw */
	double *energy; /* [n_samples] */
	int *depth, *n_leapfrog, *divergent;
	double *accept_stat;  /* [n_samples] */
	double step_size;     /* after adaptation, in the standardised coordinates */
	long grad_evals;      /* leapfrog steps, warmup included */
	int warmup_divergent; /* divergences during warmup */
	int warmup_done;      /* warmup transitions run (≤ n_warmup with settle) */
	int samples_done;     /* sampling transitions run (n_samples unless stopped) */
	int warmup_windows;   /* slow windows of the settling warmup */
	double *metric;	      /* [d×d] or [d]: the adapted inverse metric */
} xf_chain_out;

int xf_chain_out_alloc(xf_chain_out *o, int d, int n_samples, int dense);
void xf_chain_out_free(xf_chain_out *o);
/* Warmup (adaptation) then sampling. Returns 0, −1 when the start is not finite, −2 on
 * allocation failure, −3 when interrupted, −4 when abandoned. */
int xf_chain_run(const xf_chain_setup *s, xf_chain_out *out);

#endif
