/* tool.h — xpcsfit-gpu (docs/gpu.md): one workload (the `make bench` dataset) evaluated by
 * the production CPU pass and by the CUDA backend; validate compares, bench times. */
#ifndef XPCSFIT_GPU_TOOL_H
#define XPCSFIT_GPU_TOOL_H

#include <stdio.h>

#include "gpu/gpu.h"
#include "xpcsfit/config.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/vdev.h"

#define XF_TOOL_NO_DEVICE 3 /* exit status without a CUDA device (docs/gpu.md) */

typedef struct tool_opts {
	const char *json_path;	/* --json FILE (NULL: none) */
	int n_frames;		/* --frames N: validate's workload */
	int n_phi;		/* --angles N */
	int threads;		/* --threads N: the CPU pass's virtual devices */
	int max_frames;		/* --max-frames N: bench's largest size */
	const char *costs_path; /* bench --costs FILE: the policy's costs (NULL: none) */
	int runs;		/* bench: NLSQ and the posterior run end to end on both
				 * sides (--no-runs: 0, projected from the passes) */
} tool_opts;

/* The production problem on the bench dataset, with a CPU and a GPU evaluator. */
typedef struct tool_case {
	xf_dataset ds;
	xf_request req; /* the problem request (case.c, no config) */
	xf_problem pr;
	xf_pairset ps;
	xf_pool *pool;
	xf_lik *cpu, *gpu;
	double *x; /* [n_full] evaluation point: the start, D0 moved off it */
	int have_ds, have_pr;
} tool_case;

/* 0, or −1 (message on stderr). fp32: the GPU evaluator evaluates in float. */
int tool_case_init(tool_case *c, xf_mode mode, int n_frames, int n_phi, int threads, int fp32);
/* The models the GPU runs (those with written-out kernels: no point function), in mode
 * order: tool_gpu_model(k) for k = 0, 1, … until it returns NULL. */
const xf_model_record *tool_gpu_model(int k);
/* Of those, the one with the most parameters: the costliest pass, which bench times */
const xf_model_record *tool_costliest_model(void);
/* fp32 < 0: no GPU evaluator (bench drives the backend directly) */
void tool_case_free(tool_case *c);
/* The GPU backend's own view of the case's pairs (for c2 and the same-order reference);
 * arrays allocated, freed by tool_data_free. */
int tool_data_init(const tool_case *c, xf_gpu_data *d);
void tool_data_free(xf_gpu_data *d);

/* A job run end to end on both sides (runs.c): wall seconds, the device's without its
 * first use in the process; the largest relative difference of the two sides' values
 * (the posterior's: of every summary), agree when it is at most TOOL_RUNS_AGREE. */
#define TOOL_RUNS_AGREE 1e-8
typedef struct tool_run {
	double cpu_s, gpu_s;
	int iterations;		  /* NLSQ: the CPU fit's */
	xf_posterior_route route; /* the posterior: the route both sides took */
	double worst_rel;
	int agree;
} tool_run;
/* NLSQ from the case's start off the truth on both sides; the CPU fit's estimate into
 * *warm (the caller frees it). 0, or -1 with a message. */
int tool_run_nlsq(tool_case *c, int threads, tool_run *r, xf_estimate *warm);
/* The posterior warm-started from warm on both sides, at the shipped options. */
int tool_run_posterior(tool_case *c, int threads, const xf_estimate *warm, tool_run *r);

double tool_now(void);
int tool_validate(const tool_opts *o);
int tool_bench(const tool_opts *o);

#endif
