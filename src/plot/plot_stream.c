/* plot_stream.c — the plots of an NLSQ fit fed angle by angle by the results.h5 surface
 * writer (plot_stream.h). The writer's threads reduce each angle's maps to the panels'
 * pixels into a ring of slots in shared memory and compute the lag cuts; forked drawing
 * processes (PLplot keeps global state) draw angle w, w + W, ... as soon as it is ready.
 * A slot is reused once its angle is drawn, so memory holds a few pages' maps, never all
 * angles'. Each PNG depends only on its angle's maps: the same bytes whatever the thread
 * count, the scheduling, or whether the stream or xf_plot_nlsq drew it. */
#include "plot/plot_stream.h"
#include "plot/plot_internal.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/verbosity.h"
#include "xpcsfit/plot.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* how long a waiting process sleeps between looks (ns): the writer for a free slot, a
 * drawing process for its next angle, the parent at the end for progress */
#define XF_STREAM_POLL_NS     1000000L
#define XF_STREAM_PROGRESS_NS 100000000L

/* shared with the drawing processes */
typedef struct stream_shared {
	int abort; /* set by the parent: draw nothing more, exit */
	int done;  /* PNGs written */
} stream_shared;

struct xf_plot_stream {
	xf_plot_nlsq_src ns;
	char dir[PATH_MAX];
	int workers;  /* drawing processes (0: the writing thread draws) */
	pid_t *pid;   /* [workers]; 0 once reaped */
	int n_slots;  /* ring of reduced maps */
	int w, h;     /* panel pixels */
	size_t bytes; /* of the shared mapping */
	stream_shared *sh;
	xf_error *errs;	    /* [workers], shared */
	int *ready, *drawn; /* [n_phi], shared: maps in the slot, PNG written */
	double *maps;	    /* [n_slots][3][w·h], shared */
	int *take_failed;   /* [n_phi], this process */
	xf_plot_cuts cuts;  /* this process */
	int broken;	    /* no more angles taken: a page or a drawing process failed */
	int n_ready;	    /* angles handed on */
	xf_error err;	    /* the first failure */
	xf_count_progress progress;
	xf_surface_sink sink;
};

static xf_plot_angle_maps slot_maps(const xf_plot_stream *s, int a)
{
	size_t np = (size_t)s->w * s->h;
	double *base = s->maps + (size_t)(a % s->n_slots) * 3 * np;
	int n = s->ns.src.n_frames;
	xf_plot_angle_maps m = { s->w, s->h, n > s->w || n > s->h, base, base + np, base + 2 * np };
	return m;
}

static void nap(long ns)
{
	struct timespec t = { 0, ns };
	nanosleep(&t, NULL);
}

/* one angle page from its slot (an angle without a page, xf_plot_angle_shown: counted
 * done) */
static int draw_angle(xf_plot_stream *s, int a, xf_error *err)
{
	if (!xf_plot_angle_shown(&s->ns.src, a)) {
		__atomic_store_n(&s->drawn[a], 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&s->sh->done, 1, __ATOMIC_RELAXED);
		return 0;
	}
	char name[96], path[PATH_MAX];
	xf_plot_slot_name(name, sizeof name, &s->ns.src, a);
	if (xf_path_join(path, sizeof path, s->dir, name, err) != 0)
		return err->code;
	xf_plot_angle_maps m = slot_maps(s, a);
	xf_plot_angle_page pg = { .src = &s->ns.src, .a = a, .maps = &m };
	int rc = xf_pl_file_painted(path, XF_PLOT_ANGLE_W, XF_PLOT_ANGLE_H, xf_plot_angle_paint,
				    xf_plot_angle_draw, &pg, err);
	__atomic_store_n(&s->drawn[a], 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&s->sh->done, 1, __ATOMIC_RELAXED);
	return rc;
}

/* a drawing process: angles w, w + W, ... as they become ready */
static int worker(xf_plot_stream *s, int w)
{
	for (int a = w; a < s->ns.src.n_phi; a += s->workers) {
		while (!__atomic_load_n(&s->ready[a], __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&s->sh->abort, __ATOMIC_RELAXED))
				return 0;
			nap(XF_STREAM_POLL_NS);
		}
		if (draw_angle(s, a, &s->errs[w]) != 0)
			return 1;
	}
	return 0;
}

static void stop(xf_plot_stream *s, const char *why)
{
	if (!s->broken && !s->err.code)
		xf_fail(&s->err, XF_ERR_DATA, "%s, %s", why, s->dir);
	s->broken = 1;
	__atomic_store_n(&s->sh->abort, 1, __ATOMIC_RELAXED);
}

/* reap the drawing processes that have ended (block: wait for all); a failure breaks
 * the stream and keeps the worker's message */
static int reap(xf_plot_stream *s, int block)
{
	int alive = 0;
	for (int w = 0; w < s->workers; w++) {
		if (s->pid[w] <= 0)
			continue;
		int status = 0;
		pid_t got = waitpid(s->pid[w], &status, block ? 0 : WNOHANG);
		if (got == 0 || (got < 0 && errno == EINTR)) {
			alive++;
			continue;
		}
		xf_child_untrack(s->pid[w]);
		s->pid[w] = 0;
		if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (!s->err.code && s->errs[w].code)
				xf_fail(&s->err, s->errs[w].code, "%s", s->errs[w].msg);
			stop(s, "a plot worker failed");
		}
	}
	return alive;
}

static int sink_reserve(void *ctx, int a)
{
	xf_plot_stream *s = ctx;
	while (!s->broken && a >= s->n_slots &&
	       !__atomic_load_n(&s->drawn[a - s->n_slots], __ATOMIC_ACQUIRE)) {
		reap(s, 0);
		if (!s->broken)
			nap(XF_STREAM_POLL_NS);
	}
	return s->broken ? -1 : 0;
}

static void sink_take(void *ctx, int a, const double *data_packed, const double *fit)
{
	xf_plot_stream *s = ctx;
	int n = s->ns.src.n_frames;
	xf_plot_angle_maps m = slot_maps(s, a);
	s->take_failed[a] = xf_plot_angle_reduce(NULL, data_packed, fit, n, &m) != 0;
	xf_plot_lag_cut(NULL, data_packed, n, s->cuts.data + (size_t)a * s->cuts.n_lags);
	xf_plot_lag_cut(fit, NULL, n, s->cuts.fit + (size_t)a * s->cuts.n_lags);
}

static void sink_ready(void *ctx, int a)
{
	xf_plot_stream *s = ctx;
	if (s->take_failed[a]) {
		stop(s, "out of memory for the plots");
		return;
	}
	s->n_ready++;
	__atomic_store_n(&s->ready[a], 1, __ATOMIC_RELEASE);
	if (s->workers == 0) {
		if (draw_angle(s, a, &s->err) != 0)
			s->broken = 1;
		else
			xf_progress_count(&s->progress, "plots", s->sh->done, s->ns.src.n_phi,
					  "angles");
	}
}

static void stream_free(xf_plot_stream *s)
{
	if (s->sh)
		munmap(s->sh, s->bytes);
	free(s->pid);
	free(s->take_failed);
	free(s->cuts.data);
	free(s);
}

xf_plot_stream *xf_plot_stream_start(const char *plots_dir, const xf_dataset *ds,
				     const xf_estimate *est, const xf_nlsq_appendix *app, int dpi,
				     int workers, xf_error *err)
{
	if (ds->n_phi < 1 || ds->n_frames < 3 || est->n_phi != ds->n_phi) {
		xf_fail(err, XF_ERR_DATA, "nothing to plot (%d angles, %d frames), %s", ds->n_phi,
			ds->n_frames, plots_dir);
		return NULL;
	}
	if (xf_mkdir_here(plots_dir, err) != 0)
		return NULL;
	xf_plot_stream *s = calloc(1, sizeof *s);
	if (!s) {
		xf_fail(err, XF_ERR_NOMEM, "out of memory for plots, %s", plots_dir);
		return NULL;
	}
	snprintf(s->dir, sizeof s->dir, "%s", plots_dir);
	xf_pl_set_dpi(dpi);
	int n_phi = ds->n_phi;
	xf_plot_nlsq_src_init(&s->ns, ds, est, app, workers);
	s->workers = workers > 1 ? (workers < n_phi ? workers : n_phi) : 0;
	/* a batch of the writer (one angle per thread, threads = workers) in the slots while
	 * each drawing process holds one */
	int threads = workers > 1 ? workers : 1;
	s->n_slots = threads + s->workers;
	xf_plot_angle_panel_px(&s->w, &s->h);
	size_t np = (size_t)s->w * s->h;
	size_t head = sizeof(stream_shared) + sizeof(xf_error) * (size_t)s->workers +
		      2 * sizeof(int) * (size_t)n_phi;
	head = (head + 63) & ~(size_t)63;
	s->bytes = head + (size_t)s->n_slots * 3 * np * sizeof(double);
	void *sh = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s->cuts.n_lags = ds->n_frames - 2;
	s->cuts.data = malloc(2 * (size_t)n_phi * (size_t)s->cuts.n_lags * sizeof(double));
	s->take_failed = calloc((size_t)n_phi, sizeof(int));
	s->pid = calloc((size_t)(s->workers > 0 ? s->workers : 1), sizeof(pid_t));
	if (sh == MAP_FAILED || !s->cuts.data || !s->take_failed || !s->pid) {
		if (sh != MAP_FAILED)
			munmap(sh, s->bytes);
		stream_free(s);
		xf_fail(err, XF_ERR_NOMEM, "out of memory for plots, %s", plots_dir);
		return NULL;
	}
	s->sh = sh; /* zero-filled */
	s->errs = (xf_error *)(s->sh + 1);
	s->ready = (int *)(s->errs + s->workers);
	s->drawn = s->ready + n_phi;
	s->maps = (double *)((char *)sh + head);
	s->cuts.fit = s->cuts.data + (size_t)n_phi * s->cuts.n_lags;
	s->sink = (xf_surface_sink){ sink_reserve, sink_take, sink_ready, s };
	fflush(stdout);
	fflush(stderr);
	for (int w = 0; w < s->workers; w++) {
		s->pid[w] = xf_child_fork(); /* dies with this process, leaves it the signals */
		if (s->pid[w] == 0) {
			xf_test_pause("plot_worker");
			_exit(worker(s, w));
		}
		if (s->pid[w] < 0) { /* the ones started draw nothing; plot after results.h5 */
			s->pid[w] = 0;
			xf_plot_stream_abort(s);
			xf_fail(err, XF_ERR_DATA, "cannot start a plot worker: %s, %s",
				strerror(errno), plots_dir);
			return NULL;
		}
	}
	return s;
}

const xf_surface_sink *xf_plot_stream_sink(xf_plot_stream *s)
{
	return &s->sink;
}

void xf_plot_stream_abort(xf_plot_stream *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->sh->abort, 1, __ATOMIC_RELAXED);
	reap(s, 1);
	stream_free(s);
}

int xf_plot_stream_finish(xf_plot_stream *s, xf_error *err)
{
	if (s->n_ready < s->ns.src.n_phi)
		stop(s, "the surfaces did not reach every angle's plot");
	int shown = 0;
	while (reap(s, 0) > 0) {
		int now = __atomic_load_n(&s->sh->done, __ATOMIC_RELAXED);
		if (!s->broken && now > shown) {
			xf_progress_count(&s->progress, "plots", now, s->ns.src.n_phi, "angles");
			shown = now;
		}
		nap(XF_STREAM_PROGRESS_NS);
	}
	int now = __atomic_load_n(&s->sh->done, __ATOMIC_RELAXED);
	if (!s->broken && now > shown)
		xf_progress_count(&s->progress, "plots", now, s->ns.src.n_phi, "angles");
	int rc = s->err.code;
	if (rc)
		xf_fail(err, rc, "%s", s->err.msg);
	else
		rc = xf_plot_overview_file(s->dir, &s->ns.src, &s->cuts, err);
	stream_free(s);
	return rc;
}
