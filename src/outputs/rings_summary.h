/* rings_summary.h — the per-ring mode's summary of DIR/nlsq/ (adr/0065): one record per
 * fitted ring, written as rings.csv and rings.json (every physical parameter ± its
 * uncertainty, status, quality, χ² and residual sd, against q) and drawn as
 * params_vs_q.png (src/plot/plot_rings.c), with the page report.html (rings_report.c). */
#ifndef XPCSFIT_RINGS_SUMMARY_H
#define XPCSFIT_RINGS_SUMMARY_H

#include <stddef.h>
#include "xpcsfit/error.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/appendix.h"
#include "xpcsfit/params.h"
#include "plot/plot_rings.h"

/* Fill rec's result fields from a fitted ring (the names copied). */
void xf_ring_record_fill(xf_ring_record *rec, const xf_estimate *est, const xf_nlsq_appendix *app);
/* The same from a ring's posterior: the values and uncertainties of its parameters.json
 * (posterior mean and sd; a fixed parameter's value), no χ² (NaN), n_points 0. */
void xf_ring_record_fill_cmc(xf_ring_record *rec, const xf_estimate *est);
void xf_ring_record_free(xf_ring_record *rec);

/* rec[r].folder of the rings at rec[r].q_per_A (ascending): "q_" and q in 1/Å in fixed-point
 * notation with the fewest significant digits (at least 4) that keep every name distinct,
 * trailing zeros dropped, so names sort as q does. */
void xf_ring_folder_names(xf_ring_record *rec, int n);

/* dir/rings.csv and dir/rings.json, atomically; the failed rings included with their
 * status and empty (CSV) or null (JSON) values. */
int xf_rings_write_summary(const char *dir, const char *method, const char *mode_name,
			   const xf_ring_record *r, int n, xf_error *err);

/* dir/report.html of a per-ring run's top folder (rings_report.c), atomically: the
 * constancy of each free parameter across q (xf_rings_constancy), dir/params_vs_q.png
 * embedded when with_plot and it is there, and a row per ring (q, status, quality, χ²ᵣ
 * for NLSQ, each free parameter ± sd) linking the ring's own q_<q>/report.html; a
 * ring that failed is shown failed. The numbers are those of rings.json. */
int xf_rings_write_report(const char *dir, xf_method method, const char *mode_name,
			  const xf_ring_record *r, int n, int with_plot, xf_error *err);

/* dir/params_vs_q.png of a joint fit (adr/0066): each ring's own fit ± sd from the
 * "rings" member of parameters.json (rings_json), the joint value ± sd of res as a
 * band, the flagged rings marked. Never fatal: a failure is a warning. */
void xf_rings_plot_joint(const char *dir, const char *rings_json, const xf_estimate *est);

#endif
