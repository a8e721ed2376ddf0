/* config_table.c — the table of config keys (adr/0119): one row per key with its type,
 * its range or rule, where its value lives in xf_config and the template's comment. The
 * reader reads the rows of a section in table order (the first bad value is the one
 * reported, as before), the section's known keys are the table's, and the template
 * writes the rows with the values of xf_config_defaults, so the template cannot disagree
 * with the defaults. First the posterior's section, optimization.cmc; tests/test_config.c
 * checks every row against docs/config.md and the template's round trip. */
#include "config/config_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* NUTS doubles its trajectory per level: beyond 2^30 leapfrog steps is never meant */
#define XF_MAX_TREE_DEPTH 30

#define AT(field) offsetof(xf_config, field)

static const xf_cfg_key keys[] = {
	{ "optimization.cmc", "seed", XF_KEY_U64, AT(cmc.seed), 0, 0, 0, "", NULL, 0 },
	{ "optimization.cmc", "per_angle_mode", XF_KEY_OWN, 0, 0, 0, 0,
	  "null = the mode NLSQ used; auto | constant | individual", "null", 0 },
	{ "optimization.cmc", "route", XF_KEY_OWN, 0, 0, 0, 0,
	  "auto: importance sampling from NLSQ, checked against the exact posterior, NUTS if "
	  "it fails | nuts",
	  "auto", 0 },
	{ "optimization.cmc.sharding", "num_shards", XF_KEY_INT_OR_AUTO, AT(cmc.num_shards), 1,
	  INT_MAX, 0, "1: the exact posterior; an integer K: consensus of K shards", NULL, 0 },
	{ "optimization.cmc.sharding", "max_points_per_shard", XF_KEY_INT_OR_AUTO,
	  AT(cmc.max_points_per_shard), 1, INT_MAX, 0, "", NULL, 0 },
	{ "optimization.cmc.per_shard_mcmc", "num_warmup", XF_KEY_INT, AT(cmc.num_warmup), 1,
	  XF_NUM_DRAWS_MAX, 0, "", NULL, 0 },
	{ "optimization.cmc.per_shard_mcmc", "num_samples", XF_KEY_INT, AT(cmc.num_samples), 1,
	  XF_NUM_DRAWS_MAX, 0, "", NULL, 0 },
	{ "optimization.cmc.per_shard_mcmc", "num_chains", XF_KEY_INT, AT(cmc.num_chains), 1,
	  XF_NUM_CHAINS_MAX, 0, "", NULL, 0 },
	{ "optimization.cmc.per_shard_mcmc", "target_accept_prob", XF_KEY_NUMBER,
	  AT(cmc.target_accept_prob), 0, 0, XF_CHECK_OPEN_UNIT,
	  "absent = 0.99 static, 0.98 laminar_flow (no divergences)", NULL, 1 },
	{ "optimization.cmc.per_shard_mcmc", "max_tree_depth", XF_KEY_INT, AT(cmc.max_tree_depth),
	  1, XF_MAX_TREE_DEPTH, 0, "", NULL, 0 },
	{ "optimization.cmc.per_shard_mcmc", "dense_mass", XF_KEY_BOOL, AT(cmc.dense_mass), 0, 0, 0,
	  "", NULL, 0 },
	{ "optimization.cmc.validation", "max_divergence_rate", XF_KEY_NUMBER,
	  AT(cmc.max_divergence_rate), 0, 0, XF_CHECK_FRACTION, "", NULL, 0 },
	{ "optimization.cmc.validation", "max_per_shard_rhat", XF_KEY_NUMBER,
	  AT(cmc.max_per_shard_rhat), 0, 0, XF_CHECK_AT_LEAST_ONE, "", NULL, 0 },
	{ "optimization.cmc.validation", "use_nlsq_informed_priors", XF_KEY_BOOL,
	  AT(cmc.use_nlsq_informed_priors), 0, 0, 0, "", NULL, 0 },
	{ "optimization.cmc.validation", "nlsq_prior_width_factor", XF_KEY_NUMBER,
	  AT(cmc.nlsq_prior_width_factor), 0, 0, XF_CHECK_POSITIVE, "", NULL, 0 },
	{ "optimization.cmc.combination", "method", XF_KEY_OWN, 0, 0, 0, 0,
	  "consensus_mc | gaussian_product | homodyne_marginal", "robust_consensus_mc", 0 },
	{ "optimization.cmc.combination", "min_success_rate", XF_KEY_NUMBER,
	  AT(cmc.min_success_rate), 0, 0, XF_CHECK_HALF_OPEN_UNIT, "", NULL, 0 },
	{ "optimization.cmc.combination", "check_draws", XF_KEY_INT, AT(cmc.check_draws), 0,
	  1000000, 0, "self-check against the full-data posterior (0: off)", NULL, 0 },
};

const xf_cfg_key *xf_cfg_key_table(size_t *n)
{
	*n = sizeof keys / sizeof keys[0];
	return keys;
}

static void *slot(xf_config *cfg, const xf_cfg_key *k)
{
	return (char *)cfg + k->offset;
}

static const void *cslot(const xf_config *cfg, const xf_cfg_key *k)
{
	return (const char *)cfg + k->offset;
}

static int read_one(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *k,
		    xf_config *cfg)
{
	switch (k->kind) {
	case XF_KEY_INT: {
		int *out = slot(cfg, k);
		long v = *out;
		int rc = xf_cfg_int(r, map, k->section, k->name, k->lo, k->hi, &v, NULL);
		if (!rc)
			*out = (int)v;
		return rc;
	}
	case XF_KEY_NUMBER:
		return xf_cfg_number(r, map, k->section, k->name, k->check, slot(cfg, k), NULL);
	case XF_KEY_BOOL: return xf_cfg_bool(r, map, k->section, k->name, slot(cfg, k));
	case XF_KEY_U64: return xf_cfg_u64(r, map, k->section, k->name, slot(cfg, k));
	case XF_KEY_INT_OR_AUTO:
		return xf_cfg_int_or_auto(r, map, k->section, k->name, k->hi, slot(cfg, k));
	default: return 0; /* XF_KEY_OWN: its section's code reads it */
	}
}

int xf_cfg_read_keys(const xf_cfg_reader *r, const xf_ynode *map, const char *section,
		     xf_config *cfg)
{
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (!strcmp(keys[k].section, section)) {
			int rc = read_one(r, map, &keys[k], cfg);
			if (rc)
				return rc;
		}
	return 0;
}

/* The child of section that path is, or lies below ("optimization.cmc.sharding" →
 * "sharding" for "optimization.cmc"), into buf; 0 when path is not below section. */
static int child_of(const char *path, const char *section, char *buf, size_t size)
{
	size_t n = strlen(section);
	if (strncmp(path, section, n) || path[n] != '.')
		return 0;
	const char *start = path + n + 1, *end = strchr(start, '.');
	size_t len = end ? (size_t)(end - start) : strlen(start);
	if (len + 1 > size)
		return 0;
	memcpy(buf, start, len);
	buf[len] = '\0';
	return 1;
}

size_t xf_cfg_known_keys(const char *section, const char **known, size_t cap)
{
	static char children[16][XF_CFG_PATH_MAX];
	size_t n = 0, n_children = 0;
	for (size_t k = 0; k < sizeof keys / sizeof keys[0] && n + 1 < cap; k++) {
		char child[XF_CFG_PATH_MAX];
		if (!strcmp(keys[k].section, section)) {
			known[n++] = keys[k].name;
			continue;
		}
		if (!child_of(keys[k].section, section, child, sizeof child))
			continue;
		int seen = 0;
		for (size_t c = 0; c < n_children && !seen; c++)
			seen = !strcmp(children[c], child);
		if (seen || n_children == sizeof children / sizeof children[0])
			continue;
		strcpy(children[n_children], child);
		known[n++] = children[n_children++];
	}
	known[n] = NULL;
	return n;
}

/* value of row k of cfg as the template writes it */
static void value_text(const xf_config *cfg, const xf_cfg_key *k, char *buf, size_t size)
{
	switch (k->kind) {
	case XF_KEY_INT: snprintf(buf, size, "%d", *(const int *)cslot(cfg, k)); break;
	case XF_KEY_BOOL:
		snprintf(buf, size, "%s", *(const int *)cslot(cfg, k) ? "true" : "false");
		break;
	case XF_KEY_U64: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)cslot(cfg, k)); break;
	case XF_KEY_INT_OR_AUTO: {
		long v = *(const long *)cslot(cfg, k);
		if (v == 0)
			snprintf(buf, size, "auto");
		else
			snprintf(buf, size, "%ld", v);
		break;
	}
	case XF_KEY_NUMBER: {
		double v = *(const double *)cslot(cfg, k);
		/* a number reads back as one: 2.0, not 2 */
		snprintf(buf, size, v == floor(v) && fabs(v) < 1e15 ? "%.1f" : "%.10g", v);
		break;
	}
	default: snprintf(buf, size, "%s", k->own_default ? k->own_default : "null");
	}
}

#define XF_TEMPLATE_COMMENT_COLUMN 29 /* the template's other comments start there */

void xf_cfg_template_keys(FILE *out, const char *section, const xf_config *defaults)
{
	const char *shown = NULL; /* the subsection whose header is written */
	int depth = 1;
	for (const char *c = section; *c; c++)
		depth += *c == '.';
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		const xf_cfg_key *row = &keys[k];
		char child[XF_CFG_PATH_MAX], value[64], line[512];
		int indent = 2 * depth;
		if (strcmp(row->section, section)) {
			if (!child_of(row->section, section, child, sizeof child))
				continue;
			if (!shown || strcmp(shown, row->section)) {
				fprintf(out, "%*s%s:\n", indent, "", child);
				shown = row->section;
			}
			indent += 2;
		}
		value_text(defaults, row, value, sizeof value);
		if (row->absent) { /* absent by default: the line is a comment */
			fprintf(out, "%*s# %s: %s\n", indent, "", row->name, row->note);
			continue;
		}
		int len = snprintf(line, sizeof line, "%*s%s: %s", indent, "", row->name, value);
		if (!row->note[0])
			fprintf(out, "%s\n", line);
		else
			fprintf(out, "%s%*s# %s\n", line,
				len < XF_TEMPLATE_COMMENT_COLUMN ? XF_TEMPLATE_COMMENT_COLUMN - len
								 : 3,
				"", row->note);
	}
}
