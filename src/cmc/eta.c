/* eta.c — remaining time and the long-run warning (eta.h, adr/0080). Wall time here only
 * decides what is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmc/eta.h"
#include "cmc/run_internal.h"
#include "xpcsfit/error.h"
#include "util/key_names.h"

double xf_eta_update(xf_eta *e, double t_s, long done, long total)
{
	int last = (e->head + XF_ETA_WINDOW - 1) % XF_ETA_WINDOW;
	if (e->total != total || (e->n && done < e->done[last])) { /* a new task */
		e->n = e->head = 0;
		e->total = total;
	}
	e->t[e->head] = t_s;
	e->done[e->head] = done;
	e->head = (e->head + 1) % XF_ETA_WINDOW;
	if (e->n < XF_ETA_WINDOW)
		e->n++;
	int oldest = e->n < XF_ETA_WINDOW ? 0 : e->head;
	double dt = t_s - e->t[oldest];
	long dn = done - e->done[oldest];
	if (done >= total)
		return 0.0;
	if (dn <= 0 || !(dt > 0.0))
		return NAN;
	return dt / (double)dn * (double)(total - done);
}

double xf_nuts_expected_s(double elapsed_s, long done, long grads, long transitions)
{
	if (done <= 0 || grads <= 0 || !(elapsed_s >= 0.0))
		return NAN;
	double per_transition = fmax((double)grads / (double)done, XF_GRADS_PER_TRANSITION);
	return elapsed_s / (double)grads * per_transition * (double)transitions;
}

double xf_long_run_threshold_s(void)
{
	const char *knob = getenv("XPCSFIT_TEST_LONG_RUN_S");
	if (knob && *knob) {
		char *end;
		double v = strtod(knob, &end);
		if (*end == '\0' && v >= 0.0)
			return v;
	}
	return XF_LONG_RUN_S;
}

long xf_long_run_probe(long transitions, int n_chains)
{
	long probe = 10L * (n_chains > 0 ? n_chains : 1);
	return probe < transitions ? probe : transitions;
}

void xf_long_run_warning(double expected_s, long n_points, int n_chains, int n_threads,
			 const char *basis)
{
	char when[32];
	if (expected_s >= 5400.0)
		snprintf(when, sizeof when, "%.1f h", expected_s / 3600.0);
	else if (expected_s >= 120.0)
		snprintf(when, sizeof when, "%.0f min", expected_s / 60.0);
	else
		snprintf(when, sizeof when, "%.0f s", expected_s);
	xf_warn("cmc: exact NUTS on %ld points is expected to take ~%s (%d chains, %d virtual "
		"devices; %s); faster: more threads (--threads) "
		"or ranks (xpcsfit-mpi), fewer points (" XF_KEY_START_FRAME
		"/end_frame, phi_filtering), or a parameter of a known ridge held fixed (--fix "
		"NAME=VALUE); "
		"running on",
		n_points, when, n_chains, n_threads, basis);
}

void xf_cmc_nuts_stage(const cmc_run *r, xf_cmc_progress *p)
{
	long per_chain = (long)r->n_warmup + r->n_samples;
	if (r->n_shards != 1)
		return; /* K > 1: shards, not one run's phases */
	p->n_chains = r->n_chains;
	/* the phase of the latest transition: a settled warmup (adr/0079) ends before
	 * num_warmup, so counts of transitions cannot tell */
	p->phase = r->last_sampling ? "sampling" : "warmup";
	if (r->pooled_passes && per_chain > 0) { /* the chains in turn, each on every device */
		long c = r->iterations_done / per_chain;
		p->chain = (int)(c < r->n_chains ? c + 1 : r->n_chains);
	}
}

/* one shard, the whole run's NUTS, rank 0, not yet said */
static int long_run_applies(const cmc_run *r)
{
	return !r->long_warned && r->n_shards == 1 && r->only_shard < 0 &&
	       !(r->dist && r->dist->rank != 0);
}

static void long_run_say(cmc_run *r, double expected_s, const char *basis)
{
	r->long_warned = 1;
	xf_long_run_warning(expected_s, (long)(r->jobs[0].ps.n_pairs * (size_t)r->pr.n_phi),
			    r->n_chains, r->n_threads, basis);
}

void xf_cmc_long_run_check(cmc_run *r, double elapsed_s)
{
	long total = (long)r->n_chains * ((long)r->n_warmup + r->n_samples);
	if (r->long_checked || !long_run_applies(r) ||
	    r->iterations_done < xf_long_run_probe(total, r->n_chains))
		return;
	r->long_checked = 1;
	long grads = __atomic_load_n(&r->grad_evals_done, __ATOMIC_RELAXED);
	double expected = xf_nuts_expected_s(elapsed_s, r->iterations_done, grads, total);
	if (expected > xf_long_run_threshold_s())
		long_run_say(r, expected, "measured on its first transitions");
}

void xf_cmc_long_run_recheck(cmc_run *r, double elapsed_s, double eta_s)
{
	if (r->long_checked && long_run_applies(r) && isfinite(eta_s) &&
	    elapsed_s + eta_s > xf_long_run_threshold_s())
		long_run_say(r, elapsed_s + eta_s, "the time so far and the recent rate");
}
