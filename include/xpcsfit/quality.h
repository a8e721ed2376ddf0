/* quality.h — the quality of a result, shared by every method (docs/nlsq.md "Status and
 * quality", docs/cmc.md): an overall grade and the reasons that lowered it. The reasons
 * are built with one helper, xf_quality_add_reason (src/estimate/quality.c). */
#ifndef XPCSFIT_QUALITY_H
#define XPCSFIT_QUALITY_H

#include <stddef.h>

typedef enum xf_quality_level {
	XF_QUALITY_GOOD = 0,
	XF_QUALITY_MARGINAL,
	XF_QUALITY_POOR,
} xf_quality_level;

/* "good" | "marginal" | "poor" */
const char *xf_quality_level_name(xf_quality_level q);
/* The grade a file names; 0, or -1 (q untouched) for a name that is none */
int xf_quality_level_parse(const char *name, xf_quality_level *q);

/* A result's verdict on itself (docs/nlsq.md "Status and quality", docs/cmc.md). Failed
 * is zero: a result nobody filled in is not usable. */
typedef enum xf_fit_status {
	XF_STATUS_FAILED = 0,
	XF_STATUS_CONVERGED,
	XF_STATUS_MAX_ITERATIONS, /* NLSQ stopped at its iteration limit */
	XF_STATUS_RIDGE,	  /* NLSQ on a valley of equally good fits (adr/0047) */
	XF_STATUS_N
} xf_fit_status;

/* "failed" | "converged" | "max_iterations" | "ridge": the name the files carry */
const char *xf_fit_status_name(xf_fit_status s);
/* The status a file names; 0, or -1 (s untouched) for a name that is none */
int xf_fit_status_parse(const char *name, xf_fit_status *s);
/* 1 when a status marks a result not usable (failed, ridge): the run exits 1 and the
 * files say so. */
int xf_fit_status_failed(xf_fit_status s);

#define XF_QUALITY_MAX_REASONS 16

/* What the data identify when a fit converged to a ridge (adr/0047, nlsq/ridge.c): the
 * combinations of parameters the well-determined eigen-directions of JᵀJ pin down, with
 * value and sd, the parameters that are not identified one by one, and the fix. */
#define XF_IDENTIFIED_MAX   4 /* combinations kept */
#define XF_IDENTIFIED_TERMS 8 /* parameters per combination */
#define XF_IDENTIFIED_NAME  32
typedef struct xf_identified_combo {
	char text[160]; /* "D0 + D_offset", "D0 + 0.97*D_offset" */
	int n_terms;
	char names[XF_IDENTIFIED_TERMS][XF_IDENTIFIED_NAME];
	double coef[XF_IDENTIFIED_TERMS]; /* the first (the pivot) is 1 */
	double value, sd;
} xf_identified_combo;

typedef struct xf_identified {
	int n_combos; /* 0: no ridge */
	xf_identified_combo combo[XF_IDENTIFIED_MAX];
	int n_not_identified;
	char not_identified[XF_IDENTIFIED_TERMS][XF_IDENTIFIED_NAME];
	char fix[160];		/* "--fix D_offset=0" */
	double ratio_threshold; /* eigenvalue ratio below which a direction is ill-determined */
	double min_ratio;	/* the smallest eigenvalue ratio of the scaled JᵀJ */
} xf_identified;

/* One line on a ridge (adr/0047): "the data identify D0 + D_offset = 241.3 +/- 2.1 but not
 * D0, D_offset one by one (fix: --fix D_offset=0)". */
void xf_identified_text(const xf_identified *id, char *buf, size_t size);

/* The result's quality: the documented convergence checks and every reason that lowers
 * the overall grade. */
typedef struct xf_quality {
	xf_quality_level overall;
	int n_reasons;
	/* 320: a reason that names priors with their numbers (adr/0080) fits whole */
	char reasons[XF_QUALITY_MAX_REASONS][320];
	/* the checks behind "converged" (NLSQ; CMC leaves them 0) */
	double distance_se;	  /* one Gauss-Newton step's length in standard errors */
	int all_informed;	  /* every free parameter constrained within its bounds */
	int best_of_starts;	  /* no screened start ended in a better basin */
	xf_identified identified; /* NLSQ's ridge (status "ridge"); n_combos 0 otherwise */
} xf_quality;

/* Append one reason (printf format; truncated to the reason's size). Past
 * XF_QUALITY_MAX_REASONS reasons the rest are dropped: the grade is set apart. */
void xf_quality_add_reason(xf_quality *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same, as the first reason (the one a one-line message quotes); past
 * XF_QUALITY_MAX_REASONS the last one is dropped. */
void xf_quality_add_first_reason(xf_quality *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
