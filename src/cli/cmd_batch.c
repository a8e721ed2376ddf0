/* cmd_batch.c — `xpcsfit batch` (docs/cli.md "batch", adr/0023): many input files, one
 * result folder each (<out>/<stem>/, laid out as `xpcsfit nlsq --out <out>/<stem>` would,
 * several q rings included: per ring or joint, adr/0065 addendum),
 * run one after the other in this process through the same code as nlsq/cmc/fit; a file
 * that fails fails alone. Everything that can be refused (options, inputs, overrides,
 * every file's config, existing results) is checked before the first file runs. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/batch_internal.h"
#include "xpcsfit/dist.h"
#include "cli/cli_internal.h"
#include "cli/cli_keys.h"
#include "cli/commands.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/verbosity.h"
#include "util/key_names.h"

static const char batch_usage[] =
	"usage: xpcsfit batch --config C.yaml --out DIR [FILE.h5 ...] [--list FILE]\n"
	"                     [--overrides CSV] [--method nlsq|cmc|fit] [--resume] [--force]\n"
	"                     [--threads N] [--no-plots] [--task K --tasks N] [--max-runs N]\n"
	"                     [--strict]\n"
	"\n"
	"Fit every input file with the same config: results of FILE go to DIR/<stem>/ (stem:\n"
	"the file name without .h5/.hdf5/.hdf), laid out as 'xpcsfit nlsq --out DIR/<stem>'\n"
	"would, with DIR/<stem>/batch.json recording the outcome. DIR/batch_summary.csv and\n"
	".json are rewritten after every file. A file that fails does not stop the others.\n"
	"Several q rings (wavevector_q: all, a list, a range): each ring of a file into\n"
	"DIR/<stem>/nlsq/q_<q>/ with the file's rings.csv in DIR/<stem>/nlsq/ (the summary's\n"
	"column rings names it), or with " XF_KEY_RINGS
	": joint one joint fit into\nDIR/<stem>/nlsq_joint/.\n"
	"  --list FILE      more inputs, one path a line ('#' comments, blank lines skipped;\n"
	"                   relative paths are relative to the list file's folder)\n"
	"  --overrides CSV  per-file config values: header 'file,KEY,...' (KEY a dotted\n"
	"                   config key, or dt, q); rows name an input by path or stem\n"
	"  --method M       nlsq (default), cmc or fit (both: NLSQ, then CMC from it)\n"
	"  --resume         skip files whose result is complete and made from the same input\n"
	"                   bytes and settings (config values after overrides; comments and\n"
	"                   key order aside); redo the rest, saying why\n"
	"  --force          redo every file, replacing finished results\n"
	"  --threads N      virtual devices per fit (default: " XF_KEY_VIRTUAL_DEVICES
	", else\n                   cores)\n"
	"  --no-plots       skip the PNG plots\n"
	"  --strict         refuse a config with keys xpcsfit does not use (exit 2)\n"
	"  --task K --tasks N  run only the inputs whose index (0-based, in list order) is K\n"
	"                   modulo N (job arrays); the summary still lists every input\n"
	"  --max-runs N     fit at most N files in this process (files complete already\n"
	"                   do not count; 0: only rewrite the summary); the rest stay\n"
	"                   pending (a summary step bounded to one array task's time)\n"
	"Exit: 0 all files ok, 1 any file failed or left pending by --max-runs, 2 usage or\n"
	"config (nothing runs), 130/143 when interrupted (the summary stays true of what\n"
	"finished).\n"
	"  --output-dir DIR  the same as --out (homodyne's spelling)\n"
	"The overrides below apply to every input, before its --overrides "
	"cells.\n" XF_OVERRIDE_USAGE;

/* Parse a count option; returns 0 or the exit code after the error line. */
static int parse_count(const char *opt, const char *arg, long lo, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < lo || v > 1000000)
		return xf_cli_error(XF_ERR_CONFIG,
				    "%s: '%s' is not allowed (a whole number from %ld to 1000000)",
				    opt, arg, lo);
	*out = v;
	return 0;
}

/* Options and inputs; returns −1 to go on, else the exit code. */
static int parse(int argc, char **argv, xf_batch *b)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "out", required_argument, 0, 'o' },
		{ "list", required_argument, 0, 'l' },
		{ "overrides", required_argument, 0, 'O' },
		{ "method", required_argument, 0, 'm' },
		{ "resume", no_argument, 0, 'r' },
		{ "force", no_argument, 0, 'f' },
		{ "strict", no_argument, 0, 's' },
		{ "threads", required_argument, 0, 't' },
		{ "no-plots", no_argument, 0, 'P' },
		{ "task", required_argument, 0, 'k' },
		{ "tasks", required_argument, 0, 'n' },
		{ "max-runs", required_argument, 0, 'M' },
		{ "help", no_argument, 0, 'h' },
		{ "output-dir", required_argument, 0, 'o' },
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	long task = -1, tasks = -1;
	int c;
	b->method_word = "nlsq";
	b->plots = 1;
	b->max_runs = -1;
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; (c = getopt_long(argc, argv, "h", opts, &li)) != -1; li = -1) {
		if (xf_cli_option_rules("batch", opts, li, optarg, &seen))
			return XF_ERR_CONFIG;
		switch (c) {
		case 'c': b->config = optarg; break;
		case 'o': b->out = optarg; break;
		case 'l': b->list = optarg; break;
		case 'O': b->csv = optarg; break;
		case 'm': b->method_word = optarg; break;
		case 'r': b->resume = 1; break;
		case 'f': b->force = 1; break;
		case 's': b->strict = 1; break;
		case 't':
			if (xf_cli_threads(optarg, &b->threads))
				return XF_ERR_CONFIG;
			break;
		case 'P': b->plots = 0; break;
		case 'k':
			if (parse_count("--task", optarg, 0, &task))
				return XF_ERR_CONFIG;
			break;
		case 'n':
			if (parse_count("--tasks", optarg, 1, &tasks))
				return XF_ERR_CONFIG;
			break;
		case 'M':
			if (parse_count("--max-runs", optarg, 0, &b->max_runs))
				return XF_ERR_CONFIG;
			break;
		case 'h': fputs(batch_usage, stdout); return 0;
		default:
			if (xf_cli_override_or_unknown(&b->cli, c, optarg, "batch",
						       argv[optind - 1]))
				return XF_ERR_CONFIG;
			break;
		}
	}
	if (!b->config || !b->out)
		return xf_cli_error(XF_ERR_CONFIG,
				    "batch: %s is required, see 'xpcsfit batch --help'",
				    b->config ? "--out" : "--config");
	if (!b->out[0])
		return xf_cli_error(XF_ERR_CONFIG, "--out is empty: give a folder name");
	if (xf_batch_method_parse(b->method_word, &b->method))
		return xf_cli_error(XF_ERR_CONFIG,
				    "--method: '%s' is not allowed (must be nlsq, cmc or fit)",
				    b->method_word);
	if (xf_cli_resume_force("batch", b->resume, b->force))
		return XF_ERR_CONFIG;
	if ((task < 0) != (tasks < 0))
		return xf_cli_error(XF_ERR_CONFIG, "batch: --task and --tasks go together");
	if (tasks > 0 && task >= tasks)
		return xf_cli_error(
			XF_ERR_CONFIG,
			"--task: %ld is not allowed with --tasks %ld (must be 0 to %ld)", task,
			tasks, tasks - 1);
	b->task = tasks > 0 ? (int)task : 0;
	b->tasks = tasks > 0 ? (int)tasks : 1;
	for (int k = optind; k < argc; k++)
		if (xf_batch_add(b, argv[k]))
			return xf_cli_error(XF_ERR_NOMEM, "out of memory reading the inputs");
	return xf_cli_overrides_finish(&b->cli) ? XF_ERR_CONFIG : -1;
}

/* Inputs named, overrides attached, this task's share marked. 0 or the exit code. */
static int gather_inputs(xf_batch *b)
{
	xf_error err = { 0 };
	if (b->list && xf_batch_read_list(b, b->list, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	if (b->n == 0)
		return xf_cli_error(XF_ERR_CONFIG,
				    "batch: no input files: name them after the options or with "
				    "--list FILE");
	if (xf_batch_name_inputs(b, &err) || (b->csv && xf_batch_read_overrides(b, b->csv, &err)) ||
	    xf_batch_merge_overrides(b, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	/* the task's share (index % N == K), and of that share every R-th file on each
	 * rank of an MPI run: the array tasks and the ranks compose */
	for (size_t k = 0; k < b->n; k++)
		b->inputs[k].mine = (int)(k % (size_t)b->tasks) == b->task &&
				    (int)((k / (size_t)b->tasks) % (size_t)b->ranks) == b->rank;
	return 0;
}

/* Every input's config (after its overrides) is read now: a bad one stops the batch
 * before any file runs. The warnings of the plain config are shown once. */
static int check_configs(xf_batch *b)
{
	xf_error err = { 0 };
	xf_config cfg;
	int base_mode = -1, base_joint = 0;
	if (b->n && !(b->config_text = xf_config_read_text(b->config, &b->config_len, &err)))
		return xf_cli_error(err.code, "%s", err.msg);
	for (size_t k = 0; k < b->n; k++) {
		xf_batch_input *in = &b->inputs[k];
		if (base_mode >= 0 && in->n_overrides == 0) {
			in->mode = base_mode;
			in->joint = base_joint;
			continue;
		}
		xf_log_set_stderr(k == 0 && xf_verbosity() >= XF_VERB_NORMAL,
				  xf_verbosity() >= XF_VERB_INFO);
		int rc = xf_config_load_text(b->config, b->config_text, in->overrides,
					     in->n_overrides, &cfg, &err);
		xf_verbosity_apply_log();
		if (rc)
			return xf_cli_error(err.code, "%s", err.msg);
		if (b->strict && (rc = xf_cli_strict(&cfg, b->config))) {
			xf_config_free(&cfg);
			return rc;
		}
		in->mode = (int)cfg.mode;
		in->joint = cfg.rings_joint;
		if (in->n_overrides == 0) {
			base_mode = in->mode;
			base_joint = in->joint;
		}
		xf_config_free(&cfg);
	}
	xf_log_reset();
	return 0;
}

/* This task's result folders can be written: not held by a run, and no finished result
 * unless --resume or --force. 0 or the exit code. */
static int check_folders(xf_batch *b)
{
	int n_methods = b->method == XF_BATCH_NLSQ ? 1 : 2;
	xf_error err = { 0 };
	/* XPCSFIT_DEVICE* are the same for every file's nlsq: a bad value is refused once,
	 * before a record or the summary is written, not as N failed files */
	if (n_methods == 1) {
		xf_nlsq_options device;
		memset(&device, 0, sizeof device);
		int rc = xf_cli_device(NULL, &device);
		if (rc)
			return rc;
	}
	if (xf_rundir_check(b->out, 1, "--force", &err)) /* a file, or a part of it is */
		return xf_cli_error(err.code, "%s", err.msg);
	for (size_t k = 0; k < b->n; k++) {
		char dir[PATH_MAX];
		if (!b->inputs[k].mine)
			continue;
		for (int m = 0; m < n_methods; m++) {
			int n = snprintf(dir, sizeof dir, "%s/%s/%s", b->out, b->inputs[k].name,
					 xf_batch_folder(m ? "cmc" : "nlsq", b->inputs[k].joint));
			if (n < 0 || (size_t)n >= sizeof dir)
				return xf_cli_error(XF_ERR_CONFIG, "--out is too long, %s", b->out);
			if (xf_rundir_check(dir, b->resume || b->force, "--resume or --force",
					    &err))
				return xf_cli_error(err.code, "%s", err.msg);
		}
	}
	if (xf_mkdir_p(b->out, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	return 0;
}

/* --resume: *skip = 1 when the file's result is whole, ok, and made from the same
 * inputs (adr/0057); else why says what changed, on the console now and in run.log.
 * Returns 0 or XF_ERR_NOMEM. */
static int up_to_date(const xf_batch *b, const xf_batch_input *in, const char *dir,
		      const xf_batch_record *now, int *skip, char *why, size_t size, xf_error *err)
{
	*skip = 0;
	why[0] = '\0';
	if (!b->resume)
		return 0;
	int rc = xf_batch_rerun_reason(dir, b->method, in->joint, now, skip, why, size, err);
	if (rc == 0 && why[0] && xf_verbosity() >= XF_VERB_NORMAL)
		fprintf(stderr, "xpcsfit: batch: %s: %s\n", in->path, why);
	return rc;
}

/* Run one file as `xpcsfit <method> --config C --data FILE --out DIR/<stem>` would.
 * Returns its status; rec gets the outcome; why (a rerun's reason, or "") opens run.log. */
static int run_one(const xf_batch *b, const xf_batch_input *in, const char *dir, const char *why,
		   xf_batch_record *rec)
{
	char prefix[PATH_MAX + 4];
	int written = 0;
	xf_cli_job job;
	xf_cli_job_init(&job, xf_batch_method_name(b->method));
	job.config = b->config;
	job.config_text = b->config_text; /* as the batch read it */
	job.overrides = in->overrides;
	job.n_overrides = in->n_overrides;
	job.data = in->path;
	job.out = dir;
	job.out_given = 1;
	job.threads = b->threads;
	job.plots = b->plots;
	job.force = b->force || b->resume;
	job.resume = b->resume; /* cmc: the shards an interrupted run finished */
	job.written = &written;
	/* several rings: each ring into DIR/<stem>/nlsq/q_<q>/ (adr/0065), or with
	 * XF_KEY_RINGS: joint one fit into DIR/<stem>/nlsq_joint/ (adr/0066) */
	job.per_ring = 1;
	snprintf(prefix, sizeof prefix, "%s: ", in->path);
	xf_log_reset(); /* run.log holds this file's run only */
	if (why[0])
		xf_info("batch: %s", why);
	xf_no_memory_reset(); /* an earlier file's allocation failure is not this one's */
	xf_cli_error_prefix(prefix);
	double t0 = xf_cli_now_s();
	int rc = b->method == XF_BATCH_NLSQ ? xf_cli_run_nlsq(&job) : xf_cli_run_cmc(&job);
	rec->wall_s = xf_cli_now_s() - t0;
	rec->status = rc ? XF_BATCH_FAILED : XF_BATCH_OK;
	snprintf(rec->message, sizeof rec->message, "%s", rc ? xf_cli_last_error() : "");
	rec->results = written;
	xf_cli_error_prefix(NULL);
	return rc;
}

typedef struct progress {
	size_t done, total, failed;
	size_t runs;	/* files run (not skipped) by this process */
	size_t held;	/* files left pending by --max-runs */
	double run_s;	/* their wall time */
	double t_start; /* the batch's start */
} progress;

/* One line on stderr after each file (the ETA is shown, never used for a decision). */
static void report(const xf_batch *b, progress *p, const xf_batch_input *in, const char *what,
		   double wall_s)
{
	if (xf_verbosity() < XF_VERB_NORMAL)
		return;
	char eta[48] = "", task[48] = "";
	size_t left = p->total - p->done;
	if (p->runs > 0 && left > 0)
		snprintf(eta, sizeof eta, ", ETA %.0f s",
			 p->run_s / (double)p->runs * (double)left);
	if (b->tasks > 1 || b->ranks > 1)
		snprintf(task, sizeof task, " (task %d of %d, rank %d of %d)", b->task, b->tasks,
			 b->rank, b->ranks);
	fprintf(stderr, "xpcsfit: batch%s: %zu/%zu files done, %zu failed, %.1f s%s; %s %s", task,
		p->done, p->total, p->failed, xf_cli_now_s() - p->t_start, eta, in->path, what);
	if (isfinite(wall_s))
		fprintf(stderr, " (%.2f s)", wall_s);
	fputc('\n', stderr);
}

/* The summary's rows are read once (rank 0, the one writer in an MPI run), then kept:
 * a rewrite opens no record (adr/0073). others: first read again the rows of the files
 * other tasks or ranks ran, for the last write. */
static int summary(xf_batch *b, int others, size_t *ok, size_t *failed, size_t *pending)
{
	xf_error err = { 0 };
	if (b->rank != 0)
		return 0;
	int rc = 0;
	if (!b->summary)
		rc = xf_batch_summary_load(b, &b->summary, &err);
	else if (others && (b->tasks > 1 || b->ranks > 1))
		rc = xf_batch_summary_reread_others(b, b->summary, &err);
	if (rc || xf_batch_summary_write(b, b->summary, ok, failed, pending, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	return 0;
}

/* Input k has been run (or skipped) here: its row read again, and the summary rewritten
 * when due (after every file of a batch of up to XF_BATCH_SUMMARY_WRITES, then more
 * sparsely; the records stay the truth, and the last write follows the loop). */
static int summary_after(xf_batch *b, size_t k, int stopped)
{
	xf_error err = { 0 };
	if (b->rank != 0 || !b->summary)
		return 0;
	if (xf_batch_summary_reread(b, b->summary, k, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	if (stopped || !xf_batch_summary_due(b->summary))
		return 0;
	return summary(b, 0, NULL, NULL, NULL);
}

/* One file: skipped when up to date (--resume), else run and recorded. Returns its status
 * (0 also for a skipped one). */
static int do_file(const xf_batch *b, const xf_batch_input *in, progress *p)
{
	char dir[PATH_MAX];
	xf_batch_record rec;
	xf_error err = { 0 };
	memset(&rec, 0, sizeof rec);
	if (xf_batch_dir(b, in, dir, sizeof dir))
		return xf_cli_error(XF_ERR_CONFIG, "--out is too long, %s", b->out);
	int skip = 0;
	char why[1024];
	if (xf_batch_fingerprint(b, in, &rec, &err) ||
	    up_to_date(b, in, dir, &rec, &skip, why, sizeof why, &err)) {
		xf_batch_record_free(&rec);
		return xf_cli_error(err.code, "%s: %s", in->path, err.msg);
	}
	if (skip) {
		xf_batch_record_free(&rec);
		p->done++;
		report(b, p, in, "complete already (--resume)", NAN);
		return 0;
	}
	if (b->max_runs >= 0 && p->runs >= (size_t)b->max_runs) {
		xf_batch_record_free(&rec);
		p->held++; /* untouched: its summary row stays what its folder says */
		report(b, p, in, "not run (--max-runs reached)", NAN);
		return 0;
	}
	rec.status = XF_BATCH_RUNNING;
	rec.wall_s = NAN;
	/* DIR/<stem> is the batch's own: a link there is replaced, never followed */
	if (xf_mkdir_here(dir, &err) || xf_batch_record_write(dir, &rec, &err)) {
		xf_batch_record_free(&rec);
		return xf_cli_error(err.code, "%s: %s", in->path, err.msg);
	}
	int rc = run_one(b, in, dir, why, &rec);
	if (rc == XF_ERR_INTERRUPTED || xf_interrupt_signal()) {
		xf_batch_record_free(&rec);
		return XF_ERR_INTERRUPTED; /* the record says running: the file is pending */
	}
	xf_phase("batch", 0);
	int wrote = xf_batch_record_write(dir, &rec, &err);
	xf_batch_record_free(&rec);
	if (wrote)
		return xf_cli_error(err.code, "%s: %s", in->path, err.msg);
	p->done++;
	p->failed += rc != 0;
	p->runs++;
	p->run_s += rec.wall_s;
	report(b, p, in, rc ? "failed" : "ok", rec.wall_s);
	return rc;
}

static void print_totals(const xf_batch *b, size_t ok, size_t failed, size_t pending)
{
	if (xf_verbosity() < XF_VERB_NORMAL)
		return;
	printf("batch: %zu ok, %zu failed, %zu pending of %zu files; summary: "
	       "%s/batch_summary.csv\n",
	       ok, failed, pending, b->n, b->out);
}

/* --max-runs left files unrun: the one line that says how many and how to go on; the
 * batch is not done, so its exit says so (1). */
static int held_line(const xf_batch *b, const progress *p)
{
	xf_cli_error(XF_ERR_DATA,
		     "batch: --max-runs %ld reached: %zu file%s not run, left as they were "
		     "(pending or failed) in %s/batch_summary.csv; run again with --resume "
		     "to go on",
		     b->max_runs, p->held, p->held == 1 ? "" : "s", b->out);
	return 1;
}

static int run_files(xf_batch *b)
{
	progress p = { 0, 0, 0, 0, 0, 0.0, xf_cli_now_s() };
	int any_failed = 0;
	for (size_t k = 0; k < b->n; k++)
		p.total += (size_t)b->inputs[k].mine;
	xf_phase("batch", 0);
	if (summary(b, 0, NULL, NULL, NULL))
		return XF_ERR_IO;
	for (size_t k = 0; k < b->n; k++) {
		if (!b->inputs[k].mine)
			continue;
		xf_cli_own_lines(1); /* under xpcsfit-mpi no other rank says them */
		int rc = do_file(b, &b->inputs[k], &p);
		xf_cli_own_lines(0);
		if (summary_after(b, k, rc == XF_ERR_INTERRUPTED))
			return XF_ERR_IO;
		if (rc == XF_ERR_INTERRUPTED)
			break;
		any_failed |= rc != 0;
	}
	if (p.held > 0 && !xf_interrupt_signal())
		any_failed |= held_line(b, &p);
	if (b->ranks > 1) /* the totals come when every rank is done (finish_ranks) */
		return xf_interrupt_signal() ? XF_ERR_INTERRUPTED : any_failed ? XF_ERR_DATA : 0;
	size_t ok = 0, failed = 0, pending = 0;
	if (summary(b, 1, &ok, &failed, &pending))
		return XF_ERR_IO;
	if (xf_interrupt_signal()) { /* the file's run printed the error line */
		fprintf(stderr,
			"xpcsfit: batch stopped: %zu of %zu files done, the rest are pending in "
			"%s/batch_summary.csv\n",
			p.done, p.total, b->out);
		return XF_ERR_INTERRUPTED;
	}
	print_totals(b, ok, failed, pending);
	return any_failed ? XF_ERR_DATA : 0;
}

/* xpcsfit-mpi: the ranks agree on a status with the distribution hook back in place for
 * the call (a file's fit runs without it, in this process alone). With say, rank 0 says
 * what failed on another rank (a refusal before any file runs), except a file's
 * failure: each file's error line was said by the rank that ran it (xf_cli_own_lines),
 * and the summary records it. */
static int agree(const xf_batch *b, const xf_dist *ranks, int rc, int say)
{
	xf_error err = { 0 };
	if (rc) {
		err.code = rc;
		snprintf(err.msg, sizeof err.msg, "%s", xf_cli_last_error());
	}
	xf_dist_install(ranks);
	int agreed = xf_dist_agree(rc, &err);
	xf_dist_install(NULL);
	if (say && rc == 0 && agreed != 0 && agreed != XF_ERR_DATA && b->rank == 0)
		xf_cli_error(agreed, "%s", err.msg);
	return rc ? rc : agreed;
}

/* xpcsfit-mpi, after every rank ran its share: rank 0 writes the summary of every file
 * from what the ranks left on disk (--out on a filesystem the ranks share). */
static int finish_ranks(xf_batch *b, const xf_dist *ranks, int rc)
{
	rc = agree(b, ranks, rc, 0); /* every failure since was a file's, said already */
	if (b->rank != 0)
		return rc;
	size_t ok = 0, failed = 0, pending = 0;
	if (summary(b, 1, &ok, &failed, &pending))
		return XF_ERR_IO;
	if (rc != XF_ERR_INTERRUPTED)
		print_totals(b, ok, failed, pending);
	return rc;
}

int xf_cmd_batch(int argc, char **argv)
{
	xf_batch b;
	memset(&b, 0, sizeof b);
	/* under xpcsfit-mpi each rank is a batch task of its own: the distribution hook is
	 * put aside so that a file's fit runs in this process alone */
	const xf_dist *hook = xf_dist_get();
	xf_dist ranks = { 0 };
	if (hook) {
		ranks = *hook;
		xf_dist_install(NULL);
	}
	b.rank = hook ? ranks.rank : 0;
	b.ranks = hook ? ranks.n_ranks : 1;
	int rc = parse(argc, argv, &b);
	int checked = rc < 0;
	if (rc < 0 && !(rc = gather_inputs(&b)) && !(rc = check_configs(&b)))
		rc = check_folders(&b);
	/* every rank's refusals are known before any file runs */
	if (hook && checked)
		rc = agree(&b, &ranks, rc, 1);
	if (checked && rc == 0) {
		rc = run_files(&b);
		if (hook)
			rc = finish_ranks(&b, &ranks, rc);
	}
	if (hook)
		xf_dist_install(&ranks);
	xf_batch_free(&b);
	return rc < 0 ? 0 : rc;
}
