/* quality.h — the quality of a result, shared by every method (docs/nlsq.md "Status and
 * quality", docs/cmc.md): an overall grade and the reasons that lowered it. The reasons
 * are built with one helper, xf_quality_add_reason (src/estimate/quality.c). */
#ifndef XPCSFIT_QUALITY_H
#define XPCSFIT_QUALITY_H

typedef enum xf_quality_level {
	XF_QUALITY_GOOD = 0,
	XF_QUALITY_MARGINAL,
	XF_QUALITY_POOR,
} xf_quality_level;

/* "good" | "marginal" | "poor" (defined with the NLSQ stop reasons, nlsq/fit.c) */
const char *xf_quality_level_name(xf_quality_level q);

#define XF_QUALITY_MAX_REASONS 16

/* The result's quality: the documented convergence checks and every reason that lowers
 * the overall grade. */
typedef struct xf_quality {
	xf_quality_level overall;
	int n_reasons;
	char reasons[XF_QUALITY_MAX_REASONS][192];
	/* the checks behind "converged" (NLSQ; CMC leaves them 0) */
	double distance_se; /* one Gauss-Newton step's length in standard errors */
	int all_informed;   /* every free parameter constrained within its bounds */
	int best_of_starts; /* no screened start ended in a better basin */
} xf_quality;

/* Append one reason (printf format; truncated to the reason's size). Past
 * XF_QUALITY_MAX_REASONS reasons the rest are dropped: the grade is set apart. */
void xf_quality_add_reason(xf_quality *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
