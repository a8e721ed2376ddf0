/* config.h — the typed configuration read from a homodyne-compatible YAML file
 * (spec/config.md). Parsing and validation live in src/config/. For a fit only src/cli/
 * reads it: request_build.c turns it into the problem request (request.h) and the data
 * selection (selection.h) that the layers below take (adr/0043); the method options
 * (xf_nlsq_options, xf_cmc_options) are defined here for now. */
#ifndef XPCSFIT_CONFIG_H
#define XPCSFIT_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include "xpcsfit/error.h"
#include "xpcsfit/model.h"
#include "xpcsfit/options.h"
#include "xpcsfit/params.h"
#include "xpcsfit/selection.h"

/* Upper bounds of the counts a config (or the command line) gives that size work or
 * memory (docs/config.md, "Limits"); a larger value is a one-line config error. */
#define XF_N_STARTS_MAX	     10000   /* XF_KEY_N_STARTS */
#define XF_FOURIER_ORDER_MAX 64	     /* XF_KEY_FOURIER_ORDER */
#define XF_NUM_CHAINS_MAX    1024    /* XF_KEY_NUM_CHAINS */
#define XF_NUM_DRAWS_MAX     1000000 /* num_warmup and num_samples of per_shard_mcmc */

/* The top-level key naming the model, which --mode, --static-mode and --laminar-flow set
 * (one name for the reader and the options) */
#define XF_CONFIG_MODE_KEY "analysis_mode"

/* How an override edits the config tree. */
typedef enum xf_override_kind {
	XF_OVERRIDE_SET = 0,	 /* key: a dotted key, set to value */
	XF_OVERRIDE_START,	 /* key: a parameter name; value its start (initial_parameters) */
	XF_OVERRIDE_RANGE,	 /* value "MIN:MAX" appended to XF_KEY_TARGET_RANGES */
	XF_OVERRIDE_RANGE_FIRST, /* the same, the config's ranges dropped first */
} xf_override_kind;

/* A value given outside the YAML file for one dotted key (batch --overrides, --set). */
typedef struct xf_config_override {
	const char *key;    /* XF_KEY_DT, or an alias of xf_config_key_alias */
	const char *value;  /* read as an unquoted YAML value would be */
	const char *origin; /* where it was given, for messages: "o.csv:3, column dt" */
	xf_override_kind kind;
	const char *option; /* the command-line option ("--initial"); NULL: origin says */
} xf_config_override;

/* An override as it was applied, kept with the config for run.log and parameters.json. */
typedef struct xf_override_record {
	char *option; /* "--initial", or the origin of a batch --overrides cell */
	char *key;    /* the dotted key it set (XF_KEY_VALUES "[D0]") */
	char *value;
} xf_override_record;
/* How much the console shows (XF_KEY_LOGGING_LEVEL; run.log always has everything). */
typedef enum xf_log_level {
	XF_VERBOSITY_INFO = 0, /* the default: warnings and progress lines */
	XF_VERBOSITY_ERROR,    /* error lines only on stderr (stdout's summary stays) */
	XF_VERBOSITY_WARNING,  /* warnings, no progress lines */
	XF_VERBOSITY_DEBUG,    /* everything, info lines too */
} xf_log_level;

typedef struct xf_config {
	char *source_path; /* the YAML file read (NULL for defaults) */
	/* its bytes as read, once, NUL-terminated (NULL for defaults): run.log records them
	 * and a per-ring run's rings parse them again (xf_config_load_text) */
	char *source_text;
	size_t source_len;
	xf_mode mode; /* analysis_mode */

	/* experimental_data: resolved data file path (NULL when the config names none) and
	 * a sentence saying how it was resolved (cwd or the config's folder), for run.log */
	char *data_path;
	char data_path_note[256];

	/* analyzer_parameters */
	int has_dt;	     /* dt given in the config */
	double dt_s;	     /* s per stored frame row */
	long start_frame;    /* 1-based inclusive (1) */
	long end_frame;	     /* 1-based inclusive, -1 = last (-1) */
	int has_q;	     /* scattering.wavevector_q given */
	double wavevector_q; /* Å⁻¹, target for the q-ring selection */
	xf_q_choice q_rings; /* all / list / range (adr/0063); pick ONE: has_q as above */
	double gap_A;	     /* geometry.stator_rotor_gap, Å (XF_DEFAULT_GAP_A) */
	int has_gap;	     /* stator_rotor_gap given (else the default, with a warning in
				laminar_flow mode: adr/0031) */
	xf_shear_model shear_model;

	/* phi_filtering */
	int phi_filter_enabled;
	int n_phi_ranges;
	xf_phi_range *phi_ranges;
	int fallback_to_all_angles; /* 0 */

	/* initial_parameters: start values in canonical order. value_given[k] = 0 means the
	 * middle of the bounds (values: null or the name missing). */
	double values[XF_N_PHYS];
	int value_given[XF_N_PHYS];
	int is_fixed[XF_N_PHYS]; /* from fixed_parameters (value goes into values[]) */
	int n_contrast_start;	 /* per_angle_scaling.contrast: 0, 1 or n_phi values */
	double *contrast_start;
	int n_offset_start;
	double *offset_start;

	/* XF_KEY_BOUNDS, index = enum xf_param incl. contrast/offset slots */
	xf_bound bounds[XF_N_BOUND_SLOTS];

	xf_nlsq_options nlsq;
	xf_cmc_options cmc;

	int virtual_devices; /* XF_KEY_VIRTUAL_DEVICES; 0 = auto (online cores) */
	int rings_joint;     /* XF_KEY_RINGS: joint (1) or per_ring (0, default; adr/0066) */

	size_t n_overrides; /* the overrides applied, in order (xf_config_load_with) */
	xf_override_record *overrides;
	/* XF_KEY_BASE_DIRECTORY (or XF_KEY_OUTPUT_DIRECTORY): the result folder when --out
	 * is not given, relative to the working directory as --out is; NULL when not set */
	char *base_directory;
	xf_log_level verbosity; /* XF_KEY_LOGGING_LEVEL */
	int plot_dpi;		/* XF_KEY_DPI; 0: the nominal page sizes (100 dpi) */
	/* XF_KEY_SURFACES: 1 ("full") writes the (n_phi, N, N) surfaces into results.h5,
	 * 0 ("none", the default) leaves them out (adr/0059); --surfaces/--no-surfaces win */
	int output_surfaces;
	int plot_all_angles; /* XF_KEY_ANGLE_PAGES: 1 "all", 0 "auto" (≤ 10 pages, adr/0059) */

	/* key accounting (config_keys.c, adr/0032): dotted paths of the file's keys that
	 * no reader used ("logging.format", "bounds[3].unit"), in file order; `validate`
	 * lists them by section and --strict refuses a config that has any */
	char **ignored_keys;
	size_t n_ignored_keys;
	/* the settings that decide a result, canonical (config_keys.c, adr/0057): every value
	 * a reader used, after the overrides, one sorted "dotted.path=value" line each;
	 * comments, layout and key order leave it unchanged. batch --resume compares it */
	char *settings;
} xf_config;

/* Defaults of every key (model.md bounds, config.md defaults). */
void xf_config_defaults(xf_config *cfg);
/* Read a YAML file. Unknown keys: one xf_warn each with the key path. Bad values, an
 * unreadable file or invalid YAML: error naming the key path, value and what is allowed,
 * return XF_ERR_CONFIG. On error cfg is left freed/defaulted. */
int xf_config_load(const char *path, xf_config *cfg, xf_error *err);

/* xf_config_load with overrides applied to the YAML tree before it is read, in order, so
 * that the normal checks apply; a bad value names the override's origin. An override of
 * a key that xpcsfit does not read (unknown, or accepted for homodyne but unused) is an
 * error, not the warning a file's unknown key gets. */
int xf_config_load_with(const char *path, const xf_config_override *overrides, size_t n,
			xf_config *cfg, xf_error *err);
/* The bytes of the config file at path as xf_config_load_with reads them (a regular file,
 * at most 64 MiB, no NUL byte), NUL-terminated and malloc'ed, *len (may be NULL) their
 * count: a run that parses one config several times (a batch's files, a per-ring run's
 * rings) reads it once. NULL with err set (XF_ERR_CONFIG, or XF_ERR_NOMEM). */
char *xf_config_read_text(const char *path, size_t *len, xf_error *err);
/* xf_config_load_with of text, the bytes of the config at path as read before
 * (cfg->source_text of an earlier load): the same checks, warnings and messages, and no
 * read of the file, so every ring of a per-ring run fits the config as the run first read
 * it, even if the file is edited meanwhile. */
int xf_config_load_text(const char *path, const char *text, const xf_config_override *overrides,
			size_t n, xf_config *cfg, xf_error *err);
/* The dotted key of a short name ("dt" → XF_KEY_DT, "q" → XF_KEY_Q); any other
 * name is returned as it is. */
const char *xf_config_key_alias(const char *name);
/* The dotted key an override sets, for messages and records, into buf; returns buf. */
const char *xf_config_override_key(const xf_config_override *o, char *buf, size_t size);
void xf_config_free(xf_config *cfg);
/* XF_KEY_BASE_DIRECTORY of the config whose bytes are text (read from path: messages),
 * with the overrides applied, into buf, before the config is read in full: 1 when set, 0
 * when not (or text NULL or unreadable: the full read reports that). No warnings. */
int xf_config_base_directory(const char *path, const char *text,
			     const xf_config_override *overrides, size_t n, char *buf, size_t size);
/* Length of the section part of an ignored key's dotted path ("optimization.nlsq" of
 * "optimization.nlsq.x_scale"); 0 for a top-level key. Dots inside [..] do not count. */
size_t xf_config_key_section(const char *path);
/* The start value of parameter k: values[k] if given, else middle of bounds[k]. */
double xf_config_start_value(const xf_config *cfg, int k);
/* Write a commented template for the mode (xpcsfit config). Returns 0 or an errno-like
 * nonzero on a write failure. */
int xf_config_write_template(xf_mode mode, FILE *out);
/* Write the key reference (docs/config-keys.md, `xpcsfit config --keys`): one markdown
 * row per row of the reader's key table, with its type, what it allows, its default and
 * its note. */
void xf_config_write_key_reference(FILE *out);

#endif
