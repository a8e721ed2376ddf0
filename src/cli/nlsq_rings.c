/* nlsq_rings.c — per-ring mode of `xpcsfit nlsq` (adr/0065): a config whose wavevector_q
 * selects several rings (all, a list, a range: adr/0063) fits every ring, one after the
 * other, each exactly as a run whose wavevector_q is that ring's q (the same code, the
 * same bytes), into <out>/nlsq/q_<q>/; then <out>/nlsq/rings.csv, rings.json and
 * params_vs_q.png summarise them against q. <out>/nlsq/ is one result folder (lock,
 * INCOMPLETE until the summary is written: util/rundir.h); each ring's folder is one
 * too. A ring that fails is named in one line and the others are still fitted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "outputs/rings_summary.h"
#include "xpcsfit/dist.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/verbosity.h"

/* The q of each ring the config selects, ascending; *n 0 when it selects one value (the
 * one-ring path, as before). */
static int selected_rings(const xf_cli_job *job, double **q, int *n, xf_mode *mode)
{
	xf_config cfg;
	xf_error err = { 0 };
	*q = NULL;
	*n = 0;
	if (xf_config_load_with(job->config, job->overrides, job->n_overrides, &cfg, &err))
		return 0; /* the one-ring path loads it again and reports the error */
	*mode = cfg.mode;
	if (cfg.q_rings.pick == XF_Q_PICK_ONE) {
		xf_config_free(&cfg);
		return 0;
	}
	xf_selection sel;
	xf_selection_from_config(&cfg, &sel);
	int rc = xf_dataset_selected_rings(&sel, job->data, q, n, &err);
	xf_config_free(&cfg);
	if (rc)
		return xf_cli_error(err.code, "%s", err.msg);
	if (*n < 2) { /* a list or range of one ring: the one-ring path, as its single value */
		free(*q);
		*q = NULL;
		*n = 0;
	}
	return 0;
}

/* One ring into <out>/nlsq/<folder>/: 0, 1 (fitted, not converged; written), or the
 * error's code (nothing written for it). The top claim decided about --force, so the
 * ring's own folder is always replaced. */
static int fit_ring(const xf_cli_job *job, xf_ring_record *rec)
{
	char method_dir[XF_RING_NAME_MAX + 8];
	snprintf(method_dir, sizeof method_dir, "nlsq/%s", rec->folder);
	xf_cli_job ring = *job;
	ring.ring_q = rec->q_per_A;
	ring.method_dir = method_dir;
	ring.force = 1;
	ring.written = NULL;
	int rc = xf_cli_run_nlsq_one(&ring, rec);
	if (!rec->written) {
		rec->failed = 1;
		snprintf(rec->status, sizeof rec->status, "error");
	}
	return rc;
}

static int write_summary(const char *dir, xf_mode mode, const xf_ring_record *rec, int n, int plots)
{
	xf_error err = { 0 };
	int rc = xf_rings_write_summary(dir, xf_mode_name(mode), rec, n, &err);
	if (rc)
		return xf_cli_error(err.code ? err.code : XF_ERR_IO, "%s", err.msg);
	if (!plots)
		return 0;
	char path[4096];
	if (xf_path_join(path, sizeof path, dir, "params_vs_q.png", &err) ||
	    xf_plot_rings(path, rec, n, &err))
		xf_warn("params_vs_q.png not drawn: %s", err.msg); /* a plot is never fatal */
	return 0;
}

/* The rings one after the other; returns the worst code: an interruption or an error
 * other than a failed ring stops the loop. */
static int fit_rings(const xf_cli_job *job, xf_ring_record *rec, int n, const char *dir)
{
	int failed = 0;
	for (int r = 0; r < n; r++) {
		xf_say(XF_VERB_NORMAL, "ring %d of %d: q %.6g 1/A -> %s/%s/", r + 1, n,
		       rec[r].q_per_A, dir, rec[r].folder);
		int rc = fit_ring(job, &rec[r]);
		if (rc == XF_ERR_INTERRUPTED || xf_interrupt_signal())
			return XF_ERR_INTERRUPTED;
		failed += rec[r].failed;
		xf_say(XF_VERB_NORMAL, "ring %d of %d: q %.6g 1/A %s%s%s", r + 1, n, rec[r].q_per_A,
		       rec[r].status, rec[r].written ? ", quality " : "", rec[r].quality);
	}
	for (int r = 0; r < n; r++)
		if (rec[r].failed)
			xf_cli_error(XF_ERR_DATA, "ring q %.6g 1/A: %s, %s %s/%s", rec[r].q_per_A,
				     rec[r].status,
				     rec[r].written ? "results marked failed, in"
						    : "no result (the error above), for",
				     dir, rec[r].folder);
	return failed ? XF_ERR_DATA : 0;
}

int xf_cli_run_nlsq_rings(const xf_cli_job *job, int *handled)
{
	double *q;
	int n;
	xf_mode mode = 0;
	*handled = 0;
	if (!job->per_ring)
		return 0;
	int rc = selected_rings(job, &q, &n, &mode);
	if (rc || n < 2)
		return rc;
	*handled = 1;
	xf_rundir top;
	rc = xf_cli_check_out(job->out, "nlsq", job->force, "--force");
	if (!rc)
		rc = xf_cli_claim(&top, job->out, "nlsq", job->force, "--force", job->command);
	xf_ring_record *rec = rc ? NULL : calloc((size_t)n, sizeof *rec);
	if (!rc && !rec)
		rc = xf_cli_error(XF_ERR_NOMEM, "out of memory for %d q rings", n);
	if (rc) {
		free(q);
		if (rec)
			xf_rundir_release(&top);
		return rc;
	}
	for (int r = 0; r < n; r++)
		rec[r].q_per_A = q[r];
	xf_ring_folder_names(rec, n);
	xf_say(XF_VERB_NORMAL, "nlsq: %d q rings, fitted one after the other into %s/", n, top.dir);
	rc = fit_rings(job, rec, n, top.dir);
	xf_error err = { 0 };
	if (rc != XF_ERR_INTERRUPTED) {
		int wrc = 0; /* several MPI ranks: rank 0 alone writes (adr/0021) */
		if (xf_dist_is_root())
			wrc = write_summary(top.dir, mode, rec, n, job->plots);
		if (xf_dist_is_root() && !wrc && xf_rundir_complete(&top, &err))
			wrc = xf_cli_error(err.code ? err.code : XF_ERR_IO, "%s", err.msg);
		wrc = xf_cli_agree(wrc);
		if (wrc)
			rc = wrc;
		else if (job->written)
			*job->written = 1;
		if (!wrc)
			xf_say(XF_VERB_NORMAL, "summary: %s/rings.csv, rings.json%s", top.dir,
			       job->plots ? ", params_vs_q.png" : "");
	}
	xf_rundir_release(&top);
	for (int r = 0; r < n; r++)
		xf_ring_record_free(&rec[r]);
	free(rec);
	free(q);
	return rc;
}
