/* nlsq_joint.c — `xpcsfit nlsq --joint` (adr/0066): one NLSQ fit over the selected q
 * rings with shared physical parameters (the rings' angles side by side, adr/0064),
 * written to DIR/nlsq_joint/ with the plots and surfaces of one ring's folder (each angle
 * slot drawn at its ring's q, adr/0068); parameters.json's "rings" holds each ring's χ² and Fisher
 * information share at the joint estimate, each ring's own fit, and the leave-one-out
 * consistency check that flags outlier rings. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "cli/request_build.h"
#include "nlsq/ring_consistency.h"
#include "outputs/rings_summary.h"
#include "util/interrupt.h"
#include "util/rundir.h"
#include "util/verbosity.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/quality.h"
#include "io/io_internal.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/results_config.h"

/* |Δ| / sqrt(sd_ring² + sd_others²) above which a ring disagrees with the others */
#define XF_JOINT_FLAG_Z 3.0
/* A ring whose largest information share over the free physical parameters is below
 * this, and below a tenth of an equal share (1/n_rings), informs none of them (issue 26:
 * a ring whose correlation hardly changes over the frame window, measured 1e-5) */
#define XF_JOINT_UNINFORMED_SHARE 0.01
/* |correlation| of a ring's contrast and offset beyond which the data do not tell them
 * apart (c2 ≈ offset + contrast when g1 barely decays) */
#define XF_JOINT_PAIR_CORR 0.99

typedef struct joint_run {
	const xf_config *cfg;
	const xf_dataset *rings;
	int n_rings;
	int threads;
} joint_run;

/* NLSQ of the rings with use[k] set: one ring as its own problem (the exact fit of
 * `nlsq` on it), several side by side with slot_q. Quiet: no progress lines. */
static int fit_subset(const joint_run *jr, const int *use, xf_nlsq_result *res, xf_error *err)
{
	xf_dataset *sub = malloc(sizeof *sub * (size_t)jr->n_rings);
	if (!sub)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for %d rings", jr->n_rings);
	int n = 0;
	for (int k = 0; k < jr->n_rings; k++)
		if (use[k])
			sub[n++] = jr->rings[k]; /* shallow: the join borrows the maps */
	xf_request req;
	xf_request_from_config(jr->cfg, &req);
	memset(res, 0, sizeof *res);
	int rc;
	if (n == 1) {
		rc = xf_nlsq_fit(&req, &jr->cfg->nlsq, &sub[0], jr->threads, NULL, NULL, res, err);
	} else {
		xf_dataset joint;
		double *slot_q = NULL;
		rc = xf_dataset_join_rings(sub, n, &joint, &slot_q, err);
		if (!rc) {
			req.n_slot_q = joint.n_phi;
			req.slot_q = slot_q;
			rc = xf_nlsq_fit(&req, &jr->cfg->nlsq, &joint, jr->threads, NULL, NULL, res,
					 err);
			xf_dataset_free_joined(&joint);
		}
		free(slot_q);
	}
	free(sub);
	return rc;
}

typedef struct ring_check {
	xf_ring_test t; /* the consistency check (adr/0074) */
	int usable;	/* its own fit is a measurement (not failed, not a ridge) */
	/* its largest information share over the free physical parameters, which one, and
	 * whether that says it informs none of them */
	double top_share;
	int top_param;
	int uninformed;
	double pair_corr; /* largest |corr(contrast, offset)| of its slots at the joint fit */
} ring_check;

static int fit_subset_cb(void *ctx, const int *use, xf_nlsq_result *res, xf_error *err)
{
	return fit_subset(ctx, use, res, err);
}

/* The consistency check (src/nlsq/ring_consistency.c, adr/0074): each usable ring judged
 * by the χ² increase when it must share the others' physical parameters, the worst
 * removed while its p-value is below the false-alarm rate over the rings judged, until
 * they agree or two rings are left (two rings can disagree, but not say which is off:
 * *pair_z is then their largest sd distance, nothing flagged). A ring whose own fit
 * failed or ended on a ridge is no measurement to compare (adr/0066 addendum): it takes
 * no part in the check, as neither the judged ring nor one of the others. */
static int check_rings(const joint_run *jr, const xf_nlsq_result *own, ring_check *chk,
		       double *pair_z, int *pair_param, xf_error *err)
{
	int n = jr->n_rings;
	int *active = malloc(sizeof(int) * (size_t)n);
	xf_ring_test *test = malloc(sizeof *test * (size_t)n);
	int rc = !active || !test ? xf_fail(err, XF_ERR_NOMEM, "out of memory for the ring check")
				  : 0;
	/* the fits that follow are collective: every rank goes on, or none (xpcsfit/dist.h) */
	if ((rc = xf_dist_agree(rc, err))) {
		free(active);
		free(test);
		return rc;
	}
	int n_usable = 0;
	for (int k = 0; k < n; k++)
		n_usable += active[k] = chk[k].usable;
	*pair_z = NAN;
	*pair_param = -1;
	rc = xf_ring_consistency(n, own, active, fit_subset_cb, (void *)jr, test, err);
	for (int k = 0; k < n; k++)
		chk[k].t = test[k];
	for (int round = 1; !rc && round <= n; round++)
		for (int k = 0; k < n; k++)
			if (chk[k].t.flagged && chk[k].t.round == round)
				xf_warn("ring q %.6g 1/A disagrees with the other rings: sharing "
					"their parameters raises chi2 by %.1f noise units (p %.2g, "
					"%d parameters; largest difference %s, %.1f sd) (round "
					"%d); "
					"removed from the check",
					jr->rings[k].q, chk[k].t.excess, chk[k].t.p_value,
					chk[k].t.df,
					chk[k].t.param >= 0 ? own[k].names[chk[k].t.param] : "none",
					chk[k].t.z, round);
	if (!rc && n_usable == 2) {
		int a = -1, b = -1;
		for (int k = 0; k < n; k++)
			if (chk[k].usable)
				*(a < 0 ? &a : &b) = k;
		*pair_z = xf_ring_max_sd(&own[a], &own[b], pair_param);
	}
	free(active);
	free(test);
	return rc;
}

/* Columns of the joint problem's coefficients (of one quantity) that ring k's slots use,
 * in order: the joint basis is block-diagonal over the rings (adr/0064). */
static int ring_coefs(const xf_problem *pj, int k, int *cols)
{
	int n = 0;
	for (int c = 0; c < pj->n_basis; c++)
		for (int s = pj->ring_first[k]; s < pj->ring_first[k + 1]; s++)
			if (pj->basis[(size_t)s * (size_t)pj->n_basis + (size_t)c] != 0.0) {
				cols[n++] = c;
				break;
			}
	return n;
}

/* Ring k's χ² (Σ((data − model)/σ)², linear) and the diagonal of its JᵀJ over the
 * physical parameters at the joint estimate xj: ring k's own problem at the joint
 * values (its scaling coefficients taken from the joint ones). NaN where the layouts do
 * not match (a per-angle mode that a ring alone would not use). */
static void ring_information(const xf_config *cfg, const xf_dataset *ring, const xf_problem *pj,
			     int k, const double *xj, double *chi2, double *info_diag)
{
	xf_request req;
	xf_request_from_config(cfg, &req);
	xf_problem pr;
	xf_error err = { 0 };
	xf_pairset ps;
	*chi2 = NAN;
	for (int p = 0; p < pj->n_phys; p++)
		info_diag[p] = NAN;
	if (xf_problem_build(&pr, &req, ring, &err))
		return;
	int *cols = malloc(sizeof(int) * (size_t)(pj->n_basis + 1));
	double *x = malloc(sizeof(double) * (size_t)pr.n_full);
	double *jtj = malloc(sizeof(double) * (size_t)pr.n_full * (size_t)pr.n_full);
	double *b = malloc(sizeof(double) * (size_t)pr.n_full); /* a JᵀJ pass fills b too */
	xf_lik *lik = NULL;
	if (cols && x && jtj && b && ring_coefs(pj, k, cols) == pr.n_basis &&
	    !xf_pairset_all(&ps, ring->n_frames)) {
		memcpy(x, xj, sizeof(double) * (size_t)pr.n_phys);
		for (int c = 0; c < pr.n_basis; c++) {
			x[pr.n_phys + c] = xj[pj->n_phys + cols[c]];
			x[pr.n_phys + pr.n_basis + c] = xj[pj->n_phys + pj->n_basis + cols[c]];
		}
		lik = xf_lik_create(&pr, &ps, NULL, &err);
		xf_lik_out out = { 0 };
		out.jtj = jtj;
		out.b = b;
		if (lik && xf_lik_eval(lik, x, &out) == 0) {
			*chi2 = out.chi2;
			for (int p = 0; p < pr.n_phys; p++)
				info_diag[p] = jtj[(size_t)p * (size_t)pr.n_full + (size_t)p];
		}
		xf_lik_destroy(lik);
		xf_pairset_free(&ps);
	}
	free(cols);
	free(x);
	free(jtj);
	free(b);
	xf_problem_free(&pr);
}

/* The largest |correlation| of ring k's contrast and offset coefficients in the joint
 * covariance (NaN when none is free). */
static double pair_correlation(const xf_nlsq_result *res, const xf_problem *pj, int k)
{
	int *cols = malloc(sizeof(int) * (size_t)(pj->n_basis + 1));
	double worst = NAN;
	int m = cols ? ring_coefs(pj, k, cols) : 0, n = res->n_params;
	for (int j = 0; j < m; j++) {
		size_t c = (size_t)(pj->n_phys + cols[j]),
		       o = (size_t)(pj->n_phys + pj->n_basis + cols[j]);
		if ((int)o >= n)
			break;
		double r = res->covariance[c * (size_t)n + o] /
			   sqrt(res->covariance[c * (size_t)n + c] *
				res->covariance[o * (size_t)n + o]);
		if (isfinite(r) && !(fabs(r) <= worst))
			worst = fabs(r);
	}
	free(cols);
	return worst;
}

/* Each ring's largest information share over the free physical parameters, whether it
 * informs none of them, and its contrast-offset correlation. */
static void judge_information(const joint_run *jr, const xf_nlsq_result *res, const xf_problem *pj,
			      const double *info, ring_check *chk)
{
	int n = jr->n_rings, np = res->n_phys;
	double limit = fmin(XF_JOINT_UNINFORMED_SHARE, 0.1 / n);
	for (int k = 0; k < n; k++) {
		chk[k].top_share = NAN;
		chk[k].top_param = -1;
		for (int p = 0; p < np; p++) {
			if (res->is_fixed[p])
				continue;
			double sum = 0.0;
			for (int j = 0; j < n; j++) /* ring order: fixed bits */
				sum += info[(size_t)j * (size_t)np + (size_t)p];
			double v = info[(size_t)k * (size_t)np + (size_t)p] / sum;
			if (isfinite(v) && !(v <= chk[k].top_share)) {
				chk[k].top_share = v;
				chk[k].top_param = p;
			}
		}
		chk[k].uninformed = n > 1 && chk[k].top_share < limit;
		chk[k].pair_corr = pair_correlation(res, pj, k);
	}
}

/* The "rings" member of parameters.json (docs/outputs.md). */
static cJSON *rings_object(const joint_run *jr, const xf_nlsq_result *res,
			   const xf_nlsq_result *own, const ring_check *chk, const double *chi2,
			   const double *info, double pair_z, int pair_param)
{
	int n = jr->n_rings, np = res->n_phys;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "mode", "joint");
	cJSON_AddItemToObject(root, "n_rings", xf_json_int(n));
	cJSON_AddItemToObject(root, "chi_squared_joint", xf_json_num(res->chi_squared));
	cJSON_AddItemToObject(root, "flag_threshold_sd", xf_json_num(XF_JOINT_FLAG_Z));
	cJSON_AddItemToObject(root, "flag_false_alarm_rate", xf_json_num(XF_RING_FALSE_ALARM));
	cJSON *flagged = cJSON_CreateArray();
	cJSON *list = cJSON_CreateArray();
	for (int k = 0; k < n; k++) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddItemToObject(r, "q", xf_json_num(jr->rings[k].q));
		cJSON_AddItemToObject(r, "n_angles", xf_json_int(jr->rings[k].n_phi));
		cJSON_AddItemToObject(r, "n_points", xf_json_int((long long)jr->rings[k].n_points));
		cJSON_AddItemToObject(r, "chi_squared", xf_json_num(chi2[k]));
		cJSON *share = cJSON_CreateObject();
		for (int p = 0; p < np; p++) {
			double sum = 0.0;
			for (int j = 0; j < n; j++) /* ring order: fixed bits */
				sum += info[(size_t)j * (size_t)np + (size_t)p];
			double v = res->is_fixed[p]
					   ? NAN
					   : info[(size_t)k * (size_t)np + (size_t)p] / sum;
			cJSON_AddItemToObject(share, res->names[p], xf_json_num(v));
		}
		cJSON_AddItemToObject(r, "information_share", share);
		cJSON_AddBoolToObject(r, "informs_physical_parameters", !chk[k].uninformed);
		cJSON_AddItemToObject(r, "largest_information_share",
				      xf_json_num(chk[k].top_share));
		cJSON_AddItemToObject(r, "contrast_offset_correlation",
				      xf_json_num(chk[k].pair_corr));
		cJSON *fit = cJSON_CreateObject();
		cJSON_AddStringToObject(fit, "status", xf_fit_status_name(own[k].status));
		cJSON_AddItemToObject(fit, "chi_squared", xf_json_num(own[k].chi_squared));
		for (int p = 0; p < np; p++) {
			cJSON *v = cJSON_CreateObject();
			cJSON_AddItemToObject(v, "value", xf_json_num(own[k].values[p]));
			cJSON_AddItemToObject(v, "uncertainty",
					      xf_json_num(own[k].uncertainties[p]));
			cJSON_AddItemToObject(fit, own[k].names[p], v);
		}
		cJSON_AddItemToObject(r, "own_fit", fit);
		cJSON *c = cJSON_CreateObject();
		cJSON_AddItemToObject(c, "max_sd_from_others",
				      chk[k].t.compared ? xf_json_num(chk[k].t.z)
							: cJSON_CreateNull());
		cJSON_AddStringToObject(c, "parameter",
					chk[k].t.param >= 0 ? own[k].names[chk[k].t.param] : "");
		cJSON_AddBoolToObject(c, "flagged", chk[k].t.flagged);
		cJSON_AddStringToObject(c, "not_compared",
					chk[k].usable ? "" : "its own fit is not a measurement");
		cJSON_AddItemToObject(c, "flagged_in_round", xf_json_int(chk[k].t.round));
		/* the verdict (adr/0074): the χ² increase of sharing and its p-value */
		cJSON_AddItemToObject(c, "chi2_increase_noise_units",
				      chk[k].t.compared ? xf_json_num(chk[k].t.excess)
							: cJSON_CreateNull());
		cJSON_AddItemToObject(c, "df", xf_json_int(chk[k].t.compared ? chk[k].t.df : 0));
		cJSON_AddItemToObject(c, "p_value",
				      chk[k].t.compared ? xf_json_num(chk[k].t.p_value)
							: cJSON_CreateNull());
		cJSON_AddItemToObject(r, "leave_one_out", c);
		cJSON_AddItemToArray(list, r);
		if (chk[k].t.flagged)
			cJSON_AddItemToArray(flagged, xf_json_num(jr->rings[k].q));
	}
	cJSON_AddItemToObject(root, "rings", list);
	cJSON_AddItemToObject(root, "flagged_q", flagged);
	if (n == 2 || isfinite(pair_z)) {
		cJSON_AddItemToObject(root, "pair_sd_apart", xf_json_num(pair_z));
		cJSON_AddStringToObject(root, "pair_parameter",
					pair_param >= 0 ? res->names[pair_param] : "");
	}
	return root;
}

/* The one line that names a ring informing no physical parameter and what to do. */
static void uninformed_text(const joint_run *jr, const xf_nlsq_result *own, const ring_check *chk,
			    int k, char *buf, size_t size)
{
	/* one quality reason (320 bytes): the share per parameter and the correlation are
	 * in parameters.json */
	snprintf(buf, size,
		 "ring q %.6g 1/A informs no physical parameter (largest information share "
		 "%.2g)%s; own fit %s; it can be left out (wavevector_q list)",
		 jr->rings[k].q, chk[k].top_share,
		 chk[k].pair_corr > XF_JOINT_PAIR_CORR
			 ? ": its contrast and offset are not told apart"
			 : "",
		 xf_fit_status_name(own[k].status));
}

/* Console and run.log: each ring's share and check, the flagged rings. */
static void print_rings(const joint_run *jr, const xf_nlsq_result *res, const xf_nlsq_result *own,
			const ring_check *chk, const double *chi2, const double *info,
			double pair_z, int pair_param)
{
	int n = jr->n_rings, np = res->n_phys, n_flagged = 0;
	for (int k = 0; k < n; k++) {
		char line[512];
		int len = snprintf(line, sizeof line, "ring q %.6g 1/A: %d angles, chi2 %.6g",
				   jr->rings[k].q, jr->rings[k].n_phi, chi2[k]);
		if (chk[k].t.compared)
			len += snprintf(line + len, sizeof line - (size_t)len,
					", sharing +%.1f chi2 noise units (p %.2g)",
					chk[k].t.excess, chk[k].t.p_value);
		if (chk[k].t.compared && chk[k].t.param >= 0)
			len += snprintf(line + len, sizeof line - (size_t)len,
					", %.1f sd from the others (%s)", chk[k].t.z,
					res->names[chk[k].t.param]);
		if (chk[k].t.flagged)
			len += snprintf(line + len, sizeof line - (size_t)len, ", FLAGGED");
		if (!chk[k].usable)
			snprintf(line + len, sizeof line - (size_t)len,
				 ", own fit %s: not compared with the others",
				 xf_fit_status_name(own[k].status));
		xf_info("joint: %s", line);
		if (xf_verbosity() >= XF_VERB_NORMAL)
			printf("%s\n", line);
		n_flagged += chk[k].t.flagged;
	}
	for (int p = 0; p < np; p++) {
		if (res->is_fixed[p])
			continue;
		double sum = 0.0;
		for (int k = 0; k < n; k++)
			sum += info[(size_t)k * (size_t)np + (size_t)p];
		char line[512];
		int len = snprintf(line, sizeof line, "information share %s:", res->names[p]);
		for (int k = 0; k < n && len < (int)sizeof line; k++)
			len += snprintf(line + len, sizeof line - (size_t)len, " %.2f",
					info[(size_t)k * (size_t)np + (size_t)p] / sum);
		xf_info("joint: %s", line);
		if (xf_verbosity() >= XF_VERB_NORMAL)
			printf("%s\n", line);
	}
	for (int k = 0; k < n; k++) {
		if (!chk[k].uninformed)
			continue;
		char why[320];
		uninformed_text(jr, own, chk, k, why, sizeof why);
		xf_warn("%s", why);
	}
	int pair_off = pair_param >= 0 && pair_z > XF_JOINT_FLAG_Z;
	if (pair_off)
		xf_warn("the two rings disagree: %s %.1f sd apart (two rings cannot say which is "
			"off)",
			res->names[pair_param], pair_z);
	if (n_flagged == 0 && !pair_off && n > 1 && xf_verbosity() >= XF_VERB_NORMAL) {
		if (isfinite(pair_z))
			printf("rings agree: the two compared rings are %.1f sd apart\n", pair_z);
		else
			printf("rings agree: no ring's chi2 rises beyond chance when it shares "
			       "the others' parameters (false-alarm rate %g)\n",
			       XF_RING_FALSE_ALARM);
	}
}

/* Quality: marginal when a ring is flagged (or two rings disagree), the first reason. */
static void mark_quality(const joint_run *jr, xf_nlsq_result *res, const xf_nlsq_result *own,
			 const ring_check *chk, double pair_z)
{
	for (int k = 0; k < jr->n_rings; k++) {
		if (!chk[k].uninformed)
			continue;
		char why[320];
		uninformed_text(jr, own, chk, k, why, sizeof why);
		if (res->quality.overall < XF_QUALITY_MARGINAL)
			res->quality.overall = XF_QUALITY_MARGINAL;
		xf_quality_add_reason(&res->quality, "%s", why);
	}
	for (int k = 0; k < jr->n_rings; k++) {
		if (!chk[k].t.flagged)
			continue;
		if (res->quality.overall < XF_QUALITY_MARGINAL)
			res->quality.overall = XF_QUALITY_MARGINAL;
		xf_quality_add_reason(&res->quality,
				      "ring q %.6g 1/A disagrees with the other rings' joint fit "
				      "(chi2 +%.1f noise units, p %.2g): the rings may not share "
				      "these parameters",
				      jr->rings[k].q, chk[k].t.excess, chk[k].t.p_value);
	}
	if (pair_z > XF_JOINT_FLAG_Z) {
		if (res->quality.overall < XF_QUALITY_MARGINAL)
			res->quality.overall = XF_QUALITY_MARGINAL;
		xf_quality_add_reason(&res->quality, "the two rings disagree (%.1f sd apart)",
				      pair_z);
	}
}

/* params_vs_q.png of the joint fit res on joint (the rings side by side) with cfg: each
 * ring's own fit from rings_json, the joint values as the band; never fatal */
static void plot_joint(const char *dir, const char *rings_json, const xf_config *cfg,
		       const xf_dataset *joint, const xf_nlsq_result *res)
{
	xf_estimate est;
	xf_error err = { 0 };
	if (xf_results_nlsq_estimate(cfg, joint, res, &est, &err)) {
		xf_warn("params_vs_q.png not drawn: %s", err.msg);
		return;
	}
	xf_rings_plot_joint(dir, rings_json, &est);
	xf_estimate_free(&est);
}

/* The fits behind "rings": each ring alone, the check, each ring's share. JSON text in
 * *json (malloc'ed). */
static int rings_report(const joint_run *jr, xf_nlsq_result *res, const double *slot_q,
			const xf_dataset *joint, char **json, xf_error *err)
{
	int n = jr->n_rings, np = res->n_phys, rc = 0;
	xf_nlsq_result *own = calloc((size_t)n, sizeof *own);
	ring_check *chk = calloc((size_t)n, sizeof *chk);
	int *use = calloc((size_t)n, sizeof *use);
	double *chi2 = malloc(sizeof(double) * (size_t)n);
	double *info = malloc(sizeof(double) * (size_t)n * (size_t)np);
	*json = NULL;
	if (!own || !chk || !use || !chi2 || !info)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for %d rings", n);
	rc = xf_dist_agree(rc, err); /* the rings' fits are collective */
	for (int k = 0; k < n && !rc; k++) {
		xf_say(XF_VERB_NORMAL, "joint: fitting ring q %.6g 1/A alone (%d of %d)",
		       jr->rings[k].q, k + 1, n);
		memset(use, 0, sizeof(int) * (size_t)n);
		use[k] = 1;
		rc = fit_subset(jr, use, &own[k], err);
		chk[k].t.param = -1;
		chk[k].top_param = -1;
		chk[k].usable = !rc && !xf_fit_status_failed(own[k].status);
	}
	double pair_z = NAN;
	int pair_param = -1;
	if (!rc) {
		xf_say(XF_VERB_NORMAL, "joint: leave-one-out check of %d rings", n);
		rc = check_rings(jr, own, chk, &pair_z, &pair_param, err);
	}
	if (!rc) {
		xf_request req;
		xf_request_from_config(jr->cfg, &req);
		req.n_slot_q = joint->n_phi;
		req.slot_q = slot_q;
		xf_problem pj;
		rc = xf_problem_build(&pj, &req, joint, err);
		if (!rc && pj.n_full != res->n_params)
			rc = xf_fail(err, XF_ERR_DATA, "joint fit: %d parameters, problem %d",
				     res->n_params, pj.n_full);
		for (int k = 0; k < n && !rc; k++)
			ring_information(jr->cfg, &jr->rings[k], &pj, k, res->values, &chi2[k],
					 &info[(size_t)k * (size_t)np]);
		if (!rc) {
			judge_information(jr, res, &pj, info, chk);
			xf_problem_free(&pj);
		}
	}
	if (!rc) {
		mark_quality(jr, res, own, chk, pair_z);
		print_rings(jr, res, own, chk, chi2, info, pair_z, pair_param);
		cJSON *obj = rings_object(jr, res, own, chk, chi2, info, pair_z, pair_param);
		*json = cJSON_PrintUnformatted(obj);
		cJSON_Delete(obj);
		if (!*json)
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the rings' record");
	}
	for (int k = 0; own && k < n; k++)
		xf_nlsq_result_free(&own[k]);
	free(own);
	free(chk);
	free(use);
	free(chi2);
	free(info);
	return rc;
}

/* Fit the joint problem, then the rings' report, then the folder. */
static int joint_fit_and_write(const joint_run *jr, const xf_cli_job *job, xf_output_options *oopt,
			       double t_start, double t_loaded)
{
	xf_error err = { 0 };
	xf_dataset joint;
	double *slot_q = NULL;
	xf_nlsq_result res;
	memset(&res, 0, sizeof res);
	int joined = !xf_dataset_join_rings(jr->rings, jr->n_rings, &joint, &slot_q, &err);
	/* too large a joint problem: refused before the fit and any folder (adr/0073) */
	int p_free = 0;
	int rc =
		joined ? xf_cli_joint_cap_check(jr->cfg, &joint, slot_q, jr->n_rings, &p_free, &err)
		       : err.code;
	rc = xf_dist_agree(rc, &err);
	if (rc) {
		if (joined)
			xf_dataset_free_joined(&joint);
		free(slot_q);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	xf_say(XF_VERB_NORMAL,
	       "nlsq joint fit of %d rings on %zu points (%d angle slots x %d "
	       "frames), %d free parameters, %d virtual devices",
	       jr->n_rings, joint.n_points, joint.n_phi, joint.n_frames, p_free, jr->threads);
	xf_request req;
	xf_request_from_config(jr->cfg, &req);
	req.n_slot_q = joint.n_phi;
	req.slot_q = slot_q;
	xf_phase("fit", 1);
	/* the iteration line of a one-ring nlsq, the screening's too (issue 33: 1 000 rings
	 * ran 240 s silent; 200 rings screen for 200 s) */
	xf_cli_progress_state ps = { xf_progress_tty(), xf_cli_now_s(), -1.0, 1 };
	rc = xf_nlsq_fit(&req, &jr->cfg->nlsq, &joint, jr->threads, xf_cli_nlsq_progress, &ps, &res,
			 &err);
	if (ps.tty)
		fputc('\n', stderr);
	char *rings_json = NULL;
	if (!rc)
		rc = rings_report(jr, &res, slot_q, &joint, &rings_json, &err);
	/* the ranks go on to claim the folder together, or stop together (xpcsfit/dist.h) */
	rc = xf_dist_agree(rc, &err);
	xf_rundir rd;
	if (!rc) {
		double t_fit = xf_cli_now_s();
		res.time_load_s = t_loaded - t_start;
		res.time_fit_s = t_fit - t_loaded;
		res.time_total_s = t_fit - t_start;
		oopt->rings_json = rings_json;
		oopt->slot_q = slot_q;
		xf_phase("results", 0);
		rc = xf_cli_claim(&rd, job->out, "nlsq_joint", job->force, "--force", job->command);
		if (!rc) {
			/* several ranks: each holds the same result, rank 0 alone writes it; the
			 * joint params_vs_q.png before report.html, which embeds it */
			if (job->plots && xf_dist_is_root())
				plot_joint(rd.dir, rings_json, jr->cfg, &joint, &res);
			if (xf_dist_is_root() &&
			    (xf_results_write_nlsq(rd.dir, jr->cfg, &joint, &res, oopt, &err) ||
			     xf_rundir_complete(&rd, &err)))
				rc = xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
			rc = xf_cli_agree(rc);
			xf_rundir_release(&rd);
		}
		if (!rc && xf_verbosity() >= XF_VERB_NORMAL) {
			printf("nlsq joint: %s (%s) after %d iterations, %zu points, chi2 %.6g\n",
			       xf_fit_status_name(res.status), res.stop_reason, res.iterations,
			       res.n_points, res.chi_squared);
			for (int k = 0; k < res.n_phys; k++)
				xf_cli_print_param(res.names[k], res.values[k],
						   res.is_fixed[k] ? NAN : res.uncertainties[k],
						   res.is_fixed[k], NULL);
			printf("quality: %s\n", xf_quality_level_name(res.quality.overall));
			for (int k = 0; k < res.quality.n_reasons; k++)
				printf("  - %s\n", res.quality.reasons[k]);
			xf_cli_print_results_line(rd.dir);
		}
		if (!rc && xf_fit_status_failed(res.status))
			rc = xf_cli_error(
				XF_ERR_DATA,
				"the joint fit ended %s (%s), results are marked so, in %s",
				xf_fit_status_name(res.status),
				res.quality.n_reasons ? res.quality.reasons[0] : res.stop_reason,
				rd.dir);
	} else if (err.code) {
		rc = xf_cli_error(err.code, "%s", err.msg);
	}
	free(rings_json);
	xf_nlsq_result_free(&res);
	xf_dataset_free_joined(&joint);
	free(slot_q);
	return rc;
}

void xf_cli_joint_one_ring(const xf_dataset *rings, int n_rings)
{
	if (n_rings == 1 && xf_dist_is_root())
		xf_warn("--joint over one ring (q %.6g 1/A) is that ring's own fit: no ring is "
			"compared with others (select several: wavevector_q: all, or a list)",
			rings[0].q);
}

int xf_cli_run_nlsq_joint(const xf_cli_job *job, xf_config *cfg, int threads, double t_start)
{
	int rc = xf_cli_check_out(job->out, "nlsq_joint", job->force, "--force");
	if (rc) {
		xf_config_free(cfg);
		return rc;
	}
	xf_error err = { 0 };
	xf_selection sel;
	xf_selection_from_config(cfg, &sel);
	xf_dataset *rings = NULL;
	int n_rings = 0;
	/* every rank reads every ring whole (adr/0069: the joint pass spreads its blocks
	 * over the ranks, the rings' own fits too); an error on any ends them all */
	if (xf_dataset_load_rings(&sel, job->data, &rings, &n_rings, &err))
		rc = xf_cli_error(err.code, "%s", err.msg);
	if ((rc = xf_cli_agree(rc))) {
		if (rings)
			xf_dataset_free_rings(rings, n_rings);
		xf_config_free(cfg);
		return rc;
	}
	for (int k = 0; k < n_rings; k++)
		xf_info("data: ring q %.6g 1/A, %d angles, %d frames, dt %.6g s, %zu points",
			rings[k].q, rings[k].n_phi, rings[k].n_frames, rings[k].dt_s,
			rings[k].n_points);
	xf_cli_joint_one_ring(rings, n_rings);
	/* plots and surfaces as for one ring, each angle slot at its ring's q (adr/0068):
	 * slot_q is set once the rings are joined */
	xf_output_options oopt = { xf_cli_surfaces(job, cfg), job->plots, threads, NULL, NULL };
	joint_run jr = { cfg, rings, n_rings, threads };
	rc = joint_fit_and_write(&jr, job, &oopt, t_start, xf_cli_now_s());
	if (job->written && !rc)
		*job->written = 1;
	xf_dataset_free_rings(rings, n_rings);
	xf_config_free(cfg);
	return rc;
}
