/* report_html.h — <dir>/report.html (docs/outputs.md, adr/0034): one self-contained page
 * per result folder, for a person to open or print. The fit-specific part (parameters,
 * status, fit numbers) comes from the in-memory result through xf_report; the data,
 * versions and the folder's plots/ (embedded as data URIs) are added by the writer. */
#ifndef XPCSFIT_IO_REPORT_HTML_H
#define XPCSFIT_IO_REPORT_HTML_H

#include "io/html_text.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"
#include "xpcsfit/results.h"

#define XF_REPORT_MAX_ROWS 16 /* rows of one summary section; more are dropped */

/* one line of the parameter table: the numbers of parameters.json, written to the
 * precision the uncertainty supports (util/numfmt.h, adr/0062) */
typedef struct xf_report_param {
	const char *name;
	double value; /* NaN: none */
	double unc;   /* NaN: none (fixed, or not estimated) */
	int fixed;
	int has_interval; /* 1: lo..hi shown (CMC: the 5–95 % posterior interval) */
	double lo, hi;
	const char *unit; /* xf_param_unit: "1" dimensionless */
	char note[96];	  /* "fixed", "mean over 23 angles", "phi = 45.00 deg", or "" */
} xf_report_param;

/* a "label: text" line of a summary table; text is plain (escaped when written) */
typedef struct xf_report_row {
	const char *label;
	char text[256];
} xf_report_row;

typedef enum xf_report_section {
	XF_REPORT_FIT = 0, /* result numbers: χ², iterations / shards, draws */
	XF_REPORT_CONFIG,  /* mode, per-angle mode, loss */
	XF_REPORT_TIMING,  /* wall time by phase */
	XF_REPORT_N_SECTIONS
} xf_report_section;

typedef struct xf_report {
	xf_method method;
	xf_fit_status status;
	const xf_quality *quality;
	const char *value_head, *unc_head; /* column heads of the parameter table */
	const char *interval_head;	   /* NULL: no interval column */
	int n_params;
	const xf_report_param *params;
	int n_rows[XF_REPORT_N_SECTIONS];
	xf_report_row rows[XF_REPORT_N_SECTIONS][XF_REPORT_MAX_ROWS];
} xf_report;

/* Append a row to a section of r (dropped when the section is full). */
void xf_report_add(xf_report *r, xf_report_section s, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Write dir/report.html atomically: r, the data and config summary of ds and info, the
 * versions, and (with_plots) every dir/plots/ *.png in name order as a data URI. */
int xf_report_html_write(const char *dir, const xf_report *r, const xf_output_info *info,
			 const xf_dataset *ds, int with_plots, xf_error *err);

/* The pieces every page shares (report_html.c), for the other pages of a run (the rings'
 * page of a per-ring run, src/outputs/rings_report.c): the doctype, title and style
 * sheet; the versions and the end of the page, then the page written atomically to path
 * when rc (the building's status so far) is 0, h freed, the status returned; a PNG
 * embedded as a data URI in a figure with its caption (0, or err's code when it cannot be
 * read). */
void xf_report_html_begin(xf_html *h, const char *title);
int xf_report_html_end(xf_html *h, const char *path, int rc, xf_error *err);
int xf_report_html_embed_png(xf_html *h, const char *path, const char *caption, xf_error *err);

/* The "Rings" section of a joint fit's page (report_rings.c, adr/0066), from its
 * parameters.json "rings" member (rings_json): NLSQ — each ring's angles, χ² at the joint
 * estimate, information share and own fit per parameter, leave-one-out check and flag,
 * and dir/params_vs_q.png embedded when it is there; CMC — q, angles and first slot of
 * each ring. ds: the joined data (its angle slots ring after ring). 0 or err's code. */
int xf_report_rings_section(xf_html *h, const char *dir, const char *rings_json,
			    const xf_dataset *ds, xf_error *err);

/* The reports of an NLSQ and a CMC result (report_results.c). slot_q: a joint fit's q
 * per angle slot ([ds->n_phi] Å⁻¹, the rows of per-angle coefficients name their ring),
 * or NULL. */
int xf_report_html_nlsq(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			const xf_estimate *est, const xf_nlsq_appendix *app, const double *slot_q,
			int with_plots, xf_error *err);
int xf_report_html_cmc(const char *dir, const xf_output_info *info, const xf_dataset *ds,
		       const xf_estimate *est, const xf_cmc_appendix *app, int with_plots,
		       xf_error *err);

#endif
