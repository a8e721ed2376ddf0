/* plot_rings.h — one fitted ring of a per-ring run (adr/0065) or of a joint fit's
 * consistency check (adr/0066), as the summary files (src/outputs/rings_summary.c), the
 * rings' page (src/outputs/rings_report.c) and params_vs_q.png (plot_rings.c) read it;
 * and the constancy across q of a parameter, the reading aid of the plot and the page. */
#ifndef XPCSFIT_PLOT_RINGS_H
#define XPCSFIT_PLOT_RINGS_H

#include <stddef.h>
#include "xpcsfit/error.h"
#include "xpcsfit/params.h"

#define XF_RING_NAME_MAX 48

/* One ring of a per-ring run: what its own folder's parameters.json says, or why it has
 * no result (failed before its folder was written). A joint fit's ring: its own fit. */
typedef struct xf_ring_record {
	double q_per_A;
	char folder[XF_RING_NAME_MAX]; /* "q_0.0054", relative to DIR/nlsq/ */
	int written;		       /* the folder holds a whole result */
	int posterior;		       /* CMC: values are posterior means ± sd, no χ² */
	int failed;		       /* did not converge, or an error */
	int flagged;		       /* joint fit: flagged by the leave-one-out check */
	char status[32];	       /* the fit's status, or "error" */
	char quality[16];	       /* good | marginal | poor, "" when not written */
	double chi_squared, reduced_chi_squared, residual_sd;
	size_t n_points;
	int iterations;
	int n_phys;
	char *names[XF_N_PHYS]; /* owned */
	double values[XF_N_PHYS], uncertainties[XF_N_PHYS];
	int is_fixed[XF_N_PHYS];
} xf_ring_record;

/* Is parameter k of the rings one value across q? Over the rings that converged with a
 * finite value and a positive finite sd (not failed, not flagged): the inverse-variance
 * weighted mean m = Σ w_i v_i / Σ w_i with w_i = 1/sd_i², its sd 1/sqrt(Σ w_i), and
 * χ² = Σ w_i (v_i − m)² on n − 1 degrees of freedom; p = P(χ²_{n−1} ≥ χ²). n < 2: the
 * χ² and p are NaN (n 1: m is that ring's value). */
typedef struct xf_ring_constancy {
	int n; /* rings used */
	double mean, sd;
	double chi2, chi2_per_dof, p;
} xf_ring_constancy;
void xf_rings_constancy(const xf_ring_record *r, int n, int k, xf_ring_constancy *out);

/* The joint fit drawn over the rings' own fits: each physical parameter's joint value ±
 * sd (indexed as the records' parameters; NaN: not drawn). */
typedef struct xf_ring_band {
	double value[XF_N_PHYS], sd[XF_N_PHYS];
} xf_ring_band;

/* path: each free physical parameter against q with its ±1 sd error bars, the axis in
 * its unit; failed rings open marks, flagged rings red diamonds; band: the joint value ±
 * sd as a horizontal band, else (NULL) the weighted mean of xf_rings_constancy as a
 * dashed line. Nothing drawn, 0 returned, when no ring has values. */
int xf_plot_rings(const char *path, const xf_ring_record *r, int n, const xf_ring_band *band,
		  xf_error *err);

#endif
