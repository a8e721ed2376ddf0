/* batch_internal.h — what the files of `xpcsfit batch` share (docs/cli.md "batch",
 * adr/0023): the list of inputs with their result folder names and per-file overrides
 * (batch_inputs.c, batch_overrides.c), the record each file leaves in its folder
 * (batch_record.c) and the summary built from those records (batch_summary.c). */
#ifndef XPCSFIT_CLI_BATCH_INTERNAL_H
#define XPCSFIT_CLI_BATCH_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/overrides.h"
#include "xpcsfit/config.h"

/* One input file. */
typedef struct xf_batch_input {
	char *path;		       /* as given (a --list entry joined to the list's folder) */
	char *abs_path;		       /* path made absolute against the working directory */
	char *name;		       /* the stem: the result folder's name under --out */
	xf_config_override *overrides; /* from --overrides (strings owned by the batch) */
	size_t n_overrides;
	int mine;  /* this process runs it (--task K --tasks N: index % N == K) */
	int mode;  /* xf_mode of its config after overrides (the summary's columns) */
	int joint; /* XF_KEY_RINGS: joint: results in nlsq_joint/ (and cmc_joint/) */
} xf_batch_input;

/* What a batch runs on each file (--method): NLSQ alone, or the posterior after it */
typedef enum xf_batch_method {
	XF_BATCH_NLSQ = 0,
	XF_BATCH_CMC,
	XF_BATCH_FIT,
} xf_batch_method;

/* "nlsq", "cmc", "fit": the option's word, the command run, the record's "method" */
const char *xf_batch_method_name(xf_batch_method m);
/* The method a word names; 0, or -1 (m untouched) for a word that is none */
int xf_batch_method_parse(const char *word, xf_batch_method *m);

typedef struct xf_batch {
	const char *config; /* --config */
	/* its bytes, read once before any file (check_configs): every file's config, its
	 * fingerprint and its run come from them, so an edit during the batch changes none */
	char *config_text;
	size_t config_len;
	const char *out;	 /* --out */
	const char *method_word; /* --method as given (default "nlsq") */
	xf_batch_method method;	 /* what it names */
	const char *list;	 /* --list FILE, NULL when none */
	const char *csv;	 /* --overrides CSV, NULL when none */
	int resume, force, plots, threads;
	int strict;	 /* --strict: the config must use every key (checked before any file) */
	int task, tasks; /* --task K --tasks N; 0 and 1 without them */
	long max_runs;	 /* --max-runs N: files this process fits at most, -1 for no cap */
	int rank, ranks; /* xpcsfit-mpi: this rank of ranks (0 of 1 in one process) */
	xf_batch_input *inputs;
	size_t n, cap;
	char **strings; /* what the overrides point into */
	size_t n_strings, cap_strings;
	xf_cli_overrides cli;		  /* --mode, --initial, --set, ...: for every input */
	struct xf_batch_summary *summary; /* rank 0: the summary's rows (batch_summary.c) */
} xf_batch;

void xf_batch_free(xf_batch *b);

/* batch_inputs.c: add one input (copied; relative paths stay relative to the working
 * directory). 0 or XF_ERR_NOMEM. */
int xf_batch_add(xf_batch *b, const char *path);
/* The paths of a list file, one a line; blank lines and lines starting with '#' are
 * skipped, surrounding blanks trimmed, a relative path is relative to the list file's
 * folder. XF_ERR_CONFIG naming list:line for an unreadable file or a bad line. */
int xf_batch_read_list(xf_batch *b, const char *list, xf_error *err);
/* A --list or --overrides file above this is not one; the limit of a config. */
#define XF_BATCH_TEXT_MAX_BYTES ((size_t)64 << 20)
/* The whole text of a --list or --overrides file (what: "--list file"), malloc'ed,
 * through the one rule for files read by name (util/files.h): a FIFO, a device, a folder,
 * a file above the limit or one holding a NUL byte is XF_ERR_CONFIG, unread. */
char *xf_batch_read_text(const char *path, const char *what, xf_error *err);
/* The next line of such a text (its '\n' made a NUL), advancing *cursor; NULL at the end. */
char *xf_batch_next_line(char **cursor);
/* Fill name (the stem: basename without .h5/.hdf5/.hdf) and abs_path of every input;
 * two inputs with one name are XF_ERR_CONFIG naming both paths. */
int xf_batch_name_inputs(xf_batch *b, xf_error *err);
/* The stem of a path: its basename without .h5/.hdf5/.hdf (any case), as a pointer into
 * path and a length. */
const char *xf_batch_stem(const char *path, size_t *len);
/* Keep a copy of s for the life of the batch; NULL when out of memory. */
char *xf_batch_keep(xf_batch *b, const char *s);

/* batch_overrides.c: read --overrides CSV and attach each row's values to the input it
 * names (by path as listed, absolute path or stem). Header "file" then dotted config keys
 * or the aliases dt and q; an empty cell leaves the key as the config has it. A row that
 * names no input, a repeated row, a bad header or a short row: XF_ERR_CONFIG naming
 * csv:line. Values are checked later, when the config is read (xf_config_load_with). */
int xf_batch_read_overrides(xf_batch *b, const char *csv, xf_error *err);
/* The command-line overrides (b->cli) put before each input's --overrides cells, which
 * win where both set a key. */
int xf_batch_merge_overrides(xf_batch *b, xf_error *err);

/* A file's state in a batch: batch.json's "status" (running, ok, failed) and the summary's
 * (ok, failed, pending). Unknown is zero: a record naming no state we know (as a run
 * that was interrupted). */
typedef enum xf_batch_state {
	XF_BATCH_UNKNOWN = 0,
	XF_BATCH_RUNNING,
	XF_BATCH_OK,
	XF_BATCH_FAILED,
	XF_BATCH_PENDING, /* the summary's: no record of a finished run */
	XF_BATCH_N
} xf_batch_state;
/* Its name in the files ("" for unknown), and back (unknown for a name that is none) */
const char *xf_batch_state_name(xf_batch_state s);
xf_batch_state xf_batch_state_parse(const char *name);

/* batch_record.c: <out>/<name>/batch.json, the outcome of one file. */
typedef struct xf_batch_record {
	xf_batch_state status; /* running, ok or failed */
	char input[PATH_MAX];  /* absolute path of the input */
	uint64_t input_bytes;
	char input_crc32[16];	 /* hex; "" when the file could not be read */
	char config_crc32[16];	 /* hex, of config bytes + overrides + method (informative) */
	char settings_crc32[16]; /* hex, of the resolved settings (adr/0057); "" in records
				    of an xpcsfit before it */
	char *settings; /* the resolved settings (xf_config.settings) of a fingerprint; NULL
			   in a record read back (xf_batch_record_free) */
	char method[8];
	double wall_s;	    /* the file's wall time, s (NaN: not finished) */
	int results;	    /* the run left whole result folders (also a fit that failed) */
	char message[2048]; /* the failure's error line, "" when ok */
} xf_batch_record;

/* The fingerprint of an input as it is now: its bytes, the resolved settings (the config
 * with its overrides, canonical: adr/0057), and the method (the record's input_*,
 * settings and settings_crc32; config_crc32 of the raw bytes is kept for information). A
 * file that cannot be read leaves input_crc32 "" (the run then reports why). Free with
 * xf_batch_record_free. */
int xf_batch_fingerprint(const xf_batch *b, const xf_batch_input *in, xf_batch_record *rec,
			 xf_error *err);
void xf_batch_record_free(xf_batch_record *rec);
/* --resume: *skip = 1 when <dir>'s record is ok, its results whole and its fingerprint
 * that of now; else why says what differs ("rerun: settings changed
 * (XF_KEY_NLSQ_MAX_ITERATIONS 200 -> 300)", "rerun: previous run incomplete",
 * "rerun: input changed ..."), "" when there is no record (a first run). Returns 0 or
 * XF_ERR_NOMEM. */
int xf_batch_rerun_reason(const char *dir, xf_batch_method method, int joint,
			  const xf_batch_record *now, int *skip, char *why, size_t size,
			  xf_error *err);
/* "<out>/<name>" into buf. */
int xf_batch_dir(const xf_batch *b, const xf_batch_input *in, char *buf, size_t size);
/* Write rec as <dir>/batch.json (atomically). */
int xf_batch_record_write(const char *dir, const xf_batch_record *rec, xf_error *err);
/* A JSON file of at most max_bytes parsed; NULL when absent, larger or not JSON, and
 * also when memory is short, then with err set (XF_ERR_NOMEM). */
typedef struct cJSON cJSON;
cJSON *xf_batch_read_json(const char *path, size_t max_bytes, xf_error *err);
/* Read <dir>/batch.json: 0, -1 when absent or not a record (the file counts as pending),
 * or XF_ERR_NOMEM with err set. */
int xf_batch_record_read(const char *dir, xf_batch_record *rec, xf_error *err);
/* The result folder of side ("nlsq" or "cmc") under a file's folder: "nlsq_joint" /
 * "cmc_joint" for a joint fit over the rings (adr/0066), else side. */
const char *xf_batch_folder(const char *side, int joint);
/* 1 when the method's result folders under dir hold whole results (no INCOMPLETE;
 * parameters.json present, or rings.json for a per-ring run, adr/0065); joint: the
 * folders of the joint fit. */
int xf_batch_results_whole(const char *dir, xf_batch_method method, int joint);

/* batch_summary.c: <out>/batch_summary.csv and .json, one row per input, from what is on
 * disk (its record and parameters.json files), the rows kept in memory (adr/0073). */
typedef struct xf_batch_summary xf_batch_summary;
/* Read every input's row once (a record, and the parameters of a finished one). 0 or
 * XF_ERR_NOMEM; *s is freed with xf_batch_summary_free. */
int xf_batch_summary_load(const xf_batch *b, xf_batch_summary **s, xf_error *err);
void xf_batch_summary_free(xf_batch_summary *s);
/* Read input k's row again (its file has just finished here). */
int xf_batch_summary_reread(const xf_batch *b, xf_batch_summary *s, size_t k, xf_error *err);
/* Read again the rows of the inputs other processes run (--tasks, MPI ranks): before the
 * last write, so that it is true of whichever process finished which file. */
int xf_batch_summary_reread_others(const xf_batch *b, xf_batch_summary *s, xf_error *err);
/* A batch rewrites its summary at most this many times over its files (besides the first
 * and last writes): after every file up to this many inputs, after every ceil(N/this)-th
 * file beyond, so that N files cost O(N) rows written, not O(N²) (adr/0073: 5 000 quick
 * files, 64 rewrites of 5 000 rows). */
#define XF_BATCH_SUMMARY_WRITES 64
/* Count one finished file; 1 when the summary is due for a rewrite. */
int xf_batch_summary_due(xf_batch_summary *s);
/* Write both files atomically from the rows in memory (no record is opened). Counts of
 * ok, failed and pending inputs go to the pointers (any may be NULL). */
int xf_batch_summary_write(const xf_batch *b, xf_batch_summary *s, size_t *n_ok, size_t *n_failed,
			   size_t *n_pending, xf_error *err);

#endif
