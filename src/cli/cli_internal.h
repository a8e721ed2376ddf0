/* cli_internal.h — what the fitting subcommands (nlsq, cmc, fit) share: options common to
 * all of them, loading the config and the data with their log lines, and the NLSQ step
 * (fit, write <out>/nlsq/, summary). */
#ifndef XPCSFIT_CLI_INTERNAL_H
#define XPCSFIT_CLI_INTERNAL_H

#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/results_config.h"
#include "xpcsfit/results.h"
#include "cli/request_build.h"
#include "services/nlsq.h"
#include "util/rundir.h"

/* One fitting run as `xpcsfit nlsq|cmc|fit` does it, without the option parsing: what
 * their options say. `xpcsfit batch` runs one per input file (cmd_batch.c). */
typedef struct xf_cli_job {
	const char *command; /* "nlsq", "cmc" or "fit": messages, the marker, run.log */
	const char *config;  /* the YAML file */
	/* the config's bytes as the command read them when it started (xf_cli_job_out, or
	 * the batch): every load parses these, not the file again; NULL: read the file */
	const char *config_text;
	const xf_config_override *overrides; /* applied to the config (batch --overrides) */
	size_t n_overrides;
	const char *data;   /* --data; NULL: the config's file */
	const char *out;    /* results go to <out>/nlsq/ and <out>/cmc/ */
	int out_given;	    /* --out given (or batch's folder): XF_KEY_BASE_DIRECTORY unused */
	const char *nlsq;   /* cmc --nlsq DIR; NULL: NLSQ is fitted first */
	int threads;	    /* --threads; 0: XF_KEY_VIRTUAL_DEVICES, else the cores */
	int plots;	    /* 0: --no-plots */
	int surfaces;	    /* 1: --surfaces, 0: --no-surfaces (nlsq), -1: XF_KEY_SURFACES */
	int force;	    /* --force: a finished result may be replaced */
	int resume;	    /* cmc --resume: reuse finished shards */
	int strict;	    /* --strict: a config key xpcsfit does not use is an error */
	int *written;	    /* when not NULL: set to 1 once the result folders are whole */
	const char *device; /* --device cpu|gpu|auto; NULL: XPCSFIT_DEVICE, else cpu */
	int joint;	    /* nlsq --joint: one fit over the selected rings (adr/0066) */
	/* one ring of a per-ring run (adr/0065): > 0 fits the ring at this q (1/Å) exactly as
	 * a config whose wavevector_q is that value; 0: the config's choice */
	double ring_q;
	/* 1 (nlsq, cmc, fit, batch): several selected rings are fitted one by one
	 * (adr/0065); 0 (a ring of such a run): the one-ring path, which refuses several
	 * rings ("fitting several rings is not built yet") */
	int per_ring;
	const char *method_dir; /* the NLSQ folder under out ("nlsq/q_0.0054"); NULL: "nlsq" */
	const char *cmc_dir;	/* the CMC folder under out ("cmc/q_0.0054"); NULL: "cmc" */
} xf_cli_job;

/* The device options of the NLSQ accumulation (device_opts.c, docs/gpu.md) into o:
 * 0, or the exit code after printing the error (2: a bad value, or --device gpu
 * without a CUDA device). */
int xf_cli_device(const char *flag, xf_nlsq_options *o);
/* A joint fit over several rings (adr/0066) runs on the CPU: --device gpu is refused
 * before anything is written (2, after the line), auto stays on the CPU (0). */
int xf_cli_device_joint(const xf_nlsq_options *o);

/* The defaults of the options for command (out ./xpcsfit_results, plots and surfaces). */
void xf_cli_job_init(xf_cli_job *job, const char *command);
/* Whether the fit writes the surfaces into results.h5: --surfaces / --no-surfaces, else
 * the config's XF_KEY_SURFACES (none by default) */
int xf_cli_surfaces(const xf_cli_job *job, const xf_config *cfg);

/* `xpcsfit nlsq` (cmd_nlsq.c) and `xpcsfit cmc`/`fit` (cmd_cmc.c) once the options are
 * parsed: check the result folder, load, fit, write. Return the status (0, 1 for a fit
 * that failed or did not converge, whose files are still written, ...), the error line
 * printed. */
int xf_cli_run_nlsq(const xf_cli_job *job);
int xf_cli_run_cmc(const xf_cli_job *job);
/* xf_cli_run_nlsq of one ring; rec (when not NULL) gets the result's summary (its
 * written / failed / status say what came of it). */
typedef struct xf_ring_record xf_ring_record;
int xf_cli_run_nlsq_one(const xf_cli_job *job, xf_ring_record *rec);
/* xf_cli_run_cmc of one ring; nlsq_rec (the warm start fitted here) and cmc_rec (when not
 * NULL) get the results' summaries. */
int xf_cli_run_cmc_one(const xf_cli_job *job, xf_ring_record *nlsq_rec, xf_ring_record *cmc_rec);
/* Per-ring mode (nlsq_rings.c, adr/0065): when the config selects several rings, fit each
 * into <out>/nlsq/q_<q>/ (cmc, fit: and <out>/cmc/q_<q>/) and write the summaries;
 * *handled 0 (nothing done) otherwise. Returns the exit code. */
int xf_cli_run_rings(const xf_cli_job *job, int *handled);

double xf_cli_now_s(void);
/* The NLSQ iteration progress of nlsq and nlsq --joint (an xf_nlsq_progress_fn): one
 * rewritten line on a terminal, else a plain line at most every XF_PROGRESS_PLAIN_S (the
 * first at once); ctx is an xf_cli_progress_state started as { xf_progress_tty(),
 * xf_cli_now_s(), -1.0, 0 }. */
typedef struct xf_cli_progress_state {
	int tty;
	double t0, last; /* start; time of the last plain line (< 0: none yet) */
	/* 1: the plain lines include the start screening's short runs (a joint fit, whose
	 * screening of hundreds of parameters takes minutes: adr/0073) */
	int screening;
} xf_cli_progress_state;
void xf_cli_nlsq_progress(const xf_nlsq_progress *p, void *ctx);

/* One parameter line of the console summaries (nlsq, cmc): "  D0  26100 +/- 6300
 * angstrom^2/s^(1+alpha)", to the precision unc supports (util/numfmt.h, adr/0062), the
 * unit from xf_param_unit (none shown when dimensionless), "(fixed)" for a fixed one, and
 * interval[0..1] (CMC's 5–95 %, NULL: none) at the value's precision. */
void xf_cli_print_param(const char *name, double value, double unc, int fixed,
			const double *interval);
/* The summaries' last line: the result folder and its report.html. */
void xf_cli_print_results_line(const char *dir);

/* `validate`'s account of what will be fitted (validate_plan.c): the per-angle modes of
 * NLSQ and CMC, σ, and each parameter of pr (free/fixed, start and its source, bounds,
 * CMC's prior, unit), as key: value lines with a table, or into the JSON object o. */
typedef struct cJSON cJSON;
void xf_validate_plan_lines(const xf_config *cfg, const xf_problem *pr);
void xf_validate_plan_json(cJSON *o, const xf_config *cfg, const xf_problem *pr);
/* The plan of several rings[n] (validate_plan.c): per ring (each ring's own problem: its
 * angles, points, per-angle mode, parameters, maps' memory) or, with
 * XF_KEY_RINGS: joint, the joint problem (its totals and parameter table), as
 * lines on stdout (o NULL) or as "plan" in o. An error names its ring. */
/* The cap on a joint fit over rings (adr/0073): its free parameters p, whose dense p × p
 * normal matrix is built from every point and factorised at every step (measured: 5.9 s
 * for the joint fit at p = 203, 60 s at p = 403, each step growing as p² × points; the
 * consistency check then fits about as many joint problems as there are rings). */
#define XF_JOINT_MAX_PARAMS 1024
/* XF_ERR_CONFIG naming the rings, parameters and what to do when the joint problem of
 * n_rings (free parameters p_free, points) exceeds the cap; 0 otherwise. */
int xf_cli_joint_cap(int n_rings, int p_free, int p_phys, size_t points, xf_error *err);
/* The same for the rings joined as the joint fit joins them (joint, slot_q from
 * xf_dataset_join_rings): builds the problem to count its free parameters (into *p_free
 * when not NULL). */
int xf_cli_joint_cap_check(const xf_config *cfg, const xf_dataset *joint, const double *slot_q,
			   int n_rings, int *p_free, xf_error *err);
int xf_validate_rings_plan(const xf_config *cfg, const xf_dataset *rings, int n, cJSON *o,
			   xf_error *err);

/* A command's job as it starts, in copy: the config's bytes read once (*text, malloc'ed,
 * the caller frees it; NULL when job carried them already, as a batch's file does, or the
 * file cannot be read: the load then says why), so the rings, the steps and run.log all
 * use the bytes read now, even if the file is edited while the run goes on (adr/0134);
 * out = the config's XF_KEY_BASE_DIRECTORY when --out was not given (buf holds it). */
const xf_cli_job *xf_cli_job_out(const xf_cli_job *job, xf_cli_job *copy, char *buf, size_t size,
				 char **text);

/* The console as cfg's XF_KEY_LOGGING_LEVEL asks (warnings, info lines, progress lines). */
void xf_cli_set_verbosity(const xf_config *cfg);
/* 1 when progress lines are shown (XF_KEY_LOGGING_LEVEL INFO or DEBUG). */
int xf_cli_progress_on(void);

/* --threads N: 1..1024; returns 0, or the exit code after printing the error. */
int xf_cli_threads(const char *arg, int *threads);

/* Load the job's config (logged with its text and the overrides) and data (logged);
 * threads 0 becomes the
 * config's virtual_devices or the online cores. Returns 0, or the exit code after
 * printing the error line. */
int xf_cli_load(const xf_cli_job *job, xf_config *cfg, xf_dataset *ds, int *threads);
/* The job's config with its overrides, from job->config_text when the command read it
 * already, else from the file: 0, or the error in err (nothing printed). */
int xf_cli_read_config(const xf_cli_job *job, xf_config *cfg, xf_error *err);
/* xf_cli_load's first half: the config (overrides, --strict, verbosity, run.log lines)
 * and the thread count, no data (a joint fit loads its rings itself: nlsq_joint.c). */
int xf_cli_load_config(const xf_cli_job *job, xf_config *cfg, int *threads);
/* xf_cli_load's second half: the data of the loaded cfg (freed with ds on an error). */
int xf_cli_load_data(const xf_cli_job *job, xf_config *cfg, xf_dataset *ds);
/* `nlsq --joint` or XF_KEY_RINGS: joint (adr/0066): one fit over the selected
 * rings into DIR/nlsq_joint/. cfg: loaded by the caller (xf_cli_load_config, threads
 * resolved), freed here. */
int xf_cli_run_nlsq_joint(const xf_cli_job *job, xf_config *cfg, int threads, double t_start);
/* A joint fit (nlsq or cmc) over one selected ring: a warning that it is that ring's own
 * fit, without the rings' consistency check (adr/0075). nlsq_joint.c. */
void xf_cli_joint_one_ring(const xf_dataset *rings, int n_rings);

/* "<out>/<method>" into buf; an empty --out is refused. Returns 0 or the exit code after
 * printing the error line. */
int xf_cli_out_dir(char *buf, size_t size, const char *out, const char *method);

/* Before loading anything: <out>/<method> can be written (util/rundir.h: not a file, not
 * locked by another run, no finished result unless replace). 0 or the exit code. */
int xf_cli_check_out(const char *out, const char *method, int replace, const char *hint);

/* Claim <out>/<method> for this run (lock, INCOMPLETE marker, the previous result removed).
 * 0 or the exit code after printing the error line. */
int xf_cli_claim(xf_rundir *rd, const char *out, const char *method, int replace, const char *hint,
		 const char *command);
/* The same, and for a top folder (method without '/': nlsq, cmc) the q_<q> ring folders
 * of an earlier run that are not in keep[n_keep] are removed (xf_cli_claim keeps none):
 * a result folder holds this run's rings only (adr/0065 addendum). */
int xf_cli_claim_keep(xf_rundir *rd, const char *out, const char *method, int replace,
		      const char *hint, const char *command, const char *const *keep, int n_keep);
/* nlsq_rings.c: a per_angle_scaling list fits ring q's n_kept angles (several rings:
 * one list for every ring); XF_ERR_CONFIG naming the ring otherwise */
int xf_cli_check_ring_angle_starts(const xf_config *cfg, double q, int n_kept, xf_error *err);
/* nlsq_rings.c: that removal, in the claimed folder top (rank 0, lock held) */
void xf_cli_remove_stale_rings(const xf_rundir *top, const char *const *keep, int n_keep,
			       const char *command);

/* NLSQ of req (built from cfg once by the caller, xf_request_from_config) with the
 * options nopt (the config's, with the run's device: the config is not edited) on ds,
 * <out>/<method_dir>/ claimed (replace: a finished result there may be replaced; a
 * ring's folder is "nlsq/q_0.0054"), fitted, written (cfg: what the files record of the
 * run), marked complete, the summary printed, by the NLSQ service (services/nlsq.h).
 * Returns the exit code (0, or 1 for a fit that did not converge, whose files are still
 * written) and leaves the fit, its estimate and appendix in fit (the caller frees it:
 * xf_nlsq_fitted_free), or an error code with nothing in fit. */
int xf_cli_nlsq_step_in(const xf_config *cfg, const xf_request *req, const xf_nlsq_options *nopt,
			const xf_dataset *ds, const char *out, const char *method_dir, int threads,
			const xf_output_options *oopt, int replace, const char *command,
			double t_start, double t_loaded, xf_nlsq_fitted *fit);

#endif
