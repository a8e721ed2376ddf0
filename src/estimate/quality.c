/* quality.c — the one home of the quality-reason helper and of the grade and status names
 * (quality.h): NLSQ's checks (nlsq/checks.c) and CMC's judgement (cmc/result.c) both
 * append their reasons here. */
#include "xpcsfit/quality.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/numfmt.h"

const char *xf_quality_level_name(xf_quality_level q)
{
	return q == XF_QUALITY_GOOD ? "good" : q == XF_QUALITY_MARGINAL ? "marginal" : "poor";
}

int xf_quality_level_parse(const char *name, xf_quality_level *q)
{
	for (int k = XF_QUALITY_GOOD; name && k <= XF_QUALITY_POOR; k++)
		if (!strcmp(name, xf_quality_level_name((xf_quality_level)k))) {
			*q = (xf_quality_level)k;
			return 0;
		}
	return -1;
}

static const char *const status_names[XF_STATUS_N] = {
	[XF_STATUS_FAILED] = "failed",
	[XF_STATUS_CONVERGED] = "converged",
	[XF_STATUS_MAX_ITERATIONS] = "max_iterations",
	[XF_STATUS_RIDGE] = "ridge",
};

const char *xf_fit_status_name(xf_fit_status s)
{
	return (unsigned)s < XF_STATUS_N ? status_names[s] : "failed";
}

int xf_fit_status_parse(const char *name, xf_fit_status *s)
{
	for (int k = 0; name && k < XF_STATUS_N; k++)
		if (!strcmp(name, status_names[k])) {
			*s = (xf_fit_status)k;
			return 0;
		}
	return -1;
}

int xf_fit_status_failed(xf_fit_status s)
{
	return s == XF_STATUS_FAILED || s == XF_STATUS_RIDGE;
}

void xf_quality_add_reason(xf_quality *q, const char *fmt, ...)
{
	if (q->n_reasons >= XF_QUALITY_MAX_REASONS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->reasons[q->n_reasons++], sizeof q->reasons[0], fmt, ap);
	va_end(ap);
}

void xf_quality_add_first_reason(xf_quality *q, const char *fmt, ...)
{
	int kept =
		q->n_reasons < XF_QUALITY_MAX_REASONS ? q->n_reasons : XF_QUALITY_MAX_REASONS - 1;
	memmove(q->reasons[1], q->reasons[0], sizeof q->reasons[0] * (size_t)kept);
	q->n_reasons = kept + 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->reasons[0], sizeof q->reasons[0], fmt, ap);
	va_end(ap);
}

void xf_identified_text(const xf_identified *id, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < id->n_combos && len < size; i++) {
		const xf_identified_combo *c = &id->combo[i];
		char pm[XF_NUM_TEXT]; /* to the precision its sd supports (adr/0062) */
		xf_num_pm(c->value, c->sd, " +/- ", pm, sizeof pm);
		int w = snprintf(buf + len, size - len, "%s%s = %s",
				 i == 0 ? "the data identify " : ", ", c->text, pm);
		len += w > 0 ? (size_t)w : 0;
	}
	for (int k = 0; k < id->n_not_identified && len < size; k++) {
		int w = snprintf(buf + len, size - len, "%s%s", k == 0 ? " but not " : ", ",
				 id->not_identified[k]);
		len += w > 0 ? (size_t)w : 0;
	}
	if (len < size)
		snprintf(buf + len, size - len, " one by one (fix: %s)", id->fix);
}
