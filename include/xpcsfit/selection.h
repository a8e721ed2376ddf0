/* selection.h — what the data readers select from a file (spec/data.md): the q ring, the
 * φ ranges, the frame window and dt, as a small typed record that the command line
 * builds from the config (src/cli/request_build.c), so that src/data/ never reads the
 * raw config. Also the dt limits that the config and the readers share. */
#ifndef XPCSFIT_SELECTION_H
#define XPCSFIT_SELECTION_H

/* dt (config or file), s: from a picosecond to a day (ADR 0015). */
#define XF_DT_MIN_S 1e-12
#define XF_DT_MAX_S 86400.0

typedef struct xf_phi_range {
	double min_deg; /* as written; normalised by the selector */
	double max_deg;
} xf_phi_range;

/* Which q rings (XF_KEY_Q, adr/0063): one value (or
 * none: a file's only ring), every ring, a list of values each matched to its nearest
 * ring, or the rings in a closed range [min, max]. */
#define XF_Q_LIST_MAX 64
typedef enum xf_q_pick {
	XF_Q_PICK_ONE = 0, /* has_q / q_target_per_A, as before rings could be several */
	XF_Q_PICK_ALL,	   /* wavevector_q: all */
	XF_Q_PICK_LIST,	   /* wavevector_q: [0.003, 0.0054, ...] (two values or more) */
	XF_Q_PICK_RANGE,   /* wavevector_q: {min: 0.003, max: 0.006} */
} xf_q_pick;

typedef struct xf_q_choice {
	xf_q_pick pick;
	int n_list;		     /* XF_Q_PICK_LIST: values, 2..XF_Q_LIST_MAX */
	double list[XF_Q_LIST_MAX];  /* Å⁻¹, as written */
	double range_min, range_max; /* Å⁻¹, XF_Q_PICK_RANGE, min <= max */
} xf_q_choice;

typedef struct xf_selection {
	const char *config_path; /* the YAML file, for messages (NULL: "the config") */
	const char *data_path;	 /* experimental_data's file (NULL: none named) */
	int has_q;		 /* a target q is given */
	double q_target_per_A;	 /* Å⁻¹: the ring nearest to it is selected */
	xf_q_choice q;		 /* several rings: pick != XF_Q_PICK_ONE (has_q is 0) */
	int phi_filter_enabled;	 /* XF_KEY_PHI_ENABLED */
	int n_phi_ranges;
	const xf_phi_range *phi_ranges; /* [n_phi_ranges], borrowed: outlives the selection */
	int fallback_to_all_angles;	/* no angle in the ranges: keep all (1) or fail (0) */
	long start_frame;		/* 1-based inclusive */
	long end_frame;			/* 1-based inclusive, −1 = the last stored row */
	int has_dt;			/* dt given (else the file's) */
	double dt_s;			/* s per stored frame row, when has_dt */
} xf_selection;

#endif
