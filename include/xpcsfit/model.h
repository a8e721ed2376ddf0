/* model.h — the homodyne-compatible two-time correlation model c2(φ, t1, t2) with exact
 * gradients (spec/model.md). The fast per-pair kernels used inside the fits are in
 * src/model/kernel.h; this header is the plain API for simulation, plots and tests. */
#ifndef XPCSFIT_MODEL_H
#define XPCSFIT_MODEL_H

#include <stddef.h>
#include "xpcsfit/params.h"

typedef struct xf_model_grid {
	xf_mode mode;		    /* static: only D0, alpha, D_offset are read */
	xf_shear_model shear_model; /* homodyne (default) or pnas2024 */
	int n_frames;		    /* N, t_k = k·dt_s for k = 0..N-1 */
	double dt_s;		    /* s */
	double q;		    /* Å⁻¹ */
	double gap_A;		    /* stator-rotor gap L, Å */
} xf_model_grid;

/* c2 of one angle on the full N×N grid (row-major, symmetric), theta in canonical
 * order (7 values; static reads the first 3). Returns 0, or -1 on allocation failure. */
int xf_model_c2_full(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, double *c2_out);

/* Rows [row0, row1) of the same N×N matrix ((row1 − row0) × N values, row-major):
 * a chunk of a surface without the whole matrix in memory. */
int xf_model_c2_rows(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, int row0, int row1, double *c2_out);

/* c2 at one (i, j) and its gradient. grad (may be NULL) receives 9 values:
 * ∂c2/∂theta[0..6] (zeros past the mode's parameters), ∂c2/∂contrast, ∂c2/∂offset.
 * Recomputes the cumulative integrals: for tests and spot checks, not for fits.
 * Returns 0, or -1 on allocation failure. */
int xf_model_c2_point(const xf_model_grid *grid, const double *theta, double phi_deg,
		      double contrast, double offset, int i, int j, double *c2_out, double *grad);

#endif
