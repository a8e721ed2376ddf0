/* rng.h — counter-based random numbers (Random123 Philox4x64-10).
 * A number is a pure function of its key (seed, stream tag) and counter (a, b, c), so
 * results do not depend on threads, ranks or the order of evaluation. */
#ifndef XPCSFIT_RNG_H
#define XPCSFIT_RNG_H
#include <stdint.h>

/* Stream tags keep independent uses apart even with the same seed. */
enum xf_rng_stream {
	XF_RNG_SIMULATE_NOISE = 1, /* counter (angle, i, j) */
	XF_RNG_MULTI_START = 2,	   /* counter (start, parameter, 0) */
	XF_RNG_SHARD = 3,
	XF_RNG_SCREEN = 4,	  /* NLSQ screening subsample: counter (draw, 0, 0) */
	XF_RNG_SCREEN_COARSE = 5, /* its first, smaller round: counter (draw, 0, 0) */
	XF_RNG_CMC_CHAIN = 6,	  /* a NUTS chain: counter (shard, chain, n) */
	XF_RNG_CMC_INIT = 7,	  /* a chain's initial jitter: counter (shard, chain, k) */
	XF_RNG_CMC_CHECK = 8,	  /* self-check point m: (m, k, 0), k < d + ν (adr/0039) */
	XF_RNG_CMC_GAUSS = 9,	  /* draws of a Gaussian combination: counter (g, k, 0) */
	XF_RNG_CMC_COLLAPSE =
		10, /* the scaling of a collapsed chain's draw: (shard, chain·2³² + n, k + attempt·2¹⁶) */
};

/* Uniform in (0, 1), never 0 or 1. */
double xf_rng_uniform(uint64_t seed, uint32_t stream, uint64_t a, uint64_t b, uint64_t c);
/* Standard normal (Box-Muller of the two uniforms of one Philox block). */
double xf_rng_normal(uint64_t seed, uint32_t stream, uint64_t a, uint64_t b, uint64_t c);

#endif
