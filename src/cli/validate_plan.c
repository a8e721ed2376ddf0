/* validate_plan.c — the part of `xpcsfit validate` that says what will be fitted (issue
 * 25, docs/cli.md "validate"): the per-angle mode NLSQ will use on these angles and the
 * one CMC will sample, σ, and every parameter of the fit — free or fixed, its start and
 * where it comes from, its bounds, CMC's prior (a normal truncated to the bounds) and its
 * unit. The numbers are those of the problem the fit builds (xf_problem_build on the same
 * request and data), so validate cannot describe another fit than nlsq runs. With several
 * q rings (issue 26) the plan of each ring (its own problem) or of the joint fit (the rings
 * joined as nlsq --joint joins them), with points, coefficients and the maps' memory. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/request_build.h"
#include "util/numfmt.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/params.h"
#include "util/key_names.h"

/* where parameter k's start comes from: the config, the data (NLSQ estimates the
 * physical ones and screens starts around the estimate, docs/nlsq.md; the per-angle
 * coefficients start at quantile estimates), or 0 (a Fourier harmonic) */
static const char *start_source(const xf_config *cfg, const xf_problem *pr, int k)
{
	if (k < pr->n_phys)
		return pr->value_given[k] || pr->fixed[k] ? "config" : "data";
	const char *name = pr->names[k];
	if (pr->scaling->mode == XF_SCALING_FOURIER && !strstr(name, "_c0"))
		return "zero";
	int given = !strncmp(name, "contrast", 8) ? cfg->n_contrast_start : cfg->n_offset_start;
	return given ? "config" : "data";
}

/* the start shown: none for a physical start the fit estimates from the data */
static double start_value(const xf_config *cfg, const xf_problem *pr, int k)
{
	return strcmp(start_source(cfg, pr, k), "data") || k >= pr->n_phys ? pr->start[k] : NAN;
}

/* the per-angle mode CMC samples: the config's, or NLSQ's (fourier as individual) */
static const char *cmc_mode(const xf_config *cfg, const xf_problem *pr)
{
	xf_request nlsq, post;
	xf_request_from_config(cfg, &nlsq);
	xf_request_for_posterior(&nlsq, cfg->cmc.per_angle_mode, pr->scaling->mode, &post);
	return xf_scaling_mode_used_name(post.per_angle_mode);
}

static void num(double x, char *buf, size_t size)
{
	if (isfinite(x))
		xf_num_value(x, NAN, buf, size);
	else
		snprintf(buf, size, "-");
}

static void print_param(const xf_config *cfg, const xf_problem *pr, int k)
{
	char start[XF_NUM_TEXT], lo[XF_NUM_TEXT], hi[XF_NUM_TEXT], mu[XF_NUM_TEXT], sd[XF_NUM_TEXT];
	num(start_value(cfg, pr, k), start, sizeof start);
	num(pr->lower[k], lo, sizeof lo);
	num(pr->upper[k], hi, sizeof hi);
	num(pr->fixed[k] ? NAN : pr->prior_mu[k], mu, sizeof mu);
	num(pr->fixed[k] ? NAN : pr->prior_sigma[k], sd, sizeof sd);
	printf("  %-20s %-6s %-10s %-7s %-10s %-10s %-10s %-10s %s\n", pr->names[k],
	       pr->fixed[k] ? "fixed" : "free", start, start_source(cfg, pr, k), lo, hi, mu, sd,
	       xf_param_unit(pr->names[k]));
}

static int count_free(const xf_problem *pr)
{
	int n = 0;
	for (int k = 0; k < pr->n_full; k++)
		n += !pr->fixed[k];
	return n;
}

void xf_validate_plan_lines(const xf_config *cfg, const xf_problem *pr)
{
	char sigma[XF_NUM_TEXT];
	printf("per_angle_mode: %s (config: %s)\n", xf_scaling_mode_used_name(pr->scaling->mode),
	       xf_scaling_mode_name(cfg->nlsq.per_angle_mode));
	printf("per_angle_mode_cmc: %s (config: %s)\n", cmc_mode(cfg, pr),
	       xf_scaling_mode_name(cfg->cmc.per_angle_mode));
	xf_num_value(pr->sigma, NAN, sigma, sizeof sigma);
	printf("sigma: %s\n",
	       pr->has_sigma ? sigma : "not given (NLSQ: from the residuals; CMC: sampled)");
	printf("parameters: %d free of %d (%d physical, %d per-angle coefficients)\n",
	       count_free(pr), pr->n_full, pr->n_phys, pr->n_full - pr->n_phys);
	printf("  %-20s %-6s %-10s %-7s %-10s %-10s %-10s %-10s %s\n", "name", "status", "start",
	       "from", "lower", "upper", "prior_mu", "prior_sd", "unit");
	for (int k = 0; k < pr->n_full; k++)
		print_param(cfg, pr, k);
	if (cfg->cmc.use_nlsq_informed_priors)
		printf("priors: CMC centres them on the NLSQ result "
		       "(validation.use_nlsq_informed_priors)\n");
}

static cJSON *param_json(const xf_config *cfg, const xf_problem *pr, int k)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", pr->names[k]);
	cJSON_AddBoolToObject(p, "fixed", pr->fixed[k]);
	double start = start_value(cfg, pr, k);
	if (isfinite(start))
		cJSON_AddNumberToObject(p, "start", start);
	else
		cJSON_AddNullToObject(p, "start");
	cJSON_AddStringToObject(p, "start_source", start_source(cfg, pr, k));
	cJSON_AddNumberToObject(p, "lower", pr->lower[k]);
	cJSON_AddNumberToObject(p, "upper", pr->upper[k]);
	cJSON_AddNumberToObject(p, "prior_mu", pr->prior_mu[k]);
	cJSON_AddNumberToObject(p, "prior_sigma", pr->prior_sigma[k]);
	cJSON_AddStringToObject(p, "unit", xf_param_unit(pr->names[k]));
	return p;
}

void xf_validate_plan_json(cJSON *o, const xf_config *cfg, const xf_problem *pr)
{
	cJSON_AddStringToObject(o, "per_angle_mode", xf_scaling_mode_used_name(pr->scaling->mode));
	cJSON_AddStringToObject(o, "per_angle_mode_config",
				xf_scaling_mode_name(cfg->nlsq.per_angle_mode));
	cJSON_AddStringToObject(o, "per_angle_mode_cmc", cmc_mode(cfg, pr));
	if (pr->has_sigma)
		cJSON_AddNumberToObject(o, "sigma", pr->sigma);
	else
		cJSON_AddNullToObject(o, "sigma");
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < pr->n_full; k++)
		cJSON_AddItemToArray(arr, param_json(cfg, pr, k));
	cJSON_AddItemToObject(o, "parameters", arr);
	cJSON_AddBoolToObject(o, "nlsq_informed_priors", cfg->cmc.use_nlsq_informed_priors);
}

/* ---- several rings (adr/0065, adr/0066): the plan of each ring, or of the joint fit ---- */

/* bytes of the maps a fit of ds holds in memory: the packed window of every angle */
static double maps_bytes(const xf_dataset *ds)
{
	return (double)ds->n_phi * (double)ds->c2_len * (double)sizeof(double);
}

static double mib(double bytes)
{
	return bytes / (1024.0 * 1024.0);
}

/* the contrast and offset coefficients of the joint problem that belong to each ring
 * alone, into per[n_rings]: basis columns whose every non-zero entry is on a slot of
 * that ring (adr/0064), one of each quantity per column; 0 for every ring when the rings
 * share them. One pass over the basis (adr/0073: a pass per ring was n³, 431 s at 1 000
 * rings). */
static void ring_coefficients(const xf_problem *pr, int n_rings, int *per)
{
	memset(per, 0, sizeof *per * (size_t)n_rings);
	for (int j = 0; j < pr->n_basis; j++) {
		int ring = -1, alone = 1;
		for (int a = 0; a < pr->n_phi && alone; a++) {
			if (pr->basis[(size_t)a * (size_t)pr->n_basis + (size_t)j] == 0.0)
				continue;
			if (ring >= 0 && pr->slot_ring[a] != ring)
				alone = 0;
			ring = pr->slot_ring[a];
		}
		if (alone && ring >= 0 && ring < n_rings)
			per[ring] += 2;
	}
}

static void ring_plan_line(const xf_config *cfg, const xf_dataset *d, const xf_problem *pr)
{
	printf("plan_ring: q %.10g, %d angles, %d frames, %zu points, per_angle_mode %s "
	       "(cmc %s), %d free of %d parameters (%d physical, %d per-angle), maps %.3g MiB\n",
	       d->q, d->n_phi, d->n_frames, d->n_points,
	       xf_scaling_mode_used_name(pr->scaling->mode), cmc_mode(cfg, pr), count_free(pr),
	       pr->n_full, pr->n_phys, pr->n_full - pr->n_phys, mib(maps_bytes(d)));
}

static cJSON *ring_plan_json(const xf_config *cfg, const xf_dataset *d, const xf_problem *pr)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "q", d->q);
	cJSON_AddNumberToObject(o, "angles", d->n_phi);
	cJSON_AddNumberToObject(o, "n_frames", d->n_frames);
	cJSON_AddNumberToObject(o, "points", (double)d->n_points);
	cJSON_AddNumberToObject(o, "parameters_free", count_free(pr));
	cJSON_AddNumberToObject(o, "parameters_total", pr->n_full);
	cJSON_AddNumberToObject(o, "per_angle_coefficients", pr->n_full - pr->n_phys);
	cJSON_AddNumberToObject(o, "maps_bytes", maps_bytes(d));
	xf_validate_plan_json(o, cfg, pr);
	return o;
}

/* Per ring: each ring's own problem, as its fit builds it (the ring's q, angles, window). */
static int plan_per_ring(const xf_config *cfg, const xf_dataset *rings, int n, cJSON *o,
			 xf_error *err)
{
	cJSON *arr = o ? cJSON_CreateArray() : NULL;
	double peak = 0.0;
	size_t points = 0;
	int rc = 0;
	if (o && !(arr && cJSON_AddItemToObject(o, "plan", arr))) {
		cJSON_Delete(arr);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the rings' plan");
	}
	for (int r = 0; r < n && !rc; r++) {
		xf_problem pr;
		memset(&pr, 0, sizeof pr);
		if ((rc = xf_cli_check_ring_angle_starts(cfg, rings[r].q, rings[r].n_phi, err)))
			return rc; /* the line nlsq gives */
		rc = xf_cli_problem_build(&pr, cfg, &rings[r], err);
		if (rc) {
			char msg[sizeof err->msg];
			snprintf(msg, sizeof msg, "%s", err->msg);
			err->code = 0;
			return xf_fail(err, rc, "ring q %.6g 1/A: %s", rings[r].q, msg);
		}
		cJSON *ring = o ? ring_plan_json(cfg, &rings[r], &pr) : NULL;
		if (o && !(ring && cJSON_AddItemToArray(arr, ring))) {
			cJSON_Delete(ring);
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the rings' plan");
		} else if (!o) {
			ring_plan_line(cfg, &rings[r], &pr);
		}
		peak = maps_bytes(&rings[r]) > peak ? maps_bytes(&rings[r]) : peak;
		points += rings[r].n_points;
		xf_problem_free(&pr);
	}
	if (rc)
		return rc;
	if (o) {
		if (!cJSON_AddNumberToObject(o, "maps_bytes_peak", peak))
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the rings' plan");
	} else {
		printf("plan: per ring, %d rings one after the other, %zu points in all; "
		       "memory: one ring's maps at a time, at most %.3g MiB\n",
		       n, points, mib(peak));
	}
	return 0;
}

int xf_cli_joint_cap(int n_rings, int p_free, int p_phys, size_t points, xf_error *err)
{
	if (p_free <= XF_JOINT_MAX_PARAMS)
		return 0;
	return xf_fail(err, XF_ERR_CONFIG,
		       "the joint fit of %d rings has %d free parameters (%d physical, %d "
		       "contrast/offset) on %zu points, above the cap of %d (its %d x %d normal "
		       "matrix is built from every point at every step: adr/0073); select fewer "
		       "rings (" XF_KEY_Q
		       ": a list or a range), or fit them one by one (" XF_KEY_RINGS ": per_ring)",
		       n_rings, p_free, p_phys, p_free - p_phys, points, XF_JOINT_MAX_PARAMS,
		       p_free, p_free);
}

int xf_cli_joint_cap_check(const xf_config *cfg, const xf_dataset *joint, const double *slot_q,
			   int n_rings, int *p_free_out, xf_error *err)
{
	xf_request req;
	xf_request_from_config(cfg, &req);
	req.n_slot_q = joint->n_phi;
	req.slot_q = slot_q;
	xf_problem pr;
	memset(&pr, 0, sizeof pr);
	int rc = xf_problem_build(&pr, &req, joint, err);
	if (rc)
		return rc; /* the fit would say the same at once */
	int p_free = count_free(&pr), p_phys = 0;
	for (int k = 0; k < pr.n_phys; k++)
		p_phys += !pr.fixed[k];
	xf_problem_free(&pr);
	if (p_free_out)
		*p_free_out = p_free;
	return xf_cli_joint_cap(n_rings, p_free, p_phys, joint->n_points, err);
}

/* Joint: the rings side by side as the joint fit joins them (xf_dataset_join_rings,
 * adr/0064): shared physical parameters, contrast/offset per ring and angle. */
static int plan_joint(const xf_config *cfg, const xf_dataset *rings, int n, cJSON *o, xf_error *err)
{
	xf_dataset joint;
	double *slot_q = NULL;
	int rc = xf_dataset_join_rings(rings, n, &joint, &slot_q, err);
	if (rc)
		return rc;
	xf_request req;
	xf_request_from_config(cfg, &req);
	req.n_slot_q = joint.n_phi;
	req.slot_q = slot_q;
	xf_problem pr;
	memset(&pr, 0, sizeof pr);
	rc = xf_problem_build(&pr, &req, &joint, err);
	int *own = rc ? NULL : malloc(sizeof *own * (size_t)n);
	if (!rc && !own) {
		xf_problem_free(&pr);
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the joint plan");
	}
	if (!rc) {
		int p_phys = 0;
		for (int k = 0; k < pr.n_phys; k++)
			p_phys += !pr.fixed[k];
		/* validate refuses what nlsq --joint would (exit 2, the same line) */
		rc = xf_cli_joint_cap(n, count_free(&pr), p_phys, joint.n_points, err);
		if (rc)
			xf_problem_free(&pr);
	}
	if (!rc) {
		double bytes = maps_bytes(&joint);
		ring_coefficients(&pr, n, own);
		int coef = pr.n_full - pr.n_phys;
		if (o) {
			cJSON *p = cJSON_CreateObject();
			cJSON_AddNumberToObject(p, "rings", n);
			cJSON_AddNumberToObject(p, "angle_slots", joint.n_phi);
			cJSON_AddNumberToObject(p, "n_frames", joint.n_frames);
			cJSON_AddNumberToObject(p, "points", (double)joint.n_points);
			cJSON_AddNumberToObject(p, "parameters_free", count_free(&pr));
			cJSON_AddNumberToObject(p, "parameters_total", pr.n_full);
			cJSON_AddNumberToObject(p, "physical_parameters", pr.n_phys);
			cJSON_AddNumberToObject(p, "contrast_offset_coefficients", coef);
			cJSON *per = cJSON_CreateArray();
			for (int r = 0; r < n; r++)
				cJSON_AddItemToArray(per, cJSON_CreateNumber(own[r]));
			cJSON_AddItemToObject(p, "contrast_offset_coefficients_per_ring", per);
			cJSON_AddNumberToObject(p, "maps_bytes", bytes);
			xf_validate_plan_json(p, cfg, &pr);
			if (!p || !cJSON_AddItemToObject(o, "plan", p)) {
				cJSON_Delete(p);
				rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the joint plan");
			}
		} else {
			printf("plan: joint, %d rings in one fit, %d angle slots, %d frames, "
			       "%zu points; %d physical parameters shared, %d contrast/offset "
			       "coefficients",
			       n, joint.n_phi, joint.n_frames, joint.n_points, pr.n_phys, coef);
			int any = 0;
			for (int r = 0; r < n; r++)
				any += own[r];
			for (int r = 0; r < n && any; r++)
				printf("%s%d", r ? ", " : " (per ring: ", own[r]);
			printf("%s; memory: every ring's maps, %.3g MiB\n",
			       any    ? ")"
			       : coef ? " (shared by the rings)"
				      : " (held at their starts)",
			       mib(bytes));
			xf_validate_plan_lines(cfg, &pr);
		}
		xf_problem_free(&pr);
	}
	free(own);
	xf_dataset_free_joined(&joint);
	free(slot_q);
	return rc;
}

int xf_validate_rings_plan(const xf_config *cfg, const xf_dataset *rings, int n, cJSON *o,
			   xf_error *err)
{
	return cfg->rings_joint ? plan_joint(cfg, rings, n, o, err)
				: plan_per_ring(cfg, rings, n, o, err);
}
