/* synth.h — in-memory synthetic datasets for tests and benchmarks (no file I/O). */
#ifndef XF_TEST_SYNTH_H
#define XF_TEST_SYNTH_H

#include <stdint.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/model.h"

/* c2 of the model plus Gaussian noise (sd noise, keyed by seed, angle, i, j) as a
 * dataset with n_phi angles (ascending phi_deg given), diagonal-corrected like a read
 * file. Returns 0 or -1. */
int xf_synth_dataset(const xf_model_grid *grid, const double *theta, int n_phi,
		     const double *phi_deg, const double *contrast, const double *offset,
		     double noise, uint64_t seed, xf_dataset *ds);

void xf_synth_free(xf_dataset *ds);

#endif
