/* bench_pass.c — time the likelihood passes (χ², JᵀJ, Jᵀr; χ² and Jᵀr; χ² alone) and a
 * whole in-memory fit on the workload: 23 angles × 1000 frames laminar_flow, in
 * auto and individual scaling, and the passes of the static kernel on the same data. Each pass is also printed as a multiple of two limits
 * measured in the same run (issue #12):
 *   - stream: a bare streaming read of the fitted data (every c2 value once, summed), on
 *     the same threads: the memory-bandwidth floor of any pass;
 *   - model: a bare values-only model pass on one thread (per pair the diffusion factor,
 *     per point libm sincos, g1, c2; no data, no derivatives, no vectors): what the
 *     model costs written the plain way, the yardstick of the kernel's speed.
 * Prints numbers; asserts nothing (speed belongs in benchmarks, not tests). Each time is
 * the median of REPEATS runs. Last, a joint pass over 4 q rings ÷ the sum of its
 * single-ring passes (adr/0064; `bench_pass N PHI THREADS --rings-only` runs it alone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/kernel.h"
#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"

#define REPEATS 7

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of the process (all threads): on a shared machine the wall time of a pass
 * depends on what else runs, its CPU time much less. */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The streaming limit: tasks of one angle's slice of the fitted pairs, summed. */
#define STREAM_SLICES 16
typedef struct stream_ctx {
	const xf_dataset *ds;
	size_t first, count; /* packed index of the first fitted pair, fitted span */
	double sums[64 * STREAM_SLICES];
} stream_ctx;

static void stream_task(void *arg, int task)
{
	stream_ctx *c = arg;
	int p = task / STREAM_SLICES, slice = task % STREAM_SLICES;
	size_t lo = c->first + c->count * (size_t)slice / STREAM_SLICES;
	size_t hi = c->first + c->count * (size_t)(slice + 1) / STREAM_SLICES;
	const double *x = c->ds->c2[p];
	double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
	size_t k = lo;
	for (; k + 4 <= hi; k += 4) {
		s0 += x[k];
		s1 += x[k + 1];
		s2 += x[k + 2];
		s3 += x[k + 3];
	}
	for (; k < hi; k++)
		s0 += x[k];
	c->sums[task] = (s0 + s1) + (s2 + s3);
}

static double stream_pass(const xf_dataset *ds, xf_pool *pool, double *bytes)
{
	static stream_ctx c;
	size_t n = (size_t)ds->n_frames;
	c.ds = ds;
	c.first = xf_packed_index(n, 1, 2); /* the fitted pairs: rows 1 .. n−2 above the diagonal */
	c.count = xf_packed_index(n, n - 1, n - 1) - c.first;
	int n_tasks = ds->n_phi * STREAM_SLICES;
	if (ds->n_phi > 64)
		return NAN;
	double t0 = now_s();
	xf_pool_run(pool, n_tasks, stream_task, &c);
	double dt = now_s() - t0, sum = 0.0;
	for (int t = 0; t < n_tasks; t++)
		sum += c.sums[t];
	if (sum == 42.0) /* keep the sums alive */
		printf(" ");
	*bytes = sizeof(double) * (double)c.count * ds->n_phi;
	return dt;
}

/* The model limit: c2 of every fitted point, values only, one thread, libm sincos. */
static double model_pass(const xf_problem *pr, const double *x, double *cpu)
{
	xf_frames f;
	int n = pr->ds->n_frames, n_phi = pr->n_phi;
	double *con = malloc(sizeof(double) * 3 * (size_t)n_phi), *off = con + n_phi,
	       *cos_a = off + n_phi;
	if (xf_frames_alloc(&f, n, 1))
		return NAN;
	double t0 = now_s(), c0 = cpu_s();
	xf_frames_compute(&f, &pr->grid, x);
	xf_problem_scaling(pr, x, con, off);
	for (int p = 0; p < n_phi; p++)
		cos_a[p] = cos((x[XF_P_PHI0] - pr->ds->phi_deg[p]) * XF_DEG2RAD);
	double sum = 0.0;
	for (int i = 1; i + 1 < n; i++)
		for (int j = i + 1; j < n; j++) {
			double dd = f.cd[i] - f.cd[j], dg = f.cg[i] - f.cg[j];
			double g1d =
				exp(fmax(-f.w * sqrt(dd * dd + XF_INTEGRAL_EPS2), XF_LOG_G1_MIN));
			double s_ig = f.s * sqrt(dg * dg + XF_INTEGRAL_EPS2);
			for (int p = 0; p < n_phi; p++) {
				double ph = s_ig * cos_a[p], sinc = 1.0;
				if (fabs(ph) >= XF_SINC_TAYLOR_X) {
					double sn, cs;
					sincos(ph, &sn, &cs);
					sinc = sn / ph;
				}
				double g1 = fmax(g1d * sinc * sinc, XF_G1_FLOOR);
				sum += off[p] + con[p] * g1 * g1;
			}
		}
	double dt = now_s() - t0;
	*cpu = cpu_s() - c0;
	if (sum == 42.0)
		printf(" ");
	xf_frames_free(&f);
	free(con);
	return dt;
}

/* Median time of one pass at a level (0 JᵀJ, 1 gradient, 2 value). */
static double time_pass(xf_lik *lik, const double *x, int level, double *jtj, double *b,
			double *cpu)
{
	double t[REPEATS], c[REPEATS];
	xf_lik_out out = { 0.0, level == 0 ? jtj : NULL, level <= 1 ? b : NULL, 0.0 };
	for (int rep = 0; rep < REPEATS; rep++) {
		double t0 = now_s(), c0 = cpu_s();
		xf_lik_eval(lik, x, &out);
		t[rep] = now_s() - t0;
		c[rep] = cpu_s() - c0;
	}
	*cpu = median(c, REPEATS);
	return median(t, REPEATS);
}

/* The three passes of one scaling mode, in seconds and as multiples of the limits. */
static int bench_mode(const xf_test_fit *fc, const xf_dataset *ds, xf_pool *pool, int threads,
		      double t_stream, double *t_model, double *c_model, double *t_hessian)
{
	xf_problem pr;
	xf_error err = { 0 };
	xf_pairset all;
	xf_pairset_all(&all, ds->n_frames);
	xf_lik *lik = NULL;
	xf_request req = xf_test_fit_request(fc);
	if (xf_problem_build(&pr, &req, ds, &err) ||
	    !(lik = xf_lik_create(&pr, &all, pool, &err))) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (*t_model == 0.0) {
		double t[REPEATS], c[REPEATS];
		for (int rep = 0; rep < REPEATS; rep++)
			t[rep] = model_pass(&pr, pr.start, &c[rep]);
		*t_model = median(t, REPEATS);
		*c_model = median(c, REPEATS);
		printf("limit, bare model pass (values only, libm sincos, 1 thread): %.4f s "
		       "(cpu %.4f s), %.1f Mpoints/s\n",
		       *t_model, *c_model, ds->n_points / *t_model / 1e6);
	}
	double *jtj = malloc(sizeof(double) * pr.n_full * pr.n_full),
	       *b = malloc(sizeof(double) * pr.n_full);
	const char *names[3] = { "chi2, J^T J, J^T r", "gradient (chi2 + J^T r)", "value (chi2)" };
	const char *mode = xf_scaling_mode_name(pr.scaling->mode);
	for (int level = 0; level < 3; level++) {
		double cpu, t = time_pass(lik, pr.start, level, jtj, b, &cpu);
		if (level == 0)
			*t_hessian = t;
		printf("pass %-10s %-24s %d threads: %.4f s, %6.1f Mpoints/s, %5.2f x stream, "
		       "%5.2f x model (cpu %.4f s, %.2f x model's)\n",
		       mode, names[level], threads, t, ds->n_points / t / 1e6, t / t_stream,
		       t / *t_model, cpu, cpu / *c_model);
	}
	/* the posterior's importance route (adr/0045): χ² of XF_LIK_BATCH points in one sweep
	 * over the data, per point, against one value pass per point */
	double *xs = malloc(sizeof(double) * XF_LIK_BATCH * (size_t)pr.n_full);
	double chi2[XF_LIK_BATCH], tb[REPEATS], cb[REPEATS];
	for (int i = 0; i < XF_LIK_BATCH; i++)
		for (int k = 0; k < pr.n_full; k++)
			xs[(size_t)i * pr.n_full + k] = pr.start[k] * (1.0 + 1e-4 * i);
	for (int rep = 0; rep < REPEATS; rep++) {
		double t0 = now_s(), c0 = cpu_s();
		xf_lik_eval_values(lik, XF_LIK_BATCH, xs, chi2);
		tb[rep] = (now_s() - t0) / XF_LIK_BATCH;
		cb[rep] = (cpu_s() - c0) / XF_LIK_BATCH;
	}
	double cpu1, t1 = time_pass(lik, pr.start, 2, jtj, b, &cpu1);
	printf("pass %-10s %-24s %d threads: %.4f s a point (cpu %.4f s), %.2f x one value pass "
	       "each\n",
	       mode, "value, 16 points a sweep", threads, median(tb, REPEATS), median(cb, REPEATS),
	       median(tb, REPEATS) / t1);
	/* the route's conditional scaling (adr/0081): χ² with the scaling blocks of JᵀJ and
	 * Jᵀr, one pass a proposal point */
	for (int rep = 0; rep < REPEATS; rep++) {
		double t0 = now_s(), c0 = cpu_s(), c2;
		xf_lik_eval_scaling(lik, pr.start, &c2, jtj, b);
		tb[rep] = now_s() - t0;
		cb[rep] = cpu_s() - c0;
	}
	printf("pass %-10s %-24s %d threads: %.4f s (cpu %.4f s), %.2f x one value pass\n", mode,
	       "scaling (chi2 + H_ss, b_s)", threads, median(tb, REPEATS), median(cb, REPEATS),
	       median(tb, REPEATS) / t1);
	/* the route as it runs (adr/0094): XF_LIK_BATCH scaling passes in one sweep, per point */
	int ns = 2 * pr.n_basis;
	double *hs = malloc(sizeof(double) * XF_LIK_BATCH * (size_t)ns * ns);
	double *bs = malloc(sizeof(double) * XF_LIK_BATCH * (size_t)ns);
	for (int rep = 0; rep < REPEATS && hs && bs; rep++) {
		double t0 = now_s(), c0 = cpu_s();
		xf_lik_eval_scalings(lik, XF_LIK_BATCH, xs, chi2, hs, bs);
		tb[rep] = (now_s() - t0) / XF_LIK_BATCH;
		cb[rep] = (cpu_s() - c0) / XF_LIK_BATCH;
	}
	printf("pass %-10s %-24s %d threads: %.4f s a point (cpu %.4f s), %.2f x one value pass "
	       "each\n",
	       mode, "scaling, 16 points a sweep", threads, median(tb, REPEATS),
	       median(cb, REPEATS), median(tb, REPEATS) / t1);
	free(hs);
	free(bs);
	/* exact NUTS with the scaling integrated out (adr/0086): one collapse pass a leapfrog
	 * step, against the gradient pass the full sampler makes */
	double *angle = malloc(sizeof(double) * (size_t)pr.n_phi * 3 * pr.n_phys);
	for (int rep = 0; rep < REPEATS; rep++) {
		double t0 = now_s(), c0 = cpu_s(), c2;
		xf_lik_eval_collapse(lik, pr.start, &c2, jtj, b, angle);
		tb[rep] = now_s() - t0;
		cb[rep] = cpu_s() - c0;
	}
	double cpu_g, t_g = time_pass(lik, pr.start, 1, jtj, b, &cpu_g);
	printf("pass %-10s %-24s %d threads: %.4f s (cpu %.4f s), %.2f x one gradient pass\n", mode,
	       "collapse (NUTS, adr/0086)", threads, median(tb, REPEATS), median(cb, REPEATS),
	       median(tb, REPEATS) / t_g);
	free(angle);
	free(xs);
	xf_lik_destroy(lik);
	xf_problem_free(&pr);
	free(jtj);
	free(b);
	return 0;
}

/* A joint pass over rings (adr/0064) against the single-ring passes it sums: N_RINGS
 * rings of RING_ANGLES angles each at q = 0.0054·(1, 1.5, 2, 2.5) Å⁻¹, the benchmark's
 * truth and frames, individual scaling in both; the time of the joint pass ÷ the sum of the rings' (issue 26: ≈ 1). */
#define N_RINGS	    4
#define RING_ANGLES 6
static int bench_rings(const xf_test_fit *fc, int n_frames, xf_pool *pool, int threads)
{
	const double truth[7] = XF_BENCH_TRUTH;
	xf_dataset ring[N_RINGS], joint;
	xf_problem pr[N_RINGS], pj;
	xf_lik *lik[N_RINGS], *lj;
	double slot_q[N_RINGS * RING_ANGLES], phi[RING_ANGLES], con[RING_ANGLES], off[RING_ANGLES];
	xf_error err = { 0 };
	xf_pairset ps;
	xf_pairset_all(&ps, n_frames);
	xf_request req = xf_test_fit_request(fc);
	req.per_angle_mode = XF_SCALING_INDIVIDUAL; /* what a joint fit uses (adr/0064) */
	for (int a = 0; a < RING_ANGLES; a++) {
		phi[a] = -90.0 + 180.0 * a / RING_ANGLES;
		con[a] = 0.3;
		off[a] = 1.0;
	}
	for (int k = 0; k < N_RINGS; k++) {
		xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE,	       n_frames,
				    0.001,	     0.0054 * (1.0 + 0.5 * k), 2e6 };
		if (xf_synth_dataset(&g, truth, RING_ANGLES, phi, con, off, 1e-3, (uint64_t)k + 1,
				     &ring[k]) ||
		    xf_problem_build(&pr[k], &req, &ring[k], &err) ||
		    !(lik[k] = xf_lik_create(&pr[k], &ps, pool, &err)))
			return 1;
	}
	if (xf_synth_join(N_RINGS, ring, &joint, slot_q))
		return 1;
	req.n_slot_q = joint.n_phi;
	req.slot_q = slot_q;
	if (xf_problem_build(&pj, &req, &joint, &err) ||
	    !(lj = xf_lik_create(&pj, &ps, pool, &err))) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	size_t nf = (size_t)pj.n_full;
	double *jtj = malloc(sizeof(double) * nf * nf), *b = malloc(sizeof(double) * nf), cpu;
	const char *level_names[3] = { "JtJ", "gradient", "value" };
	for (int level = 0; level < 3; level++) {
		double t_joint = time_pass(lj, pj.start, level, jtj, b, &cpu), t_sum = 0.0;
		double c_joint = cpu, c_sum = 0.0;
		for (int k = 0; k < N_RINGS; k++) {
			t_sum += time_pass(lik[k], pr[k].start, level, jtj, b, &cpu);
			c_sum += cpu;
		}
		/* the CPU-time ratio as well: on a loaded machine the wall time of a few-ms
		 * pass is mostly waiting, its CPU time is not */
		printf("rings: joint / sum of single rings, %s pass (%d rings x %d angles, %d "
		       "frames, %d threads): %.4f s / %.4f s = %.3f wall, %.3f cpu "
		       "(target ~1)\n",
		       level_names[level], N_RINGS, RING_ANGLES, n_frames, threads, t_joint, t_sum,
		       t_joint / t_sum, c_joint / c_sum);
	}
	free(jtj);
	free(b);
	xf_lik_destroy(lj);
	xf_problem_free(&pj);
	xf_synth_free(&joint);
	for (int k = 0; k < N_RINGS; k++) {
		xf_lik_destroy(lik[k]);
		xf_problem_free(&pr[k]);
		xf_synth_free(&ring[k]);
	}
	xf_pairset_free(&ps);
	return 0;
}

int main(int argc, char **argv)
{
	int n_frames = argc > 1 ? atoi(argv[1]) : 1000;
	int n_phi = argc > 2 ? atoi(argv[2]) : 23;
	int threads = argc > 3 ? atoi(argv[3]) : 2;
	int passes_only = argc > 4 && !strcmp(argv[4], "--passes-only"); /* no fits */
	int rings_only = argc > 4 && !strcmp(argv[4], "--rings-only");
	xf_log_set_stderr(1, 0);
	const double truth[7] = XF_BENCH_TRUTH;
	xf_dataset ds;
	if (xf_synth_benchmark(n_frames, n_phi, &ds))
		return 1;
	const double start[7] = { 1500.0, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0 };
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_LAMINAR, start);
	xf_error err = { 0 };
	xf_pool *pool = xf_pool_create(threads);
	if (!pool)
		return 1;
	if (rings_only) {
		int rc = bench_rings(&fc, n_frames, pool, threads);
		xf_pool_destroy(pool);
		xf_synth_free(&ds);
		return rc;
	}
	double t[REPEATS], bytes = 0.0;
	for (int rep = 0; rep < REPEATS; rep++)
		t[rep] = stream_pass(&ds, pool, &bytes);
	double t_stream = median(t, REPEATS), t_model = 0.0, c_model = 0.0, t_auto = 0.0,
	       t_individual = 0.0;
	printf("limit, bare streaming read of the data (%.0f MB, %d threads): %.4f s, %.1f GB/s\n",
	       bytes / 1e6, threads, t_stream, bytes / t_stream / 1e9);
	if (bench_mode(&fc, &ds, pool, threads, t_stream, &t_model, &c_model, &t_auto))
		return 1;
	fc.opt.per_angle_mode = XF_SCALING_INDIVIDUAL;
	if (bench_mode(&fc, &ds, pool, threads, t_stream, &t_model, &c_model, &t_individual))
		return 1;
	fc.opt.per_angle_mode = XF_SCALING_AUTO;
	printf("pass: %zu points, %d threads: %.4f s per JtJ pass (auto), individual/auto %.2f\n",
	       ds.n_points, threads, t_auto, t_individual / t_auto);
	/* the static kernel (pass_hessian.c, pass_gradient.c) on the same data and settings:
	 * its multiples of the model limit are of the laminar model pass */
	double t_static = 0.0;
	fc.req.mode = XF_MODE_STATIC;
	printf("static mode (the multiples of 'model' are of the laminar model pass):\n");
	if (bench_mode(&fc, &ds, pool, threads, t_stream, &t_model, &c_model, &t_static))
		return 1;
	fc.req.mode = XF_MODE_LAMINAR;
	if (bench_rings(&fc, n_frames, pool, threads))
		return 1;
	xf_pool_destroy(pool);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS so far: %.1f MB, %.2f x the fitted data (%.1f MB in fp64)\n",
	       ru.ru_maxrss / 1e3, ru.ru_maxrss * 1e3 / bytes, bytes / 1e6);
	if (passes_only) {
		xf_synth_free(&ds);
		return 0;
	}
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
				fc.req.start[k] = starts[st][k];
			fc.opt.start_search = sg == 0;
			fc.opt.hierarchical = sg == 2;
			xf_nlsq_result res;
			double t0 = now_s();
			if (xf_test_fit_run(&fc, &ds, threads, &res, &err))
				return 1;
			double t_fit = now_s() - t0;
			printf("fit from %s, %s: %s (%s), chi2 %.10g, %d iterations on all the "
			       "data, "
			       "%.1f whole-data pass equivalents, %.3f s\n",
			       start_names[st], strategies[sg], xf_fit_status_name(res.status),
			       res.stop_reason, res.chi_squared, res.iterations,
			       res.search.pass_equivalents, t_fit);
			if (st == 0 && sg == 0)
				for (int k = 0; k < 7; k++)
					printf("  %-20s %.6g +/- %.3g (truth %.6g)\n", res.names[k],
					       res.values[k], res.uncertainties[k], truth[k]);
			xf_nlsq_result_free(&res);
		}
	xf_synth_free(&ds);
	return 0;
}
