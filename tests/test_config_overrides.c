/* test_config_overrides.c — values given outside the YAML file (batch --overrides, the
 * later --set): xf_yaml_set on the tree (sections created, values replaced, paths that
 * cannot be set refused) and xf_config_load_with (the normal checks apply, messages name
 * the override's origin, keys no reader uses are errors, the aliases dt and q). */
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

#include <cmocka.h>

#include "config/yaml_tree.h"
#include "xpcsfit/config.h"
#include "xpcsfit/error.h"

static const char base_config[] = "analysis_mode: static\n"
				  "analyzer_parameters:\n"
				  "  dt: 0.1\n"
				  "  scattering: {wavevector_q: 0.0054}\n"
				  "output:\n"
				  "  directory: x\n"
				  "phi_filtering:\n";

static char cfg_path[PATH_MAX + 16];

static int group_setup(void **state)
{
	(void)state;
	const char *t = getenv("XF_TMP");
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", t && t[0] ? t : "/tmp/xf_test_config_overrides");
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	snprintf(cfg_path, sizeof cfg_path, "%s/c.yaml", dir);
	FILE *f = fopen(cfg_path, "w");
	if (!f)
		return -1;
	fputs(base_config, f);
	fclose(f);
	xf_log_set_stderr(0, 0);
	return 0;
}

static int load(const xf_config_override *ov, size_t n, xf_config *cfg, xf_error *err)
{
	xf_error_clear(err);
	return xf_config_load_with(cfg_path, ov, n, cfg, err);
}

static void test_set_tree(void **state)
{
	(void)state;
	xf_ynode *root = NULL;
	xf_error err = { 0 };
	assert_int_equal(xf_yaml_load_string(base_config, "c.yaml", &root, &err), 0);
	/* replace a value, create a nested section, fill an empty one */
	assert_int_equal(xf_yaml_set(&root, "analyzer_parameters.dt", "0.5", "o:2", &err), 0);
	assert_int_equal(xf_yaml_set(&root, "optimization.nlsq.max_iterations", "7", "o:3", &err),
			 0);
	assert_int_equal(xf_yaml_set(&root, "phi_filtering.enabled", "true", "o:4", &err), 0);
	const xf_ynode *an = xf_ynode_get(root, "analyzer_parameters");
	assert_string_equal(xf_ynode_get(an, "dt")->text, "0.5");
	assert_string_equal(xf_ynode_get(an, "dt")->origin, "o:2");
	const xf_ynode *nl = xf_ynode_get(xf_ynode_get(root, "optimization"), "nlsq");
	assert_string_equal(xf_ynode_get(nl, "max_iterations")->text, "7");
	const xf_ynode *phi = xf_ynode_get(root, "phi_filtering");
	assert_int_equal(phi->kind, XF_YNODE_MAPPING);
	const char *origin = NULL;
	assert_true(xf_ynode_overridden(root, &origin));
	assert_false(xf_ynode_overridden(xf_ynode_get(root, "output"), &origin));
	/* what cannot be set */
	static const char *const bad[] = { "", ".dt", "a..b", "a.", "a b", "a:b" };
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		xf_error_clear(&err);
		assert_int_equal(xf_yaml_set(&root, bad[k], "1", "o:9", &err), XF_ERR_CONFIG);
		assert_non_null(strstr(err.msg, "o:9"));
	}
	xf_error_clear(&err);
	assert_int_equal(xf_yaml_set(&root, "analyzer_parameters.dt.x", "1", "o:5", &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "not a section"));
	xf_error_clear(&err);
	assert_int_equal(xf_yaml_set(&root, "analyzer_parameters", "1", "o:6", &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "set a key inside it"));
	xf_yaml_free(root);
	/* an empty document becomes a mapping */
	root = NULL;
	assert_int_equal(xf_yaml_set(&root, "a.b", "1", "o:1", &err), 0);
	assert_string_equal(xf_ynode_get(xf_ynode_get(root, "a"), "b")->text, "1");
	xf_yaml_free(root);
}

/* --initial under the canonical name replaces the entry of its homodyne alias */
static void test_start_alias(void **state)
{
	(void)state;
	xf_ynode *root = NULL;
	xf_error err = { 0 };
	assert_int_equal(xf_yaml_load_string("initial_parameters:\n"
					     "  parameter_names: [D0, gamma_dot_0]\n"
					     "  values: [1, 2]\n",
					     "c.yaml", &root, &err),
			 0);
	assert_int_equal(
		xf_yaml_set_named(&root, "initial_parameters", "gamma_dot_t0", "5", "o:1", &err),
		0);
	const xf_ynode *ip = xf_ynode_get(root, "initial_parameters");
	assert_int_equal((int)xf_ynode_get(ip, "parameter_names")->n, 2);
	assert_string_equal(xf_ynode_get(ip, "values")->items[1]->text, "5");
	assert_string_equal(xf_ynode_get(ip, "values")->items[0]->text, "1");
	xf_yaml_free(root);
}

static void test_load_with(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	const xf_config_override ov[] = {
		{ "dt", "0.25", "o.csv:2, column dt", XF_OVERRIDE_SET, NULL },
		{ "q", "0.008", "o.csv:2, column q", XF_OVERRIDE_SET, NULL },
		{ "optimization.nlsq.max_iterations", "12", "o.csv:2, column m", XF_OVERRIDE_SET,
		  NULL },
	};
	assert_int_equal(load(ov, 3, &cfg, &err), 0);
	assert_true(cfg.has_dt);
	assert_true(cfg.dt_s == 0.25);
	assert_true(cfg.wavevector_q == 0.008);
	assert_int_equal(cfg.nlsq.max_iterations, 12);
	xf_config_free(&cfg);
	/* no overrides: the file as it is */
	assert_int_equal(load(NULL, 0, &cfg, &err), 0);
	assert_true(cfg.dt_s == 0.1);
	xf_config_free(&cfg);
	assert_string_equal(xf_config_key_alias("dt"), "analyzer_parameters.dt");
	assert_string_equal(xf_config_key_alias("q"),
			    "analyzer_parameters.scattering.wavevector_q");
	assert_string_equal(xf_config_key_alias("a.b"), "a.b");
}

/* An override that must fail with code 2, its message holding frag and where. */
static void expect_error(const char *key, const char *value, const char *frag)
{
	xf_config cfg;
	xf_error err;
	const xf_config_override ov = { key, value, "o.csv:4, column X", XF_OVERRIDE_SET, NULL };
	int rc = load(&ov, 1, &cfg, &err);
	if (rc != XF_ERR_CONFIG)
		fail_msg("%s=%s: expected 2, got %d (%s)", key, value, rc, err.msg);
	if (!strstr(err.msg, frag) || !strstr(err.msg, "o.csv:4, column X"))
		fail_msg("%s=%s: message '%s' lacks '%s' or the origin", key, value, err.msg, frag);
	assert_null(cfg.source_path);
}

static void test_load_errors(void **state)
{
	(void)state;
	expect_error("dt", "fast", "is not allowed");
	expect_error("dt", "-1", "a number of seconds");
	expect_error("q", "0", "a number > 0");
	expect_error("analyzer_parameters.frame_time", "1", "unknown config key");
	expect_error("nonsense.key", "1", "unknown config key 'nonsense'");
	expect_error("output.formats", "y", "not used by xpcsfit");
	expect_error("analysis_mode", "dynamic", "is not allowed");
	expect_error("analyzer_parameters.scattering", "1", "set a key inside it");
}

/* --initial (a start by name), --fix, --phi ranges and the records kept in the config */
static void test_kinds(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err;
	const xf_config_override ov[] = {
		{ "D0", "1500", "--initial D0=1500", XF_OVERRIDE_START, "--initial" },
		{ "alpha", "-0.5", "--initial alpha=-0.5", XF_OVERRIDE_START, "--initial" },
		{ "D0", "2500", "--initial D0=2500", XF_OVERRIDE_START, "--initial" },
		{ "initial_parameters.fixed_parameters.D_offset", "3", "--fix D_offset=3",
		  XF_OVERRIDE_SET, "--fix" },
		{ "phi", "-10:10", "--phi -10:10", XF_OVERRIDE_RANGE_FIRST, "--phi" },
		{ "phi", "80:100", "--phi 80:100", XF_OVERRIDE_RANGE, "--phi" },
		{ "phi_filtering.enabled", "true", "--phi -10:10", XF_OVERRIDE_SET, "--phi" },
	};
	assert_int_equal(load(ov, 7, &cfg, &err), 0);
	assert_true(cfg.value_given[XF_P_D0] && cfg.values[XF_P_D0] == 2500.0);
	assert_true(cfg.value_given[XF_P_ALPHA] && cfg.values[XF_P_ALPHA] == -0.5);
	assert_true(cfg.is_fixed[XF_P_D_OFFSET] && cfg.values[XF_P_D_OFFSET] == 3.0);
	assert_true(cfg.phi_filter_enabled);
	assert_int_equal(cfg.n_phi_ranges, 2);
	assert_true(cfg.phi_ranges[1].min_deg == 80.0 && cfg.phi_ranges[1].max_deg == 100.0);
	assert_int_equal((int)cfg.n_overrides, 7);
	assert_string_equal(cfg.overrides[0].option, "--initial");
	assert_string_equal(cfg.overrides[0].key, "initial_parameters.values[D0]");
	assert_string_equal(cfg.overrides[4].key, "phi_filtering.target_ranges");
	assert_string_equal(cfg.overrides[4].value, "-10:10");
	xf_config_free(&cfg);
	/* a bad start names the option */
	const xf_config_override bad = { "D0", "abc", "--initial D0=abc", XF_OVERRIDE_START,
					 "--initial" };
	assert_int_equal(load(&bad, 1, &cfg, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "--initial D0=abc"));
	const xf_config_override range = { "phi", "a:b", "--phi a:b", XF_OVERRIDE_RANGE_FIRST,
					   "--phi" };
	assert_int_equal(load(&range, 1, &cfg, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "--phi a:b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_tree),  cmocka_unit_test(test_start_alias),
		cmocka_unit_test(test_load_with), cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_kinds),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
