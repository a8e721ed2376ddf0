/* bench_cmc.c — what CMC costs (issue: one laminar_flow shard of ~8 000 points over 23
 * angles, 4 chains × (500 + 1500), dense metric, 2 virtual devices, wall ≤ 8 s), and the
 * extrapolation to the whole 23 × 1000-frame dataset. One real shard of the big dataset
 * is sampled (its pairs spread over every lag, as in a real run), not a small dataset.
 * Prints numbers; asserts nothing. Usage: bench_cmc [n_frames n_phi threads] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmc/cmc_internal.h"
#include "synth.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"
#include "services/nlsq.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n_frames = argc > 1 ? atoi(argv[1]) : 1000;
	int n_phi = argc > 2 ? atoi(argv[2]) : 23;
	int threads = argc > 3 ? atoi(argv[3]) : 2;
	xf_log_set_stderr(1, 0);
	const double truth[7] = XF_BENCH_TRUTH;
	xf_dataset ds;
	if (xf_synth_benchmark(n_frames, n_phi, &ds))
		return 1;
	double start[7];
	for (int k = 0; k < 7; k++)
		start[k] = truth[k] * 1.2;
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_LAMINAR, start);
	/* shards of ~8 000 points, as the old auto made them (auto is now K = 1, adr/0042):
	 * what one consensus shard costs */
	fc.cmc.max_points_per_shard = 8000;
	xf_error err = { 0 };
	xf_nlsq_result nlsq;
	xf_request req = xf_test_fit_request(&fc); /* built once: NLSQ and the shards use it */
	double t0 = now_s();
	if (xf_nlsq_fit(&req, &fc.opt, &ds, threads, NULL, NULL, &nlsq, &err)) {
		fprintf(stderr, "nlsq: %s\n", err.msg);
		return 1;
	}
	printf("data: laminar_flow, %d angles x %d frames, %zu points; NLSQ warm start %.2f s "
	       "(%s)\n",
	       n_phi, n_frames, ds.n_points, now_s() - t0, xf_fit_status_name(nlsq.status));
	xf_estimate warm; /* what the shards start from */
	if (xf_nlsq_estimate(&nlsq, &req, &ds, NULL, &warm, &err)) {
		fprintf(stderr, "nlsq: %s\n", err.msg);
		return 1;
	}
	char dir[] = "/tmp/xf_bench_cmc_XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	const int n_sampled = 2; /* shards timed: the first two of K */
	double wall_sum = 0.0, ess_per_s_min = 1e300;
	long n_shards = 0;
	for (long id = 0; id < n_sampled; id++) {
		xf_cmc_shard sh;
		t0 = now_s();
		if (xf_cmc_sample_one(&req, &fc.cmc, &ds, &warm, threads, dir, id, &n_shards, &sh,
				      &err)) {
			fprintf(stderr, "cmc: %s\n", err.msg);
			return 1;
		}
		double wall = now_s() - t0;
		wall_sum += wall;
		double ess_s = sh.ess_bulk_min / wall;
		if (ess_s < ess_per_s_min)
			ess_per_s_min = ess_s;
		printf("shard %ld of %ld: %zu points, %d chains x (%d + %d), dense, %d devices: "
		       "wall %.2f s\n",
		       id, n_shards, sh.n_points, fc.cmc.num_chains, fc.cmc.num_warmup,
		       fc.cmc.num_samples, threads, wall);
		printf("  gradient evaluations %ld (%.0f /s), %.1f Mpoints/s, mean tree depth "
		       "%.2f, step size %.3f\n",
		       sh.grad_evals, sh.grad_evals / wall,
		       sh.grad_evals * (double)sh.n_points / wall / 1e6, sh.mean_depth,
		       sh.step_size_mean);
		printf("  min bulk ESS %.0f (%.0f /s), max R-hat %.4f, divergence rate %.4f, "
		       "E-BFMI min %.2f\n",
		       sh.ess_bulk_min, ess_s, sh.rhat_max, sh.divergence_rate, sh.ebfmi_min);
		xf_cmc_shard_free(&sh);
	}
	double per_shard = wall_sum / n_sampled;
	/* every shard costs about the same; on P cores, P/2 such 2-device jobs run at once */
	printf("whole dataset: %ld shards x %.2f s = %.0f s (%.1f h) on this machine; on a 64-core "
	       "node (32 shards at a time, same per-core speed) %.0f s (%.1f min)\n",
	       n_shards, per_shard, n_shards * per_shard, n_shards * per_shard / 3600.0,
	       n_shards * per_shard / 32.0, n_shards * per_shard / 32.0 / 60.0);
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	xf_estimate_free(&warm);
	xf_nlsq_result_free(&nlsq);
	xf_synth_free(&ds);
	return 0;
}
