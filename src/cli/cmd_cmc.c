/* cmd_cmc.c — `xpcsfit cmc` and `xpcsfit fit` (spec/cli.md): the consensus Monte Carlo
 * posterior warm-started from an NLSQ result — read from --nlsq DIR, or fitted first
 * (fit always does that) — written to <out>/cmc/. The problem request is built once
 * from the config here and serves both steps (adr/0043). */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "cli/constants.h"
#include "cli/overrides.h"
#include "outputs/rings_summary.h"
#include "services/posterior.h"
#include "util/interrupt.h"
#include "util/verbosity.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/dist.h"
#include "util/key_names.h"

static const char cmc_usage[] =
	"usage: xpcsfit cmc --config C.yaml [--data FILE.h5] [--nlsq DIR] [--out DIR]\n"
	"                   [--threads N] [--resume] [--no-plots] [--force] [--strict]\n"
	"                   [--device cpu|gpu|auto] [--joint]\n"
	"       xpcsfit fit --config C.yaml [--data FILE.h5] [--out DIR] [--threads N]\n"
	"                   [--resume] [--no-plots] [--surfaces|--no-surfaces] [--force]\n"
	"                   [--strict] [--device cpu|gpu|auto]\n"
	"\n"
	"Consensus Monte Carlo posterior (docs/cmc.md): NUTS on shards of the data, combined\n"
	"into one posterior, warm-started from NLSQ. Results go to DIR/cmc/ (DIR defaults to\n"
	"./xpcsfit_results): report.html (the page to open or print), results.h5,\n"
	"parameters.json, plots/, run.log, shards/.\n"
	"  --nlsq DIR      the NLSQ result to start from (DIR or DIR/nlsq holding\n"
	"                  parameters.json); without it NLSQ runs first (fit: always)\n"
	"  --resume        reuse the shards an interrupted run finished (same inputs)\n"
	"  --threads N     virtual devices (default: " XF_KEY_VIRTUAL_DEVICES
	", else cores)\n  --no-plots      skip the PNG plots\n"
	"  --surfaces      when NLSQ runs first: its results.h5 with the (n_phi, N, N) maps\n"
	"                  (default: " XF_KEY_SURFACES ", none); --no-surfaces: without them\n"
	"  --force         replace finished results in DIR/cmc/ (and DIR/nlsq/ when NLSQ\n"
	"                  runs first); --resume replaces them too, keeping the shards\n"
	"  --strict        refuse a config with keys xpcsfit does not use (exit 2)\n"
	"  --device D      where the passes over all the data run (NLSQ's fit and the\n"
	"                  posterior's): cpu (default), gpu (exit 2 without a CUDA device),\n"
	"                  auto (the device where the job is expected to take at most half\n"
	"                  the CPU's time; docs/gpu.md)\n"
	"  --joint         the posterior of the joint fit over every selected q ring\n"
	"                  (shared physical parameters), warm-started from DIR/nlsq_joint/\n"
	"                  (--nlsq DIR: DIR or DIR/nlsq_joint; else fitted first), into\n"
	"                  DIR/cmc_joint/ (docs/user-guide.md \"Several q rings\", adr/0066)\n"
	"A run holds DIR/cmc/.lock (a second run into it is refused) and keeps\n"
	"DIR/cmc/INCOMPLETE until every file is written (docs/outputs.md).\n"
	"  --output-dir DIR  the same as --out (homodyne's spelling)\n" XF_OVERRIDE_USAGE;

/* Parse into job; returns −1 to go on, else the exit code. */
static int parse(const char *cmd, int argc, char **argv, xf_cli_job *o, xf_cli_overrides *ov)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "data", required_argument, 0, 'd' },
		{ "nlsq", required_argument, 0, 'n' },
		{ "out", required_argument, 0, 'o' },
		{ "threads", required_argument, 0, 't' },
		{ "resume", no_argument, 0, 'r' },
		{ "no-plots", no_argument, 0, 'P' },
		{ "surfaces", no_argument, 0, 'F' },
		{ "no-surfaces", no_argument, 0, 'S' },
		{ "force", no_argument, 0, 'f' },
		{ "strict", no_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' },
		{ "output-dir", required_argument, 0, 'o' },
		{ "joint", no_argument, 0, 'J' },
		{ "device", required_argument, 0, 'D' },
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	int c;
	xf_cli_job_init(o, cmd);
	o->per_ring = 1;
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; (c = getopt_long(argc, argv, "h", opts, &li)) != -1; li = -1) {
		if (xf_cli_option_rules(cmd, opts, li, optarg, &seen))
			return XF_ERR_CONFIG;
		switch (c) {
		case 'c': o->config = optarg; break;
		case 'd': o->data = optarg; break;
		case 'n': o->nlsq = optarg; break;
		case 'o':
			o->out = optarg;
			o->out_given = 1;
			break;
		case 't':
			if (xf_cli_threads(optarg, &o->threads))
				return XF_ERR_CONFIG;
			break;
		case 'r': o->resume = 1; break;
		case 'P': o->plots = 0; break;
		case 'F': o->surfaces = 1; break;
		case 'S': o->surfaces = 0; break;
		case 'f': o->force = 1; break;
		case 's': o->strict = 1; break;
		case 'J': o->joint = 1; break;
		case 'D': o->device = optarg; break;
		case 'h': fputs(cmc_usage, stdout); return 0;
		default:
			if (xf_cli_override_or_unknown(ov, c, optarg, cmd, argv[optind - 1]))
				return XF_ERR_CONFIG;
			break;
		}
	}
	if (optind < argc)
		return xf_cli_error(XF_ERR_CONFIG, "%s: unexpected argument '%s'", cmd,
				    argv[optind]);
	if (!o->config)
		return xf_cli_error(XF_ERR_CONFIG,
				    "%s: --config is required, see 'xpcsfit %s --help'", cmd, cmd);
	if (xf_cli_resume_force(cmd, o->resume, o->force))
		return XF_ERR_CONFIG;
	if (o->nlsq && !strcmp(cmd, "fit"))
		return xf_cli_error(XF_ERR_CONFIG,
				    "fit: --nlsq is not an option of fit (it fits NLSQ itself); "
				    "use 'xpcsfit cmc --nlsq DIR'");
	if (xf_cli_overrides_finish(ov))
		return XF_ERR_CONFIG;
	o->overrides = ov->items;
	o->n_overrides = ov->n;
	return -1;
}

static int read_nlsq(const char *given, const char *sub, const xf_config *cfg, const xf_dataset *ds,
		     xf_estimate *nlsq);

/* The NLSQ warm start, as the fit's estimate: read from --nlsq (DIR or DIR/nlsq) and
 * checked against this data and config, or fitted now (written to <out>/nlsq/; its ring
 * record filled when rec is given and the folder was written). */
static int warm_start(const char *cmd, const xf_cli_job *o, const xf_config *cfg,
		      const xf_request *req, const xf_nlsq_options *nopt, const xf_dataset *ds,
		      int threads, double t_start, xf_ring_record *rec, xf_estimate *nlsq)
{
	if (!o->nlsq) {
		if (xf_cli_progress_on())
			xf_say(XF_VERB_NORMAL, "%s: fitting NLSQ first (the warm start of CMC)",
			       cmd);
		xf_output_options oopt = { xf_cli_surfaces(o, cfg), o->plots, threads, NULL, NULL };
		xf_nlsq_fitted fit;
		memset(&fit, 0, sizeof fit);
		int rc = xf_cli_nlsq_step_in(
			cfg, req, nopt, ds, o->out, o->method_dir ? o->method_dir : "nlsq", threads,
			&oopt, o->force || o->resume, cmd, t_start, xf_cli_now_s(), &fit);
		/* published: the folder was written; a fit that did not converge was a
		 * warning there, and CMC starts from it */
		if (fit.published) {
			if (rec) /* the ring's row from the files' estimate */
				xf_ring_record_fill(rec, &fit.est, &fit.app);
			xf_nlsq_fitted_take_estimate(&fit, nlsq); /* the warm start */
			rc = 0; /* a fit that did not converge: its warning was said, CMC goes on */
		}
		xf_nlsq_fitted_free(&fit);
		return rc;
	}
	/* every rank reads the NLSQ result (the same path on every node, adr/0022) */
	return xf_cli_agree(read_nlsq(o->nlsq, "nlsq", cfg, ds, nlsq));
}

/* The NLSQ result in given/sub (when that holds parameters.json) or given, checked
 * against ds and cfg. */
static int read_nlsq(const char *given, const char *sub, const xf_config *cfg, const xf_dataset *ds,
		     xf_estimate *nlsq)
{
	xf_error err = { 0 };
	char dir[PATH_MAX], probe[PATH_MAX];
	struct stat st;
	snprintf(dir, sizeof dir, "%s", given);
	snprintf(probe, sizeof probe, "%s/%s/parameters.json", given, sub);
	if (stat(probe, &st) == 0)
		snprintf(dir, sizeof dir, "%s/%s", given, sub);
	if (xf_rundir_incomplete(dir))
		return xf_cli_error(
			XF_ERR_DATA,
			"the NLSQ result is incomplete (its run was interrupted, failed "
			"or is still going: see its INCOMPLETE file); rerun nlsq with "
			"--force, %s",
			dir);
	xf_nlsq_origin origin;
	if (xf_results_read_nlsq(dir, nlsq, &origin, &err) ||
	    xf_results_check_nlsq(dir, nlsq, &origin, cfg, ds, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	if (!origin.has_status || origin.status != XF_STATUS_CONVERGED)
		xf_warn("the NLSQ result in %s is '%s', not converged: CMC starts from it anyway",
			dir, origin.has_status ? xf_fit_status_name(origin.status) : "no status");
	xf_info("cmc: warm start from the NLSQ result in %s", dir);
	return 0;
}

typedef struct progress_state {
	int tty, resume, reported;
	double last; /* time of the last plain progress line (< 0: none yet) */
	const char *shard_dir;
	const xf_dataset *ds; /* for the banner */
	int threads;
	int n_rings; /* > 1: a joint posterior over that many rings */
} progress_state;

/* ", ETA 80 s" / ", ETA 17 min": the remaining time from the recent rate (eta.h) */
static void eta_text(double eta_s, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!isfinite(eta_s))
		return;
	if (eta_s >= 5400.0)
		snprintf(buf, size, ", ETA %.1f h", eta_s / 3600.0);
	else if (eta_s >= 120.0)
		snprintf(buf, size, ", ETA %.0f min", eta_s / 60.0);
	else
		snprintf(buf, size, ", ETA %.0f s", eta_s);
}

static void show_progress(const xf_cmc_progress *p, void *ctx)
{
	progress_state *st = ctx;
	int tty = st->tty;
	char eta[32] = "";
	if (!xf_cli_progress_on())
		return;
	/* The first report comes once the layout is valid and before any sampling (so a
	 * config error stays one line), and its shards done are the resumed ones. */
	if (!st->reported++) {
		if (st->n_rings > 1)
			xf_say(XF_VERB_NORMAL,
			       "cmc joint posterior of %d rings on %zu points (%d angle slots x "
			       "%d frames), %d virtual devices",
			       st->n_rings, st->ds->n_points, st->ds->n_phi, st->ds->n_frames,
			       st->threads);
		else
			xf_say(XF_VERB_NORMAL,
			       "cmc on %zu points (%d angles x %d frames), %d virtual devices",
			       st->ds->n_points, st->ds->n_phi, st->ds->n_frames, st->threads);
		if (st->resume)
			xf_say(XF_VERB_NORMAL, "cmc: --resume: resumed %ld of %ld shards from %s%s",
			       p->shards_done, p->shards_total, st->shard_dir,
			       p->shards_done ? "" : " (none finished with these inputs)");
	}
	eta_text(p->eta_s, eta, sizeof eta);
	double pct = p->iterations_total > 0
			     ? 100.0 * (double)p->iterations_done / (double)p->iterations_total
			     : 100.0;
	char line[256];
	if (p->stage == XF_CMC_STAGE_IMPORTANCE) /* the route's check (adr/0045) */
		snprintf(line, sizeof line,
			 "posterior: importance check, round %d, exact log density at %ld/%ld "
			 "points (%.0f %%), %.1f s%s",
			 p->round > 0 ? p->round : 1, p->iterations_done, p->iterations_total, pct,
			 p->elapsed_s, eta);
	else if (p->shards_total == 1 && p->phase) { /* one shard: exact NUTS, no shards */
		char chains[48];
		if (p->chain > 0)
			snprintf(chains, sizeof chains, "chain %d/%d", p->chain, p->n_chains);
		else
			snprintf(chains, sizeof chains, "%d chains", p->n_chains);
		snprintf(line, sizeof line,
			 "posterior: exact NUTS %s, %s, iterations %ld/%ld (%.0f %%), %ld "
			 "divergences, %.1f s%s",
			 p->phase, chains, p->iterations_done, p->iterations_total, pct,
			 p->divergences, p->elapsed_s, eta);
	} else /* transitions of every chain, warmup included: what moves in a long shard */
		snprintf(line, sizeof line,
			 "cmc shards %ld/%ld, iterations %ld/%ld (%.0f %%), %ld divergences, "
			 "%.1f s%s",
			 p->shards_done, p->shards_total, p->iterations_done, p->iterations_total,
			 pct, p->divergences, p->elapsed_s, eta);
	/* without a terminal: paced lines, and always the last one (all shards done) */
	int last = p->stage == XF_CMC_STAGE_NUTS && p->shards_done == p->shards_total;
	if (tty)
		fprintf(stderr, "\r  %s   ", line);
	else if (xf_progress_due(&st->last, p->elapsed_s) || (last && xf_progress_on()))
		xf_say(XF_VERB_NORMAL, "%s", line);
}

static void print_summary(const char *dir, const xf_estimate *est, const xf_cmc_appendix *app)
{
	if (xf_verbosity() < XF_VERB_NORMAL) /* -q: errors only */
		return;
	if (app->n_shards > 1)
		printf("cmc: %s, %ld of %ld shards kept (%s), %d draws\n", est->words.status,
		       app->n_kept, app->n_shards, xf_combination_rule_name(app->combination),
		       est->n_draws);
	else
		printf("posterior: %s, %d draws\n", est->words.status, est->n_draws);
	printf("route: %s\n", app->route_text);
	if (est->n_draws > 0)
		printf("posterior mean +/- sd  [5 %%, 95 %% quantiles]:\n");
	for (int k = 0; k < est->n_phys && est->n_draws > 0; k++) {
		const double interval[2] = { est->q05[k], est->q95[k] };
		xf_cli_print_param(est->names[k], est->is_fixed[k] ? est->draws[k] : est->values[k],
				   est->sd_table[k], est->is_fixed[k], interval);
	}
	const xf_cmc_check *c = app->check;
	if (c->done) /* the three checks of docs/cmc.md, each with its number */
		printf("consensus check: k-hat %.3g, M %d, IS-ESS %.0f (%.3f of M; Gaussian "
		       "target %.3f), axis deviation %.3g (axis %d), seed %llu: %s\n",
		       c->khat, c->m, c->ess, c->ess / c->m, c->ess_ref, c->axis_dev, c->axis,
		       (unsigned long long)c->seed,
		       c->corrected ? "passed, the posterior is the corrected one"
				    : "failed, the summaries are the consensus ones");
	printf("quality: %s\n", est->words.quality);
	for (int k = 0; k < est->quality.n_reasons; k++)
		printf("  - %s\n", est->quality.reasons[k]);
	xf_cli_print_results_line(dir);
}

/* The posterior written from its estimate and appendix (services/posterior.c): the
 * files, the summary printed, and rec (a ring's summary row; NULL: none) filled once the
 * folder is complete.
 * rings_json, slot_q: a joint posterior's "rings" member and q per angle slot (NULL: one
 * ring) */
static int write_cmc(const char *dir, const xf_cli_job *o, const xf_config *cfg,
		     const xf_dataset *ds, const xf_posterior *post, int threads, xf_rundir *rd,
		     const char *rings_json, const double *slot_q, xf_ring_record *rec)
{
	xf_error err = { 0 };
	xf_phase("results", 0);
	xf_output_options oopt = { 1, o->plots, threads, rings_json, slot_q };
	if (xf_cli_progress_on())
		xf_say(XF_VERB_NORMAL, "writing %s/ (results.h5, parameters.json%s)", dir,
		       o->plots ? ", plots" : "");
	const xf_estimate *est = &post->est;
	const xf_cmc_appendix *app = &post->app;
	int wrc = xf_results_write_cmc(dir, cfg, ds, est, app, &oopt, &err);
	int rc;
	if (wrc || xf_rundir_complete(rd, &err)) {
		rc = xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	} else {
		if (o->written)
			*o->written = 1;
		if (rec)
			xf_ring_record_fill_cmc(rec, est);
		print_summary(dir, est, app);
		rc = est->status != XF_STATUS_CONVERGED ? XF_ERR_DATA : 0;
		if (rc)
			xf_cli_error(rc,
				     "the posterior is not trustworthy (%s), results are marked "
				     "failed, in %s",
				     est->quality.n_reasons ? est->quality.reasons[0]
							    : "see run.log",
				     dir);
	}
	return rc;
}

/* The joint posterior's warm start when --nlsq is not given: the joint NLSQ fitted now
 * into <out>/nlsq_joint/ (a fit that fails stops here, its error printed). *cfg is
 * parsed again after it (xf_cli_run_nlsq_joint consumes it) from the bytes the command
 * read when it started (o->config_text), not from the file, which may have been edited
 * while the NLSQ ran. */
static int joint_nlsq_first(const xf_cli_job *o, xf_config *cfg, int *threads, double t_start)
{
	if (xf_cli_progress_on())
		xf_say(XF_VERB_NORMAL, "%s: fitting the joint NLSQ first (the warm start of CMC)",
		       o->command);
	xf_cli_job nj = *o;
	nj.force = o->force || o->resume;
	int rc = xf_cli_run_nlsq_joint(&nj, cfg, *threads, t_start);
	return rc ? rc : xf_cli_load_config(o, cfg, threads);
}

/* The "rings" member of the joint posterior's parameters.json: the rings' q in slot
 * order and each ring's first angle slot (malloc'ed JSON text). */
static char *joint_rings_json(const xf_dataset *rings, int n_rings)
{
	size_t cap = 96 + (size_t)n_rings * 48;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	int len = snprintf(s, cap, "{\"mode\":\"joint\",\"n_rings\":%d,\"q\":[", n_rings);
	for (int k = 0; k < n_rings; k++)
		len += snprintf(s + len, cap - (size_t)len, "%s%.17g", k ? "," : "", rings[k].q);
	len += snprintf(s + len, cap - (size_t)len, "],\"first_slot\":[");
	for (int k = 0, first = 0; k < n_rings; first += rings[k].n_phi, k++)
		len += snprintf(s + len, cap - (size_t)len, "%s%d", k ? "," : "", first);
	snprintf(s + len, cap - (size_t)len, "]}");
	return s;
}

typedef struct joint_data {
	xf_dataset *rings, joint;
	int n_rings;
	double *slot_q;
} joint_data;

static void joint_free(joint_data *jd);

/* The selected rings, joined side by side (adr/0064); 0 or the exit code. */
static int joint_load(const xf_cli_job *o, const xf_config *cfg, joint_data *jd)
{
	xf_error err = { 0 };
	xf_selection sel;
	memset(jd, 0, sizeof *jd);
	xf_selection_from_config(cfg, &sel);
	if (xf_dataset_load_rings(&sel, o->data, &jd->rings, &jd->n_rings, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	if (xf_dataset_join_rings(jd->rings, jd->n_rings, &jd->joint, &jd->slot_q, &err)) {
		xf_dataset_free_rings(jd->rings, jd->n_rings);
		jd->rings = NULL;
		return xf_cli_error(err.code, "%s", err.msg);
	}
	/* too large a joint problem: refused before any fit or folder (adr/0073) */
	if (xf_cli_joint_cap_check(cfg, &jd->joint, jd->slot_q, jd->n_rings, NULL, &err)) {
		joint_free(jd);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	for (int k = 0; k < jd->n_rings; k++)
		xf_info("data: ring q %.6g 1/A, %d angles, %d frames, dt %.6g s, %zu points",
			jd->rings[k].q, jd->rings[k].n_phi, jd->rings[k].n_frames,
			jd->rings[k].dt_s, jd->rings[k].n_points);
	xf_cli_joint_one_ring(jd->rings, jd->n_rings);
	return 0;
}

static void joint_free(joint_data *jd)
{
	if (!jd->rings)
		return;
	xf_dataset_free_joined(&jd->joint);
	xf_dataset_free_rings(jd->rings, jd->n_rings);
	free(jd->slot_q);
	jd->rings = NULL;
}

/* Refusals before anything is fitted: a finished DIR/cmc_joint/ (or DIR/nlsq_joint/). */
static int joint_refusals(const xf_cli_job *o)
{
	const char *hint = "--force (or --resume)";
	int replace = o->force || o->resume;
	int rc = xf_cli_check_out(o->out, "cmc_joint", replace, hint);
	if (!rc && !o->nlsq)
		rc = xf_cli_check_out(o->out, "nlsq_joint", replace, hint);
	return rc;
}

/* `cmc --joint` / `fit --joint` (adr/0066): the posterior of the joint problem (the
 * rings' angles side by side with slot_q, shared physical parameters, per-ring per-angle
 * scaling), the same routes and shards as one ring (the shards split the joint data),
 * into <out>/cmc_joint/. The angle pages draw each ring's slots at its q (adr/0068). */
static int run_cmc_joint(const xf_cli_job *o, xf_config *cfg, int threads, double t_start)
{
	xf_estimate nlsq; /* the joint NLSQ fit's, read back */
	xf_posterior post;
	xf_error err = { 0 };
	joint_data jd;
	xf_rundir rd;
	xf_request req; /* the joint layout: a q per angle slot (adr/0064), built once */
	memset(&nlsq, 0, sizeof nlsq);
	memset(&post, 0, sizeof post);
	memset(&jd, 0, sizeof jd);
	int rc = joint_refusals(o);
	if (!rc && !o->nlsq && (rc = joint_nlsq_first(o, cfg, &threads, t_start)))
		return rc; /* cfg was freed */
	/* every rank loads the rings whole (adr/0069); an error on any ends them all */
	if (rc || (rc = xf_cli_agree(joint_load(o, cfg, &jd)))) {
		joint_free(&jd);
		xf_config_free(cfg);
		return rc;
	}
	rc = xf_cli_agree(
		read_nlsq(o->nlsq ? o->nlsq : o->out, "nlsq_joint", cfg, &jd.joint, &nlsq));
	if (!rc) {
		xf_request_from_config(cfg, &req);
		req.n_slot_q = jd.joint.n_phi;
		req.slot_q = jd.slot_q;
		if (xf_cmc_check_layout(&req, &cfg->cmc, &jd.joint, &nlsq, &err))
			rc = xf_cli_error(err.code, "%s", err.msg);
		rc = xf_cli_agree(rc);
	}
	int claimed = !rc && !(rc = xf_cli_claim(&rd, o->out, "cmc_joint", o->force || o->resume,
						 "--force (or --resume)", o->command));
	char shards[PATH_MAX + 16];
	if (claimed) {
		snprintf(shards, sizeof shards, "%s/shards", rd.dir);
		xf_phase("sample", 1);
		progress_state ps = { xf_progress_tty(), o->resume, 0,	       -1.0, shards,
				      &jd.joint,	 threads,   jd.n_rings };
		rc = xf_posterior_run(&req, &cfg->cmc, &jd.joint, &nlsq, threads, shards, o->resume,
				      show_progress, &ps, &post, &err);
		if (ps.tty && ps.reported)
			fputc('\n', stderr);
		if (rc) {
			rc = xf_cli_error(err.code, "%s", err.msg);
		} else if (xf_dist_is_root()) {
			/* several ranks: rank 0 alone holds the combined result and writes it */
			char *rings = joint_rings_json(jd.rings, jd.n_rings);
			rc = rings ? write_cmc(rd.dir, o, cfg, &jd.joint, &post, threads, &rd,
					       rings, jd.slot_q, NULL)
				   : xf_cli_error(XF_ERR_NOMEM, "out of memory for the rings");
			free(rings);
		}
		rc = xf_cli_agree(rc);
		xf_rundir_release(&rd);
	}
	xf_posterior_free(&post);
	xf_estimate_free(&nlsq);
	joint_free(&jd);
	xf_config_free(cfg);
	return rc;
}

/* Several ranks, per-ring mode: rank 0 alone wrote the ring's CMC folder and filled its
 * record; the other ranks take its outcome (written, failed, status, quality), so that
 * every rank says the same ring lines and ends with rank 0's status (adr/0069). Only
 * rank 0 writes the rings' summary, from its own records. Collective. */
static int share_ring_outcome(xf_ring_record *rec)
{
	const xf_dist *d = xf_dist_get();
	struct {
		int written, posterior, failed;
		char status[sizeof rec->status], quality[sizeof rec->quality];
	} o;
	memset(&o, 0, sizeof o);
	o.written = rec->written;
	o.posterior = rec->posterior;
	o.failed = rec->failed;
	memcpy(o.status, rec->status, sizeof o.status);
	memcpy(o.quality, rec->quality, sizeof o.quality);
	if (d->bcast(d->ctx, &o, sizeof o, 0))
		return xf_cli_error(XF_ERR_IO,
				    "cannot share ring q %.6g 1/A's outcome over the "
				    "MPI ranks",
				    rec->q_per_A);
	rec->written = o.written;
	rec->posterior = o.posterior;
	rec->failed = o.failed;
	memcpy(rec->status, o.status, sizeof o.status);
	memcpy(rec->quality, o.quality, sizeof o.quality);
	return 0;
}

int xf_cli_run_cmc(const xf_cli_job *given)
{
	xf_cli_job copy;
	char base[4096];
	char *text; /* the config's bytes, read once for the whole run */
	const xf_cli_job *job = xf_cli_job_out(given, &copy, base, sizeof base, &text);
	int handled = 0;
	/* the config is parsed and the file read once per ring: each warning shown once */
	xf_log_warn_once(1);
	/* several rings one by one (adr/0065), unless one joint fit is asked for (adr/0066) */
	int rc = job->joint ? 0 : xf_cli_run_rings(job, &handled);
	if (!handled && !rc)
		rc = xf_cli_run_cmc_one(job, NULL, NULL);
	xf_log_warn_once(0);
	free(text);
	return rc;
}

int xf_cli_run_cmc_one(const xf_cli_job *job, xf_ring_record *nlsq_rec, xf_ring_record *cmc_rec)
{
	const xf_cli_job o = *job;
	const char *cmd = o.command;
	const char *cmc_dir = o.cmc_dir ? o.cmc_dir : "cmc";
	const char *nlsq_dir = o.method_dir ? o.method_dir : "nlsq";
	int rc;
	double t_start = xf_cli_now_s();
	xf_config cfg;
	xf_dataset ds;
	xf_estimate nlsq; /* the warm start: the NLSQ fit's estimate */
	xf_posterior post;
	xf_error err = { 0 };
	int threads = o.threads;
	memset(&nlsq, 0, sizeof nlsq);
	memset(&post, 0, sizeof post);
	const char *hint = "--force (or --resume)";
	int replace = o.force || o.resume;
	memset(&ds, 0, sizeof ds);
	xf_nlsq_options device; /* the device fields only */
	if ((rc = xf_cli_device(o.device, &device)))
		return rc;
	if ((rc = xf_cli_load_config(&o, &cfg, &threads)))
		return rc;
	/* the rings side by side: --joint or XF_KEY_RINGS: joint (adr/0066) */
	if (o.ring_q <= 0 && (o.joint || cfg.rings_joint)) {
		if ((rc = xf_cli_device_joint(&device))) {
			xf_config_free(&cfg);
			return rc;
		}
		return run_cmc_joint(&o, &cfg, threads, t_start);
	}
	/* this run's device for both steps (the config is not edited) */
	xf_nlsq_options nopt = cfg.nlsq;
	xf_cmc_options copt = cfg.cmc;
	nopt.device = copt.device = device.device;
	nopt.device_threshold = copt.device_threshold = device.device_threshold;
	nopt.device_fp32 = copt.device_fp32 = device.device_fp32;
	if ((rc = xf_cli_check_out(o.out, cmc_dir, replace, hint)) ||
	    (!o.nlsq && (rc = xf_cli_check_out(o.out, nlsq_dir, replace, hint)))) {
		xf_config_free(&cfg);
		return rc;
	}
	if ((rc = xf_cli_load_data(&o, &cfg, &ds)))
		return rc;
	xf_request req; /* built once: the NLSQ warm start and CMC's layout (adr/0043) */
	xf_request_from_config(&cfg, &req);
	/* every refusal before the claim, which removes a finished result (adr/0071): the
	 * layout; a given --nlsq result read and checked against this data and config, or
	 * the problem of the NLSQ fitted first */
	rc = xf_cmc_check_layout(&req, &copt, &ds, NULL, &err);
	if (!rc && !o.nlsq)
		rc = xf_nlsq_check(&req, &ds, &err);
	rc = xf_cli_agree(rc ? xf_cli_error(err.code, "%s", err.msg) : 0);
	if (!rc && o.nlsq &&
	    !(rc = warm_start(cmd, &o, &cfg, &req, &nopt, &ds, threads, t_start, NULL, &nlsq)))
		rc = xf_cli_agree(xf_cmc_check_layout(&req, &copt, &ds, &nlsq, &err)
					  ? xf_cli_error(err.code, "%s", err.msg)
					  : 0);
	xf_rundir rd;
	if (rc || (rc = xf_cli_claim(&rd, o.out, cmc_dir, replace, hint, cmd))) {
		xf_estimate_free(&nlsq);
		xf_dataset_free(&ds);
		xf_config_free(&cfg);
		return rc;
	}
	const char *dir = rd.dir;
	char shards[PATH_MAX + 16];
	snprintf(shards, sizeof shards, "%s/shards", dir);
	if (!o.nlsq) /* fitted here: the ring's NLSQ record once its folder is whole */
		rc = warm_start(cmd, &o, &cfg, &req, &nopt, &ds, threads, t_start, nlsq_rec, &nlsq);
	if (rc)
		goto done;
	if (o.nlsq && xf_dist_is_root()) /* else the NLSQ step printed them */
		xf_cli_print_constants(&cfg, &ds);
	xf_phase("sample", 1);
	progress_state ps = { xf_progress_tty(), o.resume, 0, -1.0, shards, &ds, threads, 1 };
	rc = xf_posterior_run(&req, &copt, &ds, &nlsq, threads, shards, o.resume, show_progress,
			      &ps, &post, &err);
	if (ps.tty && ps.reported)
		fputc('\n', stderr);
	if (rc) {
		rc = xf_cli_error(err.code, "%s", err.msg);
		goto done;
	}
	/* several ranks: rank 0 alone holds the combined result and writes it */
	if (xf_dist_is_root())
		rc = write_cmc(dir, &o, &cfg, &ds, &post, threads, &rd, NULL, NULL, cmc_rec);
	rc = xf_cli_agree(rc);
	if (cmc_rec && xf_dist_ranks() > 1) {
		int src = share_ring_outcome(cmc_rec);
		rc = rc ? rc : src;
	}
done:
	xf_rundir_release(&rd);
	xf_posterior_free(&post);
	xf_estimate_free(&nlsq);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}

static int run(const char *cmd, int argc, char **argv)
{
	xf_cli_job job;
	xf_cli_overrides ov = { 0 };
	int rc = parse(cmd, argc, argv, &job, &ov);
	rc = rc >= 0 ? rc : xf_cli_run_cmc(&job);
	xf_cli_overrides_free(&ov);
	return rc;
}

int xf_cmd_cmc(int argc, char **argv)
{
	return run("cmc", argc, argv);
}

int xf_cmd_fit(int argc, char **argv)
{
	return run("fit", argc, argv);
}
