/* quality.c — the one home of the quality-reason helper (quality.h): NLSQ's checks
 * (nlsq/checks.c) and CMC's judgement (cmc/result.c) both append their reasons here. */
#include "xpcsfit/quality.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
