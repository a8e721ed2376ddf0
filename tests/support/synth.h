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

/* The benchmark workload (make bench): laminar_flow, n_phi angles evenly over
 * [−90°, 90°), n_frames frames, dt 1 ms, q 0.0054 Å⁻¹, contrast 0.3, offset 1, noise 1e-3,
 * the truth XF_BENCH_TRUTH. Returns 0 or -1. */
#define XF_BENCH_TRUTH                                                                             \
	{                                                                                          \
		1000.0, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0                                         \
	}
int xf_synth_benchmark(int n_frames, int n_phi, xf_dataset *ds);

/* The slots of n_rings ring datasets (same frames and dt) side by side, ring by ring, as
 * one dataset (copies of the maps; q of ring 0), and slot_q (one per slot) for the
 * problem request of a joint fit (adr/0064). Returns 0 or -1. */
int xf_synth_join(int n_rings, const xf_dataset *rings, xf_dataset *joint, double *slot_q);

#endif
