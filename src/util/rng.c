/* rng.c — counter-based random numbers from Random123's Philox4x64-10 (see rng.h). */
#include "xpcsfit/rng.h"

#include <math.h>
#include <Random123/philox.h>

/* Two uniforms in (0, 1) from one Philox block keyed by (seed, stream). */
static void uniform_pair(uint64_t seed, uint32_t stream, uint64_t a, uint64_t b, uint64_t c,
			 double *u0, double *u1)
{
	philox4x64_ctr_t ctr = { { a, b, c, 0 } };
	philox4x64_key_t key = { { seed, (uint64_t)stream } };
	philox4x64_ctr_t out = philox4x64(ctr, key);
	/* top 53 bits, shifted by half an ulp so neither 0 nor 1 occurs */
	*u0 = ((double)(out.v[0] >> 11) + 0.5) * 0x1.0p-53;
	*u1 = ((double)(out.v[1] >> 11) + 0.5) * 0x1.0p-53;
}

double xf_rng_uniform(uint64_t seed, uint32_t stream, uint64_t a, uint64_t b, uint64_t c)
{
	double u0, u1;
	uniform_pair(seed, stream, a, b, c, &u0, &u1);
	return u0;
}

double xf_rng_normal(uint64_t seed, uint32_t stream, uint64_t a, uint64_t b, uint64_t c)
{
	double u0, u1;
	uniform_pair(seed, stream, a, b, c, &u0, &u1);
	return sqrt(-2.0 * log(u0)) * cos(2.0 * M_PI * u1);
}
