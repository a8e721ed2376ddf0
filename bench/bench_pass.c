/* bench_pass.c — time one accumulation pass (χ², JᵀJ, Jᵀr over all points) and a whole
 * in-memory fit on the workload: 23 angles × 1000 frames laminar_flow, auto mode.
 * Prints numbers; asserts nothing (speed belongs in benchmarks, not tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"

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
	xf_config cfg;
	xf_config_defaults(&cfg);
	cfg.mode = XF_MODE_LAMINAR;
	const double start[7] = { 1500.0, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0 };
	for (int k = 0; k < 7; k++) {
		cfg.values[k] = start[k];
		cfg.value_given[k] = 1;
	}
	xf_problem pr;
	xf_error err = { 0 };
	xf_pairset all;
	xf_pairset_all(&all, ds.n_frames);
	xf_pool *pool = xf_pool_create(threads);
	xf_lik *lik = NULL;
	if (xf_problem_build(&pr, &cfg, &ds, &err) || !pool ||
	    !(lik = xf_lik_create(&pr, &all, pool, &err))) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	double *jtj = malloc(sizeof(double) * pr.n_full * pr.n_full),
	       *b = malloc(sizeof(double) * pr.n_full);
	double best = 1e30;
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now_s();
		xf_lik_eval(lik, pr.start, &out);
		double dt = now_s() - t0;
		if (dt < best)
			best = dt;
	}
	printf("pass: %zu points, %d threads: %.4f s per pass, %.1f Mpoints/s\n", ds.n_points,
	       threads, best, ds.n_points / best / 1e6);
	/* the lighter passes: χ² and Jᵀr (NUTS), χ² alone (the CMC self-check) */
	const char *level_names[2] = { "gradient (chi2 + J^T r)", "value (chi2)" };
	for (int level = 0; level < 2; level++) {
		xf_lik_out lo = { 0.0, NULL, level == 0 ? b : NULL, 0.0 };
		double t_best = 1e30;
		for (int rep = 0; rep < 5; rep++) {
			double t0 = now_s();
			xf_lik_eval(lik, pr.start, &lo);
			double dt = now_s() - t0;
			if (dt < t_best)
				t_best = dt;
		}
		printf("pass, %s: %.4f s, %.1f Mpoints/s\n", level_names[level], t_best,
		       ds.n_points / t_best / 1e6);
	}
	xf_lik_destroy(lik);
	xf_pool_destroy(pool);
	xf_problem_free(&pr);
	free(jtj);
	free(b);
	/* the strategies from the two kinds of start: 20-40 % off the truth, and far
	 * (two parameters at 0, scale parameters a decade off) */
	const double starts[2][7] = { { 1300.0, -1.0, 4.0, 0.013, -0.15, 0.0004, 0.0 },
				      { 10000.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0 } };
	const char *start_names[2] = { "20-40 % off", "far" };
	const char *strategies[3] = { "default (screened search)", "direct path",
				      "hierarchical path" };
	for (int st = 0; st < 2; st++)
		for (int sg = 0; sg < 3; sg++) {
			for (int k = 0; k < 7; k++)
				cfg.values[k] = starts[st][k];
			cfg.nlsq.start_search = sg == 0;
			cfg.nlsq.hierarchical = sg == 2;
			xf_nlsq_result res;
			double t0 = now_s();
			if (xf_nlsq_fit(&cfg, &ds, threads, NULL, NULL, &res, &err))
				return 1;
			double t_fit = now_s() - t0;
			printf("fit from %s, %s: %s (%s), chi2 %.10g, %d iterations on all the "
			       "data, "
			       "%.1f whole-data pass equivalents, %.3f s\n",
			       start_names[st], strategies[sg], res.status, res.stop_reason,
			       res.chi_squared, res.iterations, res.search.pass_equivalents, t_fit);
			if (st == 0 && sg == 0)
				for (int k = 0; k < 7; k++)
					printf("  %-20s %.6g +/- %.3g (truth %.6g)\n", res.names[k],
					       res.values[k], res.uncertainties[k], truth[k]);
			xf_nlsq_result_free(&res);
		}
	xf_synth_free(&ds);
	return 0;
}
