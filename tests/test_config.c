/* test_config.c — the YAML configuration reader (src/config/) and `xpcsfit config`
 * (src/cli/cmd_config.c): defaults, a full homodyne-style config, aliases, unknown-key
 * warnings, one test per class of bad value (exit code 2 and the key path in the
 * message), template round trips and relative data path resolution. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/request_build.h"
#include "config/config_internal.h"
#include "xpcsfit/config.h"
#include "xpcsfit/error.h"
#include "xpcsfit/request.h"

/* The command is not in the library: compile it in here, with a stand-in for main.c's
 * xf_cli_error that keeps the last message for the assertions. */
#include "cli/cmd_config.c"

static char cli_message[1024];

int xf_cli_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cli_message, sizeof cli_message, fmt, ap);
	va_end(ap);
	return code;
}

static char tmp_dir[PATH_MAX];
static char start_dir[PATH_MAX];

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		fail_msg("cannot create %s: %s", path, strerror(errno));
}

static int group_setup(void **state)
{
	(void)state;
	const char *t = getenv("XF_TMP");
	snprintf(tmp_dir, sizeof tmp_dir, "%s", t && t[0] ? t : "/tmp/xf_test_config");
	make_dir(tmp_dir);
	if (!getcwd(start_dir, sizeof start_dir))
		return -1;
	xf_log_set_stderr(0, 0);
	return 0;
}

/* Write text to XF_TMP/name; returns the path (static buffer, one at a time). */
static const char *write_tmp(const char *name, const char *text)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *source_path(const char *rel)
{
	static char path[PATH_MAX + 64];
	const char *src = getenv("XF_SOURCE_DIR");
	snprintf(path, sizeof path, "%s/%s", src && src[0] ? src : "..", rel);
	return path;
}

/* Load a config text; returns the status, cfg left loaded on success. */
static int load_text(const char *text, xf_config *cfg, xf_error *err)
{
	xf_error_clear(err);
	return xf_config_load(write_tmp("cfg.yaml", text), cfg, err);
}

/* A config that must fail with code 2 and a message holding every given fragment. */
static void expect_error(const char *text, const char *frag1, const char *frag2)
{
	xf_config cfg;
	xf_error err;
	int rc = load_text(text, &cfg, &err);
	if (rc != XF_ERR_CONFIG)
		fail_msg("expected exit 2, got %d for:\n%s", rc, text);
	assert_int_equal(err.code, XF_ERR_CONFIG);
	if (frag1 && !strstr(err.msg, frag1))
		fail_msg("message '%s' lacks '%s'", err.msg, frag1);
	if (frag2 && !strstr(err.msg, frag2))
		fail_msg("message '%s' lacks '%s'", err.msg, frag2);
	/* on error the config is left freed and defaulted */
	assert_null(cfg.source_path);
	assert_null(cfg.phi_ranges);
}

#define STATIC_HEAD  "analysis_mode: static\n"
#define LAMINAR_HEAD "analysis_mode: laminar_flow\n"

static void test_defaults(void **state)
{
	(void)state;
	xf_config cfg;
	xf_config_defaults(&cfg);
	assert_int_equal(cfg.mode, XF_MODE_STATIC);
	assert_null(cfg.data_path);
	assert_int_equal(cfg.has_dt, 0);
	assert_int_equal(cfg.start_frame, 1);
	assert_int_equal(cfg.end_frame, -1);
	assert_true(cfg.gap_A == 2e6);
	assert_int_equal(cfg.shear_model, XF_SHEAR_HOMODYNE);
	assert_true(cfg.bounds[XF_P_D0].lower == 100 && cfg.bounds[XF_P_D0].upper == 1e5);
	/* model.md's example of the default prior: mu 50 050, sigma 24 975 */
	assert_true(cfg.bounds[XF_P_D0].prior_mu == 50050.0);
	assert_true(cfg.bounds[XF_P_D0].prior_sigma == 24975.0);
	assert_true(cfg.bounds[XF_P_OFFSET].lower == 0.5 && cfg.bounds[XF_P_OFFSET].upper == 1.5);
	assert_true(xf_config_start_value(&cfg, XF_P_D0) == 50050.0);
	assert_true(xf_config_start_value(&cfg, XF_P_CONTRAST) == 0.5);
	assert_int_equal(cfg.nlsq.max_iterations, 1000);
	assert_true(cfg.nlsq.ftol == 1e-8 && cfg.nlsq.xtol == 1e-8 && cfg.nlsq.gtol == 1e-8);
	assert_int_equal(cfg.nlsq.has_sigma, 0);
	assert_int_equal(cfg.nlsq.loss, XF_LOSS_LINEAR);
	assert_int_equal(cfg.nlsq.per_angle_mode, XF_SCALING_AUTO);
	assert_int_equal(cfg.nlsq.constant_scaling_threshold, 3);
	assert_int_equal(cfg.nlsq.fourier_order, 2);
	assert_int_equal(cfg.nlsq.hierarchical, 1);
	assert_int_equal(cfg.nlsq.anti_degeneracy_enable, 0);
	assert_int_equal(cfg.nlsq.n_starts, 10);
	assert_true(cfg.nlsq.multi_start_seed == 42);
	assert_true(cfg.cmc.seed == 42);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_FOLLOW_NLSQ);
	assert_int_equal(cfg.cmc.num_shards, 0);
	assert_int_equal(cfg.cmc.num_warmup, 500);
	assert_int_equal(cfg.cmc.num_samples, 1500);
	assert_int_equal(cfg.cmc.num_chains, 4);
	assert_true(cfg.cmc.target_accept_prob == 0.0); /* per mode */
	assert_int_equal(cfg.cmc.max_tree_depth, 10);
	assert_int_equal(cfg.cmc.dense_mass, 1);
	assert_true(cfg.cmc.max_divergence_rate == 0.10);
	assert_true(cfg.cmc.max_per_shard_rhat == 1.1);
	assert_true(cfg.cmc.nlsq_prior_width_factor == 2.0);
	assert_int_equal(cfg.cmc.combination, XF_COMBINE_ROBUST_CONSENSUS);
	assert_true(cfg.cmc.min_success_rate == 0.90);
	assert_int_equal(cfg.virtual_devices, 0);
	/* the mode's names, homodyne's static ones included; a name that is none refused */
	xf_mode mode = XF_MODE_LAMINAR;
	assert_int_equal(xf_mode_parse("static_anisotropic", &mode), 0);
	assert_int_equal(mode, XF_MODE_STATIC);
	assert_int_equal(xf_mode_parse(xf_mode_name(XF_MODE_LAMINAR), &mode), 0);
	assert_int_equal(mode, XF_MODE_LAMINAR);
	assert_int_equal(xf_mode_parse("laminar", &mode), -1);
	assert_int_equal(mode, XF_MODE_LAMINAR);
	assert_string_equal(xf_scaling_mode_name(XF_SCALING_FOURIER), "fourier");
	assert_string_equal(xf_scaling_mode_name(XF_SCALING_INDIVIDUAL), "individual");
	xf_config_free(&cfg);
}

/* The request of a config that sets only the mode (the CLI's path: config, then
 * xf_request_from_config) is xf_request_defaults' (what xpcsfit-gpu starts from): one
 * statement of the defaults, whichever way a caller reaches them. */
static void test_request_defaults(void **state)
{
	(void)state;
	const char *texts[2] = { STATIC_HEAD, LAMINAR_HEAD };
	const xf_mode modes[2] = { XF_MODE_STATIC, XF_MODE_LAMINAR };
	for (int m = 0; m < 2; m++) {
		xf_config cfg;
		xf_error err;
		if (load_text(texts[m], &cfg, &err))
			fail_msg("%s", err.msg);
		xf_request from_config, defaults;
		xf_request_from_config(&cfg, &from_config);
		xf_request_defaults(&defaults, modes[m]);
		assert_int_equal(from_config.mode, defaults.mode);
		assert_true(from_config.gap_A == defaults.gap_A);
		assert_int_equal(from_config.per_angle_mode, defaults.per_angle_mode);
		assert_int_equal(from_config.constant_scaling_threshold,
				 defaults.constant_scaling_threshold);
		for (int k = 0; k < XF_N_BOUND_SLOTS; k++)
			if (memcmp(&from_config.bounds[k], &defaults.bounds[k], sizeof(xf_bound)))
				fail_msg("bounds of %s differ", xf_param_names[k]);
		for (int k = 0; k < XF_N_PHYS; k++)
			assert_true(from_config.start[k] == defaults.start[k]);
		/* every field, padding included (both are memset first) */
		assert_memory_equal(&from_config, &defaults, sizeof defaults);
		xf_config_free(&cfg);
	}
	xf_nlsq_options n;
	xf_cmc_options c;
	xf_nlsq_options_defaults(&n);
	xf_cmc_options_defaults(&c);
	assert_int_equal(n.max_iterations, 1000); /* docs/config.md's table */
	assert_int_equal(c.num_warmup, 500);
	assert_int_equal(c.check_draws, 4000);
}

static void test_full_laminar(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	int before = xf_log_warning_count();
	int rc = xf_config_load(source_path("tests/configs/laminar_full.yaml"), &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	/* every unused key in the fixture is a homodyne key listed as accepted */
	assert_int_equal(xf_log_warning_count(), before);
	assert_int_equal(cfg.mode, XF_MODE_LAMINAR);
	assert_string_equal(cfg.data_path, "/nonexistent/folder/run42.hdf");
	assert_non_null(strstr(cfg.data_path_note, "absolute"));
	assert_int_equal(cfg.has_dt, 1);
	assert_true(cfg.dt_s == 0.5e-3);
	assert_int_equal(cfg.start_frame, 11);
	assert_int_equal(cfg.end_frame, 2000);
	assert_int_equal(cfg.has_q, 1);
	assert_true(cfg.wavevector_q == 0.0237);
	assert_true(cfg.gap_A == 1.5e6);
	assert_int_equal(cfg.shear_model, XF_SHEAR_PNAS2024);
	assert_int_equal(cfg.phi_filter_enabled, 1);
	assert_int_equal(cfg.fallback_to_all_angles, 1);
	assert_int_equal(cfg.n_phi_ranges, 2);
	assert_true(cfg.phi_ranges[0].min_deg == -20 && cfg.phi_ranges[0].max_deg == 20.5);
	assert_true(cfg.phi_ranges[1].min_deg == 170 && cfg.phi_ranges[1].max_deg == -170);
	static const double want[XF_N_PHYS] = { 2000, -1.3, 5, 0.002, -0.2, 0.001, 2.5 };
	for (int k = 0; k < XF_N_PHYS; k++) {
		assert_int_equal(cfg.value_given[k], 1);
		assert_true(cfg.values[k] == want[k]);
		assert_true(xf_config_start_value(&cfg, k) == want[k]);
		assert_int_equal(cfg.is_fixed[k], k == XF_P_PHI0);
	}
	assert_int_equal(cfg.n_contrast_start, 3);
	assert_true(cfg.contrast_start[0] == 0.2 && cfg.contrast_start[2] == 0.3);
	assert_int_equal(cfg.n_offset_start, 1);
	assert_true(cfg.offset_start[0] == 1.01);
	/* given priors kept; missing ones: middle and a quarter of the width */
	assert_true(cfg.bounds[XF_P_D0].lower == 10 && cfg.bounds[XF_P_D0].upper == 1e6);
	assert_true(cfg.bounds[XF_P_D0].prior_mu == 1500);
	assert_true(cfg.bounds[XF_P_D0].prior_sigma == 300);
	assert_true(cfg.bounds[XF_P_ALPHA].prior_mu == -1.0);
	assert_true(cfg.bounds[XF_P_ALPHA].prior_sigma == 1.0);
	assert_true(cfg.bounds[XF_P_GAMMA_DOT_T0].upper == 1);
	assert_true(cfg.bounds[XF_P_CONTRAST].lower == 0.05);
	assert_true(cfg.bounds[XF_P_CONTRAST].prior_sigma == 0.1);
	assert_true(cfg.bounds[XF_P_OFFSET].prior_mu == 1.0);
	assert_true(cfg.bounds[XF_P_BETA].lower == -2.0); /* not overridden */
	assert_int_equal(cfg.nlsq.max_iterations, 250);
	assert_true(cfg.nlsq.xtol == 1e-9 && cfg.nlsq.gtol == 2e-10 && cfg.nlsq.ftol == 3e-7);
	assert_int_equal(cfg.nlsq.has_sigma, 1);
	assert_true(cfg.nlsq.sigma == 0.02);
	assert_int_equal(cfg.nlsq.loss, XF_LOSS_SOFT_L1);
	assert_int_equal(cfg.nlsq.anti_degeneracy_enable, 1);
	assert_int_equal(cfg.nlsq.per_angle_mode, XF_SCALING_FOURIER);
	assert_int_equal(cfg.nlsq.constant_scaling_threshold, 5);
	assert_int_equal(cfg.nlsq.fourier_order, 3);
	assert_int_equal(cfg.nlsq.hierarchical, 0);
	assert_int_equal(cfg.nlsq.multi_start, 1);
	assert_int_equal(cfg.nlsq.n_starts, 7);
	assert_true(cfg.nlsq.multi_start_seed == UINT64_MAX);
	assert_true(cfg.cmc.seed == 7);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_CONSTANT);
	assert_int_equal(cfg.cmc.num_shards, 12);
	assert_int_equal(cfg.cmc.max_points_per_shard, 0);
	assert_int_equal(cfg.cmc.num_warmup, 300);
	assert_int_equal(cfg.cmc.num_samples, 700);
	assert_int_equal(cfg.cmc.num_chains, 2);
	assert_true(cfg.cmc.target_accept_prob == 0.9);
	assert_int_equal(cfg.cmc.max_tree_depth, 8);
	assert_int_equal(cfg.cmc.dense_mass, 0);
	assert_true(cfg.cmc.max_divergence_rate == 0.2);
	assert_true(cfg.cmc.max_per_shard_rhat == 1.05);
	assert_int_equal(cfg.cmc.use_nlsq_informed_priors, 1);
	assert_true(cfg.cmc.nlsq_prior_width_factor == 3);
	assert_int_equal(cfg.cmc.combination, XF_COMBINE_GAUSSIAN_PRODUCT);
	assert_true(cfg.cmc.min_success_rate == 0.75);
	assert_int_equal(cfg.virtual_devices, 6);
	assert_non_null(strstr(cfg.source_path, "laminar_full.yaml"));
	xf_config_free(&cfg);
	assert_null(cfg.data_path);
}

static void test_example_configs_load_clean(void **state)
{
	(void)state;
	static const char *const files[] = {
		"configs/laminar_flow_example.yaml",
		"configs/static_example.yaml",
	};
	static const xf_mode modes[] = { XF_MODE_LAMINAR, XF_MODE_STATIC };
	for (int k = 0; k < 2; k++) {
		xf_config cfg;
		xf_error err;
		xf_error_clear(&err);
		int before = xf_log_warning_count();
		int rc = xf_config_load(source_path(files[k]), &cfg, &err);
		if (rc)
			fail_msg("%s: %s", files[k], err.msg);
		assert_int_equal(xf_log_warning_count(), before);
		assert_int_equal(cfg.mode, modes[k]);
		xf_config_free(&cfg);
	}
}

static void test_aliases(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	int rc =
		load_text(LAMINAR_HEAD "initial_parameters:\n"
				       "  parameter_names: [phi_0, gamma_dot_0, gamma_dot_offset]\n"
				       "  values: [3, 0.05, -0.01]\n"
				       "parameter_space:\n"
				       "  bounds:\n"
				       "    - {name: gamma_dot_t_0, min: 0.001, max: 0.2}\n"
				       "optimization:\n  nlsq:\n    tolerance: 1.0e-6\n",
			  &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.values[XF_P_PHI0] == 3 && cfg.value_given[XF_P_PHI0]);
	assert_true(cfg.values[XF_P_GAMMA_DOT_T0] == 0.05);
	assert_true(cfg.values[XF_P_GAMMA_DOT_T_OFFSET] == -0.01);
	assert_int_equal(cfg.value_given[XF_P_D0], 0);
	assert_true(cfg.bounds[XF_P_GAMMA_DOT_T0].lower == 0.001);
	assert_true(cfg.nlsq.ftol == 1e-6);
	xf_config_free(&cfg);

	static const char *const statics[] = {
		"analysis_mode: static_isotropic\n",
		"analysis_mode: static_anisotropic\n",
		"analysis_mode: \"static\"\n",
	};
	for (int k = 0; k < 3; k++) {
		rc = load_text(statics[k], &cfg, &err);
		assert_int_equal(rc, 0);
		assert_int_equal(cfg.mode, XF_MODE_STATIC);
		xf_config_free(&cfg);
	}
	/* ftol wins over tolerance when both are written */
	rc = load_text(STATIC_HEAD "optimization: {nlsq: {ftol: 1.0e-5, tolerance: 1.0e-7}}\n",
		       &cfg, &err);
	assert_int_equal(rc, 0);
	assert_true(cfg.nlsq.ftol == 1e-5);
	xf_config_free(&cfg);
}

static void test_values_null(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	int rc = load_text(STATIC_HEAD "initial_parameters:\n"
				       "  parameter_names: [D0, alpha, D_offset]\n"
				       "  values: null\n",
			   &cfg, &err);
	assert_int_equal(rc, 0);
	for (int k = 0; k < XF_N_PHYS; k++)
		assert_int_equal(cfg.value_given[k], 0);
	assert_true(xf_config_start_value(&cfg, XF_P_D0) == 50050.0);
	assert_true(xf_config_start_value(&cfg, XF_P_ALPHA) == 0.0);
	xf_config_free(&cfg);

	/* values: ~ and a null entry behave the same */
	rc = load_text(STATIC_HEAD "initial_parameters:\n"
				   "  parameter_names: [D0, alpha]\n"
				   "  values: [~, 1.5]\n",
		       &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(cfg.value_given[XF_P_D0], 0);
	assert_int_equal(cfg.value_given[XF_P_ALPHA], 1);
	assert_true(cfg.values[XF_P_ALPHA] == 1.5);
	xf_config_free(&cfg);
}

static void test_fixed_parameters(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	int rc = load_text(LAMINAR_HEAD "initial_parameters:\n"
					"  parameter_names: [D0, alpha, D_offset]\n"
					"  values: [1000, 0.5, 10]\n"
					"  fixed_parameters: {D_offset: 0, gamma_dot_0: 0.02}\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(cfg.is_fixed[XF_P_D_OFFSET], 1);
	assert_true(cfg.values[XF_P_D_OFFSET] == 0.0);
	assert_int_equal(cfg.is_fixed[XF_P_GAMMA_DOT_T0], 1);
	assert_int_equal(cfg.value_given[XF_P_GAMMA_DOT_T0], 1);
	assert_true(cfg.values[XF_P_GAMMA_DOT_T0] == 0.02);
	assert_int_equal(cfg.is_fixed[XF_P_D0], 0);
	xf_config_free(&cfg);
	expect_error(LAMINAR_HEAD "initial_parameters: {fixed_parameters: {D0: 5}}\n",
		     "initial_parameters.fixed_parameters.D0", "outside its bounds");
	expect_error(LAMINAR_HEAD "initial_parameters: {fixed_parameters: {nope: 5}}\n",
		     "initial_parameters.fixed_parameters.nope", "'nope' is not allowed");
}

static void test_unknown_keys_warn(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text(STATIC_HEAD "colour: blue\n"
				       "logging: {level: INFO}\n" /* homodyne: silent */
				       "optimization:\n"
				       "  method: nlsq\n" /* homodyne: silent */
				       "  nlsq:\n"
				       "    foo: 1\n"
				       "    verbose: 2\n" /* homodyne: silent */
				       "    anti_degeneracy: {bar: x, regularization: {a: 1}}\n",
			   &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(xf_log_warning_count(), 3);
	const char *log = xf_log_text();
	assert_non_null(strstr(log, "unknown config key 'colour' (ignored)"));
	assert_non_null(strstr(log, "unknown config key 'optimization.nlsq.foo' (ignored)"));
	assert_non_null(strstr(log, "'optimization.nlsq.anti_degeneracy.bar'"));
	assert_non_null(strstr(log, "cfg.yaml:7")); /* where foo was written */
	assert_null(strstr(log, "verbose"));
	assert_null(strstr(log, "logging"));
	xf_config_free(&cfg);
}

/* The settings a batch --resume compares (adr/0057): comments, key order, flow or block
 * style and number spelling leave them unchanged; keys no reader uses are not in them; a
 * changed value is. */
static void test_settings_canonical(void **state)
{
	(void)state;
	xf_config a, b, c;
	xf_error err;
	assert_int_equal(load_text(STATIC_HEAD "analyzer_parameters:\n"
					       "  dt: 0.1\n"
					       "  scattering: {wavevector_q: 0.0054}\n"
					       "optimization:\n"
					       "  nlsq: {max_iterations: 200}\n",
				   &a, &err),
			 0);
	assert_int_equal(load_text("# a comment\n"
				   "optimization:\n"
				   "  nlsq:\n"
				   "    max_iterations: 2.0e2 # iterations\n"
				   "colour: blue\n" /* ignored: not a setting */
				   "analyzer_parameters:\n"
				   "  scattering:\n"
				   "    wavevector_q: 5.4e-3\n"
				   "  dt: .1\n" STATIC_HEAD,
				   &b, &err),
			 0);
	assert_non_null(a.settings);
	assert_string_equal(a.settings, b.settings);
	assert_non_null(strstr(a.settings, "optimization.nlsq.max_iterations=200\n"));
	assert_non_null(strstr(a.settings, "analyzer_parameters.dt=0.1\n"));
	assert_null(strstr(b.settings, "colour"));
	assert_int_equal(load_text(STATIC_HEAD "analyzer_parameters:\n"
					       "  dt: 0.1\n"
					       "  scattering: {wavevector_q: 0.0054}\n"
					       "optimization:\n"
					       "  nlsq: {max_iterations: 300}\n",
				   &c, &err),
			 0);
	assert_string_not_equal(a.settings, c.settings);
	assert_non_null(strstr(c.settings, "optimization.nlsq.max_iterations=300\n"));
	xf_config_free(&a);
	xf_config_free(&b);
	xf_config_free(&c);
}

/* wavevector_q's forms (adr/0063): a number and a one-value list pick one ring as
 * before; all, a list and a {min, max} range pick several; malformed forms are refused. */
static void test_q_ring_forms(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	const char *one[] = { "0.0054", "[0.0054]" };
	for (int k = 0; k < 2; k++) {
		char text[256];
		snprintf(text, sizeof text,
			 STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: %s}}\n",
			 one[k]);
		assert_int_equal(load_text(text, &cfg, &err), 0);
		assert_true(cfg.has_q && cfg.wavevector_q == 0.0054);
		assert_int_equal(cfg.q_rings.pick, XF_Q_PICK_ONE);
		xf_config_free(&cfg);
	}
	assert_int_equal(load_text(STATIC_HEAD "analyzer_parameters: {scattering: "
					       "{wavevector_q: all}}\n",
				   &cfg, &err),
			 0);
	assert_true(!cfg.has_q && cfg.q_rings.pick == XF_Q_PICK_ALL);
	xf_config_free(&cfg);
	assert_int_equal(load_text(STATIC_HEAD "analyzer_parameters: {scattering: "
					       "{wavevector_q: [0.008, 0.003, 0.0054]}}\n",
				   &cfg, &err),
			 0);
	assert_true(!cfg.has_q && cfg.q_rings.pick == XF_Q_PICK_LIST);
	assert_int_equal(cfg.q_rings.n_list, 3);
	assert_true(cfg.q_rings.list[0] == 0.008 && cfg.q_rings.list[2] == 0.0054);
	xf_config_free(&cfg);
	assert_int_equal(load_text(STATIC_HEAD "analyzer_parameters: {scattering: "
					       "{wavevector_q: {min: 0.003, max: 0.006}}}\n",
				   &cfg, &err),
			 0);
	assert_true(cfg.q_rings.pick == XF_Q_PICK_RANGE && cfg.q_rings.range_min == 0.003 &&
		    cfg.q_rings.range_max == 0.006);
	xf_config_free(&cfg);
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: []}}\n",
		     "a list of 0 values", "cfg.yaml:2");
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: [0.003, "
				 "x]}}\n",
		     "wavevector_q[1]", "a number > 0");
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: {max: "
				 "0.006}}}\n",
		     "wavevector_q.min: missing", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: {min: 0.006, "
				 "max: 0.003}}}\n",
		     "min 0.006 is above max 0.003", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: {min: 0, "
				 "max: 0.003}}}\n",
		     "wavevector_q.min", "a number > 0");
	expect_error(STATIC_HEAD "analyzer_parameters: {scattering: {wavevector_q: any}}\n",
		     "'any' is not allowed", "all, a list");
}

static void test_other_mode_parameter_in_static(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text(STATIC_HEAD "initial_parameters:\n"
				       "  parameter_names: [D0, alpha, D_offset, gamma_dot_t0]\n"
				       "  values: [1000, 0.5, 10, 0.01]\n",
			   &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(xf_log_warning_count(), 1);
	assert_non_null(strstr(xf_log_text(), "'gamma_dot_t0' is not a parameter of static"));
	assert_int_equal(cfg.value_given[XF_P_GAMMA_DOT_T0], 0);
	assert_true(cfg.values[XF_P_D0] == 1000);
	xf_config_free(&cfg);
}

/* ---- real homodyne configs (fixtures written in homodyne's layouts) ------------------- */

/* A current homodyne static config: all of homodyne's own keys silent, wide bounds kept as
 * the user's bounds, quoted numbers read, angle ranges kept as written. */
static void test_homodyne_current_static(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	xf_log_reset();
	int rc = xf_config_load(source_path("tests/configs/homodyne_current_static.yaml"), &cfg,
				&err);
	if (rc)
		fail_msg("%s", err.msg);
	if (xf_log_warning_count() != 0)
		fail_msg("unexpected warnings:\n%s", xf_log_text());
	assert_int_equal(cfg.mode, XF_MODE_STATIC);
	assert_true(cfg.dt_s == 2e-3); /* quoted "2e-3" */
	assert_int_equal(cfg.start_frame, 5);
	assert_int_equal(cfg.end_frame, 900);
	assert_true(cfg.wavevector_q == 0.0071);
	assert_int_equal(cfg.n_phi_ranges, 2);
	assert_true(cfg.phi_ranges[0].min_deg == 170 && cfg.phi_ranges[0].max_deg == -170);
	assert_true(cfg.phi_ranges[1].min_deg == 250 && cfg.phi_ranges[1].max_deg == 290);
	assert_int_equal(cfg.fallback_to_all_angles, 0);
	/* homodyne's wide bounds are the user's bounds, not clipped to ours */
	assert_true(cfg.bounds[XF_P_D0].lower == 1.0 && cfg.bounds[XF_P_D0].upper == 1e6);
	assert_true(cfg.bounds[XF_P_ALPHA].lower == -10 && cfg.bounds[XF_P_ALPHA].upper == 10);
	assert_true(cfg.bounds[XF_P_ALPHA].prior_mu == -1.5); /* quoted */
	assert_true(cfg.bounds[XF_P_D_OFFSET].lower == -1e5); /* not named: default */
	assert_true(cfg.values[XF_P_ALPHA] == -1.5);	      /* quoted in values */
	for (int k = 0; k < 3; k++) {
		assert_int_equal(cfg.value_given[k], 1);
		assert_int_equal(cfg.is_fixed[k], 0); /* active_parameters: null = all */
	}
	assert_int_equal(cfg.nlsq.max_iterations, 300);
	assert_true(cfg.nlsq.ftol == 1e-7); /* tolerance: "1e-7" */
	assert_int_equal(cfg.nlsq.per_angle_mode, XF_SCALING_CONSTANT);
	assert_int_equal(cfg.nlsq.constant_scaling_threshold, 4);
	assert_int_equal(cfg.nlsq.hierarchical, 0);
	assert_int_equal(cfg.nlsq.multi_start, 1);
	assert_int_equal(cfg.nlsq.n_starts, 6);
	assert_true(cfg.nlsq.multi_start_seed == 11);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_INDIVIDUAL);
	assert_int_equal(cfg.cmc.num_shards, 3);
	assert_int_equal(cfg.cmc.num_chains, 3);
	assert_int_equal(cfg.cmc.max_tree_depth, 9);
	assert_true(cfg.cmc.max_per_shard_rhat == 1.2);
	assert_true(cfg.cmc.max_divergence_rate == 0.15);
	/* combination.min_success_rate is ours; validation.min_success_rate is not */
	assert_true(cfg.cmc.min_success_rate == 0.8);
	assert_int_equal(cfg.cmc.combination, XF_COMBINE_CONSENSUS);
	xf_config_free(&cfg);
}

/* An older (2.1) homodyne config: temporal block, static_anisotropic, active_parameters,
 * VI/hybrid/hardware/advanced blocks, all silent. */
static void test_homodyne_v21_style(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	xf_log_reset();
	int rc = xf_config_load(source_path("tests/configs/homodyne_v21_style.yaml"), &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	if (xf_log_warning_count() != 0)
		fail_msg("unexpected warnings:\n%s", xf_log_text());
	assert_int_equal(cfg.mode, XF_MODE_STATIC);
	assert_string_equal(cfg.data_path, "/nonexistent/beamtime/aniso.hdf");
	/* the values of the temporal block are used when the flat keys are absent */
	assert_int_equal(cfg.has_dt, 1);
	assert_true(cfg.dt_s == 0.05);
	assert_int_equal(cfg.start_frame, 3);
	assert_int_equal(cfg.end_frame, 600);
	assert_int_equal(cfg.n_phi_ranges, 2); /* laminar_flow_ranges not taken */
	assert_true(cfg.phi_ranges[1].max_deg == 190);
	/* active_parameters [D0, alpha]: D_offset held at its start value */
	assert_int_equal(cfg.is_fixed[XF_P_D0], 0);
	assert_int_equal(cfg.is_fixed[XF_P_ALPHA], 0);
	assert_int_equal(cfg.is_fixed[XF_P_D_OFFSET], 1);
	assert_true(cfg.values[XF_P_D_OFFSET] == 0.0);
	assert_true(cfg.values[XF_P_D0] == 1500.0);
	xf_config_free(&cfg);
}

/* homodyne's short example configs name the mode only in parameter_space.model. */
static void test_mode_from_parameter_space_model(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text("parameter_space:\n"
			   "  model: laminar_flow\n"
			   "  bounds:\n"
			   "    - {name: gamma_dot_0, min: 1e-6, max: 0.5}\n"
			   "    - {name: phi_0, min: -180.0, max: 180.0}\n"
			   "initial_parameters:\n"
			   "  parameter_names: [D0, alpha, D_offset, gamma_dot_0, beta,\n"
			   "                    gamma_dot_offset, phi_0]\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(cfg.mode, XF_MODE_LAMINAR);
	/* the mode from parameter_space.model, and the gap default (adr/0031) */
	assert_int_equal(xf_log_warning_count(), 2);
	assert_non_null(strstr(xf_log_text(), "using parameter_space.model 'laminar_flow'"));
	assert_non_null(strstr(xf_log_text(), "stator_rotor_gap is not set"));
	assert_int_equal(cfg.has_gap, 0);
	assert_true(cfg.bounds[XF_P_PHI0].lower == -180 && cfg.bounds[XF_P_PHI0].upper == 180);
	assert_true(cfg.bounds[XF_P_GAMMA_DOT_T0].upper == 0.5);
	xf_config_free(&cfg);

	/* the static alias works there too */
	xf_log_reset();
	rc = load_text("parameter_space: {model: static_isotropic}\n", &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(cfg.mode, XF_MODE_STATIC);
	xf_config_free(&cfg);

	/* analysis_mode wins; a contradicting model is reported */
	xf_log_reset();
	rc = load_text(STATIC_HEAD "parameter_space: {model: laminar_flow}\n", &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(cfg.mode, XF_MODE_STATIC);
	assert_int_equal(xf_log_warning_count(), 1);
	assert_non_null(strstr(xf_log_text(), "disagrees with analysis_mode"));
	xf_config_free(&cfg);

	/* agreeing labels are silent (the one warning: the gap default, adr/0031) */
	xf_log_reset();
	rc = load_text(LAMINAR_HEAD "parameter_space: {model: laminar_flow}\n", &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(xf_log_warning_count(), 1);
	assert_null(strstr(xf_log_text(), "parameter_space.model"));
	xf_config_free(&cfg);

	/* neither: still an error; a bad model used as the mode names its key path */
	expect_error("parameter_space: {bounds: []}\n", "analysis_mode: missing",
		     "parameter_space.model");
	expect_error("parameter_space: {model: turbulent}\n",
		     "parameter_space.model: 'turbulent' is not allowed", "laminar_flow");
}

static void test_active_parameters(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	/* aliases allowed; a fixed_parameters value wins over the start value */
	int rc = load_text(LAMINAR_HEAD "initial_parameters:\n"
					"  parameter_names: [D0, alpha, D_offset, gamma_dot_0,\n"
					"                    beta, gamma_dot_offset, phi_0]\n"
					"  values: [2000, -1.0, 5, 0.01, 0.2, 0.0, 1.0]\n"
					"  active_parameters: [D0, gamma_dot_0, phi_0]\n"
					"  fixed_parameters: {beta: 0.0}\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	/* only the gap default of laminar_flow (adr/0031) */
	assert_int_equal(xf_log_warning_count(), 1);
	assert_non_null(strstr(xf_log_text(), "stator_rotor_gap is not set"));
	static const int fixed[XF_N_PHYS] = { 0, 1, 1, 0, 1, 1, 0 };
	static const double want[XF_N_PHYS] = { 2000, -1.0, 5, 0.01, 0.0, 0.0, 1.0 };
	for (int k = 0; k < XF_N_PHYS; k++) {
		assert_int_equal(cfg.is_fixed[k], fixed[k]);
		assert_true(cfg.values[k] == want[k]);
	}
	xf_config_free(&cfg);

	/* without values the held parameters sit at the middle of their bounds */
	rc = load_text(STATIC_HEAD "parameter_space:\n"
				   "  bounds: [{name: D_offset, min: -10, max: 30}]\n"
				   "initial_parameters:\n"
				   "  parameter_names: [D0, alpha, D_offset]\n"
				   "  active_parameters: [D0, alpha]\n",
		       &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(cfg.is_fixed[XF_P_D_OFFSET], 1);
	assert_int_equal(cfg.value_given[XF_P_D_OFFSET], 1);
	assert_true(cfg.values[XF_P_D_OFFSET] == 10.0);
	assert_int_equal(cfg.is_fixed[XF_P_D0], 0);
	assert_int_equal(cfg.value_given[XF_P_D0], 0);
	xf_config_free(&cfg);

	expect_error(STATIC_HEAD "initial_parameters: {active_parameters: [D0, D_zero]}\n",
		     "initial_parameters.active_parameters[1]: 'D_zero' is not allowed", NULL);
	expect_error(STATIC_HEAD "initial_parameters: {active_parameters: D0}\n",
		     "initial_parameters.active_parameters: 'D0' is not allowed", "list");
	expect_error(STATIC_HEAD "initial_parameters: {active_parameters: []}\n",
		     "initial_parameters.active_parameters: a list is not allowed", "at least one");
}

/* homodyne's older loader read the angle filter from optimization_config.angle_filtering */
static void test_legacy_angle_filtering(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text(LAMINAR_HEAD "optimization_config:\n"
					"  angle_filtering:\n"
					"    target_ranges:\n"
					"      - {min_angle: -30.0, max_angle: 30.0}\n"
					"      - {min_angle: 240.0, max_angle: 300.0}\n"
					"    fallback_to_all_angles: true\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(xf_log_warning_count(), 2); /* and the gap default */
	assert_non_null(strstr(xf_log_text(), "optimization_config.angle_filtering"));
	assert_int_equal(cfg.phi_filter_enabled, 1); /* homodyne's default there */
	assert_int_equal(cfg.fallback_to_all_angles, 1);
	assert_int_equal(cfg.n_phi_ranges, 2);
	assert_true(cfg.phi_ranges[1].min_deg == 240 && cfg.phi_ranges[1].max_deg == 300);
	xf_config_free(&cfg);

	/* phi_filtering present: it wins, the old block is reported as ignored */
	xf_log_reset();
	rc = load_text(LAMINAR_HEAD "phi_filtering:\n"
				    "  enabled: true\n"
				    "  target_ranges: [{min_angle: 80, max_angle: 100}]\n"
				    "optimization_config:\n"
				    "  angle_filtering:\n"
				    "    target_ranges: [{min_angle: -5, max_angle: 5}]\n",
		       &cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(cfg.n_phi_ranges, 1);
	assert_true(cfg.phi_ranges[0].min_deg == 80);
	assert_int_equal(xf_log_warning_count(), 2); /* and the gap default */
	assert_non_null(strstr(xf_log_text(), "angle_filtering is ignored"));
	xf_config_free(&cfg);

	/* its values are checked with their own key path */
	expect_error(LAMINAR_HEAD "optimization_config:\n"
				  "  angle_filtering:\n"
				  "    target_ranges: [{min_angle: x, max_angle: 5}]\n",
		     "optimization_config.angle_filtering.target_ranges[0].min_angle", "'x'");
}

static void test_temporal_block(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	/* flat keys win; differing temporal values and frame skipping are reported */
	int rc = load_text(STATIC_HEAD "analyzer_parameters:\n"
				       "  dt: 0.1\n"
				       "  end_frame: 500\n"
				       "  temporal: {dt: 0.2, start_frame: 7, end_frame: 500,\n"
				       "             frame_interval: 2}\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.dt_s == 0.1);
	assert_int_equal(cfg.start_frame, 7); /* flat start_frame absent */
	assert_int_equal(cfg.end_frame, 500);
	assert_int_equal(xf_log_warning_count(), 2);
	assert_non_null(strstr(xf_log_text(), "temporal.dt (0.2) differs"));
	assert_non_null(strstr(xf_log_text(), "frame_interval 2 is not supported"));
	xf_config_free(&cfg);

	expect_error(STATIC_HEAD "analyzer_parameters: {temporal: {dt: -1}}\n",
		     "analyzer_parameters.temporal.dt: '-1' is not allowed", "from 1e-12 to 86400");
	expect_error(STATIC_HEAD "analyzer_parameters: {temporal: {end_frame: 0}}\n",
		     "analyzer_parameters.temporal.end_frame: '0'", NULL);
}

/* the silent lists are per section: a typo beside homodyne's keys still warns */
static void test_typos_beside_homodyne_keys(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text(STATIC_HEAD
			   "optimization:\n"
			   "  vi: {enabled: true}\n"
			   "  nlsq:\n"
			   "    multi_start: {n_start: 5, sampling_strategy: random}\n"
			   "  cmc:\n"
			   "    sharding: {num_shard: 4, strategy: random}\n"
			   "    per_shard_mcmc: {num_sample: 9, chain_method: parallel}\n"
			   "parameter_space: {model: static, prior: {}}\n"
			   "initial_parameters: {active_parameter: [D0]}\n"
			   "hardwares: {}\n",
			   &cfg, &err);
	assert_int_equal(rc, 0);
	const char *log = xf_log_text();
	assert_int_equal(xf_log_warning_count(), 6);
	assert_non_null(strstr(log, "'optimization.nlsq.multi_start.n_start'"));
	assert_non_null(strstr(log, "'optimization.cmc.sharding.num_shard'"));
	assert_non_null(strstr(log, "'optimization.cmc.per_shard_mcmc.num_sample'"));
	assert_non_null(strstr(log, "'parameter_space.prior'"));
	assert_non_null(strstr(log, "'initial_parameters.active_parameter'"));
	assert_non_null(strstr(log, "'hardwares'"));
	assert_null(strstr(log, "sampling_strategy"));
	assert_null(strstr(log, "chain_method"));
	assert_int_equal(cfg.nlsq.n_starts, 10); /* the typo did not set anything */
	xf_config_free(&cfg);
}

static void test_bad_mode(void **state)
{
	(void)state;
	expect_error("analysis_mode: turbulent\n", "analysis_mode: 'turbulent' is not allowed",
		     "laminar_flow");
	expect_error("analyzer_parameters: {dt: 0.1}\n", "analysis_mode: missing", NULL);
	expect_error("", "empty", NULL);
	expect_error("- a\n- b\n", "top level", NULL);
}

static void test_bad_dt(void **state)
{
	(void)state;
	expect_error(
		STATIC_HEAD "analyzer_parameters:\n  dt: -1\n",
		"analyzer_parameters.dt: '-1' is not allowed (must be a number of seconds from "
		"1e-12 to 86400)",
		"cfg.yaml:3");
	expect_error(STATIC_HEAD "analyzer_parameters:\n  dt: 0\n", "analyzer_parameters.dt", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters:\n  dt: 1e308\n",
		     "analyzer_parameters.dt: '1e308' is not allowed", "cfg.yaml:3");
	expect_error(STATIC_HEAD "analyzer_parameters:\n  temporal: {dt: 1e5}\n",
		     "analyzer_parameters.temporal.dt: '1e5' is not allowed", "cfg.yaml:3");
	expect_error(STATIC_HEAD "analyzer_parameters:\n  dt: [1, 2]\n",
		     "analyzer_parameters.dt: a list is not allowed", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters:\n  end_frame: 0\n",
		     "analyzer_parameters.end_frame", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters:\n  scattering: {wavevector_q: .nan}\n",
		     "analyzer_parameters.scattering.wavevector_q", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters: 5\n", "analyzer_parameters: '5'", "mapping");
}

static void test_bad_bounds(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD "parameter_space:\n  bounds:\n"
				 "    - {name: D0, min: 100, max: 100}\n",
		     "parameter_space.bounds[0]", "must be min < max");
	expect_error(STATIC_HEAD "parameter_space:\n  bounds:\n"
				 "    - {name: alpha, min: 3}\n", /* max stays at the default 2 */
		     "parameter_space.bounds[0]", "min < max");
	expect_error(STATIC_HEAD "parameter_space:\n  bounds:\n"
				 "    - {name: D0, min: 1, max: 2, prior_sigma: -1}\n",
		     "parameter_space.bounds[0].prior_sigma", NULL);
	expect_error(STATIC_HEAD
		     "parameter_space:\n  bounds:\n    - {name: Dzero, min: 1, max: 2}\n",
		     "parameter_space.bounds[0].name: 'Dzero' is not allowed", NULL);
	expect_error(STATIC_HEAD
		     "parameter_space:\n  bounds:\n"
		     "    - {name: phi0, min: 1, max: 2}\n    - {name: phi_0, min: 1, max: 3}\n",
		     "parameter_space.bounds[1].name", "already has bounds");
}

/* Starts outside their bounds are moved onto the bound with a warning (homodyne's
 * templates ship such starts); fixed values outside their bounds stay errors. */
static void test_value_outside_bounds(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err = { 0 };
	const char *text = STATIC_HEAD "initial_parameters:\n"
				       "  parameter_names: [D0, alpha]\n"
				       "  values: [50, 0.5]\n"
				       "  per_angle_scaling: {contrast: [0.3, 1.2]}\n";
	int warnings = xf_log_warning_count();
	assert_int_equal(load_text(text, &cfg, &err), 0);
	assert_true(cfg.values[XF_P_D0] == 100.0 && cfg.value_given[XF_P_D0]);
	assert_true(cfg.contrast_start[1] == 1.0 && cfg.contrast_start[0] == 0.3);
	assert_int_equal(xf_log_warning_count(), warnings + 2);
	assert_non_null(strstr(xf_log_text(), "initial_parameters.values[0]: D0 = 50 is outside "
					      "its bounds [100, 100000]; the fit starts at 100"));
	assert_non_null(strstr(xf_log_text(), "initial_parameters.per_angle_scaling.contrast[1]"));
	xf_config_free(&cfg);
	/* checked against the config's own bounds, not the defaults */
	assert_int_equal(load_text(STATIC_HEAD
				   "initial_parameters: {parameter_names: [alpha], values: [1.5]}\n"
				   "parameter_space: {bounds: [{name: alpha, min: -1, max: 1}]}\n",
				   &cfg, &err),
			 0);
	assert_true(cfg.values[XF_P_ALPHA] == 1.0);
	xf_config_free(&cfg);
	expect_error(STATIC_HEAD "initial_parameters: {fixed_parameters: {alpha: 3.0}}\n",
		     "initial_parameters.fixed_parameters.alpha", "outside its bounds");
}

static void test_bad_parameter_names(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD
		     "initial_parameters:\n  parameter_names: [D0, Dzero]\n  values: [1000, 1]\n",
		     "initial_parameters.parameter_names[1]: 'Dzero' is not allowed", "D0");
	expect_error(LAMINAR_HEAD
		     "initial_parameters:\n"
		     "  parameter_names: [gamma_dot_t0, gamma_dot_0]\n  values: [0.1, 0.1]\n",
		     "initial_parameters.parameter_names[1]", "a second time");
	expect_error(STATIC_HEAD
		     "initial_parameters:\n  parameter_names: [D0, alpha]\n  values: [1000]\n",
		     "initial_parameters.values: 1 values for 2 parameter_names", NULL);
	expect_error(STATIC_HEAD "initial_parameters:\n  values: [1000]\n",
		     "initial_parameters.parameter_names: missing", NULL);
	expect_error(STATIC_HEAD "initial_parameters:\n  parameter_names: [D0]\n  values: [big]\n",
		     "initial_parameters.values[0]: 'big' is not allowed", NULL);
	expect_error(STATIC_HEAD "initial_parameters:\n  parameter_names: [contrast]\n",
		     "initial_parameters.parameter_names[0]", "per_angle_scaling");
}

static void test_bad_yaml_and_file(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD "analyzer_parameters:\n  dt: [1, 2\n  start_frame: 3\n",
		     "invalid YAML", "cfg.yaml:");
	expect_error(STATIC_HEAD "a: b: c\n", "invalid YAML", "cfg.yaml:2");
	expect_error(STATIC_HEAD "parallel: {virtual_devices: 2}\nparallel: {}\n",
		     "duplicated key 'parallel'", "cfg.yaml:3");

	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	int rc = xf_config_load("/nonexistent/dir/missing.yaml", &cfg, &err);
	assert_int_equal(rc, XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "/nonexistent/dir/missing.yaml"));
	assert_non_null(strstr(err.msg, "cannot open config file"));
}

static void test_wrong_types(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD "optimization:\n  nlsq:\n    max_iterations: many\n",
		     "optimization.nlsq.max_iterations: 'many' is not allowed", "an integer >= 1");
	expect_error(STATIC_HEAD "optimization:\n  nlsq:\n    max_iterations: 10.5\n",
		     "optimization.nlsq.max_iterations", NULL);
	expect_error(STATIC_HEAD "phi_filtering: {enabled: maybe}\n",
		     "phi_filtering.enabled: 'maybe' is not allowed", "true or false");
	expect_error(STATIC_HEAD "optimization: {cmc: {seed: -4}}\n", "optimization.cmc.seed: '-4'",
		     NULL);
	expect_error(STATIC_HEAD "optimization: {cmc: {per_shard_mcmc: {target_accept_prob: 1}}}\n",
		     "optimization.cmc.per_shard_mcmc.target_accept_prob", NULL);
	expect_error(STATIC_HEAD "optimization: {cmc: {sharding: {num_shards: 0}}}\n",
		     "optimization.cmc.sharding.num_shards", "auto or an integer >= 1");
	expect_error(STATIC_HEAD "optimization: {cmc: {combination: {method: vote}}}\n",
		     "optimization.cmc.combination.method: 'vote'", "consensus_mc");
	expect_error(STATIC_HEAD "phi_filtering:\n  target_ranges:\n    - {min_angle: 5}\n",
		     "phi_filtering.target_ranges[0].max_angle: missing", NULL);
	expect_error(STATIC_HEAD "experimental_data: {file_path: [a, b]}\n",
		     "experimental_data.file_path", NULL);
	expect_error(STATIC_HEAD "analyzer_parameters: {shear_model: sinc}\n",
		     "analyzer_parameters.shear_model: 'sinc'", "pnas2024");
}

static void test_bad_per_angle_mode(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD
		     "optimization:\n  nlsq:\n    anti_degeneracy:\n      per_angle_mode: shared\n",
		     "optimization.nlsq.anti_degeneracy.per_angle_mode: 'shared' is not allowed",
		     "auto, individual, constant, fourier");
	/* fourier is an NLSQ mode only */
	expect_error(STATIC_HEAD "optimization: {cmc: {per_angle_mode: fourier}}\n",
		     "optimization.cmc.per_angle_mode: 'fourier' is not allowed", NULL);

	xf_config cfg;
	xf_error err;
	assert_int_equal(
		load_text(STATIC_HEAD "optimization: {cmc: {per_angle_mode: ~}}\n", &cfg, &err), 0);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_FOLLOW_NLSQ);
	xf_config_free(&cfg);
	assert_int_equal(
		load_text(STATIC_HEAD "optimization: {cmc: {per_angle_mode: auto}}\n", &cfg, &err),
		0);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_AUTO);
	xf_config_free(&cfg);
}

static void test_virtual_devices(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD "parallel:\n  virtual_devices: 0\n",
		     "parallel.virtual_devices: '0' is not allowed",
		     "auto or an integer from 1 to 1024");
	expect_error(STATIC_HEAD "parallel:\n  virtual_devices: 100000\n",
		     "parallel.virtual_devices: '100000' is not allowed", "cfg.yaml:3");
	expect_error(STATIC_HEAD "parallel:\n  virtual_devices: some\n", "parallel.virtual_devices",
		     NULL);
	xf_config cfg;
	xf_error err;
	assert_int_equal(load_text(STATIC_HEAD "parallel: {virtual_devices: auto}\n", &cfg, &err),
			 0);
	assert_int_equal(cfg.virtual_devices, 0);
	xf_config_free(&cfg);
	assert_int_equal(load_text(STATIC_HEAD "parallel: {virtual_devices: 3}\n", &cfg, &err), 0);
	assert_int_equal(cfg.virtual_devices, 3);
	xf_config_free(&cfg);
}

/* Counts that size work or memory are bounded (docs/config.md "Limits"), issue 9. */
static void test_count_bounds(void **state)
{
	(void)state;
	expect_error(STATIC_HEAD "optimization: {nlsq: {multi_start: {n_starts: 5000000}}}\n",
		     "optimization.nlsq.multi_start.n_starts: '5000000' is not allowed",
		     "from 1 to 10000");
	expect_error(STATIC_HEAD
		     "optimization: {nlsq: {anti_degeneracy: {fourier_order: 2147483647}}}\n",
		     "optimization.nlsq.anti_degeneracy.fourier_order", "from 1 to 64");
	expect_error(STATIC_HEAD "optimization: {cmc: {per_shard_mcmc: {num_chains: 100000}}}\n",
		     "optimization.cmc.per_shard_mcmc.num_chains", "from 1 to 1024");
	expect_error(STATIC_HEAD "optimization: {cmc: {per_shard_mcmc: {num_samples: 1e9}}}\n",
		     "optimization.cmc.per_shard_mcmc.num_samples", "from 1 to 1000000");
	expect_error(STATIC_HEAD "optimization: {cmc: {per_shard_mcmc: {num_warmup: 1e9}}}\n",
		     "optimization.cmc.per_shard_mcmc.num_warmup", "from 1 to 1000000");
	xf_config cfg;
	xf_error err;
	assert_int_equal(load_text(STATIC_HEAD "optimization: {nlsq: {multi_start: {n_starts: "
					       "10000}}}\nparallel: {virtual_devices: 1024}\n",
				   &cfg, &err),
			 0);
	assert_int_equal(cfg.nlsq.n_starts, 10000);
	assert_int_equal(cfg.virtual_devices, 1024);
	xf_config_free(&cfg);
}

/* 100 000 keys in one mapping: loads (the duplicate check is a sort, not pairwise), and
 * a repeat among them is found with both lines. */
static void test_many_keys(void **state)
{
	(void)state;
	enum { N_KEYS = 100000 };
	size_t cap = (size_t)N_KEYS * 24 + 256, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, STATIC_HEAD "x_many:\n");
	for (int k = 0; k < N_KEYS; k++)
		len += (size_t)snprintf(text + len, cap - len, "  k%d: %d\n", k, k);
	xf_config cfg;
	xf_error err;
	assert_int_equal(load_text(text, &cfg, &err), 0);
	xf_config_free(&cfg);
	/* the same key again as the last line: first at line 3 (k0), repeat at N + 3 */
	snprintf(text + len, cap - len, "  k0: again\n");
	char where[64];
	snprintf(where, sizeof where, "cfg.yaml:%d", N_KEYS + 3);
	expect_error(text, "duplicated key 'k0' (first written at line 3)", where);
	free(text);
}

/* YAML 1.1 merge keys (adr/0049): the merged keys are read and checked like written ones;
 * written keys win over merged ones, and of merged maps the earlier in the list wins. */
static void test_yaml_merge_keys(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	xf_log_reset();
	int rc = load_text(STATIC_HEAD "x_defaults:\n"
				       "  d0: &d0 {min: 10, max: 5000, unit: nm, colour: red}\n"
				       "  a: &a {min: 0.5, prior_mu: 0.7}\n"
				       "  b: &b {min: 0.25, max: 1.5, prior_sigma: 0.5}\n"
				       "parameter_space:\n"
				       "  bounds:\n"
				       "    - name: D0\n"
				       "      <<: *d0\n"
				       "      max: 4000\n"
				       "    - {name: alpha, <<: [*a, *b]}\n"
				       "optimization: {nlsq: {\"<<\": {ftol: 1.0e-3}}}\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.bounds[XF_P_D0].lower == 10);
	assert_true(cfg.bounds[XF_P_D0].upper == 4000);	  /* written wins over merged */
	assert_true(cfg.bounds[XF_P_ALPHA].lower == 0.5); /* *a before *b wins */
	assert_true(cfg.bounds[XF_P_ALPHA].upper == 1.5);
	assert_true(cfg.bounds[XF_P_ALPHA].prior_mu == 0.7);
	assert_true(cfg.bounds[XF_P_ALPHA].prior_sigma == 0.5);
	/* a merged unknown key is warned where it was written; a quoted "<<" is a plain key */
	const char *log = xf_log_text();
	assert_non_null(strstr(log, "'parameter_space.bounds[0].colour' (ignored)"));
	assert_non_null(strstr(log, "cfg.yaml:3")); /* the anchored map's line */
	assert_non_null(strstr(log, "'optimization.nlsq.<<'"));
	assert_null(strstr(log, "bounds[0].<<"));
	assert_true(cfg.nlsq.ftol != 1e-3);
	xf_config_free(&cfg);

	/* the merged map lacks max: its min is checked against the default max */
	expect_error(STATIC_HEAD "x_d: &d {min: 2000000}\n"
				 "parameter_space: {bounds: [{name: D0, <<: *d}]}\n",
		     "parameter_space.bounds[0]: min 2e+06 >= max 100000 for D0", "cfg.yaml:3");
	expect_error(STATIC_HEAD "x_d: &d {min: 1, max: lots}\n"
				 "parameter_space: {bounds: [{name: D0, <<: *d}]}\n",
		     "parameter_space.bounds[0].max: 'lots' is not allowed", "cfg.yaml:2");
	expect_error(STATIC_HEAD "x: {<<: 5}\n", "the merge key '<<' takes a mapping",
		     "cfg.yaml:2");
	expect_error(STATIC_HEAD "x: {<<: [{a: 1}, [2]]}\n", "the merge key '<<' takes a mapping",
		     "cfg.yaml:2");
	expect_error(STATIC_HEAD "x_d: &d {a: 1}\nx:\n  <<: *d\n  <<: *d\n",
		     "duplicated key '<<' (first written at line 4)", "cfg.yaml:5");
}

/* One document per config; an empty trailing one (a lone --- or ...) is accepted. */
static void test_yaml_documents(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	static const char *const fine[] = {
		"---\n" STATIC_HEAD,
		STATIC_HEAD "---\n",
		STATIC_HEAD "...\n",
		STATIC_HEAD "...\n---\n# nothing\n",
	};
	for (int k = 0; k < 4; k++) {
		int rc = load_text(fine[k], &cfg, &err);
		if (rc)
			fail_msg("%s: %s", fine[k], err.msg);
		xf_config_free(&cfg);
	}
	expect_error(STATIC_HEAD "---\nanalysis_mode: laminar_flow\n",
		     "a second YAML document starts at this line", "cfg.yaml:2");
	expect_error(STATIC_HEAD "---\n~\n", "a second YAML document", "cfg.yaml:2");
	expect_error("---\n---\n" STATIC_HEAD, "a second YAML document", "cfg.yaml:2");
	expect_error(STATIC_HEAD "...\n--- [1]\n", "a second YAML document", "cfg.yaml:3");
}

/* Anchors are hashed (a linear load); aliases copy their node under the 10^6-node cap. */
static void test_yaml_anchors(void **state)
{
	(void)state;
	enum { N_ANCHORS = 100000 };
	size_t cap = (size_t)N_ANCHORS * 64 + 256, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, STATIC_HEAD "x_anchors:\n");
	for (int k = 0; k < N_ANCHORS; k++)
		len += (size_t)snprintf(text + len, cap - len, "  a%d: &a%d %d\n  b%d: *a%d\n", k,
					k, k, k, k);
	snprintf(text + len, cap - len, "optimization: {nlsq: {ftol: *a7}}\n");
	xf_config cfg;
	xf_error err;
	int rc = load_text(text, &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.nlsq.ftol == 7);
	xf_config_free(&cfg);
	free(text);

	/* an anchored key names its text */
	rc = load_text(STATIC_HEAD "x: {&k ftol: 1}\noptimization: {nlsq: {*k : 1.0e-4}}\n", &cfg,
		       &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.nlsq.ftol == 1e-4);
	xf_config_free(&cfg);

	expect_error(STATIC_HEAD "x: *nowhere\n", "alias '*nowhere' has no anchor", "cfg.yaml:2");
	expect_error(STATIC_HEAD "x: &r {a: [*r]}\n", "alias '*r' lies inside the node it names",
		     "cfg.yaml:2");
	expect_error(STATIC_HEAD "x: &d 1\ny: &d 2\n",
		     "duplicated anchor '&d' (first written at "
		     "line 2)",
		     "cfg.yaml:3");
	expect_error(STATIC_HEAD "x: &m {a: 1}\ny: {*m : 2}\n", "a mapping key that is not a plain",
		     "cfg.yaml:3");
	/* the node cap: 10^6 + 1 plain items, and the same count reached by aliases */
	enum { N_NODES = 1000001 };
	cap = (size_t)N_NODES * 5 + 256;
	text = malloc(cap);
	assert_non_null(text);
	len = (size_t)snprintf(text, cap, STATIC_HEAD "x: [");
	for (int k = 0; k < N_NODES; k++)
		len += (size_t)snprintf(text + len, cap - len, "1,");
	snprintf(text + len, cap - len, "]\n");
	expect_error(text, "YAML has more than 1000000 nodes", "cfg.yaml:2");
	len = (size_t)snprintf(text, cap, STATIC_HEAD "x: &one 1\ny: [");
	for (int k = 0; k < N_NODES; k++)
		len += (size_t)snprintf(text + len, cap - len, "*one,");
	snprintf(text + len, cap - len, "]\n");
	expect_error(text, "YAML aliases expand to more than 1000000 nodes", "cfg.yaml:3");
	free(text);
}

/* A FIFO or a folder as config is refused before it is read (a FIFO would block). */
static void test_config_not_regular(void **state)
{
	(void)state;
	char path[PATH_MAX + 64];
	xf_config cfg;
	xf_error err;
	snprintf(path, sizeof path, "%s/cfg.fifo", tmp_dir);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(path, &cfg, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "not a regular file (a FIFO)"));
	unlink(path);
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(tmp_dir, &cfg, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "not a regular file (a folder)"));
}

/* The config's bytes are kept as read (run.log, a per-ring run's rings, a batch's files):
 * parsed again from them, it is the same config without reading the file, even once the
 * file has changed; an error there names the file as a read would; a NUL byte is refused
 * with its line. */
static void test_config_from_text(void **state)
{
	(void)state;
	const char *text = STATIC_HEAD "analyzer_parameters: {dt: 0.25}\n";
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s", write_tmp("kept.yaml", text));
	xf_config a, b;
	xf_error err;
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(path, &a, &err), 0);
	assert_int_equal(a.source_len, strlen(text));
	assert_string_equal(a.source_text, text);
	write_tmp("kept.yaml", STATIC_HEAD "analyzer_parameters: {dt: 9}\n"); /* edited */
	assert_int_equal(xf_config_load_text(path, a.source_text, NULL, 0, &b, &err), 0);
	assert_true(b.dt_s == 0.25 && a.dt_s == 0.25);
	assert_string_equal(b.settings, a.settings);
	assert_string_equal(b.source_path, path);
	xf_config_free(&a);
	xf_config_free(&b);
	xf_error_clear(&err);
	assert_int_equal(xf_config_load_text(path, STATIC_HEAD "analyzer_parameters: {dt: -1}\n",
					     NULL, 0, &b, &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "dt: '-1' is not allowed"));
	assert_non_null(strstr(err.msg, "kept.yaml:2"));
	assert_null(b.source_text);
	size_t len = 0;
	xf_error_clear(&err);
	char *bytes = xf_config_read_text(path, &len, &err);
	assert_non_null(bytes);
	assert_int_equal(len, strlen(STATIC_HEAD "analyzer_parameters: {dt: 9}\n"));
	free(bytes);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(STATIC_HEAD "#\0\n", 1, sizeof(STATIC_HEAD) + 2, f),
			 sizeof(STATIC_HEAD) + 2);
	assert_int_equal(fclose(f), 0);
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(path, &a, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "config file holds a NUL byte (not text)"));
	assert_non_null(strstr(err.msg, "kept.yaml:2"));
}

static void test_number_forms(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	int rc = load_text(STATIC_HEAD
			   "analyzer_parameters: {dt: 1e-3, start_frame: 1.0e1, end_frame: 1e3}\n"
			   "optimization: {nlsq: {max_iterations: 2e2, xtol: '1.0e-9', "
			   "sigma: ~}}\n"
			   "phi_filtering: {enabled: Yes, fallback_to_all_angles: off}\n",
			   &cfg, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_true(cfg.dt_s == 1e-3);
	assert_int_equal(cfg.start_frame, 10);
	assert_int_equal(cfg.end_frame, 1000);
	assert_int_equal(cfg.nlsq.max_iterations, 200);
	assert_true(cfg.nlsq.xtol == 1e-9);
	assert_int_equal(cfg.nlsq.has_sigma, 0);
	assert_int_equal(cfg.phi_filter_enabled, 1);
	assert_int_equal(cfg.fallback_to_all_angles, 0);
	xf_config_free(&cfg);
}

/* bytes of a key's value in xf_config */
static size_t key_size(xf_cfg_key_kind kind)
{
	switch (kind) {
	case XF_KEY_NUMBER: return sizeof(double);
	case XF_KEY_U64: return sizeof(uint64_t);
	case XF_KEY_INT_OR_AUTO:
	case XF_KEY_LONG: return sizeof(long);
	default: return sizeof(int);
	}
}

/* The YAML of one key by its dotted section, set to value, after a static head */
static void key_yaml(const xf_cfg_key *k, const char *value, char *buf, size_t size)
{
	char sect[256];
	size_t used = (size_t)snprintf(buf, size, "%s", STATIC_HEAD);
	int depth = 0;
	snprintf(sect, sizeof sect, "%s", k->section);
	for (char *part = strtok(sect, "."); part; part = strtok(NULL, "."), depth++)
		used += (size_t)snprintf(buf + used, size - used, "%*s%s:\n", 2 * depth, "", part);
	snprintf(buf + used, size - used, "%*s%s: %s\n", 2 * depth, "", k->name, value);
}

/* A value each rule allows, not the default: the table's rows are read where they say */
static void test_key_table_reads(void **state)
{
	(void)state;
	size_t n_keys;
	const xf_cfg_key *keys = xf_cfg_key_table(&n_keys);
	assert_true(n_keys >= 15);
	for (size_t k = 0; k < n_keys; k++) {
		const xf_cfg_key *row = &keys[k];
		char text[1024], value[64], path[320];
		if (row->kind == XF_KEY_OWN)
			continue;
		snprintf(path, sizeof path, "%s.%s", row->section, row->name);
		/* a word is no value of any kind: refused, the key named */
		key_yaml(row, "bogus_word", text, sizeof text);
		expect_error(text, path, "bogus_word");
		xf_config d, cfg;
		xf_config_defaults(&d);
		double number = row->check == XF_CHECK_AT_LEAST_ONE ? 2.5
				: row->check == XF_CHECK_POSITIVE   ? 3.5
								    : 0.5;
		switch (row->kind) {
		case XF_KEY_INT: snprintf(value, sizeof value, "%ld", row->hi); break;
		case XF_KEY_LONG: snprintf(value, sizeof value, "%ld", row->lo + 1); break;
		case XF_KEY_NUMBER: snprintf(value, sizeof value, "%g", number); break;
		case XF_KEY_BOOL:
			snprintf(value, sizeof value, "%s",
				 *(int *)((char *)&d + row->offset) ? "false" : "true");
			break;
		case XF_KEY_U64: snprintf(value, sizeof value, "7"); break;
		default: snprintf(value, sizeof value, "5");
		}
		key_yaml(row, value, text, sizeof text);
		xf_error err;
		if (load_text(text, &cfg, &err))
			fail_msg("%s: %s", path, err.msg);
		const char *got = (const char *)&cfg + row->offset;
		switch (row->kind) {
		case XF_KEY_INT: assert_int_equal(*(const int *)got, row->hi); break;
		case XF_KEY_LONG: assert_true(*(const long *)got == row->lo + 1); break;
		case XF_KEY_NUMBER: assert_true(*(const double *)got == number); break;
		case XF_KEY_BOOL:
			assert_int_equal(*(const int *)got, !*(int *)((char *)&d + row->offset));
			break;
		case XF_KEY_U64: assert_true(*(const uint64_t *)got == 7); break;
		default: assert_true(*(const long *)got == 5);
		}
		xf_config_free(&cfg);
	}
}

/* A file of the source tree into doc (size bytes, NUL-terminated); its length */
static size_t read_doc(const char *rel, char *doc, size_t size)
{
	FILE *f = fopen(source_path(rel), "r");
	assert_non_null(f);
	size_t len = fread(doc, 1, size - 1, f);
	fclose(f);
	doc[len] = '\0';
	return len;
}

/* docs/config.md lists every key of the table: `a.b.c` or `a.b.{c, d}` */
static void test_key_table_documented(void **state)
{
	(void)state;
	static char doc[1 << 20];
	read_doc("docs/config.md", doc, sizeof doc);
	size_t n_keys;
	const xf_cfg_key *keys = xf_cfg_key_table(&n_keys);
	for (size_t k = 0; k < n_keys; k++) {
		char whole[320], group[320];
		snprintf(whole, sizeof whole, "`%s.%s`", keys[k].section, keys[k].name);
		snprintf(group, sizeof group, "`%s.{", keys[k].section);
		int found = strstr(doc, whole) != NULL;
		for (const char *g = strstr(doc, group); g && !found; g = strstr(g + 1, group)) {
			const char *open = g + strlen(group), *close = strstr(open, "}`");
			const char *name = strstr(open, keys[k].name);
			found = close && name && name < close;
		}
		if (!found)
			fail_msg("docs/config.md does not list %s.%s", keys[k].section,
				 keys[k].name);
	}
}

/* docs/config-keys.md is what the key table produces (xpcsfit config --keys; make
 * config-keys writes it again) */
static void test_key_reference_produced(void **state)
{
	(void)state;
	char *made = NULL;
	size_t made_len = 0;
	FILE *m = open_memstream(&made, &made_len);
	assert_non_null(m);
	xf_config_write_key_reference(m);
	assert_int_equal(fclose(m), 0);
	static char doc[1 << 18];
	size_t len = read_doc("docs/config-keys.md", doc, sizeof doc);
	if (len != made_len || memcmp(doc, made, len))
		fail_msg("docs/config-keys.md is not what the key table produces: run "
			 "'make config-keys'");
	assert_non_null(
		strstr(made, "| `optimization.nlsq.max_iterations` | integer | from 1 to "));
	free(made);
}

static void check_template(xf_mode mode)
{
	char name[64];
	snprintf(name, sizeof name, "template_%s.yaml", xf_mode_name(mode));
	const char *path = write_tmp(name, "");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(xf_config_write_template(mode, f), 0);
	assert_int_equal(fclose(f), 0);

	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	int before = xf_log_warning_count();
	int rc = xf_config_load(path, &cfg, &err);
	if (rc)
		fail_msg("template of %s: %s", xf_mode_name(mode), err.msg);
	assert_int_equal(xf_log_warning_count(), before);
	assert_int_equal(cfg.mode, mode);
	int n = xf_mode_n_phys(mode);
	for (int k = 0; k < XF_N_PHYS; k++) {
		assert_int_equal(cfg.value_given[k], k < n);
		if (k >= n)
			continue;
		assert_true(cfg.values[k] == xf_param_template_value[k]);
		assert_true(cfg.bounds[k].lower == xf_param_default_lower[k]);
		assert_true(cfg.bounds[k].upper == xf_param_default_upper[k]);
		assert_true(cfg.bounds[k].prior_mu == xf_param_template_prior_mu[k]);
		assert_true(cfg.bounds[k].prior_sigma == xf_param_template_prior_sigma[k]);
	}
	assert_true(cfg.bounds[XF_P_CONTRAST].prior_mu == 0.5);
	assert_true(cfg.has_dt && cfg.dt_s == 0.001);
	assert_true(cfg.has_q && cfg.wavevector_q == 0.0054);
	assert_int_equal(cfg.n_phi_ranges, 2);
	assert_int_equal(cfg.nlsq.max_iterations, 1000);
	assert_int_equal(cfg.cmc.per_angle_mode, XF_SCALING_FOLLOW_NLSQ);
	assert_int_equal(cfg.virtual_devices, 0);
	assert_int_equal(cfg.cmc.combination, XF_COMBINE_ROBUST_CONSENSUS);
	/* every key of the table reads back as its default (the template writes them) */
	xf_config d;
	xf_config_defaults(&d);
	/* own rows' template values that are their defaults (config_table.c) */
	assert_true(cfg.has_gap && cfg.gap_A == d.gap_A);
	assert_true(cfg.end_frame == d.end_frame && cfg.shear_model == d.shear_model);
	size_t n_keys;
	const xf_cfg_key *keys = xf_cfg_key_table(&n_keys);
	for (size_t k = 0; k < n_keys; k++)
		if (keys[k].kind != XF_KEY_OWN &&
		    memcmp((char *)&cfg + keys[k].offset, (char *)&d + keys[k].offset,
			   key_size(keys[k].kind)))
			fail_msg("template of %s: %s.%s is not its default", xf_mode_name(mode),
				 keys[k].section, keys[k].name);
	xf_config_free(&cfg);
}

static void test_template_round_trip(void **state)
{
	(void)state;
	check_template(XF_MODE_STATIC);
	check_template(XF_MODE_LAMINAR);
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
}

static void test_relative_data_path(void **state)
{
	(void)state;
	char cfg_dir[PATH_MAX + 16], run_dir[PATH_MAX + 16], cfg_path[PATH_MAX + 32];
	char in_cfg_dir[PATH_MAX + 32];
	snprintf(cfg_dir, sizeof cfg_dir, "%s/cfgdir", tmp_dir);
	snprintf(run_dir, sizeof run_dir, "%s/rundir", tmp_dir);
	snprintf(cfg_path, sizeof cfg_path, "%s/c.yaml", cfg_dir);
	snprintf(in_cfg_dir, sizeof in_cfg_dir, "%s/data.h5", cfg_dir);
	make_dir(cfg_dir);
	make_dir(run_dir);
	unlink(in_cfg_dir);
	FILE *f = fopen(cfg_path, "w");
	assert_non_null(f);
	fputs(STATIC_HEAD "experimental_data: {file_path: data.h5}\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chdir(run_dir), 0);
	unlink("data.h5");

	xf_config cfg;
	xf_error err;
	/* neither exists: the cwd-relative path, and a note saying so */
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(cfg_path, &cfg, &err), 0);
	assert_string_equal(cfg.data_path, "data.h5");
	assert_non_null(strstr(cfg.data_path_note, "exists neither"));
	xf_config_free(&cfg);

	/* only beside the config: its folder */
	touch(in_cfg_dir);
	assert_int_equal(xf_config_load(cfg_path, &cfg, &err), 0);
	assert_string_equal(cfg.data_path, in_cfg_dir);
	assert_non_null(strstr(cfg.data_path_note, "config file's folder"));
	xf_config_free(&cfg);

	/* in the current directory too: homodyne's rule wins */
	touch("data.h5");
	assert_int_equal(xf_config_load(cfg_path, &cfg, &err), 0);
	assert_string_equal(cfg.data_path, "data.h5");
	assert_non_null(strstr(cfg.data_path_note, "current directory"));
	xf_config_free(&cfg);

	/* data_folder_path + data_file_name win over file_path */
	f = fopen(cfg_path, "w");
	assert_non_null(f);
	fputs(STATIC_HEAD "experimental_data:\n  file_path: data.h5\n"
			  "  data_folder_path: sub\n  data_file_name: x.h5\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(xf_config_load(cfg_path, &cfg, &err), 0);
	assert_string_equal(cfg.data_path, "sub/x.h5");
	xf_config_free(&cfg);
	assert_int_equal(chdir(start_dir), 0);
}

/* Every prefix of a full config either loads or fails with code 2 and a message: a
 * cheap stand-in for fuzzing the reader (run it under ASan: XPCSFIT_SANITIZE=ON). */
static void test_truncated_configs(void **state)
{
	(void)state;
	FILE *f = fopen(source_path("tests/configs/laminar_full.yaml"), "r");
	assert_non_null(f);
	static char text[16384];
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	assert_true(len > 1000);
	int n_ok = 0, n_failed = 0;
	for (size_t cut = 0; cut < len; cut += 5) {
		char saved = text[cut];
		text[cut] = '\0';
		xf_config cfg;
		xf_error err;
		int rc = load_text(text, &cfg, &err);
		text[cut] = saved;
		if (rc == 0) {
			n_ok++;
			xf_config_free(&cfg);
			continue;
		}
		assert_int_equal(rc, XF_ERR_CONFIG);
		assert_true(strlen(err.msg) > 10);
		assert_null(strchr(err.msg, '\n'));
		n_failed++;
	}
	/* both outcomes occur: cuts inside a line break the YAML, cuts between keys don't */
	assert_true(n_ok > 10 && n_failed > 10);
}

static void test_cmd_config(void **state)
{
	(void)state;
	char out_path[PATH_MAX + 32];
	snprintf(out_path, sizeof out_path, "%s/cli_template.yaml", tmp_dir);
	unlink(out_path);
	char *args1[] = { "config", "--mode", "laminar_flow", "--out", out_path };
	assert_int_equal(xf_cmd_config(5, args1), 0);
	xf_config cfg;
	xf_error err;
	xf_error_clear(&err);
	assert_int_equal(xf_config_load(out_path, &cfg, &err), 0);
	assert_int_equal(cfg.mode, XF_MODE_LAMINAR);
	xf_config_free(&cfg);
	/* no temporary file left beside it */
	char tmp_name[PATH_MAX + 64];
	snprintf(tmp_name, sizeof tmp_name, "%s.tmp.%ld", out_path, (long)getpid());
	assert_int_not_equal(access(tmp_name, F_OK), 0);

	char *args2[] = { "config", "--mode=static", "--out=" };
	assert_int_equal(xf_cmd_config(3, args2), XF_ERR_CONFIG);
	char *args3[] = { "config" };
	assert_int_equal(xf_cmd_config(1, args3), XF_ERR_CONFIG);
	assert_non_null(strstr(cli_message, "missing --mode"));
	char *args4[] = { "config", "--mode", "flow" };
	assert_int_equal(xf_cmd_config(3, args4), XF_ERR_CONFIG);
	assert_non_null(strstr(cli_message, "'flow' is not allowed"));
	char *args5[] = { "config", "--colour" };
	assert_int_equal(xf_cmd_config(2, args5), XF_ERR_CONFIG);
	assert_non_null(strstr(cli_message, "unknown option '--colour'"));
	char *args6[] = { "config", "--mode" };
	assert_int_equal(xf_cmd_config(2, args6), XF_ERR_CONFIG);
	assert_non_null(strstr(cli_message, "needs a value"));
	char *args7[] = { "config", "--mode", "static", "--out", "/nonexistent/dir/c.yaml" };
	assert_int_equal(xf_cmd_config(5, args7), XF_ERR_IO);
	assert_non_null(strstr(cli_message, "cannot write"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_laminar),
		cmocka_unit_test(test_example_configs_load_clean),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_values_null),
		cmocka_unit_test(test_fixed_parameters),
		cmocka_unit_test(test_unknown_keys_warn),
		cmocka_unit_test(test_settings_canonical),
		cmocka_unit_test(test_q_ring_forms),
		cmocka_unit_test(test_other_mode_parameter_in_static),
		cmocka_unit_test(test_homodyne_current_static),
		cmocka_unit_test(test_homodyne_v21_style),
		cmocka_unit_test(test_mode_from_parameter_space_model),
		cmocka_unit_test(test_active_parameters),
		cmocka_unit_test(test_legacy_angle_filtering),
		cmocka_unit_test(test_temporal_block),
		cmocka_unit_test(test_typos_beside_homodyne_keys),
		cmocka_unit_test(test_bad_mode),
		cmocka_unit_test(test_bad_dt),
		cmocka_unit_test(test_bad_bounds),
		cmocka_unit_test(test_value_outside_bounds),
		cmocka_unit_test(test_bad_parameter_names),
		cmocka_unit_test(test_bad_yaml_and_file),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_bad_per_angle_mode),
		cmocka_unit_test(test_virtual_devices),
		cmocka_unit_test(test_count_bounds),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_yaml_merge_keys),
		cmocka_unit_test(test_yaml_documents),
		cmocka_unit_test(test_yaml_anchors),
		cmocka_unit_test(test_config_not_regular),
		cmocka_unit_test(test_number_forms),
		cmocka_unit_test(test_template_round_trip),
		cmocka_unit_test(test_key_table_reads),
		cmocka_unit_test(test_key_table_documented),
		cmocka_unit_test(test_key_reference_produced),
		cmocka_unit_test(test_relative_data_path),
		cmocka_unit_test(test_truncated_configs),
		cmocka_unit_test(test_cmd_config),
		cmocka_unit_test(test_request_defaults),
		cmocka_unit_test(test_config_from_text),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
