/* config_internal.h — what the files of src/config/ share: the reader context, typed
 * value getters that fail with "key.path: 'value' is not allowed (must be ...), in
 * file:line", the unknown-key check, and one reader function per config section. */
#ifndef XF_CONFIG_INTERNAL_H
#define XF_CONFIG_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "config/yaml_tree.h"
#include "xpcsfit/config.h"

/* Longest dotted key path we print; longer ones are cut (messages only). */
#define XF_CFG_PATH_MAX 256

typedef struct xf_cfg_reader {
	const char *file; /* the config file's name, for messages */
	xf_error *err;
} xf_cfg_reader;

/* Checks applied by xf_cfg_number; each has a "must be ..." sentence. */
typedef enum xf_cfg_check {
	XF_CHECK_FINITE = 0,	 /* any finite number */
	XF_CHECK_POSITIVE,	 /* > 0 */
	XF_CHECK_NONNEGATIVE,	 /* >= 0 */
	XF_CHECK_OPEN_UNIT,	 /* 0 < x < 1 */
	XF_CHECK_FRACTION,	 /* 0 <= x <= 1 */
	XF_CHECK_HALF_OPEN_UNIT, /* 0 < x <= 1 */
	XF_CHECK_AT_LEAST_ONE,	 /* >= 1 */
	XF_CHECK_FRAME_TIME,	 /* XF_DT_MIN_S <= x <= XF_DT_MAX_S (seconds) */
} xf_cfg_check;

/* "parent.key" into buf (just key when parent is ""). Returns buf. */
const char *xf_cfg_path(char buf[XF_CFG_PATH_MAX], const char *parent, const char *key);

/* Error for a bad value: "<path>: '<text>' is not allowed (must be <allowed>), in
 * file:line". node may be a list or mapping. Returns XF_ERR_CONFIG. */
int xf_cfg_bad_value(const xf_cfg_reader *r, const xf_ynode *node, const char *path,
		     const char *allowed);

/* One xf_warn per key of map that is in neither known[] nor ignored[] (both
 * NULL-terminated; ignored may be NULL): "unknown config key 'a.b.c' (ignored), in f:L".
 * Such a key set by an override (yaml_set.c) is an error instead, recorded in r->err. */
void xf_cfg_check_keys(const xf_cfg_reader *r, const xf_ynode *map, const char *path,
		       const char *const *known, const char *const *ignored);

/* The mapping under key of map: *out = NULL when absent or null; error when present but
 * not a mapping. */
int xf_cfg_section(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		   const xf_ynode **out);

/* Typed getters. A key that is absent or null leaves *out untouched and sets *given = 0
 * (given may be NULL); a value of the wrong type or failing the check is an error. */
int xf_cfg_number(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  xf_cfg_check check, double *out, int *given);
/* Integer in [lo, hi]; written as 12, 12.0 or 1.2e1. */
int xf_cfg_int(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
	       long lo, long hi, long *out, int *given);
/* Integer from 1 to hi (INT_MAX at most) or "auto" (→ 0). */
int xf_cfg_int_or_auto(const xf_cfg_reader *r, const xf_ynode *map, const char *parent,
		       const char *key, long hi, long *out);
/* Non-negative integer up to 2^64 − 1 (seeds). */
int xf_cfg_u64(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
	       uint64_t *out);
/* true/false/yes/no/on/off (any case). */
int xf_cfg_bool(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		int *out);
/* A scalar string; *out points into the tree. */
int xf_cfg_string(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  const char **out);
/* One of choices[] (NULL-terminated): *index set; allowed text in the message. */
int xf_cfg_choice(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  const char *const *choices, int *index, int *given);

/* %g with a dot before any exponent: YAML 1.1 readers (PyYAML in homodyne) read
 * "1e-06" as a string and only "1.0e-06" as a number (the template's numbers). */
const char *xf_cfg_yaml_number(char buf[40], double v);

/* The table of config keys (config_table.c, adr/0119): a row per key. */
/* What a number passing check is, as messages and the key reference say it */
const char *xf_cfg_check_allowed(xf_cfg_check check);

typedef enum xf_cfg_key_kind {
	XF_KEY_INT,	    /* integer in [lo, hi], into an int */
	XF_KEY_NUMBER,	    /* number passing check, into a double */
	XF_KEY_BOOL,	    /* boolean, into an int */
	XF_KEY_U64,	    /* integer 0 … 2⁶⁴−1 (seeds), into a uint64_t */
	XF_KEY_INT_OR_AUTO, /* "auto" (0) or integer 1 … hi, into a long */
	XF_KEY_LONG,	    /* integer in [lo, hi], into a long */
	XF_KEY_OWN,	    /* read by its section's own code (a choice and what it means) */
} xf_cfg_key_kind;

typedef enum xf_cfg_key_shown {
	XF_SHOWN = 0,	   /* "name: default  # note" */
	XF_SHOWN_ABSENT,   /* absent by default: "# name: note" */
	XF_SHOWN_NOT,	   /* not in the template (a homodyne alias) */
	XF_SHOWN_EXAMPLE,  /* absent by default; the template writes "name: example  # note"
			   * (own_default: the example, a value of the data's kind) */
	XF_SHOWN_BY_MODEL, /* the template writes it from the model's table (the parameters'
			    * names, start values and bounds); own_default says so */
} xf_cfg_key_shown;

struct xf_cfg_key;
/* The reader of an XF_KEY_OWN row: a choice and what it means, a value with a flag */
typedef int (*xf_cfg_own_fn)(const xf_cfg_reader *r, const xf_ynode *map,
			     const struct xf_cfg_key *row, xf_config *cfg);

typedef struct xf_cfg_key {
	const char *section; /* dotted path of its mapping: "optimization.cmc.sharding" */
	const char *name;
	xf_cfg_key_kind kind;
	size_t offset;		 /* of its value in xf_config */
	long lo, hi;		 /* XF_KEY_INT: its range; XF_KEY_INT_OR_AUTO: hi */
	xf_cfg_check check;	 /* XF_KEY_NUMBER: its rule */
	const char *note;	 /* the template's comment, "" for none */
	const char *own_default; /* XF_KEY_OWN: the default as the template writes it */
	xf_cfg_key_shown shown;	 /* how the template shows it */
	xf_cfg_own_fn own;	 /* XF_KEY_OWN: its reader */
	/* XF_KEY_OWN: a choice's words (NULL-terminated), which its reader checks and the
	 * reference lists; else what the value may be, for the reference (NULL: a number
	 * by check, or see docs/config.md) */
	const char *const *choices;
	const char *allowed;
} xf_cfg_key;

/* The table, in reading order; *n rows. */
const xf_cfg_key *xf_cfg_key_table(size_t *n);
/* Read section's rows from map into cfg in table order (an own row by its reader): 0 or
 * the first error's code. */
int xf_cfg_read_keys(const xf_cfg_reader *r, const xf_ynode *map, const char *section,
		     xf_config *cfg);
/* The mapping parent.key (parent "" for the top level) whose keys are rows of the table:
 * *map set to it (NULL when absent; map may be NULL), its keys checked against the
 * table's and ignored[] (homodyne's, accepted without use; may be NULL), its rows read in
 * table order. 0 or the first error's code. */
int xf_cfg_read_part(const xf_cfg_reader *r, const xf_ynode *parent_map, const char *parent,
		     const char *key, const char *const *ignored, const xf_ynode **map,
		     xf_config *cfg);
/* xf_cfg_read_keys, its messages naming the rows' section as named (homodyne's older place of a
 * section: optimization_config.angle_filtering for phi_filtering). */
int xf_cfg_read_keys_as(const xf_cfg_reader *r, const xf_ynode *map, const char *section,
			const char *named, xf_config *cfg);
/* The keys section holds by the table: its rows' names and its subsections', in table
 * order, NULL-terminated (cap entries at most, the NULL included); their count. */
size_t xf_cfg_known_keys(const char *section, const char **known, size_t cap);
/* The template's lines of section's rows and subsections (headers included), indented
 * by their depth, with the values of defaults. */
void xf_cfg_template_keys(FILE *out, const char *section, const xf_config *defaults);
/* The top-level sections made of the table's rows alone (output, logging, plotting,
 * parallel), NULL-terminated (cap entries at most, the NULL included); their count */
size_t xf_cfg_table_sections(const char **names, size_t cap);
#define XF_CFG_SECTION_KEYS_MAX 32 /* keys and subsections of one section, NULL included */
/* Every top-level section of the table's rows ("analyzer_parameters", "optimization", ...),
 * in table order, NULL-terminated (cap entries at most, the NULL included); their count */
size_t xf_cfg_table_top_keys(const char **names, size_t cap);
#define XF_CFG_TOP_SECTIONS_MAX 16
/* Read those sections whose unknown keys are warned (checked 1), or the others (0), in
 * the table's order: 0 or the first error's code */
int xf_cfg_read_sections(const xf_cfg_reader *r, const xf_ynode *root, int checked, xf_config *cfg);
/* The template's blocks of those sections, each headed, with the values of defaults */
void xf_cfg_template_sections(FILE *out, const xf_config *defaults);

/* XF_KEY_SHEAR_MODEL's words (config_analyzer.c) */
extern const char *const xf_cfg_shear_model_names[];
/* The own rows' readers of analyzer_parameters (config_analyzer.c) */
int xf_cfg_read_dt(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		   xf_config *cfg);
int xf_cfg_read_end_frame(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg);
int xf_cfg_read_shear_model(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			    xf_config *cfg);
int xf_cfg_read_temporal(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			 xf_config *cfg);
int xf_cfg_read_wavevector_q(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			     xf_config *cfg);
int xf_cfg_read_gap(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		    xf_config *cfg);
/* The parameters' own rows' readers (config_params.c); xf_cfg_read_elsewhere: a row
 * another reader reads (XF_KEY_SPACE_MODEL by analysis_mode's, values with
 * parameter_names) */
int xf_cfg_read_bounds(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		       xf_config *cfg);
int xf_cfg_read_elsewhere(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg);
int xf_cfg_read_start_values(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			     xf_config *cfg);
int xf_cfg_read_fixed(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		      xf_config *cfg);
int xf_cfg_read_active(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		       xf_config *cfg);
int xf_cfg_read_per_angle_scaling(const xf_cfg_reader *r, const xf_ynode *map,
				  const xf_cfg_key *row, xf_config *cfg);
/* XF_KEY_TARGET_RANGES' reader (config_phi.c) */
int xf_cfg_read_target_ranges(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			      xf_config *cfg);

/* Parse a scalar node as a finite number (plain or quoted). 0 ok, -1 not a number. */
int xf_cfg_scalar_number(const xf_ynode *node, double *out);

/* Section readers (config_read.c, config_params.c, config_optim.c). parameter_space
 * must be read before initial_parameters: start values are checked against the bounds. */
int xf_cfg_read_mode(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_experimental_data(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_analyzer(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_phi_filtering(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_initial_parameters(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_parameter_space(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
int xf_cfg_read_optimization(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);

/* Resolve a relative data path (cwd first, then the config's folder) and fill
 * cfg->data_path and cfg->data_path_note. */
int xf_cfg_resolve_data_path(const char *written, const char *config_path, xf_config *cfg,
			     xf_error *err);

/* After the readers: the keys of the tree whose values no reader marked used go to
 * cfg->ignored_keys (config_keys.c). 0 or XF_ERR_NOMEM. */
int xf_cfg_collect_unused(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);
/* cfg->settings: every used value as a sorted "dotted.path=value" line (adr/0057). */
int xf_cfg_collect_settings(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg);

/* Priors of slot k from its bounds: middle and a quarter of the width. */
void xf_cfg_default_prior(xf_bound *b);

/* Overrides (config_overrides.c): one applied to the tree; the records of all kept in
 * cfg (freed by xf_cfg_free_overrides, which xf_config_free calls). */
int xf_cfg_apply_override(xf_ynode **root, const xf_config_override *o, xf_error *err);
/* A start value given outside the file (config_params.c): its key as records name it,
 * XF_KEY_VALUES "[NAME]", into buf; and its edit of the tree, as
 * xf_yaml_set_named */
void xf_cfg_start_key(const char *name, char *buf, size_t size);
int xf_cfg_set_start(xf_ynode **root, const char *name, const char *value, const char *origin,
		     xf_error *err);
int xf_cfg_record_overrides(const xf_config_override *o, size_t n, xf_config *cfg, xf_error *err);
void xf_cfg_free_overrides(xf_config *cfg);

#endif
