/* plot_nlsq.c — the plots of an NLSQ result: the driver that walks the angles (one
 * data/fit pair of N×N maps in memory at a time), and xf_plot_nlsq, which feeds it
 * from a fit in memory (data from the packed triangles, fit from the model). */
#include "util/files.h"
#include "util/interrupt.h"
#include "util/verbosity.h"
#include "plot/plot_internal.h"
#include "surface/surfaces.h"
#include "xpcsfit/plot.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* how often the parent looks at the drawing processes (ns): progress and their exit */
#define XF_PLOT_POLL_NS 100000000L

/* XF_KEY_ANGLE_PAGES (xf_plot_set_angle_pages) */
static int angle_pages_all;

void xf_plot_set_angle_pages(int all)
{
	angle_pages_all = all != 0;
}

int xf_plot_slot_ring(const xf_plot_src *src, int a, int *first, int *count)
{
	if (!src->slot_q) {
		*first = 0;
		*count = src->n_phi;
		return 0;
	}
	int ring = 0, f = 0, end = a + 1;
	for (int s = 1; s <= a; s++)
		if (src->slot_q[s] != src->slot_q[s - 1]) {
			ring++;
			f = s;
		}
	while (end < src->n_phi && src->slot_q[end] == src->slot_q[a])
		end++;
	*first = f;
	*count = end - f;
	return ring;
}

/* the default page rule: slot a is one of its ring's lag-panel angles */
static int default_shown(const xf_plot_src *src, int a)
{
	int first, count, idx[XF_PLOT_MAX_CURVES];
	xf_plot_slot_ring(src, a, &first, &count);
	int n = xf_plot_chosen_angles(count, idx);
	for (int k = 0; k < n; k++)
		if (first + idx[k] == a)
			return 1;
	return 0;
}

int xf_plot_angle_shown(const xf_plot_src *src, int a)
{
	return angle_pages_all || default_shown(src, a);
}

int xf_plot_lag_angles(const xf_plot_src *src, int *idx)
{
	if (!src->slot_q)
		return xf_plot_chosen_angles(src->n_phi, idx);
	int m = 0;
	for (int a = 0; a < src->n_phi; a++)
		m += default_shown(src, a);
	int n = m < XF_PLOT_MAX_CURVES ? m : XF_PLOT_MAX_CURVES;
	for (int k = 0, seen = 0, a = 0; k < n && a < src->n_phi; a++) {
		if (!default_shown(src, a))
			continue;
		/* the k-th of n evenly spread over the m paged slots, first and last included */
		long want = n > 1 ? lround((double)k * (m - 1) / (n - 1)) : 0;
		if (seen++ == want)
			idx[k++] = a;
	}
	return n;
}

void xf_plot_angle_name(char *buf, size_t size, int a, double phi_deg)
{
	snprintf(buf, size, "c2_phi_%03d_%+07.2fdeg.png", a, phi_deg);
}

void xf_plot_slot_name(char *buf, size_t size, const xf_plot_src *src, int a)
{
	if (!src->slot_q) {
		xf_plot_angle_name(buf, size, a, src->phi_deg[a]);
		return;
	}
	int first, count;
	int ring = xf_plot_slot_ring(src, a, &first, &count);
	snprintf(buf, size, "c2_ring%03d_q%.5g_phi_%03d_%+07.2fdeg.png", ring, src->slot_q[a],
		 a - first, src->phi_deg[a]);
}

typedef struct angle_ctx {
	const xf_plot_src *src;
	int a;
	const double *data;
} angle_ctx;

static void draw_data_angle_cb(void *p)
{
	angle_ctx *c = p;
	xf_plot_draw_data_angle(c->src, c->a, c->data);
}

typedef struct overview_ctx {
	const xf_plot_src *src;
	const xf_plot_cuts *cuts;
} overview_ctx;

static void draw_overview_cb(void *p)
{
	overview_ctx *c = p;
	if (c->src->data_only)
		xf_plot_draw_data_overview(c->src, c->cuts);
	else
		xf_plot_draw_overview(c->src, c->cuts);
}

void xf_plot_lag_cut(const double *m, const double *packed, int n, double *out)
{
	for (int k = 1; k <= n - 2; k++) {
		double sum = 0.0;
		int count = 0;
		for (int i = 1; i + k < n; i++) {
			double v = packed ? packed[xf_packed_index((size_t)n, (size_t)i,
								   (size_t)(i + k))]
					  : m[(size_t)i * n + i + k];
			if (isfinite(v)) {
				sum += v;
				count++;
			}
		}
		out[k - 1] = count ? sum / count : NAN;
	}
}

/* Angles first, first + stride, ...: surfaces, lag cuts, one PNG each; *done counts the
 * PNGs written (shared with the parent when forked); progress shown when show. */
static int draw_angles(const char *plots_dir, const xf_plot_src *src, xf_plot_cuts *cuts, int first,
		       int stride, int *done, int show, xf_error *err)
{
	size_t n = (size_t)src->n_frames, nn = n * n;
	double *data = malloc(nn * sizeof *data);
	double *fit = malloc(nn * sizeof *fit);
	int rc = 0;
	static xf_count_progress progress; /* one plots phase per process */
	if (!data || !fit)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for plots (N = %zu), %s", n,
			     plots_dir);
	for (int a = first; a < src->n_phi && rc == 0; a += stride) {
		if (!src->data_only && !xf_plot_angle_shown(src, a)) {
			__atomic_add_fetch(done, 1, __ATOMIC_RELAXED); /* no page: counted done */
			continue;
		}
		rc = src->surfaces(src->ctx, a, data, fit, err);
		if (rc != 0)
			break;
		xf_plot_lag_cut(data, NULL, (int)n, cuts->data + (size_t)a * cuts->n_lags);
		xf_plot_lag_cut(fit, NULL, (int)n, cuts->fit + (size_t)a * cuts->n_lags);
		char name[96], path[PATH_MAX];
		xf_plot_slot_name(name, sizeof name, src, a);
		rc = xf_path_join(path, sizeof path, plots_dir, name, err);
		if (rc != 0)
			break;
		if (src->data_only) {
			angle_ctx ac = { src, a, data };
			rc = xf_pl_file(path, XF_PLOT_ANGLE_W, XF_PLOT_ANGLE_H, draw_data_angle_cb,
					&ac, err);
		} else {
			xf_plot_angle_page pg = { .src = src, .a = a, .data = data, .fit = fit };
			rc = xf_pl_file_painted(path, XF_PLOT_ANGLE_W, XF_PLOT_ANGLE_H,
						xf_plot_angle_paint, xf_plot_angle_draw, &pg, err);
		}
		int now = __atomic_add_fetch(done, 1, __ATOMIC_RELAXED);
		if (show && rc == 0)
			xf_progress_count(&progress, "plots", now, src->n_phi, "angles");
	}
	free(data);
	free(fit);
	return rc;
}

/* Worker processes draw angles w, w + W, ...; the lag cuts, the count of PNGs written
 * and each worker's error come back through shared memory, and this process shows the
 * progress while it waits. A worker that cannot be started is done here. */
static int draw_angles_forked(const char *plots_dir, const xf_plot_src *src, xf_plot_cuts *cuts,
			      int workers, xf_error *err)
{
	pid_t *pid = malloc((size_t)workers * sizeof *pid);
	size_t shared_bytes = sizeof(xf_error) * (size_t)workers + sizeof(int);
	xf_error *errs =
		mmap(NULL, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!pid || errs == MAP_FAILED) {
		int done = 0;
		free(pid);
		if (errs != MAP_FAILED)
			munmap(errs, shared_bytes);
		return draw_angles(plots_dir, src, cuts, 0, 1, &done, 1, err);
	}
	memset(errs, 0, shared_bytes);
	int *done = (int *)(errs + workers);
	fflush(stdout);
	fflush(stderr);
	for (int w = 0; w < workers; w++) {
		pid[w] = xf_child_fork(); /* dies with this process, leaves it the signals */
		if (pid[w] == 0) {
			xf_test_pause("plot_worker");
			int failed = draw_angles(plots_dir, src, cuts, w, workers, done, 0,
						 &errs[w]) != 0;
			free(pid); /* the child's copy: leak checkers see the child exit too */
			_exit(failed);
		}
	}
	int rc = 0, alive = 0;
	for (int w = 0; w < workers; w++)
		alive += pid[w] > 0;
	xf_count_progress progress = { 0 };
	int shown = 0;
	while (alive > 0) {
		for (int w = 0; w < workers; w++) {
			int status = 0;
			if (pid[w] <= 0)
				continue;
			pid_t got = waitpid(pid[w], &status, WNOHANG);
			if (got == 0 || (got < 0 && errno == EINTR))
				continue;
			xf_child_untrack(pid[w]);
			pid[w] = 0; /* reaped */
			alive--;
			if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				if (rc == 0 && errs[w].code)
					rc = xf_fail(err, errs[w].code, "%s", errs[w].msg);
				else if (rc == 0)
					rc = xf_fail(err, XF_ERR_DATA, "a plot worker failed, %s",
						     plots_dir);
			}
		}
		int now = __atomic_load_n(done, __ATOMIC_RELAXED);
		if (rc == 0 && now > shown) {
			xf_progress_count(&progress, "plots", now, src->n_phi, "angles");
			shown = now;
		}
		if (alive > 0) {
			struct timespec nap = { 0, XF_PLOT_POLL_NS };
			nanosleep(&nap, NULL);
		}
	}
	for (int w = 0; w < workers && rc == 0; w++)
		if (pid[w] < 0) /* never started: its angles here */
			rc = draw_angles(plots_dir, src, cuts, w, workers, done, 1, err);
	munmap(errs, shared_bytes);
	free(pid);
	return rc;
}

int xf_plot_overview_file(const char *plots_dir, const xf_plot_src *src, const xf_plot_cuts *cuts,
			  xf_error *err)
{
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, plots_dir, "overview.png", err) != 0)
		return err->code;
	overview_ctx oc = { src, cuts };
	return xf_pl_file(path, XF_PLOT_OVERVIEW_W, XF_PLOT_OVERVIEW_H, draw_overview_cb, &oc, err);
}

int xf_plot_draw_all(const char *plots_dir, const xf_plot_src *src, xf_error *err)
{
	if (src->n_phi < 1 || src->n_frames < 3)
		return xf_fail(err, XF_ERR_DATA, "nothing to plot (%d angles, %d frames), %s",
			       src->n_phi, src->n_frames, plots_dir);
	if (xf_mkdir_here(plots_dir, err) != 0)
		return err->code;
	int workers = src->workers < src->n_phi ? src->workers : src->n_phi;
	xf_plot_cuts cuts = { src->n_frames - 2, NULL, NULL };
	size_t cut_bytes = (size_t)src->n_phi * (size_t)cuts.n_lags * sizeof(double);
	/* shared with the workers when there are any */
	void *store = workers > 1 ? mmap(NULL, 2 * cut_bytes, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0)
				  : malloc(2 * cut_bytes);
	if (store == MAP_FAILED || !store)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for plots, %s", plots_dir);
	cuts.data = store;
	cuts.fit = cuts.data + (size_t)src->n_phi * cuts.n_lags;
	int done = 0;
	int rc = workers > 1 ? draw_angles_forked(plots_dir, src, &cuts, workers, err)
			     : draw_angles(plots_dir, src, &cuts, 0, 1, &done, 1, err);
	if (rc == 0)
		rc = xf_plot_overview_file(plots_dir, src, &cuts, err);
	if (workers > 1)
		munmap(store, 2 * cut_bytes);
	else
		free(store);
	return rc;
}

int xf_plot_model_surfaces(void *p, int a, double *data, double *fit, xf_error *err)
{
	xf_plot_model_ctx *c = p;
	xf_surface_data(c->ds, a, data);
	if (xf_surface_fit(c->est, c->ds, a, fit) != 0)
		return xf_fail(err, XF_ERR_DATA,
			       "model evaluation failed for the plot of "
			       "angle %d",
			       a);
	return 0;
}

void xf_plot_nlsq_src_init(xf_plot_nlsq_src *s, const xf_dataset *ds, const xf_estimate *est,
			   const xf_nlsq_appendix *app, int workers)
{
	int max_units = (int)(sizeof s->units / sizeof s->units[0]);
	int n_units = est->n_params < max_units ? est->n_params : 0;
	for (int k = 0; k < n_units; k++)
		s->units[k] = k < est->n_phys ? est->units[k] : ""; /* "" past the model's */
	s->ctx = (xf_plot_model_ctx){ ds, est };
	xf_plot_join_reasons(&est->quality, s->reasons, sizeof s->reasons);
	s->src = (xf_plot_src){
		.n_phi = ds->n_phi,
		.phi_deg = ds->phi_deg,
		.n_frames = ds->n_frames,
		.dt_s = ds->dt_s,
		.q = ds->q,
		.slot_q = est->slot_q,
		.mode_name = est->words.mode,
		.status = est->words.status,
		.stop_reason = app->stop_reason ? app->stop_reason : "-",
		.quality_known = 1,
		.quality = est->quality.overall,
		.quality_reasons = s->reasons,
		.chi_squared = app->chi_squared,
		.reduced_chi_squared = app->reduced_chi_squared,
		.residual_sd = app->residual_sd,
		.n_points = (long long)app->n_points,
		.iterations = app->iterations,
		.n_params = est->n_params,
		.n_phys = est->n_phys,
		.names = est->names,
		.units = n_units ? s->units : NULL,
		.values = est->values,
		.uncertainties = est->sd,
		.is_fixed = est->is_fixed,
		.contrast = est->contrast,
		.contrast_unc = est->contrast_sd,
		.offset = est->offset,
		.offset_unc = est->offset_sd,
		.surfaces = xf_plot_model_surfaces,
		.ctx = &s->ctx,
		.workers = workers,
	};
}

int xf_plot_nlsq_estimate(const char *plots_dir, const xf_dataset *ds, const xf_estimate *est,
			  const xf_nlsq_appendix *app, int dpi, int workers, xf_error *err)
{
	if (est->n_phi != ds->n_phi)
		return xf_fail(err, XF_ERR_DATA, "result has %d angles but the data %d, %s",
			       est->n_phi, ds->n_phi, plots_dir);
	xf_pl_set_dpi(dpi);
	xf_plot_nlsq_src *s = malloc(sizeof *s);
	if (!s)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for plots, %s", plots_dir);
	xf_plot_nlsq_src_init(s, ds, est, app, workers);
	int rc = xf_plot_draw_all(plots_dir, &s->src, err);
	free(s);
	return rc;
}
