/* pass.c — one pass of the likelihood over the points of a pair set (likelihood.h):
 * the evaluator, the blocks on the pool (or inline), their reduction in block order and
 * the assembly of JᵀJ and b over the parameter layout. The block kernels are in
 * pass_hessian.c (χ², JᵀJ, Jᵀr) and pass_gradient.c (χ² and Jᵀr; χ² alone). */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "likelihood/pass_internal.h"
#include "xpcsfit/dist.h"

void xf_pass_run_block(void *ctx, int block)
{
	xf_lik *lik = ctx;
	/* the written-out models' robust losses have their own kernel; a point model's
	 * kernel weighs its points itself (adr/0126) */
	if (lik->loss != XF_LOSS_LINEAR && !lik->pr->model->g1) {
		xf_pass_block_robust(lik, block);
		return;
	}
	lik->model_block(lik, block);
}

void xf_accum_add(const xf_problem *pr, xf_accum *total, const xf_accum *a)
{
	size_t n_phi = (size_t)pr->n_phi;
	total->chi2 += a->chi2;
	total->g1sq += a->g1sq;
	for (int m = 0; m < XF_N_PHYS * XF_N_PHYS; m++)
		total->hpp[m] += a->hpp[m];
	for (int m = 0; m < XF_N_PHYS; m++)
		total->bp[m] += a->bp[m];
	for (size_t m = 0; m < n_phi * XF_N_PHYS; m++) {
		total->pc[m] += a->pc[m];
		total->po[m] += a->po[m];
	}
	for (size_t m = 0; m < n_phi * 5; m++)
		total->scc[m] += a->scc[m];
	for (size_t m = 0; m < n_phi * XF_N_PHYS; m++)
		total->pr[m] += a->pr[m];
}

/* Reduce the block slots in block order into the total. Several rings (adr/0064): each
 * ring's blocks into its own sum, in block order, then the rings' sums in ring order, so
 * the joint pass is bitwise the sum of the single-ring passes; a block leaves the slots
 * of other rings at 0, and x + 0 is x. */
void xf_pass_reduce_slots(xf_lik *lik, xf_accum *total)
{
	const xf_problem *pr = lik->pr;
	accum_clear(pr, total);
	if (pr->n_rings == 1) {
		for (int blk = 0; blk < lik->n_blocks; blk++)
			xf_accum_add(pr, total, &lik->slots[blk]);
		return;
	}
	xf_accum *ring = &lik->slots[lik->n_blocks + 1];
	for (int r = 0; r < pr->n_rings; r++) {
		accum_clear(pr, ring);
		for (int k = 0; k < lik->blocks_per_ring; k++)
			xf_accum_add(pr, ring, &lik->slots[r * lik->blocks_per_ring + k]);
		xf_accum_add(pr, total, ring);
	}
}

/* The blocks of a pass on the ranks, the pool or inline, reduced into total; 0, or −1
 * when the rank exchange failed. */
static int run_blocks(xf_lik *lik, xf_accum *total)
{
	if (lik->dist_ranks) {
		if (xf_pass_dist_run(lik, xf_pass_run_block))
			return -1;
	} else if (lik->pool)
		xf_pool_run(lik->pool, lik->n_blocks, xf_pass_run_block, lik);
	else
		for (int blk = 0; blk < lik->n_blocks; blk++)
			xf_pass_run_block(lik, blk);
	xf_pass_reduce_slots(lik, total);
	return 0;
}

/* b over [physical, contrast coefs, offset coefs]. */
static void assemble_gradient(const xf_problem *pr, const xf_accum *t, double *b)
{
	int np = pr->n_phys, nb = pr->n_basis;
	double w = 1.0 / (pr->sigma * pr->sigma);
	for (int m = 0; m < np; m++)
		b[m] = t->bp[m] * w;
	for (int k = 0; k < nb; k++) {
		double bc = 0.0, bo = 0.0;
		for (int p = 0; p < pr->n_phi; p++) {
			double bpk = pr->basis[(size_t)p * nb + k];
			bc += bpk * t->bc[p];
			bo += bpk * t->bo[p];
		}
		b[np + k] = bc * w;
		b[np + nb + k] = bo * w;
	}
}

/* The scaling block of JᵀJ (upper triangle) and of b into h (leading dimension ld) and
 * b, coefficient k of a quantity at row/column off + k (contrast) and off + nb + k
 * (offset): the full pass's block (off = n_phys) and the scaling pass's (off = 0), the
 * same sums in the same order. */
static void scaling_block(const xf_problem *pr, const xf_accum *t, double *h, int ld, int off,
			  double *b)
{
	int nb = pr->n_basis;
	double w = 1.0 / (pr->sigma * pr->sigma);
	for (int k = 0; k < nb; k++) {
		int ck = off + k, ok = off + nb + k;
		double bc = 0.0, bo = 0.0;
		for (int p = 0; p < pr->n_phi; p++) {
			double bpk = pr->basis[(size_t)p * nb + k];
			bc += bpk * t->bc[p];
			bo += bpk * t->bo[p];
			for (int l = 0; l < nb; l++) {
				double bb = bpk * pr->basis[(size_t)p * nb + l] * w;
				if (l >= k) {
					h[(size_t)ck * ld + off + l] += bb * t->scc[p];
					h[(size_t)ok * ld + off + nb + l] += bb * t->soo[p];
				}
				h[(size_t)ck * ld + off + nb + l] += bb * t->sco[p];
			}
		}
		b[ck] = bc * w;
		b[ok] = bo * w;
	}
}

static void mirror_upper(double *h, int n)
{
	for (int m = 0; m < n; m++)
		for (int l = m + 1; l < n; l++)
			h[l * n + m] = h[m * n + l];
}

/* Assemble the full JᵀJ and b over [physical, contrast coefs, offset coefs]. */
static void assemble(const xf_problem *pr, const xf_accum *t, double *jtj, double *b)
{
	int np = pr->n_phys, nb = pr->n_basis, nf = pr->n_full;
	double w = 1.0 / (pr->sigma * pr->sigma);
	memset(jtj, 0, sizeof(double) * (size_t)nf * nf);
	for (int m = 0; m < np; m++) {
		for (int l = m; l < np; l++)
			jtj[m * nf + l] = t->hpp[m * XF_N_PHYS + l] * w;
		b[m] = t->bp[m] * w;
	}
	for (int k = 0; k < nb; k++) /* the physical × scaling blocks */
		for (int p = 0; p < pr->n_phi; p++) {
			double bpk = pr->basis[(size_t)p * nb + k];
			for (int m = 0; m < np; m++) {
				jtj[m * nf + np + k] += bpk * t->pc[(size_t)p * XF_N_PHYS + m] * w;
				jtj[m * nf + np + nb + k] +=
					bpk * t->po[(size_t)p * XF_N_PHYS + m] * w;
			}
		}
	scaling_block(pr, t, jtj, nf, np, b);
	mirror_upper(jtj, nf);
}

void xf_pass_scaling_out(const xf_problem *pr, const xf_accum *total, double *h_ss, double *b_s)
{
	int ns = 2 * pr->n_basis;
	memset(h_ss, 0, sizeof(double) * (size_t)ns * ns);
	scaling_block(pr, total, h_ss, ns, 0, b_s);
	mirror_upper(h_ss, ns);
}

int xf_lik_eval_scaling(xf_lik *lik, const double *x, double *chi2, double *h_ss, double *b_s)
{
	const xf_problem *pr = lik->pr;
	if (lik->loss != XF_LOSS_LINEAR) /* the Gaussian likelihood only */
		return -1;
	xf_pass_prepare(lik, x);
	xf_accum *total = &lik->slots[lik->n_blocks];
	/* the device has no scaling level: its JᵀJ pass holds the scaling sums (slot.h),
	 * in the CPU's layout; a failed device pass reruns here at the scaling level */
	lik->level = XF_PASS_HESSIAN;
	int on_gpu = lik->gpu && !xf_pass_gpu_run(lik, total);
	lik->level = XF_PASS_SCALING;
	if (!on_gpu && run_blocks(lik, total)) {
		*chi2 = NAN;
		return -1;
	}
	*chi2 = total->chi2 / (pr->sigma * pr->sigma);
	if (!isfinite(*chi2))
		return -1;
	xf_pass_scaling_out(pr, total, h_ss, b_s);
	return 0;
}

int xf_lik_eval_collapse(xf_lik *lik, const double *x, double *chi2, double *h_ss, double *b_s,
			 double *angle)
{
	const xf_problem *pr = lik->pr;
	/* the device's slots have no per-angle Σ res·∂(g1²): the caller makes a scaling
	 * pass and a full pass instead (cmc/collapse.c) */
	if (lik->loss != XF_LOSS_LINEAR || lik->gpu)
		return 1;
	xf_pass_prepare(lik, x);
	lik->level = XF_PASS_COLLAPSE;
	xf_accum *total = &lik->slots[lik->n_blocks];
	if (run_blocks(lik, total)) {
		*chi2 = NAN;
		return -1;
	}
	double w = 1.0 / (pr->sigma * pr->sigma);
	*chi2 = total->chi2 * w;
	if (!isfinite(*chi2))
		return -1;
	int np = pr->n_phys;
	xf_pass_scaling_out(pr, total, h_ss, b_s);
	for (int p = 0; p < pr->n_phi; p++) {
		double *row = angle + (size_t)p * 3 * np;
		for (int m = 0; m < np; m++) {
			row[m] = total->pr[(size_t)p * XF_N_PHYS + m] * w;
			row[np + m] = total->pc[(size_t)p * XF_N_PHYS + m] * w;
			row[2 * np + m] = total->po[(size_t)p * XF_N_PHYS + m] * w;
		}
	}
	return 0;
}

int xf_lik_angle_sums(const xf_lik *lik, double *gg, double *dg)
{
	const xf_problem *pr = lik->pr;
	const xf_accum *t = &lik->slots[lik->n_blocks];
	int np = pr->n_phys;
	double w = 1.0 / (pr->sigma * pr->sigma);
	for (int p = 0; p < pr->n_phi; p++) {
		double con = lik->contrast[p];
		if (!(con != 0.0))
			return -1;
		for (int m = 0; m < np; m++) {
			gg[(size_t)p * np + m] = t->pc[(size_t)p * XF_N_PHYS + m] * w / con;
			dg[(size_t)p * np + m] = t->po[(size_t)p * XF_N_PHYS + m] * w / con;
		}
	}
	return 0;
}

int xf_pass_phase_alloc(xf_lik *lik)
{
	size_t n = (size_t)lik->pr->n_phi * (size_t)lik->pr->ds->n_frames;
	const int shear = lik->pr->model->shear;
	lik->phase_sin = shear ? malloc(sizeof(double) * n) : NULL;
	lik->phase_cos = shear ? malloc(sizeof(double) * n) : NULL;
	return shear && (!lik->phase_sin || !lik->phase_cos) ? -1 : 0;
}

/* Each slot's shear phase at each frame, θ_p(k) = a·(s·C^γ_k)·cos_p (a = π for
 * pnas2024, 1 for homodyne; s of the slot's ring), as its sin and cos: the kernel takes
 * the sin and cos of a pair's phase, a·s·I^γ·cos_p with I^γ ≈ |C^γ_i − C^γ_j|, from
 * θ_p(i) − θ_p(j) by the difference formulas — n_phi · n_frames sincos a pass instead of
 * one a point (adr/0089). */
static void phase_tables(xf_lik *lik)
{
	const xf_problem *pr = lik->pr;
	const int n = lik->frames.n;
	const double a = pr->grid.shear_model == XF_SHEAR_PNAS2024 ? M_PI : 1.0;
	for (int ring = 0; ring < pr->n_rings; ring++) {
		xf_frames f = lik->frames;
		if (pr->n_rings > 1)
			xf_frames_set_q(&f, &pr->grid, pr->ring_q[ring]);
		for (int p = pr->ring_first[ring]; p < pr->ring_first[ring + 1]; p++) {
			double *sn = lik->phase_sin + (size_t)p * n,
			       *cs = lik->phase_cos + (size_t)p * n;
			for (int k = 0; k < n; k++)
				sincos(a * (f.s * f.cg[k] * lik->cos_a[p]), sn + k, cs + k);
		}
	}
}

void xf_pass_prepare(xf_lik *lik, const double *x)
{
	const xf_problem *pr = lik->pr;
	lik->x = x;
	if (!pr->model->g1) /* a point model's kernel needs no frame integrals */
		xf_frames_compute(&lik->frames, &pr->grid, x);
	xf_problem_scaling(pr, x, lik->contrast, lik->offset);
	if (!pr->model->shear)
		return;
	for (int p = 0; p < pr->n_phi; p++) {
		double angle = (x[XF_P_PHI0] - lik->ds->phi_deg[p]) * XF_DEG2RAD;
		lik->cos_a[p] = cos(angle);
		lik->sin_a[p] = sin(angle);
	}
	phase_tables(lik);
}

int xf_lik_eval(xf_lik *lik, const double *x, xf_lik_out *out)
{
	const xf_problem *pr = lik->pr;
	xf_pass_prepare(lik, x);
	lik->level = out->jtj ? XF_PASS_HESSIAN : out->b ? XF_PASS_GRADIENT : XF_PASS_VALUE;
	assert(lik->n_blocks >= 1);
	xf_accum *total = &lik->slots[lik->n_blocks];
	/* the GPU's total has the CPU's layout; a failed GPU pass reruns here */
	if (!(lik->gpu && !xf_pass_gpu_run(lik, total)) && run_blocks(lik, total)) {
		out->chi2 = NAN;
		return -1;
	}
	out->chi2 = total->chi2 / (pr->sigma * pr->sigma);
	out->mean_g1sq = lik->n_points ? total->g1sq / (double)lik->n_points : 0.0;
	if (!isfinite(out->chi2))
		return -1;
	if (out->jtj)
		assemble(pr, total, out->jtj, out->b);
	else if (out->b)
		assemble_gradient(pr, total, out->b);
	return 0;
}

/* The data of an explicit pair set, angle by angle in the set's pair order
 * (pass_internal.h). */
static int gather(xf_lik *lik)
{
	const xf_pairset *ps = lik->ps;
	size_t n = (size_t)lik->ds->n_frames, na = (size_t)lik->pr->n_phi, np = ps->n_pairs;
	if (!ps->pair_i)
		return 0;
	lik->gathered = malloc(sizeof(double) * np * na);
	if (!lik->gathered)
		return -1;
	/* a band (adr/0027) fills the pairs it holds, a run of the sorted list; each angle's
	 * column is then made whole from the ranks' runs, in rank order */
	size_t k0 = np, k1 = np;
	for (size_t k = 0; k < np; k++) { /* each pair's index once, for every angle */
		size_t idx = xf_packed_index(n, ps->pair_i[k], ps->pair_j[k]);
		if (lik->ds->band && !xf_dataset_holds(lik->ds, idx))
			continue;
		k0 = k < k0 ? k : k0;
		k1 = k + 1;
		for (size_t p = 0; p < na; p++)
			lik->gathered[p * np + k] = xf_dataset_c2(lik->ds, (int)p, idx);
	}
	if (!lik->ds->band)
		return 0;
	if (k0 == np)
		k0 = k1 = 0;
	for (size_t p = 0; p < na; p++)
		if (xf_dist_allgather_run(lik->gathered + p * np, k0, k1 - k0, np))
			return -1;
	return 0;
}

/* First pair of each block of an implicit (all pairs) set, walking the rows. */
static int make_blocks(xf_lik *lik)
{
	size_t n = (size_t)lik->ps->n_frames;
	lik->blocks_per_ring =
		(int)((lik->ps->n_pairs + XF_PAIRS_PER_BLOCK - 1) / XF_PAIRS_PER_BLOCK);
	lik->n_blocks = lik->blocks_per_ring * lik->pr->n_rings;
	if (lik->ps->pair_i)
		return 0;
	int n_pair_blocks = lik->blocks_per_ring;
	lik->block_i = malloc(sizeof(int) * (size_t)(n_pair_blocks + 1));
	lik->block_j = malloc(sizeof(int) * (size_t)(n_pair_blocks + 1));
	if (!lik->block_i || !lik->block_j)
		return -1;
	size_t pair = 0;
	int blk = 0;
	for (size_t i = 1; i + 1 < n && blk < n_pair_blocks; i++) {
		size_t row = n - 1 - i; /* pairs (i, i+1..n−1) */
		while (blk < n_pair_blocks && (size_t)blk * XF_PAIRS_PER_BLOCK < pair + row) {
			size_t offset = (size_t)blk * XF_PAIRS_PER_BLOCK - pair;
			lik->block_i[blk] = (int)i;
			lik->block_j[blk] = (int)(i + 1 + offset);
			blk++;
		}
		pair += row;
	}
	assert(blk == n_pair_blocks); /* every block starts at a pair of the set */
	return 0;
}

int xf_pass_alloc_slots(xf_lik *lik)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	size_t per_slot = n_phi * (3 * XF_N_PHYS + 5);
	/* + the total, + one ring sum when there are several rings */
	size_t n_slots = (size_t)lik->n_blocks + 1 + (lik->pr->n_rings > 1);
	lik->slots = calloc(n_slots, sizeof(xf_accum));
	lik->slot_store = malloc(sizeof(double) * per_slot * n_slots);
	if (!lik->slots || !lik->slot_store)
		return -1;
	for (size_t s = 0; s < n_slots; s++) {
		double *p = lik->slot_store + s * per_slot;
		xf_accum *a = &lik->slots[s];
		a->pc = p;
		a->po = p + n_phi * XF_N_PHYS;
		a->scc = p + n_phi * 2 * XF_N_PHYS; /* scc, sco, soo, bc, bo are contiguous */
		a->sco = a->scc + n_phi;
		a->soo = a->sco + n_phi;
		a->bc = a->soo + n_phi;
		a->bo = a->bc + n_phi;
		a->pr = a->bo + n_phi;
	}
	return 0;
}

xf_lik *xf_lik_create(const xf_problem *pr, const xf_pairset *ps, xf_pool *pool, xf_error *err)
{
	if (ps->n_pairs == 0 || ps->n_frames != pr->ds->n_frames) {
		xf_fail(err, XF_ERR_DATA, "no frame pairs to evaluate (%zu pairs of %d frames)",
			ps->n_pairs, ps->n_frames);
		return NULL;
	}
	xf_lik *lik = calloc(1, sizeof *lik);
	if (!lik) {
		xf_fail(err, XF_ERR_NOMEM, "out of memory setting up the likelihood");
		return NULL;
	}
	size_t na = (size_t)pr->n_phi;
	assert(na > 0 && pr->n_full == pr->n_phys + 2 * pr->n_basis);
	assert(ps->n_pairs <= xf_fitted_pairs((size_t)ps->n_frames));
	lik->pr = pr;
	lik->ds = pr->ds;
	lik->ps = ps;
	lik->pool = pool;
	lik->n_points = ps->n_pairs * na;
	lik->model_block = xf_pass_kernel_of(pr->mode);
	lik->contrast = malloc(sizeof(double) * na);
	lik->offset = malloc(sizeof(double) * na);
	lik->cos_a = malloc(sizeof(double) * na);
	lik->sin_a = malloc(sizeof(double) * na);
	if (!lik->model_block || !lik->contrast || !lik->offset || !lik->cos_a || !lik->sin_a ||
	    xf_pass_phase_alloc(lik) || gather(lik) || make_blocks(lik) ||
	    xf_pass_alloc_slots(lik) ||
	    xf_frames_alloc(&lik->frames, pr->ds->n_frames, pr->model->shear)) {
		xf_lik_destroy(lik);
		xf_fail(err, XF_ERR_NOMEM,
			"out of memory setting up the likelihood (%d angles, %zu pairs)", pr->n_phi,
			ps->n_pairs);
		return NULL;
	}
	return lik;
}

void xf_lik_destroy(xf_lik *lik)
{
	if (!lik)
		return;
	free(lik->contrast);
	free(lik->offset);
	free(lik->cos_a);
	free(lik->sin_a);
	free(lik->phase_sin);
	free(lik->phase_cos);
	free(lik->block_i);
	free(lik->block_j);
	free(lik->slots);
	free(lik->slot_store);
	free(lik->gathered);
	xf_pass_batch_free(lik);
	xf_pass_dist_free(lik);
	xf_pass_gpu_free(lik);
	xf_frames_free(&lik->frames);
	free(lik);
}

void xf_lik_set_loss(xf_lik *lik, xf_loss loss, double f_scale)
{
	assert(f_scale > 0.0);
	lik->loss = loss;
	lik->f_scale = f_scale;
}

size_t xf_lik_points(const xf_lik *lik)
{
	return lik->n_points;
}
