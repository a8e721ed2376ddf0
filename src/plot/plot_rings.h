/* plot_rings.h — one fitted ring of a per-ring run (adr/0065), as the summary files
 * (src/outputs/rings_summary.c) and params_vs_q.png (plot_rings.c) read it. */
#ifndef XPCSFIT_PLOT_RINGS_H
#define XPCSFIT_PLOT_RINGS_H

#include <stddef.h>
#include "xpcsfit/error.h"
#include "xpcsfit/params.h"

#define XF_RING_NAME_MAX 48

/* One ring of a per-ring run: what its own folder's parameters.json says, or why it has
 * no result (failed before its folder was written). */
typedef struct xf_ring_record {
	double q_per_A;
	char folder[XF_RING_NAME_MAX]; /* "q_0.0054", relative to DIR/nlsq/ */
	int written;		       /* the folder holds a whole result */
	int posterior;		       /* CMC: values are posterior means ± sd, no χ² */
	int failed;		       /* did not converge, or an error */
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

/* path: each free physical parameter against q with its ±1 sd error bars (nothing drawn,
 * 0 returned, when no ring has values). */
int xf_plot_rings(const char *path, const xf_ring_record *r, int n, xf_error *err);

#endif
