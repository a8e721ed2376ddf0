/* joint_rings.c — each ring beside the joint fit (joint_rings.h, adr/0066, adr/0074,
 * adr/0111): the rings' own fits, the leave-one-out check, each ring's χ² and
 * information share at the joint estimate, and the joint fit's quality marked from
 * them. */
#include "services/joint_rings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/verbosity.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/quality.h"

typedef struct joint_ctx {
	const xf_request *base;
	const xf_nlsq_options *o;
	const xf_dataset *rings;
	int n_rings;
	int threads;
} joint_ctx;

/* NLSQ of the rings with use[k] set: one ring as its own problem (the exact fit of
 * `nlsq` on it), several side by side with slot_q. Quiet: no progress lines. */
static int fit_subset(const joint_ctx *jc, const int *use, xf_nlsq_result *res, xf_error *err)
{
	xf_dataset *sub = malloc(sizeof *sub * (size_t)jc->n_rings);
	if (!sub)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for %d rings", jc->n_rings);
	int n = 0;
	for (int k = 0; k < jc->n_rings; k++)
		if (use[k])
			sub[n++] = jc->rings[k]; /* shallow: the join borrows the maps */
	xf_request req = *jc->base;
	memset(res, 0, sizeof *res);
	int rc;
	if (n == 1) {
		rc = xf_nlsq_fit(&req, jc->o, &sub[0], jc->threads, NULL, NULL, res, err);
	} else {
		xf_dataset joint;
		double *slot_q = NULL;
		rc = xf_dataset_join_rings(sub, n, &joint, &slot_q, err);
		if (!rc) {
			req.n_slot_q = joint.n_phi;
			req.slot_q = slot_q;
			rc = xf_nlsq_fit(&req, jc->o, &joint, jc->threads, NULL, NULL, res, err);
			xf_dataset_free_joined(&joint);
		}
		free(slot_q);
	}
	free(sub);
	return rc;
}

static int fit_subset_cb(void *ctx, const int *use, xf_nlsq_result *res, xf_error *err)
{
	return fit_subset(ctx, use, res, err);
}

/* The consistency check (src/nlsq/ring_consistency.c, adr/0074): each usable ring judged
 * by the χ² increase when it must share the others' physical parameters, the worst
 * removed while its p-value is below the false-alarm rate over the rings judged, until
 * they agree or two rings are left (two rings can disagree, but not say which is off:
 * pair_z is then their largest sd distance, nothing flagged). A ring whose own fit
 * failed or ended on a ridge is no measurement to compare (adr/0066 addendum): it takes
 * no part in the check, as neither the judged ring nor one of the others. */
static int check_rings(const joint_ctx *jc, xf_joint_rings *jr, xf_error *err)
{
	int n = jc->n_rings;
	const xf_nlsq_result *own = jr->own;
	xf_joint_ring_check *chk = jr->chk;
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
	rc = xf_ring_consistency(n, own, active, fit_subset_cb, (void *)jc, test, err);
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
					jc->rings[k].q, chk[k].t.excess, chk[k].t.p_value,
					chk[k].t.df,
					chk[k].t.param >= 0 ? own[k].names[chk[k].t.param] : "none",
					chk[k].t.z, round);
	if (!rc && n_usable == 2) {
		int a = -1, b = -1;
		for (int k = 0; k < n; k++)
			if (chk[k].usable)
				*(a < 0 ? &a : &b) = k;
		jr->pair_z = xf_ring_max_sd(&own[a], &own[b], &jr->pair_param);
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
static void ring_information(const xf_request *base, const xf_dataset *ring, const xf_problem *pj,
			     int k, const double *xj, double *chi2, double *info_diag)
{
	xf_problem pr;
	xf_error err = { 0 };
	xf_pairset ps;
	*chi2 = NAN;
	for (int p = 0; p < pj->n_phys; p++)
		info_diag[p] = NAN;
	if (xf_problem_build(&pr, base, ring, &err))
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
static void judge_information(xf_joint_rings *jr, const xf_nlsq_result *res, const xf_problem *pj)
{
	int n = jr->n_rings, np = res->n_phys;
	const double *info = jr->info;
	xf_joint_ring_check *chk = jr->chk;
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

void xf_joint_uninformed_text(const xf_joint_rings *jr, const xf_dataset *rings, int k, char *buf,
			      size_t size)
{
	/* one quality reason (320 bytes): the share per parameter and the correlation are
	 * in parameters.json */
	snprintf(buf, size,
		 "ring q %.6g 1/A informs no physical parameter (largest information share "
		 "%.2g)%s; own fit %s; it can be left out (wavevector_q list)",
		 rings[k].q, jr->chk[k].top_share,
		 jr->chk[k].pair_corr > XF_JOINT_PAIR_CORR
			 ? ": its contrast and offset are not told apart"
			 : "",
		 xf_fit_status_name(jr->own[k].status));
}

/* Quality: marginal when a ring is flagged (or two rings disagree), the first reason. */
static void mark_quality(const xf_joint_rings *jr, const xf_dataset *rings, xf_nlsq_result *res)
{
	const xf_joint_ring_check *chk = jr->chk;
	for (int k = 0; k < jr->n_rings; k++) {
		if (!chk[k].uninformed)
			continue;
		char why[320];
		xf_joint_uninformed_text(jr, rings, k, why, sizeof why);
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
				      rings[k].q, chk[k].t.excess, chk[k].t.p_value);
	}
	if (jr->pair_z > XF_JOINT_FLAG_Z) {
		if (res->quality.overall < XF_QUALITY_MARGINAL)
			res->quality.overall = XF_QUALITY_MARGINAL;
		xf_quality_add_reason(&res->quality, "the two rings disagree (%.1f sd apart)",
				      jr->pair_z);
	}
}

/* Each ring's χ² and information at the joint estimate, on the joint problem's layout */
static int information(const joint_ctx *jc, xf_joint_rings *jr, const xf_dataset *joint,
		       const double *slot_q, const xf_nlsq_result *res, xf_error *err)
{
	xf_request req = *jc->base;
	req.n_slot_q = joint->n_phi;
	req.slot_q = slot_q;
	xf_problem pj;
	int rc = xf_problem_build(&pj, &req, joint, err);
	if (rc)
		return rc;
	if (pj.n_full != res->n_params)
		rc = xf_fail(err, XF_ERR_DATA, "joint fit: %d parameters, problem %d",
			     res->n_params, pj.n_full);
	for (int k = 0; k < jc->n_rings && !rc; k++)
		ring_information(jc->base, &jc->rings[k], &pj, k, res->values, &jr->chi2[k],
				 &jr->info[(size_t)k * (size_t)jr->n_phys]);
	if (!rc)
		judge_information(jr, res, &pj);
	xf_problem_free(&pj);
	return rc;
}

int xf_joint_rings_judge(const xf_request *base, const xf_nlsq_options *o, const xf_dataset *rings,
			 int n_rings, const xf_dataset *joint, const double *slot_q, int threads,
			 xf_nlsq_result *res, xf_joint_rings *jr, xf_error *err)
{
	joint_ctx jc = { base, o, rings, n_rings, threads };
	int n = n_rings, np = res->n_phys, rc = 0;
	memset(jr, 0, sizeof *jr);
	jr->n_rings = n;
	jr->n_phys = np;
	jr->pair_z = NAN;
	jr->pair_param = -1;
	jr->own = calloc((size_t)n, sizeof *jr->own);
	jr->chk = calloc((size_t)n, sizeof *jr->chk);
	jr->chi2 = malloc(sizeof(double) * (size_t)n);
	jr->info = malloc(sizeof(double) * (size_t)n * (size_t)np);
	int *use = calloc((size_t)n, sizeof *use);
	if (!jr->own || !jr->chk || !use || !jr->chi2 || !jr->info)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for %d rings", n);
	rc = xf_dist_agree(rc, err); /* the rings' fits are collective */
	for (int k = 0; k < n && !rc; k++) {
		xf_say(XF_VERB_NORMAL, "joint: fitting ring q %.6g 1/A alone (%d of %d)",
		       rings[k].q, k + 1, n);
		memset(use, 0, sizeof(int) * (size_t)n);
		use[k] = 1;
		rc = fit_subset(&jc, use, &jr->own[k], err);
		jr->chk[k].t.param = -1;
		jr->chk[k].top_param = -1;
		jr->chk[k].usable = !rc && !xf_fit_status_failed(jr->own[k].status);
	}
	free(use);
	if (!rc) {
		xf_say(XF_VERB_NORMAL, "joint: leave-one-out check of %d rings", n);
		rc = check_rings(&jc, jr, err);
	}
	if (!rc)
		rc = information(&jc, jr, joint, slot_q, res, err);
	if (!rc)
		mark_quality(jr, rings, res);
	return rc;
}

void xf_joint_rings_free(xf_joint_rings *jr)
{
	for (int k = 0; jr->own && k < jr->n_rings; k++)
		xf_nlsq_result_free(&jr->own[k]);
	free(jr->own);
	free(jr->chk);
	free(jr->chi2);
	free(jr->info);
	memset(jr, 0, sizeof *jr);
}
