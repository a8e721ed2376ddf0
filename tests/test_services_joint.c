/* test_services_joint.c — the joint fit's rings as a service (services/joint_rings.c,
 * adr/0111), called as the command line calls it but from a request built by
 * xf_request_defaults, never a config: four static rings simulated from one truth, the
 * last with D0 twice as large.
 *   - that ring, and only it, is flagged by the leave-one-out check, and the joint fit's
 *     quality is lowered with a reason naming its q;
 *   - each ring's χ² at the joint estimate sums to the joint fit's χ² (1e-9 relative):
 *     the rings' own problems evaluated at the joint values are the joint problem's
 *     blocks;
 *   - each free parameter's information shares sum to 1, and every ring's own fit
 *     converged;
 *   - three agreeing rings: nothing flagged, the quality left as the fit set it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/joint_rings.h"
#include "synth.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/request.h"

#define N_RINGS	 4
#define N_ANGLES 3
#define N_FRAMES 60

static const double ring_q[N_RINGS] = { 0.003, 0.0045, 0.0054, 0.008 }; /* 1/Å */

/* rings[0..n) simulated, the last with D0 scaled by d0_last */
static void make_rings(xf_dataset *rings, int n, double d0_last)
{
	for (int k = 0; k < n; k++) {
		double theta[7] = { 3000.0, -1.2, 0.0, 0.0, 0.0, 0.0, 0.0 };
		if (k == n - 1)
			theta[0] *= d0_last;
		xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, N_FRAMES,
				    0.001,	    ring_q[k],	       2e6 };
		double phi[N_ANGLES], con[N_ANGLES], off[N_ANGLES];
		for (int a = 0; a < N_ANGLES; a++) {
			phi[a] = -40.0 + 45.0 * a;
			con[a] = 0.3;
			off[a] = 1.0;
		}
		assert_int_equal(xf_synth_dataset(&g, theta, N_ANGLES, phi, con, off, 2e-3,
						  (uint64_t)(11 + k), &rings[k]),
				 0);
	}
}

static void request(xf_request *req)
{
	xf_request_defaults(req, XF_MODE_STATIC);
	const double start[3] = { 2000.0, -1.0, 0.0 };
	for (int k = 0; k < 3; k++) {
		req->start[k] = start[k];
		req->value_given[k] = 1;
	}
	/* D_offset held at its truth: 40 frames do not tell it from D0 and alpha (a ridge) */
	req->start[XF_P_D_OFFSET] = 0.0;
	req->fixed[XF_P_D_OFFSET] = 1;
}

/* The joint fit and the service over rings[0..n); the record in *jr, the fit in *res */
static void judge(const xf_dataset *rings, int n, xf_nlsq_result *res, xf_joint_rings *jr)
{
	xf_request base, req;
	xf_nlsq_options o;
	xf_error err = { 0 };
	xf_dataset joint;
	double *slot_q = NULL;
	request(&base);
	xf_nlsq_options_defaults(&o);
	if (xf_dataset_join_rings(rings, n, &joint, &slot_q, &err))
		fail_msg("join: %s", err.msg);
	req = base;
	req.n_slot_q = joint.n_phi;
	req.slot_q = slot_q;
	memset(res, 0, sizeof *res);
	if (xf_nlsq_fit(&req, &o, &joint, 1, NULL, NULL, res, &err))
		fail_msg("joint fit: %s", err.msg);
	if (xf_joint_rings_judge(&base, &o, rings, n, &joint, slot_q, 1, res, jr, &err))
		fail_msg("the rings' service: %s", err.msg);
	xf_dataset_free_joined(&joint);
	free(slot_q);
}

static void common_checks(const xf_nlsq_result *res, const xf_joint_rings *jr, int n)
{
	double sum = 0.0;
	for (int k = 0; k < n; k++) {
		assert_true(isfinite(jr->chi2[k]));
		sum += jr->chi2[k];
		assert_int_equal(jr->own[k].status, XF_STATUS_CONVERGED);
	}
	printf("chi2: joint %.10g, sum of the rings %.10g\n", res->chi_squared, sum);
	assert_true(fabs(sum - res->chi_squared) <= 1e-9 * res->chi_squared);
	for (int p = 0; p < jr->n_phys; p++) {
		if (res->is_fixed[p])
			continue;
		double total = 0.0, share = 0.0;
		for (int k = 0; k < n; k++)
			total += jr->info[(size_t)k * (size_t)jr->n_phys + (size_t)p];
		for (int k = 0; k < n; k++)
			share += jr->info[(size_t)k * (size_t)jr->n_phys + (size_t)p] / total;
		assert_true(fabs(share - 1.0) < 1e-12);
	}
}

static void test_outlier_ring_flagged(void **state)
{
	(void)state;
	xf_dataset rings[N_RINGS];
	xf_nlsq_result res;
	xf_joint_rings jr;
	make_rings(rings, N_RINGS, 2.0);
	judge(rings, N_RINGS, &res, &jr);
	common_checks(&res, &jr, N_RINGS);
	for (int k = 0; k < N_RINGS; k++) {
		printf("ring %d: flagged %d, chi2 +%.1f, p %.3g\n", k, jr.chk[k].t.flagged,
		       jr.chk[k].t.excess, jr.chk[k].t.p_value);
		assert_int_equal(jr.chk[k].t.flagged, k == N_RINGS - 1);
	}
	assert_true(res.quality.overall >= XF_QUALITY_MARGINAL);
	char want[64];
	snprintf(want, sizeof want, "ring q %.6g 1/A disagrees", ring_q[N_RINGS - 1]);
	int named = 0;
	for (int r = 0; r < res.quality.n_reasons; r++)
		named |= strstr(res.quality.reasons[r], want) != NULL;
	assert_true(named);
	xf_joint_rings_free(&jr);
	xf_nlsq_result_free(&res);
	for (int k = 0; k < N_RINGS; k++)
		xf_synth_free(&rings[k]);
}

static void test_agreeing_rings(void **state)
{
	(void)state;
	xf_dataset rings[3];
	xf_nlsq_result res;
	xf_joint_rings jr;
	make_rings(rings, 3, 1.0);
	judge(rings, 3, &res, &jr);
	common_checks(&res, &jr, 3);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(jr.chk[k].t.flagged, 0);
		assert_int_equal(jr.chk[k].uninformed, 0);
	}
	assert_int_equal(res.quality.overall, XF_QUALITY_GOOD);
	xf_joint_rings_free(&jr);
	xf_nlsq_result_free(&res);
	for (int k = 0; k < 3; k++)
		xf_synth_free(&rings[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outlier_ring_flagged),
		cmocka_unit_test(test_agreeing_rings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
