/* nlsq_joint.c — `xpcsfit nlsq --joint` (adr/0066): one NLSQ fit over the selected q
 * rings with shared physical parameters (the rings' angles side by side, adr/0064),
 * written to DIR/nlsq_joint/ with the plots and surfaces of one ring's folder (each angle
 * slot drawn at its ring's q, adr/0068); parameters.json's "rings" holds each ring's χ²
 * and Fisher information share at the joint estimate, each ring's own fit, and the
 * leave-one-out consistency check that flags outlier rings. The rings' fits and checks
 * are the service's (services/joint_rings.c, adr/0111); this file builds the request
 * once, runs the joint fit and the service, prints and writes. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "cli/request_build.h"
#include "outputs/rings_summary.h"
#include "services/joint_rings.h"
#include "util/interrupt.h"
#include "util/rundir.h"
#include "util/verbosity.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/quality.h"
#include "io/io_internal.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/results_config.h"

typedef struct joint_run {
	const xf_config *cfg;
	xf_request base; /* the request of one ring, built once */
	const xf_dataset *rings;
	int n_rings;
	int threads;
} joint_run;

/* The "rings" member of parameters.json (docs/outputs.md). */
static cJSON *rings_object(const joint_run *jr, const xf_nlsq_result *res, const xf_joint_rings *jg)
{
	int n = jr->n_rings, np = res->n_phys;
	const xf_nlsq_result *own = jg->own;
	const xf_joint_ring_check *chk = jg->chk;
	const double *chi2 = jg->chi2, *info = jg->info, pair_z = jg->pair_z;
	int pair_param = jg->pair_param;
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

/* Console and run.log: each ring's share and check, the flagged rings. */
static void print_rings(const joint_run *jr, const xf_nlsq_result *res, const xf_joint_rings *jg)
{
	int n = jr->n_rings, np = res->n_phys, n_flagged = 0;
	const xf_nlsq_result *own = jg->own;
	const xf_joint_ring_check *chk = jg->chk;
	const double *chi2 = jg->chi2, *info = jg->info, pair_z = jg->pair_z;
	int pair_param = jg->pair_param;
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
		xf_joint_uninformed_text(jg, jr->rings, k, why, sizeof why);
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

/* The joint fit's folder from its estimate on req's grid, each slot at its ring's q
 * (slot_q, adr/0068); cfg: what the files record of the run. */
static int write_joint(const char *dir, const xf_config *cfg, const xf_request *req,
		       const xf_dataset *joint, const double *slot_q, const xf_nlsq_result *res,
		       const xf_output_options *oopt, xf_error *err)
{
	xf_estimate est;
	xf_nlsq_appendix app;
	if (xf_nlsq_estimate(res, req, joint, slot_q, &est, err))
		return err->code;
	xf_nlsq_appendix_of(res, &app);
	int rc = xf_results_write_nlsq(dir, cfg, joint, &est, &app, oopt, err);
	xf_estimate_free(&est);
	return rc;
}

/* params_vs_q.png of the joint fit res on joint (the rings side by side) with req: each
 * ring's own fit from rings_json, the joint values as the band; never fatal */
static void plot_joint(const char *dir, const char *rings_json, const xf_request *req,
		       const xf_dataset *joint, const xf_nlsq_result *res)
{
	xf_estimate est;
	xf_error err = { 0 };
	if (xf_nlsq_estimate(res, req, joint, NULL, &est, &err)) {
		xf_warn("params_vs_q.png not drawn: %s", err.msg);
		return;
	}
	xf_rings_plot_joint(dir, rings_json, &est);
	xf_estimate_free(&est);
}

/* The fits behind "rings" (services/joint_rings.c: each ring alone, the check, each
 * ring's share; res's quality marked), printed, and as JSON text in *json (malloc'ed). */
static int rings_report(const joint_run *jr, xf_nlsq_result *res, const double *slot_q,
			const xf_dataset *joint, char **json, xf_error *err)
{
	xf_joint_rings jg;
	*json = NULL;
	int rc = xf_joint_rings_judge(&jr->base, &jr->cfg->nlsq, jr->rings, jr->n_rings, joint,
				      slot_q, jr->threads, res, &jg, err);
	if (!rc) {
		print_rings(jr, res, &jg);
		cJSON *obj = rings_object(jr, res, &jg);
		*json = cJSON_PrintUnformatted(obj);
		cJSON_Delete(obj);
		if (!*json)
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the rings' record");
	}
	xf_joint_rings_free(&jg);
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
	xf_request req = jr->base;
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
				plot_joint(rd.dir, rings_json, &req, &joint, &res);
			if (xf_dist_is_root() &&
			    (write_joint(rd.dir, jr->cfg, &req, &joint, slot_q, &res, oopt, &err) ||
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
	joint_run jr = { .cfg = cfg, .rings = rings, .n_rings = n_rings, .threads = threads };
	xf_request_from_config(cfg, &jr.base);
	rc = joint_fit_and_write(&jr, job, &oopt, t_start, xf_cli_now_s());
	if (job->written && !rc)
		*job->written = 1;
	xf_dataset_free_rings(rings, n_rings);
	xf_config_free(cfg);
	return rc;
}
