/* overrides.c — the command-line overrides (overrides.h): the form of each argument is
 * checked here, the value itself by the config reader (xf_config_load_with), which names
 * the option as the value's origin. */
#include "cli/overrides.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "util/verbosity.h"
#include "xpcsfit/results.h"
#include "util/key_names.h"

/* Longest argument an override option takes. */
#define XF_OVERRIDE_ARG_MAX 1024

static int no_memory(void)
{
	return xf_cli_error(XF_ERR_NOMEM, "out of memory reading the command-line overrides");
}

/* A copy of text owned by o, or NULL. */
static const char *keep(xf_cli_overrides *o, const char *text)
{
	if (o->n_texts == o->cap_texts) {
		size_t cap = o->cap_texts ? 2 * o->cap_texts : 16;
		char **t = realloc(o->texts, cap * sizeof *t);
		if (!t)
			return NULL;
		o->texts = t;
		o->cap_texts = cap;
	}
	char *copy = strdup(text);
	if (copy)
		o->texts[o->n_texts++] = copy;
	return copy;
}

/* Add (at the end, or at the front when first) an override; 0 or the exit code. */
static int add(xf_cli_overrides *o, xf_override_kind kind, const char *option, const char *key,
	       const char *value, const char *origin, int first)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		xf_config_override *items = realloc(o->items, cap * sizeof *items);
		if (!items)
			return no_memory();
		o->items = items;
		o->cap = cap;
	}
	xf_config_override it = { keep(o, key), keep(o, value), keep(o, origin), kind, option };
	if (!it.key || !it.value || !it.origin)
		return no_memory();
	if (first) {
		memmove(o->items + 1, o->items, o->n * sizeof *o->items);
		o->items[0] = it;
	} else {
		o->items[o->n] = it;
	}
	o->n++;
	return 0;
}

static int bad(const char *option, const char *arg, const char *must)
{
	return xf_cli_error(XF_ERR_CONFIG, "%s %.200s: not allowed (must be %s)", option, arg,
			    must);
}

/* "NAME=VALUE" split into name and value (both non-empty); 0 or the exit code. */
static int split_pair(const char *option, const char *arg, const char *must, char *name,
		      size_t size, const char **value)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= size)
		return bad(option, arg, must);
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	for (char *p = name; *p; p++)
		if (isspace((unsigned char)*p))
			return bad(option, arg, must);
	*value = eq + 1;
	return 0;
}

/* Whether name is a physical parameter of a registered model (the built-in ones and any
 * other, adr/0127): the config, read later, checks it against the model it names. */
static int model_parameter(const char *name)
{
	for (int m = 0; m < xf_model_count(); m++) {
		const xf_model_record *model = xf_model_at(m);
		int k = xf_model_param_index(model, name);
		if (k >= 0 && k < model->n_phys)
			return 1;
	}
	return 0;
}

/* "NAME=VALUE with NAME one of D0, alpha, ...": every registered model's parameters,
 * each once, in mode order */
static void model_parameter_names(char *buf, size_t size)
{
	const char *names[XF_MODELS_MAX * XF_N_PHYS];
	int n = 0;
	for (int m = 0; m < xf_model_count(); m++)
		for (int k = 0; k < xf_model_at(m)->n_phys; k++) {
			const char *name = xf_model_param_name(xf_model_at(m), k);
			int seen = 0;
			for (int j = 0; j < n && !seen; j++)
				seen = !strcmp(names[j], name);
			if (!seen)
				names[n++] = name;
		}
	size_t at = (size_t)snprintf(buf, size, "NAME=VALUE with NAME one of ");
	for (int j = 0; j < n && at < size; j++)
		at += (size_t)snprintf(buf + at, size - at, "%s%s", j ? ", " : "", names[j]);
}

int xf_cli_override_option(xf_cli_overrides *o, int opt, const char *arg)
{
	char origin[XF_OVERRIDE_ARG_MAX + 64], name[256];
	const char *value = NULL;
	if (arg && strlen(arg) > XF_OVERRIDE_ARG_MAX)
		return xf_cli_error(XF_ERR_CONFIG,
				    "an override of %zu characters is too long "
				    "(at most %d)",
				    strlen(arg), XF_OVERRIDE_ARG_MAX);
	switch (opt) {
	case XF_OPT_MODE:
		snprintf(origin, sizeof origin, "--mode %s", arg);
		return add(o, XF_OVERRIDE_SET, "--mode", XF_CONFIG_MODE_KEY, arg, origin, 0);
	case XF_OPT_STATIC_MODE:
		return add(o, XF_OVERRIDE_SET, "--static-mode", XF_CONFIG_MODE_KEY, "static",
			   "--static-mode", 0);
	case XF_OPT_LAMINAR_FLOW:
		return add(o, XF_OVERRIDE_SET, "--laminar-flow", XF_CONFIG_MODE_KEY, "laminar_flow",
			   "--laminar-flow", 0);
	case XF_OPT_INITIAL:
	case XF_OPT_FIX: {
		const char *option = opt == XF_OPT_FIX ? "--fix" : "--initial";
		if (split_pair(option, arg, "NAME=VALUE, NAME a parameter such as D0", name,
			       sizeof name, &value))
			return XF_ERR_CONFIG;
		if (!model_parameter(name)) {
			char want[400];
			model_parameter_names(want, sizeof want);
			return bad(option, arg, want);
		}
		snprintf(origin, sizeof origin, "%s %s", option, arg);
		if (opt == XF_OPT_INITIAL)
			return add(o, XF_OVERRIDE_START, option, name, value, origin, 0);
		char key[300];
		snprintf(key, sizeof key, XF_KEY_FIXED ".%s", name);
		return add(o, XF_OVERRIDE_SET, option, key, value, origin, 0);
	}
	case XF_OPT_MAX_ITERATIONS:
		snprintf(origin, sizeof origin, "--max-iterations %s", arg);
		return add(o, XF_OVERRIDE_SET, "--max-iterations", XF_KEY_NLSQ_MAX_ITERATIONS, arg,
			   origin, 0);
	case XF_OPT_PHI: {
		char *end;
		const char *colon = strchr(arg, ':');
		double lo = strtod(arg, &end);
		if (!colon || end != colon || end == arg)
			return bad("--phi", arg, "MIN:MAX in degrees, such as -10:10");
		double hi = strtod(colon + 1, &end);
		if (end == colon + 1 || *end || !(lo <= hi))
			return bad("--phi", arg, "MIN:MAX in degrees with MIN <= MAX");
		snprintf(origin, sizeof origin, "--phi %s", arg);
		int rc = add(o, o->n_phi ? XF_OVERRIDE_RANGE : XF_OVERRIDE_RANGE_FIRST, "--phi",
			     XF_KEY_TARGET_RANGES, arg, origin, 0);
		if (!rc && o->n_phi++ == 0)
			rc = add(o, XF_OVERRIDE_SET, "--phi", XF_KEY_PHI_ENABLED, "true", origin,
				 0);
		return rc;
	}
	case XF_OPT_NLSQ_RESULT:
		if (!arg[0])
			return bad("--nlsq-result", "''", "a result folder");
		o->nlsq_result = arg;
		return 0;
	case XF_OPT_SET:
		if (split_pair("--set", arg, "KEY=VALUE, KEY a dotted config key", name,
			       sizeof name, &value))
			return XF_ERR_CONFIG;
		snprintf(origin, sizeof origin, "--set %s", arg);
		return add(o, XF_OVERRIDE_SET, "--set", name, value, origin, 0);
	default: return bad("an override", arg ? arg : "", "a known option");
	}
}

/* --nlsq-result DIR: the physical parameters of DIR's (or DIR/nlsq's) fit as starts,
 * put before the other overrides so that an explicit --initial wins. */
static int read_nlsq_result(xf_cli_overrides *o)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], origin[PATH_MAX + 32];
	snprintf(dir, sizeof dir, "%s", o->nlsq_result);
	snprintf(path, sizeof path, "%s/parameters.json", dir);
	/* DIR/parameters.json, else DIR/nlsq/: probed with stat, not open (a FIFO there
	 * would block; params_read.c refuses it) */
	struct stat st;
	if (stat(path, &st) != 0 &&
	    (size_t)snprintf(dir, sizeof dir, "%s/nlsq", o->nlsq_result) >= sizeof dir)
		return bad("--nlsq-result", o->nlsq_result, "a shorter path");
	xf_estimate res;
	xf_nlsq_origin from;
	xf_error err = { 0 };
	if (xf_results_read_nlsq(dir, &res, &from, &err))
		return xf_cli_error(XF_ERR_CONFIG, "--nlsq-result %.200s: %s", o->nlsq_result,
				    err.msg);
	snprintf(origin, sizeof origin, "--nlsq-result %s", o->nlsq_result);
	/* the mean contrast and offset over its angles start every angle here: the angles
	 * kept may differ from the earlier fit's (--phi) */
	double mean[2] = { 0.0, 0.0 };
	for (int a = 0; a < res.n_phi; a++) {
		mean[0] += res.contrast[a] / res.n_phi;
		mean[1] += res.offset[a] / res.n_phi;
	}
	static const char *const keys[2] = { XF_KEY_SCALING_STARTS ".contrast",
					     XF_KEY_SCALING_STARTS ".offset" };
	int rc = 0;
	for (int q = 1; rc == 0 && res.n_phi > 0 && q >= 0; q--) {
		char value[64];
		snprintf(value, sizeof value, "%.17g", mean[q]);
		rc = add(o, XF_OVERRIDE_SET, "--nlsq-result", keys[q], value, origin, 1);
	}
	for (int k = res.n_phys - 1; rc == 0 && k >= 0; k--) {
		char value[64];
		snprintf(value, sizeof value, "%.17g", res.values[k]);
		rc = add(o, XF_OVERRIDE_START, "--nlsq-result", res.names[k], value, origin, 1);
	}
	xf_estimate_free(&res);
	return rc;
}

int xf_cli_override_or_unknown(xf_cli_overrides *o, int opt, const char *arg, const char *command,
			       const char *given)
{
	if (opt >= XF_OPT_MODE && opt <= XF_OPT_SET)
		return xf_cli_override_option(o, opt, arg);
	return xf_cli_error(XF_ERR_CONFIG,
			    "%s: unknown or incomplete option '%s', see 'xpcsfit %s --help'",
			    command, given, command);
}

int xf_cli_overrides_finish(xf_cli_overrides *o)
{
	int rc = o->nlsq_result ? read_nlsq_result(o) : 0;
	for (size_t k = 0; rc == 0 && k < o->n; k++) {
		char key[300];
		xf_say(XF_VERB_NORMAL, "override %s: %s = %s", o->items[k].option,
		       xf_config_override_key(&o->items[k], key, sizeof key), o->items[k].value);
	}
	return rc;
}

void xf_cli_overrides_free(xf_cli_overrides *o)
{
	for (size_t k = 0; k < o->n_texts; k++)
		free(o->texts[k]);
	free(o->texts);
	free(o->items);
	memset(o, 0, sizeof *o);
}
