/* cli_common.c — what the fitting subcommands share (cli_internal.h): timing, the
 * --threads option, loading the config and the data (through the selection built from
 * it, request_build.c), and the NLSQ step (on the caller's problem request). */
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "cli/cli_keys.h"
#include "cli/commands.h"
#include "cli/constants.h"
#include "outputs/rings_summary.h"
#include "util/interrupt.h"
#include "util/numfmt.h"
#include "util/profile.h"
#include "util/verbosity.h"
#include "util/rundir.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/params.h"
#include "xpcsfit/vdev.h"
#include "util/clock.h"

double xf_cli_now_s(void)
{
	return xf_monotonic_s();
}

int xf_cli_agree(int rc)
{
	if (!xf_dist_get())
		return rc;
	xf_error err = { 0 };
	if (rc) {
		err.code = rc;
		snprintf(err.msg, sizeof err.msg, "%s", xf_cli_last_error());
	}
	int agreed = xf_dist_agree(rc, &err);
	if (agreed && !rc)
		xf_cli_error(agreed, "%s", err.msg);
	return agreed;
}

int xf_cli_threads(const char *arg, int *threads)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < 1 || v > XF_VIRTUAL_DEVICES_MAX)
		return xf_cli_error(XF_ERR_CONFIG,
				    "--threads: '%s' is not allowed (a whole number from 1 to %d)",
				    arg, XF_VIRTUAL_DEVICES_MAX);
	*threads = (int)v;
	return 0;
}

/* run.log keeps the config as it was read, so a result can be traced to its input; a
 * longer config (a few KB is usual) is logged up to this many bytes */
#define XF_LOGGED_CONFIG_MAX ((size_t)65535)
static void log_config_text(const xf_config *cfg)
{
	/* the bytes the config was read from (not the file again: it may have changed) */
	size_t len =
		cfg->source_len < XF_LOGGED_CONFIG_MAX ? cfg->source_len : XF_LOGGED_CONFIG_MAX;
	xf_info("config file %s (%zu bytes%s):\n%.*s", cfg->source_path, len,
		len == XF_LOGGED_CONFIG_MAX ? ", first 64 KiB" : "", (int)len,
		cfg->source_text ? cfg->source_text : "");
}

/* XF_KEY_LOGGING_LEVEL WARNING: warnings without progress lines (no -q/-v level says that) */
static int progress_on = 1;

/* The config's XF_KEY_LOGGING_LEVEL, unless the command line gave -q or -v (which win):
 * ERROR/CRITICAL shows error lines only on stderr (stdout's summary stays), WARNING
 * normal without progress lines, INFO normal, DEBUG as -v. */
void xf_cli_set_verbosity(const xf_config *cfg)
{
	if (xf_verbosity_given())
		return;
	xf_log_level v = cfg->verbosity;
	xf_verbosity_set(v == XF_VERBOSITY_DEBUG ? XF_VERB_INFO : XF_VERB_NORMAL);
	xf_verbosity_stderr_errors_only(v == XF_VERBOSITY_ERROR);
	progress_on = v != XF_VERBOSITY_WARNING;
}

int xf_cli_progress_on(void)
{
	return progress_on && xf_progress_on();
}

const xf_cli_job *xf_cli_job_out(const xf_cli_job *job, xf_cli_job *copy, char *buf, size_t size,
				 char **text)
{
	xf_error err = { 0 };
	*copy = *job;
	*text = NULL;
	/* unreadable: left to the config's load, which says why in the usual words */
	if (!copy->config_text)
		copy->config_text = *text = xf_config_read_text(job->config, NULL, &err);
	if (!job->out_given &&
	    xf_config_base_directory(job->config, copy->config_text, job->overrides,
				     job->n_overrides, buf, size))
		copy->out = buf;
	return copy;
}

void xf_cli_job_init(xf_cli_job *job, const char *command)
{
	memset(job, 0, sizeof *job);
	job->command = command;
	job->out = "./xpcsfit_results";
	job->plots = 1;
	job->surfaces = -1; /* the config's XF_KEY_SURFACES, none by default (adr/0059) */
}

int xf_cli_surfaces(const xf_cli_job *job, const xf_config *cfg)
{
	return job->surfaces >= 0 ? job->surfaces : cfg->output_surfaces;
}

/* What a rank of a band load holds (adr/0027): its pairs and c2 bytes against the
 * window's. Ranks other than 0 print it with XPCSFIT_MPI_ALL_OUTPUT=1. */
static void log_band(const xf_dataset *ds)
{
	size_t window = xf_packed_size((size_t)ds->n_frames) * (size_t)ds->n_phi * sizeof(double);
	size_t held = ds->c2_len * (size_t)ds->n_phi * sizeof(double);
	xf_info("data: rank %d of %d holds pairs %zu to %zu of %zu (rows %d..), c2 %zu bytes "
		"of the window's %zu",
		xf_dist_rank(), xf_dist_ranks(), ds->pair_first, ds->pair_first + ds->pair_count,
		xf_fitted_pairs((size_t)ds->n_frames), ds->pair_i0, held, window);
	const char *all = getenv("XPCSFIT_MPI_ALL_OUTPUT");
	if (all && all[0] == '1')
		fprintf(stderr, "xpcsfit: rank %d of %d holds c2 %zu bytes, pairs %zu to %zu\n",
			xf_dist_rank(), xf_dist_ranks(), held, ds->pair_first,
			ds->pair_first + ds->pair_count);
}

int xf_cli_read_config(const xf_cli_job *job, xf_config *cfg, xf_error *err)
{
	if (job->config_text)
		return xf_config_load_text(job->config, job->config_text, job->overrides,
					   job->n_overrides, cfg, err);
	return xf_config_load_with(job->config, job->overrides, job->n_overrides, cfg, err);
}

int xf_cli_load_config(const xf_cli_job *job, xf_config *cfg, int *threads)
{
	xf_error err = { 0 };
	xf_phase("load", 0);
	xf_profile_phase("load");
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	xf_info("xpcsfit %s (HDF5 %d.%d.%d), command: %s, config: %s", XPCSFIT_VERSION,
		H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, job->command, job->config);
	int crc = xf_cli_read_config(job, cfg, &err);
	if (crc)
		crc = xf_cli_error(err.code, "%s", err.msg);
	if ((crc = xf_cli_agree(crc))) {
		if (!err.code)
			xf_config_free(cfg);
		return crc;
	}
	if (job->ring_q > 0) { /* one ring of a per-ring run: as if wavevector_q named it */
		cfg->has_q = 1;
		cfg->wavevector_q = job->ring_q;
		cfg->q_rings.pick = XF_Q_PICK_ONE;
	}
	if (job->strict && (crc = xf_cli_strict(cfg, job->config))) {
		xf_config_free(cfg);
		return crc;
	}
	xf_cli_set_verbosity(cfg);
	log_config_text(cfg);
	xf_cli_log_ignored(cfg);
	for (size_t k = 0; k < job->n_overrides; k++) {
		char key[300];
		const char *option = job->overrides[k].option;
		xf_info("override%s%s: %s = %s (%s)", option ? " " : "", option ? option : "",
			xf_config_override_key(&job->overrides[k], key, sizeof key),
			job->overrides[k].value, job->overrides[k].origin);
	}
	/* --threads, else XF_KEY_VIRTUAL_DEVICES, else the cores this process was given */
	if (*threads == 0 && cfg->virtual_devices > 0) {
		*threads = cfg->virtual_devices;
	} else if (*threads == 0) {
		const char *source;
		*threads = xf_cores_given(&source);
		xf_info("virtual devices: %d (%s)", *threads, source);
	}
	return 0;
}

int xf_cli_load(const xf_cli_job *job, xf_config *cfg, xf_dataset *ds, int *threads)
{
	memset(ds, 0, sizeof *ds);
	int crc = xf_cli_load_config(job, cfg, threads);
	if (crc)
		return crc;
	return xf_cli_load_data(job, cfg, ds);
}

int xf_cli_load_data(const xf_cli_job *job, xf_config *cfg, xf_dataset *ds)
{
	xf_error err = { 0 };
	memset(ds, 0, sizeof *ds);
	/* every rank reads the data (adr/0021); an error on any ends them all. The ranks of
	 * an NLSQ run keep only the rows of their blocks (adr/0027). */
	int band = xf_dist_get() && !strcmp(job->command, "nlsq");
	xf_selection sel;
	xf_selection_from_config(cfg, &sel);
	int rc = band ? xf_dataset_load_band(&sel, job->data, xf_dist_rank(), xf_dist_ranks(), ds,
					     &err)
		      : xf_dataset_load(&sel, job->data, ds, &err);
	if (rc)
		rc = xf_cli_error(err.code, "%s", err.msg);
	if ((rc = xf_cli_agree(rc))) {
		xf_dataset_free(ds);
		xf_config_free(cfg);
		return rc;
	}
	/* Results record the file read as an absolute path: `cmc --nlsq DIR` compares it
	 * with its own data file, and a relative one would name another file from another
	 * working directory. */
	char *abs = realpath(ds->path, NULL);
	if (abs) {
		free(ds->path);
		ds->path = abs;
	}
	xf_info("data: %s (%s), q %.6g 1/A, %d angles, %d frames, dt %.6g s (%s), %zu points",
		ds->path, xf_layout_name(ds->layout), ds->q, ds->n_phi, ds->n_frames, ds->dt_s,
		ds->dt_source, ds->n_points);
	if (band)
		log_band(ds);
	return 0;
}

/* Iteration progress on stderr (util/verbosity.h): one rewritten line on a terminal;
 * otherwise a plain line at most every XF_PROGRESS_PLAIN_S seconds (every iteration at
 * -vv), and never for screening, which makes hundreds of short runs; nothing with -q. */
void xf_cli_nlsq_progress(const xf_nlsq_progress *p, void *ctx)
{
	xf_cli_progress_state *st = ctx;
	if (!xf_cli_progress_on() ||
	    (!st->tty && p->screening && !st->screening && xf_verbosity() < XF_VERB_DEBUG))
		return;
	double t = xf_cli_now_s() - st->t0;
	if (st->tty)
		fprintf(stderr, "\r  nlsq %-20s iter %4d  chi2 %.8e  lambda %.1e  %6.1fs ",
			p->phase, p->iteration, p->chi_squared, p->lambda, t);
	else if (xf_progress_due(&st->last, t))
		xf_say(XF_VERB_NORMAL, "nlsq %s iteration %d chi2 %.10e lambda %.2e (%.1f s)",
		       p->phase, p->iteration, p->chi_squared, p->lambda, t);
}

void xf_cli_print_param(const char *name, double value, double unc, int fixed,
			const double *interval)
{
	char text[XF_NUM_TEXT], lo[XF_NUM_TEXT], hi[XF_NUM_TEXT], line[3 * XF_NUM_TEXT + 16];
	const char *unit = xf_param_unit(name);
	if (fixed)
		xf_num_value(value, NAN, text, sizeof text);
	else
		xf_num_pm(value, unc, " +/- ", text, sizeof text);
	if (fixed) {
		snprintf(line, sizeof line, "%s (fixed)", text);
	} else if (interval) {
		xf_num_value(interval[0], unc, lo, sizeof lo);
		xf_num_value(interval[1], unc, hi, sizeof hi);
		snprintf(line, sizeof line, "%s  [%s, %s]", text, lo, hi);
	} else {
		snprintf(line, sizeof line, "%s", text);
	}
	/* a dimensionless parameter shows no unit ("1" in report.html and the JSON) */
	if (unit[0] && strcmp(unit, "1"))
		printf("  %-20s %-34s %s\n", name, line, unit);
	else
		printf("  %-20s %s\n", name, line);
}

void xf_cli_print_results_line(const char *dir)
{
	printf("results: %s/ (summary page: %s/report.html)\n", dir, dir);
}

static void print_summary(const char *dir, const xf_config *cfg, const xf_nlsq_result *res)
{
	if (xf_verbosity() < XF_VERB_NORMAL) /* -q: errors only */
		return;
	const xf_nlsq_search *s = &res->search;
	printf("nlsq: %s (%s) after %d iterations, %zu points\n", xf_fit_status_name(res->status),
	       res->stop_reason, res->iterations, res->n_points);
	/* σ not given: χ² is a sum of squares in the data's units, its "reduced" value the
	 * residual variance (docs/outputs.md "Statistics") */
	if (isfinite(res->residual_sd))
		printf("residual sd: %.4g (sigma not given: chi2 with sigma = 1 is %.6g)\n",
		       res->residual_sd, res->chi_squared);
	else
		printf("chi2: %.6g, reduced chi2 %.6g (sigma %.4g given)\n", res->chi_squared,
		       res->reduced_chi_squared, res->sigma);
	printf("per-angle scaling: %s (config: %s)\n", xf_scaling_mode_used_name(res->scaling_mode),
	       xf_scaling_mode_name(cfg->nlsq.per_angle_mode));
	if (s->n_candidates > 1)
		printf("search: %d starts screened on %zu points, %d basin%s, best from '%s'\n",
		       s->n_candidates, s->round_points[0], s->n_basins,
		       s->n_basins == 1 ? "" : "s", s->chosen);
	for (int k = 0; k < res->n_phys; k++)
		xf_cli_print_param(res->names[k], res->values[k],
				   res->is_fixed[k] ? NAN : res->uncertainties[k], res->is_fixed[k],
				   NULL);
	if (res->quality.identified.n_combos) { /* a ridge (adr/0047) */
		const xf_identified *id = &res->quality.identified;
		char text[XF_NUM_TEXT];
		for (int k = 0; k < id->n_combos; k++) {
			xf_num_pm(id->combo[k].value, id->combo[k].sd, " +/- ", text, sizeof text);
			printf("identified: %s = %s\n", id->combo[k].text, text);
		}
		printf("not identified one by one:");
		for (int k = 0; k < id->n_not_identified; k++)
			printf("%s %s", k ? "," : "", id->not_identified[k]);
		printf(" (fix: %s)\n", id->fix);
	}
	printf("quality: %s\n", xf_quality_level_name(res->quality.overall));
	for (int k = 0; k < res->quality.n_reasons; k++)
		printf("  - %s\n", res->quality.reasons[k]);
	xf_cli_print_results_line(dir);
}

static int nlsq_fit_and_write(const xf_config *cfg, const xf_request *req,
			      const xf_nlsq_options *nopt, const xf_dataset *ds, xf_rundir *rd,
			      int threads, const xf_output_options *oopt, const char *command,
			      double t_start, double t_loaded, xf_nlsq_fitted *fit);

int xf_cli_out_dir(char *buf, size_t size, const char *out, const char *method)
{
	if (!out || !out[0])
		return xf_cli_error(XF_ERR_CONFIG, "--out is empty: give a folder name");
	if ((size_t)snprintf(buf, size, "%s/%s", out, method) >= size)
		return xf_cli_error(XF_ERR_CONFIG, "--out is too long (%zu characters)",
				    strlen(out));
	return 0;
}

int xf_cli_check_out(const char *out, const char *method, int replace, const char *hint)
{
	char dir[PATH_MAX];
	xf_error err = { 0 };
	int rc = xf_cli_out_dir(dir, sizeof dir, out, method);
	/* rank 0 alone writes the result folders */
	if (rc == 0 && xf_dist_is_root() && xf_rundir_check(dir, replace, hint, &err) != 0)
		rc = xf_cli_error(err.code, "%s", err.msg);
	return xf_cli_agree(rc);
}

int xf_cli_claim_keep(xf_rundir *rd, const char *out, const char *method, int replace,
		      const char *hint, const char *command, const char *const *keep, int n_keep)
{
	char dir[PATH_MAX];
	xf_error err = { 0 };
	memset(rd, 0, sizeof *rd);
	rd->lock_fd = -1;
	int rc = xf_cli_out_dir(dir, sizeof dir, out, method);
	if (rc == 0 && !xf_dist_is_root()) /* the folder's name alone: rank 0 claims it */
		snprintf(rd->dir, sizeof rd->dir, "%s", dir);
	else if (rc == 0 && xf_rundir_claim(rd, dir, replace, hint, command, &err) != 0)
		rc = xf_cli_error(err.code, "%s", err.msg);
	if ((rc = xf_cli_agree(rc)))
		xf_rundir_release(rd);
	else if (!strchr(method, '/')) /* a top folder, not a ring's own (adr/0065) */
		xf_cli_remove_stale_rings(rd, keep, n_keep, command);
	return rc;
}

int xf_cli_claim(xf_rundir *rd, const char *out, const char *method, int replace, const char *hint,
		 const char *command)
{
	return xf_cli_claim_keep(rd, out, method, replace, hint, command, NULL, 0);
}

int xf_cli_nlsq_step_in(const xf_config *cfg, const xf_request *req, const xf_nlsq_options *nopt,
			const xf_dataset *ds, const char *out, const char *method_dir, int threads,
			const xf_output_options *oopt, int replace, const char *command,
			double t_start, double t_loaded, xf_nlsq_fitted *fit)
{
	xf_rundir rd;
	xf_error err = { 0 };
	/* the fit's own refusals before the claim, which removes a finished result
	 * (adr/0071) */
	int rc = xf_nlsq_check(req, ds, &err) ? xf_cli_error(err.code, "%s", err.msg) : 0;
	if ((rc = xf_cli_agree(rc)) ||
	    (rc = xf_cli_claim(&rd, out, method_dir, replace, "--force", command)))
		return rc;
	rc = nlsq_fit_and_write(cfg, req, nopt, ds, &rd, threads, oopt, command, t_start, t_loaded,
				fit);
	xf_rundir_release(&rd);
	return rc;
}

/* The results from the fit's estimate; a band (adr/0027) reads the whole window again for
 * the surfaces and the plots, after the fit (rank 0 only), and not at all without them. */
static int write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
		      const xf_nlsq_fitted *fit, const xf_output_options *oopt, xf_error *err)
{
	if (!ds->band || !(oopt->write_surfaces || oopt->write_plots))
		return xf_results_write_nlsq(dir, cfg, ds, &fit->est, &fit->app, oopt, err);
	xf_dataset whole;
	int rc = xf_cli_dataset_load(cfg, ds->path, &whole, err);
	if (!rc)
		rc = xf_results_write_nlsq(dir, cfg, &whole, &fit->est, &fit->app, oopt, err);
	xf_dataset_free(&whole);
	return rc;
}

static int nlsq_fit_and_write(const xf_config *cfg, const xf_request *req,
			      const xf_nlsq_options *nopt, const xf_dataset *ds, xf_rundir *rd,
			      int threads, const xf_output_options *oopt, const char *command,
			      double t_start, double t_loaded, xf_nlsq_fitted *fit)
{
	xf_error err = { 0 };
	const char *dir = rd->dir;
	if (xf_dist_is_root()) /* what is fitted, once the run's checks have passed */
		xf_cli_print_constants(cfg, ds);
	char ranks[64] = "";
	if (xf_dist_ranks() > 1)
		snprintf(ranks, sizeof ranks, " per rank, %d MPI ranks", xf_dist_ranks());
	xf_say(XF_VERB_NORMAL, "nlsq on %zu points (%d angles x %d frames), %d virtual devices%s",
	       ds->n_points, ds->n_phi, ds->n_frames, threads, ranks);
	xf_cli_progress_state ps = { xf_progress_tty(), xf_cli_now_s(), -1.0, 0 };
	xf_phase("fit", 1);
	xf_profile_phase("fit");
	int rc = xf_nlsq_run(req, nopt, ds, threads, xf_cli_nlsq_progress, &ps, t_start, t_loaded,
			     fit, &err);
	if (ps.tty)
		fputc('\n', stderr);
	if (rc)
		rc = xf_cli_error(err.code, "%s", err.msg);
	if ((rc = xf_cli_agree(rc))) {
		xf_nlsq_fitted_free(fit);
		return rc;
	}
	const xf_nlsq_result *res = &fit->res;
	xf_phase("results", 0);
	xf_profile_phase("writing");
	if (res->status == XF_STATUS_MAX_ITERATIONS)
		xf_warn("nlsq stopped at max_iterations (%d) before converging",
			nopt->max_iterations);
	if (xf_cli_progress_on())
		xf_say(XF_VERB_NORMAL, "writing %s/ (results.h5%s%s)", dir,
		       oopt->write_surfaces ? " with surfaces" : "",
		       oopt->write_plots ? ", parameters.json, plots" : ", parameters.json");
	if (xf_dist_is_root() &&
	    (write_nlsq(dir, cfg, ds, fit, oopt, &err) || xf_rundir_complete(rd, &err)))
		rc = xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	if ((rc = xf_cli_agree(rc))) {
		xf_nlsq_fitted_free(fit);
		return rc;
	}
	/* the folder is complete: a signal from here on says so (util/interrupt.h) */
	xf_phase("summary", 0);
	print_summary(dir, cfg, res);
	rc = xf_fit_status_failed(res->status) ? XF_ERR_DATA : 0;
	const char *why = res->quality.n_reasons ? res->quality.reasons[0] : res->stop_reason;
	char identified[256];
	/* a ridge (adr/0047) did converge, to a valley: what the data identify, the fix */
	int ridge = res->status == XF_STATUS_RIDGE;
	if (rc && ridge) {
		xf_identified_text(&res->quality.identified, identified, sizeof identified);
		why = identified;
	}
	const char *what =
		ridge ? "converged to a ridge, a set of equally good fits" : "did not converge";
	const char *marked = ridge ? "ridge (not usable)" : "failed";
	/* for cmc and fit this is the warm start, and the run goes on: a warning there */
	if (rc && !strcmp(command, "nlsq"))
		xf_cli_error(rc, "the fit %s (%s), results are marked %s, in %s", what, why, marked,
			     dir);
	else if (rc)
		xf_warn("the NLSQ fit %s (%s), its results are marked %s, in %s: CMC starts from "
			"it anyway",
			what, why, marked, dir);
	return rc;
}
