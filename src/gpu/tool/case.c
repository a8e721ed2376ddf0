/* case.c — the workload of xpcsfit-gpu: the `make bench` dataset (tests/support/synth.c),
 * its production problem (from a problem request written here: the config's defaults,
 * starts at the truth; no config, adr/0043), and two evaluators of it, CPU and GPU. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/tool/tool.h"
#include "synth.h"
#include "util/clock.h"

double tool_now(void)
{
	return xf_monotonic_s();
}

/* The request of a config with every default (xf_request_defaults) and the starts at the
 * benchmark's truth. */
static void bench_request(xf_request *req, xf_mode mode)
{
	const double truth[XF_N_PHYS] = XF_BENCH_TRUTH;
	xf_request_defaults(req, mode);
	for (int k = 0; k < XF_N_PHYS; k++) {
		req->start[k] = truth[k];
		req->value_given[k] = 1;
	}
}

int tool_case_init(tool_case *c, xf_mode mode, int n_frames, int n_phi, int threads, int fp32)
{
	xf_error err = { 0 };
	memset(c, 0, sizeof *c);
	if (xf_synth_benchmark(n_frames, n_phi, &c->ds)) {
		fprintf(stderr, "xpcsfit-gpu: out of memory for %d frames\n", n_frames);
		return -1;
	}
	c->have_ds = 1;
	bench_request(&c->req, mode);
	if (xf_problem_build(&c->pr, &c->req, &c->ds, &err))
		goto fail;
	c->have_pr = 1;
	xf_pairset_all(&c->ps, c->ds.n_frames);
	c->pool = xf_pool_create(threads);
	c->x = malloc(sizeof(double) * (size_t)c->pr.n_full);
	if (!c->pool || !c->x) {
		xf_fail(&err, XF_ERR_NOMEM, "out of memory");
		goto fail;
	}
	memcpy(c->x, c->pr.start, sizeof(double) * (size_t)c->pr.n_full);
	c->x[XF_P_D0] *= 1.3; /* off the truth: residuals are not noise only */
	if (!(c->cpu = xf_lik_create(&c->pr, &c->ps, c->pool, &err)) ||
	    (fp32 >= 0 && (!(c->gpu = xf_lik_create(&c->pr, &c->ps, NULL, &err)) ||
			   xf_lik_use_gpu(c->gpu, fp32, XF_GPU_MAX_DEVICES, &err))))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "xpcsfit-gpu: %s\n", err.msg);
	tool_case_free(c);
	return -1;
}

void tool_case_free(tool_case *c)
{
	xf_lik_destroy(c->cpu);
	xf_lik_destroy(c->gpu);
	xf_pool_destroy(c->pool);
	free(c->x);
	if (c->have_pr)
		xf_problem_free(&c->pr);
	if (c->have_ds)
		xf_synth_free(&c->ds);
	memset(c, 0, sizeof *c);
}

int tool_data_init(const tool_case *c, xf_gpu_data *d)
{
	size_t n = (size_t)c->ds.n_frames, na = (size_t)c->pr.n_phi;
	size_t np = xf_fitted_pairs(n), k = 0;
	uint32_t *pi = malloc(sizeof(uint32_t) * np), *pj = malloc(sizeof(uint32_t) * np);
	double *c2 = malloc(sizeof(double) * np * na);
	*d = (xf_gpu_data){ c->pr.mode, c->pr.grid.shear_model, (int)n, (int)na, np, pi, pj, c2 };
	if (!pi || !pj || !c2) {
		tool_data_free(d);
		return -1;
	}
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++, k++) {
			pi[k] = (uint32_t)i;
			pj[k] = (uint32_t)j;
			for (size_t p = 0; p < na; p++)
				c2[k * na + p] =
					xf_dataset_c2(&c->ds, (int)p, xf_packed_index(n, i, j));
		}
	return 0;
}

void tool_data_free(xf_gpu_data *d)
{
	free((void *)d->pair_i);
	free((void *)d->pair_j);
	free((void *)d->c2);
	d->pair_i = d->pair_j = NULL;
	d->c2 = NULL;
}

const xf_model_record *tool_gpu_model(int k)
{
	for (int m = 0; m < xf_model_count(); m++) {
		const xf_model_record *model = xf_model_at(m);
		if (!model->g1 && k-- == 0)
			return model;
	}
	return NULL;
}

const xf_model_record *tool_costliest_model(void)
{
	const xf_model_record *best = tool_gpu_model(0), *m;
	for (int k = 1; (m = tool_gpu_model(k)) != NULL; k++)
		if (m->n_phys > best->n_phys)
			best = m;
	return best;
}
