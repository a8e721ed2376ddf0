/* nlsq_rings.c — per-ring mode of `xpcsfit nlsq`, `cmc` and `fit` (adr/0065): a config whose wavevector_q
 * selects several rings (all, a list, a range: adr/0063) fits every ring, one after the
 * other, each exactly as a run whose wavevector_q is that ring's q (the same code, the
 * same bytes), into <out>/nlsq/q_<q>/ (and <out>/cmc/q_<q>/ for cmc and fit); then
 * rings.csv, rings.json and params_vs_q.png in <out>/nlsq/ (and <out>/cmc/) summarise
 * them against q. <out>/nlsq/ is one result folder (lock,
 * INCOMPLETE until the summary is written: util/rundir.h); each ring's folder is one
 * too. A ring that fails is named in one line and the others are still fitted; what can
 * be known from the file's metadata (a ring with no angle left, a per-angle start list
 * that does not fit a ring) refuses the run before any ring is fitted. Claiming a top
 * folder removes the ring folders of an earlier selection (adr/0065 addendum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "outputs/rings_summary.h"
#include "xpcsfit/dist.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/rundir.h"
#include "util/verbosity.h"
#include "util/key_names.h"

/* A per-angle start list (per_angle_scaling) is one value per angle kept: with several
 * rings it must fit every ring, checked before any ring is fitted (each ring's fit would
 * refuse it only at its turn). */
int xf_cli_check_ring_angle_starts(const xf_config *cfg, double q, int n_kept, xf_error *err)
{
	const char *name[2] = { "contrast", "offset" };
	const int given[2] = { cfg->n_contrast_start, cfg->n_offset_start };
	for (int k = 0; k < 2; k++)
		if (given[k] > 1 && given[k] != n_kept)
			return xf_fail(err, XF_ERR_CONFIG,
				       XF_KEY_SCALING_STARTS
				       ".%s: %d values given, but ring q %.6g 1/A keeps %d angles "
				       "(a list applies to every "
				       "selected ring: give one value, or select rings with %d "
				       "angles)",
				       name[k], given[k], q, n_kept, given[k]);
	return 0;
}

/* The q of each ring the config selects, ascending; *n 0 when it selects one value (the
 * one-ring path, as before). */
static int selected_rings(const xf_cli_job *job, double **q, int *n, xf_mode *mode)
{
	xf_config cfg;
	xf_error err = { 0 };
	*q = NULL;
	*n = 0;
	if (xf_cli_read_config(job, &cfg, &err))
		return 0; /* the one-ring path loads it again and reports the error */
	*mode = cfg.mode;
	/* one ring, or one joint fit over the rings (rings: joint, adr/0066) */
	if (cfg.q_rings.pick == XF_Q_PICK_ONE || cfg.rings_joint) {
		xf_config_free(&cfg);
		return 0;
	}
	xf_selection sel;
	int *kept = NULL;
	xf_selection_from_config(&cfg, &sel);
	int rc = xf_dataset_selected_rings(&sel, job->data, q, n, &kept, &err);
	for (int r = 0; !rc && r < *n; r++)
		rc = xf_cli_check_ring_angle_starts(&cfg, (*q)[r], kept[r], &err);
	xf_config_free(&cfg);
	free(kept);
	if (rc) {
		free(*q);
		*q = NULL;
		*n = 0;
		return xf_cli_error(err.code, "%s", err.msg);
	}
	if (*n < 2) { /* a list or range of one ring: the one-ring path, as its single value */
		free(*q);
		*q = NULL;
		*n = 0;
	}
	return 0;
}

/* What a per-ring run writes: the NLSQ side (nlsq, fit without --nlsq) and the CMC side
 * (cmc, fit), each a top folder with its rings' records. */
typedef struct ring_side {
	xf_method method;
	int on;
	xf_rundir top;
	xf_ring_record *rec; /* [n] */
} ring_side;

/* cmc --nlsq DIR of a per-ring run: the ring's own NLSQ folder when DIR holds one
 * (DIR/nlsq/q_<q>/ or DIR/q_<q>/), else DIR as given (its q is then checked and refused
 * as for one ring). */
static void ring_nlsq_dir(const char *given, const char *folder, char *buf, size_t size)
{
	struct stat st;
	snprintf(buf, size, "%s/nlsq/%s", given, folder);
	if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
		return;
	snprintf(buf, size, "%s/%s", given, folder);
	if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
		return;
	snprintf(buf, size, "%s", given);
}

static void mark_error(xf_ring_record *rec)
{
	if (rec && !rec->written) {
		rec->failed = 1;
		snprintf(rec->status, sizeof rec->status, "error");
	}
}

/* Ring r into <out>/nlsq/<folder>/ and/or <out>/cmc/<folder>/: 0, 1 (fitted, not
 * converged; written), or the error's code (nothing written for it). The top claims
 * decided about --force, so the ring's own folders are always replaced (cmc --resume
 * keeps the ring's finished shards). */
static int fit_ring(const xf_cli_job *job, ring_side *nl, ring_side *cm, int r)
{
	const char *folder = nl->on ? nl->rec[r].folder : cm->rec[r].folder;
	char nlsq_dir[XF_RING_NAME_MAX + 8], cmc_dir[XF_RING_NAME_MAX + 8], from[PATH_MAX];
	snprintf(nlsq_dir, sizeof nlsq_dir, "nlsq/%s", folder);
	snprintf(cmc_dir, sizeof cmc_dir, "cmc/%s", folder);
	xf_cli_job ring = *job;
	ring.ring_q = nl->on ? nl->rec[r].q_per_A : cm->rec[r].q_per_A;
	ring.method_dir = nlsq_dir;
	ring.cmc_dir = cmc_dir;
	ring.force = 1;
	ring.written = NULL;
	int rc;
	if (!cm->on) {
		rc = xf_cli_run_nlsq_one(&ring, &nl->rec[r]);
	} else {
		if (job->nlsq) {
			ring_nlsq_dir(job->nlsq, folder, from, sizeof from);
			ring.nlsq = from;
		}
		rc = xf_cli_run_cmc_one(&ring, nl->on ? &nl->rec[r] : NULL, &cm->rec[r]);
	}
	mark_error(nl->on ? &nl->rec[r] : NULL);
	mark_error(cm->on ? &cm->rec[r] : NULL);
	return rc;
}

static int write_summary(ring_side *side, xf_mode mode, int n, int plots)
{
	xf_error err = { 0 };
	const char *dir = side->top.dir;
	int rc = xf_rings_write_summary(dir, xf_method_name(side->method), xf_mode_name(mode),
					side->rec, n, &err);
	if (rc)
		return xf_cli_error(err.code ? err.code : XF_ERR_IO, "%s", err.msg);
	if (plots) {
		char path[4096];
		if (xf_path_join(path, sizeof path, dir, "params_vs_q.png", &err) ||
		    xf_plot_rings(path, side->rec, n, NULL, &err))
			xf_warn("params_vs_q.png not drawn: %s", err.msg); /* never fatal */
	}
	if (xf_rings_write_report(dir, side->method, xf_mode_name(mode), side->rec, n, plots, &err))
		return xf_cli_error(err.code ? err.code : XF_ERR_IO, "%s", err.msg);
	if (xf_rundir_complete(&side->top, &err))
		return xf_cli_error(err.code ? err.code : XF_ERR_IO, "%s", err.msg);
	xf_say(XF_VERB_NORMAL, "summary: %s/report.html, rings.csv, rings.json%s", dir,
	       plots ? ", params_vs_q.png" : "");
	return 0;
}

/* The rings one after the other; an interruption stops the loop. The result side (CMC's
 * when there is one: NLSQ is its warm start) decides the exit code. */
static int fit_rings(const xf_cli_job *job, ring_side *nl, ring_side *cm, int n)
{
	ring_side *res = cm->on ? cm : nl;
	int failed = 0;
	for (int r = 0; r < n; r++) {
		xf_ring_record *x = &res->rec[r];
		xf_say(XF_VERB_NORMAL, "ring %d of %d: q %.6g 1/A -> %s/%s/", r + 1, n, x->q_per_A,
		       res->top.dir, x->folder);
		xf_log_reset(); /* each ring's run.log holds its own run only, as batch's files */
		int rc = fit_ring(job, nl, cm, r);
		if (rc == XF_ERR_INTERRUPTED || xf_interrupt_signal())
			return XF_ERR_INTERRUPTED;
		failed += x->failed;
		xf_say(XF_VERB_NORMAL, "ring %d of %d: q %.6g 1/A %s%s%s", r + 1, n, x->q_per_A,
		       x->status, x->written ? ", quality " : "", x->quality);
	}
	for (int r = 0; r < n; r++)
		if (res->rec[r].failed)
			xf_cli_error(XF_ERR_DATA, "ring q %.6g 1/A: %s, %s %s/%s",
				     res->rec[r].q_per_A, res->rec[r].status,
				     res->rec[r].written ? "results marked failed, in"
							 : "no result (the error above), for",
				     res->top.dir, res->rec[r].folder);
	/* what to do about a ring that cannot stand alone (issue 26, adr/0066 addendum) */
	int fit_failed = 0;
	for (int r = 0; r < n; r++)
		fit_failed += res->rec[r].failed && res->rec[r].written;
	if (fit_failed && n > 1)
		xf_say(XF_VERB_NORMAL,
		       "a ring whose fit fails alone may inform little (a correlation that hardly "
		       "changes over the frame window): --joint fits the rings together and names "
		       "such a ring, or leave it out with a wavevector_q list");
	return failed ? XF_ERR_DATA : 0;
}

/* Remove the files of dir/shards (CMC's checkpoints), then the folder; a link there is
 * removed itself, never followed (adr/0071). */
static void remove_shards(const char *dir)
{
	char shards[PATH_MAX];
	if (snprintf(shards, sizeof shards, "%s/shards", dir) < (int)sizeof shards)
		xf_remove_folder_files(shards);
}

/* A ring folder of an earlier run into this top folder: claimed as a result folder
 * (which removes its result, plots and temporary files), its checkpoints removed, the
 * claim let go, the folder removed. A folder holding anything else is kept, said once. */
static void remove_ring_folder(const char *path, const char *command)
{
	xf_rundir rd;
	xf_error err = { 0 };
	if (xf_rundir_claim(&rd, path, 1, "--force", command, &err)) {
		xf_warn("stale ring folder kept: %s", err.msg);
		return;
	}
	remove_shards(path);
	xf_rundir_release(&rd);
	/* its result is gone: no marker or lock is left behind, whatever else stays */
	char book[PATH_MAX];
	if (snprintf(book, sizeof book, "%s/%s", path, XF_RUNDIR_MARKER) < (int)sizeof book)
		unlink(book);
	if (snprintf(book, sizeof book, "%s/%s", path, XF_RUNDIR_LOCK) < (int)sizeof book)
		unlink(book);
	if (rmdir(path) == 0)
		xf_info("%s: removed (a ring of an earlier run that this run does not select)",
			path);
	else
		xf_warn("stale ring folder kept: it holds files xpcsfit did not write, %s", path);
}

/* A ring folder this run fits again: its earlier result goes now, with the top folder's,
 * not when the ring's turn comes, so that an interrupted or failed run never leaves an
 * earlier ring's result beside this run's rings (adr/0071 addendum). Its shards stay
 * (cmc --resume); the ring's own claim marks and redoes it. */
static void clear_ring_folder(const char *path, const char *command)
{
	xf_rundir rd;
	xf_error err = { 0 };
	if (xf_rundir_claim(&rd, path, 1, "--force", command, &err) == 0) {
		xf_rundir_release(&rd);
		rmdir(path); /* emptied: made again when its turn comes */
	}
}

/* After the claim of a top result folder (DIR/nlsq/, DIR/cmc/: --force, or an interrupted
 * run): the q_<q> ring folders not in keep[n_keep] belong to an earlier selection (or an
 * earlier per-ring run under a one-ring run); leaving them would put rings that this
 * run's result does not list beside it (adr/0065 addendum). Rank 0 (the lock holder). */
void xf_cli_remove_stale_rings(const xf_rundir *top, const char *const *keep, int n_keep,
			       const char *command)
{
	if (top->lock_fd < 0)
		return;
	DIR *d = opendir(top->dir);
	if (!d)
		return;
	struct dirent *e;
	char path[PATH_MAX];
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		int kept = 0;
		if (strncmp(e->d_name, "q_", 2))
			continue;
		for (int r = 0; r < n_keep && !kept; r++)
			kept = !strcmp(e->d_name, keep[r]);
		if (snprintf(path, sizeof path, "%s/%s", top->dir, e->d_name) >= (int)sizeof path ||
		    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		if (kept)
			clear_ring_folder(path, command);
		else
			remove_ring_folder(path, command);
	}
	closedir(d);
}

/* Check and claim side's top folder, its records named; 0 or the exit code. */
static int claim_side(const xf_cli_job *job, ring_side *side, const double *q, int n, int replace,
		      const char *hint)
{
	memset(&side->top, 0, sizeof side->top);
	side->top.lock_fd = -1;
	if (!side->on)
		return 0;
	side->rec = calloc((size_t)n, sizeof *side->rec);
	const char **keep = calloc((size_t)n, sizeof *keep);
	if (!side->rec || !keep) {
		free(keep);
		return xf_cli_error(XF_ERR_NOMEM, "out of memory for %d q rings", n);
	}
	for (int r = 0; r < n; r++)
		side->rec[r].q_per_A = q[r];
	xf_ring_folder_names(side->rec, n);
	for (int r = 0; r < n; r++)
		keep[r] = side->rec[r].folder;
	int rc = xf_cli_check_out(job->out, xf_method_name(side->method), replace, hint);
	if (!rc)
		rc = xf_cli_claim_keep(&side->top, job->out, xf_method_name(side->method), replace,
				       hint, job->command, keep, n);
	free(keep);
	return rc;
}

static void free_side(ring_side *side, int n)
{
	xf_rundir_release(&side->top);
	for (int r = 0; side->rec && r < n; r++)
		xf_ring_record_free(&side->rec[r]);
	free(side->rec);
}

int xf_cli_run_rings(const xf_cli_job *job, int *handled)
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
	int is_nlsq = !strcmp(job->command, "nlsq");
	ring_side nl, cm;
	memset(&nl, 0, sizeof nl);
	memset(&cm, 0, sizeof cm);
	nl.method = XF_METHOD_NLSQ;
	nl.on = is_nlsq || !job->nlsq;
	cm.method = XF_METHOD_CMC;
	cm.on = !is_nlsq;
	int replace = job->force || (!is_nlsq && job->resume);
	const char *hint = is_nlsq ? "--force" : "--force (or --resume)";
	rc = claim_side(job, &cm, q, n, replace, hint);
	if (!rc)
		rc = claim_side(job, &nl, q, n, replace, hint);
	int claimed = !rc;
	if (claimed) {
		xf_say(XF_VERB_NORMAL, "%s: %d q rings, fitted one after the other into %s/",
		       job->command, n, cm.on ? cm.top.dir : nl.top.dir);
		rc = fit_rings(job, &nl, &cm, n);
	}
	if (claimed && rc != XF_ERR_INTERRUPTED) {
		int wrc = 0; /* several MPI ranks: rank 0 alone writes (adr/0021) */
		for (int s = 0; s < 2; s++) {
			ring_side *side = s ? &cm : &nl;
			if (side->on && !wrc && xf_dist_is_root())
				wrc = write_summary(side, mode, n, job->plots);
		}
		wrc = xf_cli_agree(wrc);
		if (wrc)
			rc = wrc;
		else if (job->written)
			*job->written = 1;
	}
	free_side(&nl, n);
	free_side(&cm, n);
	free(q);
	return rc;
}
