/* cmd_validate.c — `xpcsfit validate`: load a config and its data exactly as a fit would
 * and print what would be fitted, as `key: value` lines or one JSON object (spec/cli.md):
 * the data selected, then the fit itself (validate_plan.c: per-angle modes, σ, each
 * parameter free or fixed with its start, bounds, prior and unit).
 * The per-angle means of the fitted points and of the corrected diagonal let a user
 * (and the tests) check that the maps were read and oriented as expected. The data are
 * read through the selection built from the config (request_build.c). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "io/utf8.h"
#include "cli/cli_keys.h"
#include "cli/commands.h"
#include "cli/request_build.h"
#include "cli/constants.h"
#include "cli/overrides.h"
#include "util/interrupt.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"

static const char validate_usage[] =
	"usage: xpcsfit validate --config C.yaml [--data FILE.h5] [--json] [--strict]\n"
	"\n"
	"Check a config and its data and print what would be fitted: layout, q ring,\n"
	"angles, frame window, dt and its source, number of points; the per-angle mode\n"
	"NLSQ and CMC will use, sigma, and every parameter: free or fixed, its start and\n"
	"where it comes from, bounds, CMC's prior, unit; and the config keys xpcsfit does\n"
	"not use (ignored_keys, grouped by section; docs/config.md).\n"
	"  --data FILE.h5  data file (overrides the config's)\n"
	"  --json          print one JSON object instead of key: value lines\n"
	"  --strict        refuse a config with keys xpcsfit does not use (exit "
	"2)\n" XF_OVERRIDE_USAGE;

/* Mean of the fitted points (1 <= i < j) and of the diagonal of angle a. */
static void angle_means(const xf_dataset *ds, int a, double *fitted, double *diag)
{
	size_t n = (size_t)ds->n_frames;
	double sf = 0.0, sd = 0.0;
	for (size_t i = 0; i < n; i++) {
		sd += ds->c2[a][xf_packed_index(n, i, i)];
		for (size_t j = i + 1; i >= 1 && j < n; j++)
			sf += ds->c2[a][xf_packed_index(n, i, j)];
	}
	*fitted = sf / (double)xf_fitted_pairs(n);
	*diag = sd / (double)n;
}

static cJSON *number_list(const double *v, int n)
{
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < n; k++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[k]));
	return arr;
}

/* The file's q rings and which are selected (adr/0063): sel[n_sel] the loaded rings. */
typedef struct ring_view {
	const xf_ring_info *table; /* every ring of the file, ascending */
	int n;
	const xf_dataset *sel; /* the selected rings, ascending */
	int n_sel;
} ring_view;

/* by binary search over the ascending selection (a scan per ring was n², adr/0073) */
static const xf_dataset *selected(const ring_view *v, double q)
{
	int lo = 0, hi = v->n_sel;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (v->sel[mid].q < q - 1e-6 * q)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int k = lo; k < v->n_sel && k <= lo + 1; k++)
		if (fabs(v->sel[k].q - q) <= 1e-6 * q)
			return &v->sel[k];
	return NULL;
}

static cJSON *rings_json(const ring_view *v)
{
	cJSON *arr = cJSON_CreateArray();
	for (int r = 0; r < v->n; r++) {
		cJSON *o = cJSON_CreateObject();
		const xf_dataset *d = selected(v, v->table[r].q);
		cJSON_AddNumberToObject(o, "q", v->table[r].q);
		cJSON_AddNumberToObject(o, "angles_in_ring", v->table[r].n_angles);
		cJSON_AddBoolToObject(o, "selected", d != NULL);
		cJSON_AddBoolToObject(o, "has_maps", v->table[r].n_angles > 0);
		if (d) {
			cJSON_AddItemToObject(o, "angles", number_list(d->phi_deg, d->n_phi));
			cJSON_AddNumberToObject(o, "points", (double)d->n_points);
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static void rings_lines(const ring_view *v)
{
	for (int r = 0; r < v->n; r++) {
		const xf_dataset *d = selected(v, v->table[r].q);
		if (v->table[r].n_angles == 0) { /* in the qmap, no processed bin */
			printf("ring: q %.10g, no maps (no processed bin), not selectable\n",
			       v->table[r].q);
			continue;
		}
		printf("ring: q %.10g, %d angles in ring, ", v->table[r].q, v->table[r].n_angles);
		if (!d) {
			printf("not selected\n");
			continue;
		}
		printf("selected: %d angles (", d->n_phi);
		for (int a = 0; a < d->n_phi; a++)
			printf("%s%.10g", a ? ", " : "", d->phi_deg[a]);
		printf("), %zu points\n", d->n_points);
	}
}

/* the --json answer on stdout; o freed */
static int print_and_free(cJSON *o)
{
	char *text = cJSON_Print(o);
	cJSON_Delete(o);
	/* a path's byte 0xFF printed as U+FFFD: the answer stays JSON (adr/0075) */
	char *clean = text ? xf_utf8_clean(text) : NULL;
	free(text);
	if (!clean)
		return xf_cli_error(XF_ERR_NOMEM, "out of memory printing JSON");
	puts(clean);
	free(clean);
	return 0;
}

static int print_json(const xf_config *cfg, const xf_dataset *ds, const ring_view *rv,
		      const xf_problem *pr, const double *fit_mean, const double *diag_mean)
{
	cJSON *o = cJSON_CreateObject();
	int *maps = ds->map_number;
	cJSON_AddStringToObject(o, "file", ds->path);
	cJSON_AddStringToObject(o, "layout", xf_layout_name(ds->layout));
	if (cfg->has_q)
		cJSON_AddNumberToObject(o, "q_target", cfg->wavevector_q);
	else
		cJSON_AddNullToObject(o, "q_target");
	cJSON_AddNumberToObject(o, "q", ds->q);
	cJSON_AddNumberToObject(o, "q_rings", ds->n_q_rings);
	cJSON_AddItemToObject(o, "rings", rings_json(rv));
	cJSON_AddItemToObject(o, "angles", number_list(ds->phi_deg, ds->n_phi));
	cJSON_AddItemToObject(o, "map_numbers", cJSON_CreateIntArray(maps, ds->n_phi));
	cJSON_AddNumberToObject(o, "angles_in_ring", ds->n_phi_in_ring);
	cJSON_AddNumberToObject(o, "frames_stored", (double)ds->n_frames_stored);
	cJSON_AddNumberToObject(o, "start_frame", (double)ds->first_frame);
	cJSON_AddNumberToObject(o, "end_frame", (double)(ds->first_frame + ds->n_frames - 1));
	cJSON_AddNumberToObject(o, "n_frames", ds->n_frames);
	cJSON_AddNumberToObject(o, "dt_s", ds->dt_s);
	cJSON_AddStringToObject(o, "dt_source", ds->dt_source);
	xf_constant_sources src;
	xf_cli_constant_sources(cfg, ds, &src);
	cJSON_AddStringToObject(o, "q_source", src.q);
	cJSON_AddNumberToObject(o, "gap_A", cfg->gap_A);
	cJSON_AddStringToObject(o, "gap_source", src.gap);
	cJSON_AddStringToObject(o, "angles_source", src.angles);
	cJSON_AddNumberToObject(o, "points_per_angle",
				(double)xf_fitted_pairs((size_t)ds->n_frames));
	cJSON_AddNumberToObject(o, "points_total", (double)ds->n_points);
	cJSON_AddStringToObject(o, "mode", xf_mode_name(cfg->mode));
	xf_validate_plan_json(o, cfg, pr);
	cJSON_AddItemToObject(o, "fitted_mean", number_list(fit_mean, ds->n_phi));
	cJSON_AddItemToObject(o, "diagonal_mean", number_list(diag_mean, ds->n_phi));
	cJSON_AddItemToObject(o, "ignored_keys", xf_cli_ignored_json(cfg));
	return print_and_free(o);
}

static void print_list(const char *key, const double *v, int n)
{
	printf("%s: ", key);
	for (int k = 0; k < n; k++)
		printf("%s%.10g", k ? ", " : "", v[k]);
	putchar('\n');
}

static void print_lines(const xf_config *cfg, const xf_dataset *ds, const ring_view *rv,
			const xf_problem *pr, const double *fit_mean, const double *diag_mean)
{
	printf("file: %s\n", ds->path);
	printf("layout: %s\n", xf_layout_name(ds->layout));
	if (cfg->has_q)
		printf("q_target: %.10g\n", cfg->wavevector_q);
	else
		printf("q_target: null\n");
	printf("q: %.10g\n", ds->q);
	printf("q_rings: %d\n", ds->n_q_rings);
	rings_lines(rv);
	print_list("angles", ds->phi_deg, ds->n_phi);
	printf("angles_in_ring: %d\n", ds->n_phi_in_ring);
	printf("frames_stored: %ld\n", ds->n_frames_stored);
	printf("start_frame: %ld\n", ds->first_frame);
	printf("end_frame: %ld\n", ds->first_frame + ds->n_frames - 1);
	printf("n_frames: %d\n", ds->n_frames);
	printf("dt_s: %.10g\n", ds->dt_s);
	printf("dt_source: %s\n", ds->dt_source);
	xf_constant_sources src;
	xf_cli_constant_sources(cfg, ds, &src);
	printf("q_source: %s\n", src.q);
	printf("gap_A: %.10g\n", cfg->gap_A);
	printf("gap_source: %s\n", src.gap);
	printf("angles_source: %s\n", src.angles);
	printf("points_per_angle: %zu\n", xf_fitted_pairs((size_t)ds->n_frames));
	printf("points_total: %zu\n", ds->n_points);
	printf("mode: %s\n", xf_mode_name(cfg->mode));
	xf_validate_plan_lines(cfg, pr);
	print_list("fitted_mean", fit_mean, ds->n_phi);
	print_list("diagonal_mean", diag_mean, ds->n_phi);
	xf_cli_print_ignored(stdout, cfg);
}

static int parse(int argc, char **argv, const struct option *opts, xf_cli_overrides *ov);
static int validate(const xf_cli_overrides *ov);

int xf_cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "data", required_argument, 0, 'd' },
		{ "json", no_argument, 0, 'j' },
		{ "strict", no_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' },
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	xf_cli_overrides ov = { 0 };
	int rc = parse(argc, argv, opts, &ov);
	if (rc < 0)
		rc = validate(&ov);
	xf_cli_overrides_free(&ov);
	return rc;
}
/* filled by parse() */
static const char *config_path, *data_path;
static int json, strict;

/* Parse the options; -1 to go on, else the exit code. */
static int parse(int argc, char **argv, const struct option *opts, xf_cli_overrides *ov)
{
	int c;
	config_path = data_path = NULL;
	json = strict = 0;
	xf_phase("validate", 0); /* a signal ends the process at once: nothing is written */
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; (c = getopt_long(argc, argv, "", opts, &li)) != -1; li = -1) {
		if (xf_cli_option_rules("validate", opts, li, optarg, &seen))
			return XF_ERR_CONFIG;
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'd': data_path = optarg; break;
		case 'j': json = 1; break;
		case 's': strict = 1; break;
		case 'h': fputs(validate_usage, stdout); return 0;
		default:
			if (xf_cli_override_or_unknown(ov, c, optarg, "validate", argv[optind - 1]))
				return XF_ERR_CONFIG;
			break;
		}
	}
	if (optind < argc)
		return xf_cli_error(XF_ERR_CONFIG, "validate: unexpected argument '%s'",
				    argv[optind]);
	if (!config_path)
		return xf_cli_error(XF_ERR_CONFIG, "validate: --config is required, see "
						   "'xpcsfit validate --help'");
	return xf_cli_overrides_finish(ov) ? XF_ERR_CONFIG : -1;
}

static const char *pick_name(xf_q_pick p)
{
	return p == XF_Q_PICK_ALL ? "all" : p == XF_Q_PICK_LIST ? "list" : "range";
}

/* the file's rings that hold maps (the table also lists the qmap's rings without) */
static int rings_with_maps(const ring_view *v)
{
	int n = 0;
	for (int r = 0; r < v->n; r++)
		n += v->table[r].n_angles > 0;
	return n;
}

/* Several rings selected (adr/0063): the file's rings, the selected ones with their
 * angles and points, the window and dt they share, and the fit plan (validate_plan.c):
 * each ring's own (nlsq, cmc, fit and batch fit each ring on its own, adr/0065) or, with
 * XF_KEY_RINGS: joint, the one joint fit's (adr/0066). */
static int print_rings(const xf_config *cfg, const ring_view *v)
{
	const xf_dataset *d = &v->sel[0];
	size_t total = 0;
	xf_error err = { 0 };
	for (int k = 0; k < v->n_sel; k++)
		total += v->sel[k].n_points;
	/* the plan first, quietly: a ring whose problem cannot be built (as its fit would
	 * find) is refused before anything is printed */
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return xf_cli_error(XF_ERR_NOMEM, "out of memory");
	cJSON *plan = cJSON_CreateObject();
	int rc = plan ? xf_validate_rings_plan(cfg, v->sel, v->n_sel, plan, &err)
		      : xf_fail(&err, XF_ERR_NOMEM, "out of memory");
	cJSON_Delete(plan);
	if (rc) {
		cJSON_Delete(o);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	if (json) {
		cJSON_AddStringToObject(o, "file", d->path);
		cJSON_AddStringToObject(o, "layout", xf_layout_name(d->layout));
		cJSON_AddNullToObject(o, "q_target");
		cJSON_AddStringToObject(o, "q_selection", pick_name(cfg->q_rings.pick));
		cJSON_AddNumberToObject(o, "q_rings", rings_with_maps(v));
		cJSON_AddNumberToObject(o, "q_rings_selected", v->n_sel);
		cJSON_AddItemToObject(o, "rings", rings_json(v));
		cJSON_AddNumberToObject(o, "frames_stored", (double)d->n_frames_stored);
		cJSON_AddNumberToObject(o, "start_frame", (double)d->first_frame);
		cJSON_AddNumberToObject(o, "end_frame", (double)(d->first_frame + d->n_frames - 1));
		cJSON_AddNumberToObject(o, "n_frames", d->n_frames);
		cJSON_AddNumberToObject(o, "dt_s", d->dt_s);
		cJSON_AddStringToObject(o, "dt_source", d->dt_source);
		cJSON_AddNumberToObject(o, "points_total", (double)total);
		cJSON_AddStringToObject(o, "mode", xf_mode_name(cfg->mode));
		cJSON_AddStringToObject(o, "fitting", cfg->rings_joint ? "joint" : "per ring");
		if (xf_validate_rings_plan(cfg, v->sel, v->n_sel, o, &err)) {
			cJSON_Delete(o);
			return xf_cli_error(err.code, "%s", err.msg);
		}
		cJSON_AddItemToObject(o, "ignored_keys", xf_cli_ignored_json(cfg));
		return print_and_free(o);
	}
	cJSON_Delete(o);
	printf("file: %s\n", d->path);
	printf("layout: %s\n", xf_layout_name(d->layout));
	printf("q_target: null\n");
	printf("q_selection: %s\n", pick_name(cfg->q_rings.pick));
	printf("q_rings: %d\n", rings_with_maps(v));
	printf("q_rings_selected: %d\n", v->n_sel);
	rings_lines(v);
	printf("frames_stored: %ld\n", d->n_frames_stored);
	printf("start_frame: %ld\n", d->first_frame);
	printf("end_frame: %ld\n", d->first_frame + d->n_frames - 1);
	printf("n_frames: %d\n", d->n_frames);
	printf("dt_s: %.10g\n", d->dt_s);
	printf("dt_source: %s\n", d->dt_source);
	printf("points_total: %zu\n", total);
	printf("mode: %s\n", xf_mode_name(cfg->mode));
	if (cfg->rings_joint)
		printf("fitting: joint (nlsq, cmc, fit, batch: one fit over the rings into "
		       "nlsq_joint/, cmc_joint/)\n");
	else
		printf("fitting: per ring (nlsq, cmc, fit, batch: each ring on its own into "
		       "nlsq/q_<q>/, cmc/q_<q>/)\n");
	if (xf_validate_rings_plan(cfg, v->sel, v->n_sel, NULL, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	xf_cli_print_ignored(stdout, cfg);
	return 0;
}

/* -1 when the choice comes down to one ring (validated as one ring, as nlsq fits it),
 * else the exit code. */
static int validate_rings(const xf_config *cfg)
{
	xf_selection sel;
	xf_error err = { 0 };
	xf_dataset *rings = NULL;
	xf_ring_info *table = NULL;
	ring_view v = { NULL, 0, NULL, 0 };
	xf_selection_from_config(cfg, &sel);
	int rc = xf_dataset_load_rings(&sel, data_path, &rings, &v.n_sel, &err);
	if (!rc)
		rc = xf_dataset_file_rings(&sel, data_path, &table, &v.n, &err);
	if (rc) {
		xf_dataset_free_rings(rings, v.n_sel);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	v.table = table;
	v.sel = rings;
	rc = v.n_sel == 1 ? -1 : print_rings(cfg, &v);
	free(table);
	xf_dataset_free_rings(rings, v.n_sel);
	return rc;
}

static int validate(const xf_cli_overrides *ov)
{
	xf_config cfg;
	xf_dataset ds;
	xf_error err = { 0 };
	/* the file is read more than once (its rings, then the data): each warning once */
	xf_log_warn_once(1);
	if (xf_config_load_with(config_path, ov->items, ov->n, &cfg, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	int rc = strict ? xf_cli_strict(&cfg, config_path) : 0;
	if (rc) {
		xf_config_free(&cfg);
		return rc;
	}
	if (cfg.q_rings.pick != XF_Q_PICK_ONE && (rc = validate_rings(&cfg)) >= 0) {
		xf_config_free(&cfg);
		return rc;
	}
	rc = xf_cli_dataset_load(&cfg, data_path, &ds, &err);
	ring_view rv = { NULL, 0, &ds, 1 };
	xf_ring_info *table = NULL;
	if (!rc) {
		xf_selection sel;
		xf_selection_from_config(&cfg, &sel);
		rc = xf_dataset_file_rings(&sel, data_path, &table, &rv.n, &err);
		rv.table = table;
		if (rc)
			xf_dataset_free(&ds);
	}
	if (rc) {
		xf_config_free(&cfg);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	/* the problem the fit would build: a per-angle start count that does not fit these
	 * angles is found here, as nlsq would find it */
	xf_problem pr;
	memset(&pr, 0, sizeof pr);
	if (xf_cli_problem_build(&pr, &cfg, &ds, &err)) {
		free(table);
		xf_dataset_free(&ds);
		xf_config_free(&cfg);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	double *fit_mean = calloc((size_t)ds.n_phi, sizeof *fit_mean);
	double *diag_mean = calloc((size_t)ds.n_phi, sizeof *diag_mean);
	if (!fit_mean || !diag_mean) {
		rc = xf_cli_error(XF_ERR_NOMEM, "out of memory");
	} else {
		for (int a = 0; a < ds.n_phi; a++)
			angle_means(&ds, a, &fit_mean[a], &diag_mean[a]);
		if (json)
			rc = print_json(&cfg, &ds, &rv, &pr, fit_mean, diag_mean);
		else
			print_lines(&cfg, &ds, &rv, &pr, fit_mean, diag_mean);
	}
	free(fit_mean);
	free(diag_mean);
	free(table);
	xf_problem_free(&pr);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}
