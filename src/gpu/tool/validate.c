/* validate.c — xpcsfit-gpu validate: the production CPU pass and the GPU on the same
 * inputs, static and laminar; fp64 must agree at XF_VALIDATE_REL (spec/gpu.md: libm
 * differences only), the fp32 option is reported, not judged. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/slot.h"
#include "gpu/tool/tool.h"
#include "gpu/tool/tool_params.h"
#include "util/files.h"

/* fp64 pass/fail bound on the normwise relative difference: the sums are the same terms
 * added in another order over ~1e5–1e7 points (spec/gpu.md expects ~1e-12). */
#define XF_VALIDATE_REL 1e-10

typedef struct diff_row {
	char name[48];
	double abs, rel; /* max |gpu − cpu|, that over max |cpu| */
	int judged;	 /* fp64: counts towards the exit status */
} diff_row;

typedef struct diff_table {
	diff_row row[32];
	int n;
} diff_table;

static void add_diff(diff_table *t, const char *mode, const char *what, const double *gpu,
		     const double *cpu, size_t n, int judged)
{
	double da = 0.0, scale = 0.0;
	for (size_t k = 0; k < n; k++) {
		da = fmax(da, fabs(gpu[k] - cpu[k]));
		scale = fmax(scale, fabs(cpu[k]));
	}
	if (t->n == 32)
		return;
	diff_row *r = &t->row[t->n++];
	snprintf(r->name, sizeof r->name, "%s %s", mode, what);
	r->abs = da;
	r->rel = scale > 0.0 ? da / scale : da;
	r->judged = judged;
}

/* The passes of one mode: CPU pass vs GPU pass (Hessian and gradient level), the c2
 * kernel and the same-order reference, the fp32 option. */
static int validate_mode(const tool_opts *o, xf_mode mode, diff_table *t)
{
	const char *name = xf_mode_name(mode);
	tool_case c, c32;
	if (tool_case_init(&c, mode, o->n_frames, o->n_phi, o->threads, 0))
		return -1;
	int nf = c.pr.n_full, rc = -1;
	size_t nt = (size_t)xf_gpu_total_doubles(c.pr.n_phi);
	size_t np = xf_fitted_pairs((size_t)c.ds.n_frames) * (size_t)c.pr.n_phi;
	double *buf = malloc(sizeof(double) * (4 * (size_t)nf * nf + 4 * nf + 2 * nt + 2 * np));
	xf_gpu_data d = { 0 };
	tool_params tp;
	int have_tp = 0;
	xf_gpu_ctx *ctx = NULL;
	char msg[200];
	if (!buf || tool_data_init(&c, &d) || tool_params_init(&c, &tp))
		goto done;
	have_tp = 1;
	double *jc = buf, *jg = jc + nf * nf, *bc = jg + nf * nf, *bg = bc + nf;
	double *tc = bg + nf, *tg = tc + nt, *pc = tg + nt, *pg = pc + np;
	xf_lik_out oc = { 0, jc, bc, 0 }, og = { 0, jg, bg, 0 };
	if (xf_lik_eval(c.cpu, c.x, &oc) || xf_lik_eval(c.gpu, c.x, &og))
		goto done;
	add_diff(t, name, "chi2", &og.chi2, &oc.chi2, 1, 1);
	add_diff(t, name, "JtJ", jg, jc, (size_t)nf * nf, 1);
	add_diff(t, name, "Jtr", bg, bc, (size_t)nf, 1);
	/* NUTS: log-likelihood −χ²/2 and its gradient b, the gradient-level pass */
	xf_lik_out gc = { 0, NULL, bc, 0 }, gg = { 0, NULL, bg, 0 };
	if (xf_lik_eval(c.cpu, c.x, &gc) || xf_lik_eval(c.gpu, c.x, &gg))
		goto done;
	double llc = -0.5 * gc.chi2, llg = -0.5 * gg.chi2;
	add_diff(t, name, "log-likelihood", &llg, &llc, 1, 1);
	add_diff(t, name, "gradient", bg, bc, (size_t)nf, 1);
	/* c2 and the kernels' own order: the host build of the shared header */
	int dev = 0;
	double score = 1.0;
	if (!(ctx = xf_gpu_create(&d, &dev, &score, 1, 0, msg, sizeof msg))) {
		fprintf(stderr, "xpcsfit-gpu: %s\n", msg);
		goto done;
	}
	if (xf_gpu_c2(ctx, &tp.prm, pg, NULL) ||
	    xf_gpu_accumulate(ctx, &tp.prm, XF_GPU_HESSIAN, tg, NULL))
		goto done;
	xf_gpu_ref_c2(&d, &tp.prm, pc);
	xf_gpu_ref_accumulate(&d, &tp.prm, XF_GPU_HESSIAN, 0, xf_gpu_blocks(d.n_pairs), tc);
	add_diff(t, name, "c2", pg, pc, np, 1);
	add_diff(t, name, "sums, kernel order", tg, tc, nt, 1);
	/* fp32 evaluation, fp64 sums: what it does to chi2 and the step's right-hand side */
	if (tool_case_init(&c32, mode, o->n_frames, o->n_phi, o->threads, 1))
		goto done;
	xf_lik_out o32 = { 0, jg, bg, 0 };
	int bad32 = xf_lik_eval(c32.gpu, c32.x, &o32);
	tool_case_free(&c32);
	if (bad32)
		goto done;
	add_diff(t, name, "fp32 chi2", &o32.chi2, &oc.chi2, 1, 0);
	add_diff(t, name, "fp32 JtJ", jg, jc, (size_t)nf * nf, 0);
	rc = 0;
done:
	xf_gpu_destroy(ctx);
	if (have_tp)
		tool_params_free(&tp);
	tool_data_free(&d);
	free(buf);
	tool_case_free(&c);
	return rc;
}

static int write_json(const char *path, const diff_table *t, int ok)
{
	cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "differences");
	cJSON_AddStringToObject(root, "tool", "xpcsfit-gpu validate");
	cJSON_AddNumberToObject(root, "rel_bound", XF_VALIDATE_REL);
	cJSON_AddBoolToObject(root, "ok", ok);
	for (int k = 0; k < t->n; k++) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "what", t->row[k].name);
		cJSON_AddNumberToObject(r, "max_abs", t->row[k].abs);
		cJSON_AddNumberToObject(r, "max_rel", t->row[k].rel);
		cJSON_AddBoolToObject(r, "judged", t->row[k].judged);
		cJSON_AddItemToArray(rows, r);
	}
	char *text = cJSON_Print(root);
	xf_error err = { 0 }; /* atomically, as every file xpcsfit writes (util/files.h) */
	int rc = text && !xf_write_file_atomic(path, text, strlen(text), &err) ? 0 : -1;
	free(text);
	cJSON_Delete(root);
	return rc;
}

int tool_validate(const tool_opts *o)
{
	diff_table t = { .n = 0 };
	for (int k = 0; tool_gpu_model(k); k++)
		if (validate_mode(o, tool_gpu_model(k)->mode, &t)) {
			fprintf(stderr, "xpcsfit-gpu: validate could not run (see above)\n");
			return 1;
		}
	int ok = 1;
	printf("%-34s %12s %12s  %s\n", "quantity (GPU vs CPU)", "max abs", "max rel", "");
	for (int k = 0; k < t.n; k++) {
		const diff_row *r = &t.row[k];
		int pass = !r->judged || r->rel <= XF_VALIDATE_REL;
		ok &= pass;
		printf("%-34s %12.3e %12.3e  %s\n", r->name, r->abs, r->rel,
		       !r->judged ? "(fp32, reported)"
		       : pass	  ? "ok"
				  : "FAIL");
	}
	printf("fp64 agreement bound: relative %.0e; %s\n", XF_VALIDATE_REL, ok ? "ok" : "FAILED");
	if (o->json_path && write_json(o->json_path, &t, ok)) {
		fprintf(stderr, "xpcsfit-gpu: cannot write %s\n", o->json_path);
		return 1;
	}
	return ok ? 0 : 1;
}
