/* device.c — where the posterior's passes over all the data run (docs/gpu.md, adr/0130):
 * the options' --device applied to an evaluator of the exact posterior, once, before its
 * first pass; the data then stay on the device for all of that evaluator's passes. */
#include <stdio.h>
#include <string.h>

#include "cmc/run_internal.h"
#include "likelihood/device_route.h"

int xf_cmc_route_device(const cmc_run *r, xf_lik *lik, xf_device_job_kind kind, const char *stage,
			int quiet, xf_error *err)
{
	if (r->o->device == XF_DEVICE_CPU)
		return 0;
	char said[480] = "";
	xf_device_ask ask = { .device = r->o->device,
			      .threshold = r->o->device_threshold,
			      .fp32 = r->o->device_fp32,
			      .kind = kind,
			      .n_points = xf_lik_points(lik),
			      .n_params = r->pr.n_full,
			      .who = "cmc",
			      .work = "the posterior",
			      .passes = "the posterior's passes over all the data run",
			      .quiet = quiet,
			      .said = said,
			      .said_len = sizeof said };
	int rc = xf_lik_route_device(lik, &ask, r->n_threads > 0 ? r->n_threads : 1, err);
	xf_cmc_device_record *rec = r->device;
	if (rc || quiet || !rec || !said[0] || rec->n_lines == XF_CMC_DEVICE_LINES)
		return rc;
	char line[sizeof rec->lines[0]];
	snprintf(line, sizeof line, "%s: %s", stage, said);
	for (int k = 0; k < rec->n_lines; k++)
		if (!strcmp(rec->lines[k], line))
			return rc; /* the same evaluator's decision again (a resampled shard) */
	snprintf(rec->asked, sizeof rec->asked, "%s",
		 xf_device_name((xf_device_choice)r->o->device));
	memcpy(rec->lines[rec->n_lines++], line, sizeof line);
	return rc;
}
