/* policy.h — where the NLSQ accumulation runs (docs/gpu.md, adr/0037): one policy of
 * thresholds with conservative defaults and pure predicates that need no device, so
 * CPU-only CI tests them. Routing is decided once per fit, never between iterations. */
#ifndef XPCSFIT_DEVICE_POLICY_H
#define XPCSFIT_DEVICE_POLICY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xf_device_choice {
	XF_DEVICE_CPU = 0, /* the default: production numerics */
	XF_DEVICE_GPU,	   /* required: refused where no device or no CUDA build */
	XF_DEVICE_AUTO,	   /* the GPU above the work-size threshold, else the CPU */
} xf_device_choice;

/* Default threshold of auto, in work score (points × fitted parameters): not measured on
 * a GPU yet (adr/0037). The roofline estimate puts the per-pass crossover near 1.5e5;
 * this is 1000× above it, to cover the CUDA context's start (~0.1–0.5 s a process) and
 * the estimate's error. `xpcsfit-gpu bench` measures and recommends. */
#define XF_DEVICE_DEFAULT_THRESHOLD 1e8
/* Default floor of the fp32 evaluation option: below it the refinement's extra pass
 * costs more than fp32 saves. */
#define XF_DEVICE_DEFAULT_FP32_MIN 1e10

typedef struct xf_device_policy {
	xf_device_choice choice; /* what was asked */
	double gpu_min_score;	 /* auto picks the GPU at a work score ≥ this */
	double fp32_min_score;	 /* fp32 evaluation only at a work score ≥ this (and asked) */
	int fp32;		 /* fp32 evaluation asked (measured option) */
	int max_devices;	 /* GPUs a pass may use */
} xf_device_policy;

xf_device_policy xf_device_policy_default(void);

/* "cpu", "gpu", "auto" → choice; 0, or −1 for anything else. */
int xf_device_parse(const char *text, xf_device_choice *choice);
const char *xf_device_name(xf_device_choice choice);

/* Environment overrides on pol: XPCSFIT_DEVICE (cpu|gpu|auto) and
 * XPCSFIT_DEVICE_THRESHOLD (a positive work score). getenv_fn lets tests pass a table.
 * 0, or −1 with the offending variable's name in *bad. */
int xf_device_policy_env(xf_device_policy *pol, const char *(*getenv_fn)(const char *),
			 const char **bad);

/* Work score of a pass: points × fitted parameters. */
double xf_device_work_score(size_t n_points, int n_params);

/* 1 when a fit of this work score on n_ranks MPI ranks must look for a device at all:
 * gpu always (its refusals name the reason); auto only at a score ≥ the threshold and in
 * one process (a pass spread over ranks runs on the CPU). Decided before the CUDA module
 * is loaded, so a small auto fit never touches it (adr/0072). */
int xf_device_wants_gpu(const xf_device_policy *pol, double work_score, int n_ranks);
/* Routing of a fit: 1 for the GPU, 0 for the CPU. n_devices: usable GPUs (0 in a
 * CPU-only build). GPU asked without a device is the caller's error to report
 * (xf_device_refused); auto without one quietly stays on the CPU. */
int xf_device_use_gpu(const xf_device_policy *pol, double work_score, int n_devices);
/* 1 when the policy asks for a GPU that is not there. */
int xf_device_refused(const xf_device_policy *pol, int n_devices);
/* 1 when fp32 evaluation applies to a pass of this score on the GPU. */
int xf_device_use_fp32(const xf_device_policy *pol, double work_score);

/* A job's whole work over the data, by kind (adr/0129): the passes over all the data it
 * makes, in passes of the accumulation (JᵀJ) or its lighter levels, each counted as one */
typedef enum xf_device_job_kind {
	XF_DEVICE_JOB_NLSQ = 0,		    /* the fit on all the data after the screening */
	XF_DEVICE_JOB_POSTERIOR_IMPORTANCE, /* the importance route's value passes */
	XF_DEVICE_JOB_POSTERIOR_NUTS,	    /* exact NUTS's gradient passes */
} xf_device_job_kind;

/* The costs a job's decision weighs, in seconds. The defaults (xf_device_costs_default)
 * are the first measurement on a GPU (one H200 beside 2 and 16 EPYC threads; adr/0129),
 * each taken on the side that makes the device look worse. */
typedef struct xf_device_costs {
	double cpu_thread_s_per_point; /* one pass, one CPU thread, per data point */
	double gpu_s_per_point;	       /* one pass on the device, per data point */
	double gpu_pass_s;	       /* one pass's launch and transfer */
	double gpu_job_s;	       /* once a job: the CUDA context and the module */
	double gpu_upload_s_per_point; /* once a job: the data and the pairs */
} xf_device_costs;

xf_device_costs xf_device_costs_default(void);
/* The costs auto's job decisions use in this process: the defaults, or those a program
 * installed once at its start (the CLI: XPCSFIT_DEVICE_COSTS=FILE, written by
 * `xpcsfit-gpu bench --costs FILE` on this machine); source says which, for run.log
 * ("the defaults of adr/0129" or the file's name). Install before any thread starts. */
xf_device_costs xf_device_costs_in_use(const char **source);
void xf_device_costs_install(const xf_device_costs *c, const char *source);
/* The costs as text, one "name value" line each (xpcsfit-gpu bench --costs, docs/gpu.md);
 * buf of size bytes. The number of bytes written (as snprintf). */
int xf_device_costs_format(const xf_device_costs *c, char *buf, size_t size);
/* Costs read from such text over *c (a name not given keeps its value): 0, or −1 with
 * the offending line's number in *bad_line (an unknown name, a value not positive and
 * finite). */
int xf_device_costs_parse(const char *text, xf_device_costs *c, int *bad_line);
/* The whole-data passes a job of kind makes (measured: NLSQ ~5, the importance route
 * ~2 000, NUTS ~60 000; docs/gpu.md) */
double xf_device_job_passes(xf_device_job_kind kind);
/* The device's passes for each of them (adr/0130): NUTS's gradient of the posterior with
 * the scaling integrated out is one fused pass on the CPU, two on the device */
double xf_device_job_gpu_passes_per_pass(xf_device_job_kind kind);
const char *xf_device_job_name(xf_device_job_kind kind);

/* What a job is expected to take on n_threads CPU threads and on one device, and what
 * the device spends once (context, module, upload) */
typedef struct xf_device_job_estimate {
	double passes, cpu_s, gpu_s, gpu_once_s;
	double gpu_passes; /* the passes the device makes for them */
} xf_device_job_estimate;

xf_device_job_estimate xf_device_job_estimate_of(const xf_device_costs *costs,
						 xf_device_job_kind kind, size_t n_points,
						 int n_threads);
/* auto's answer for a whole job: 1 when the device is expected to take at most half the
 * CPU's time (the margin covers the estimate's error: auto must never pick the device
 * for a job it makes slower) */
int xf_device_job_pays(const xf_device_job_estimate *e);

/* Split n_blocks over n devices in proportion to score[] (largest remainder, ties to the
 * lower index): first[d], count[d] tile [0, n_blocks) exactly, in device order. 0, or −1
 * when no score is positive. */
int xf_device_split(const double *score, int n, size_t n_blocks, size_t *first, size_t *count);

#ifdef __cplusplus
}
#endif

#endif
