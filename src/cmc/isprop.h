/* isprop.h — a proposal of the importance check (check_is.c) and the route's rounds
 * (route_rounds.c) as a record of functions (adr/0081): the transport map alone (tmap.h,
 * xf_is_prop_tmap), or the map on the physical parameters and σ with the per-angle
 * scaling drawn from its exact conditional given them (cond_scaling.c). Every point is
 * u = T(z) for base coordinates z, so that the axis check can run along z. */
#ifndef XPCSFIT_CMC_ISPROP_H
#define XPCSFIT_CMC_ISPROP_H

#include <stdint.h>

struct xf_tmap;

typedef struct xf_is_prop {
	int d;	   /* coordinates of u (and of z) */
	int d_mix; /* coordinates the defensive mixture covers: the IS-ESS reference's */
	int in_z;  /* 1: the axis check runs along z; 0: in u along the linear map's covariance */
	const struct xf_tmap *map; /* the map (fitted by fit); its a is the linear one's L */
	/* points [i0, i1) of the stream under seed (counter-based: a pure function of seed
	 * and i): base coordinates into z [(i1 − i0)·d] (may be NULL when !in_z), u and
	 * log q(u) into lq; with gives_logp also the target's log density into lp (−∞
	 * where it has none), from the pass the draw made anyway. May run passes over the
	 * data. 0, or −1 out of memory. */
	int (*draw)(void *ctx, uint64_t seed, long i0, long i1, double core, double *z, double *u,
		    double *lq, double *lp);
	int gives_logp;
	/* n points of z → u, log|du/dz| into log_jac. 0 or −1. */
	int (*to_u)(void *ctx, int n, const double *z, double *u, double *log_jac);
	/* fit the map to n weighted points of u (w: Σ = 1; ess their IS-ESS): xf_tmap_fit's
	 * return values */
	int (*fit)(void *ctx, const double *u, const double *w, int n, double ess);
	/* may be NULL: set the map to a second starting approximation when a round left too
	 * little to fit (the conditional-scaling proposal: the Laplace approximation with the
	 * priors in, adr/0081). 0 done, 1 nothing different to offer, −1 out of memory. */
	int (*restart)(void *ctx);
	void *ctx;
} xf_is_prop;

/* The map alone as a proposal (ctx: the map; d_mix = d; in_z for a curved map — prop
 * reads map->kind at each call). */
void xf_is_prop_tmap(xf_is_prop *p, struct xf_tmap *map);

#endif
