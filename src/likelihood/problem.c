/* problem.c — the resolved description of a fit (likelihood.h): the per-angle scaling
 * chosen for the data, the parameter layout with names, bounds, priors and starts. Built
 * from a problem request (request.h) and the dataset; it never sees the config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernel.h"
#include "xpcsfit/likelihood.h"
#include "util/key_names.h"

/* Which per-angle mode applies (nlsq.md): static uses individual unless
 * anti_degeneracy.enable; auto is shared above the threshold; fourier needs 2K+1 angles.
 * Several rings (adr/0064): the mode applies within each ring, decided on the ring with
 * the fewest angles (n_phi here), so every ring has the same kind of coefficients. */
static xf_scaling_mode choose_scaling(const xf_request *req, int n_phi)
{
	xf_scaling_mode m = req->per_angle_mode;
	if (xf_model_record_of(req->mode)->scaling_individual_by_default && !req->anti_degeneracy)
		return XF_SCALING_INDIVIDUAL;
	if (m == XF_SCALING_AUTO)
		return n_phi >= req->constant_scaling_threshold ? XF_SCALING_AUTO
								: XF_SCALING_INDIVIDUAL;
	if (m == XF_SCALING_FOURIER && n_phi < 2 * req->fourier_order + 1) {
		xf_warn("per_angle_mode fourier needs at least %d angles (fourier_order %d), "
			"%d kept: using individual",
			2 * req->fourier_order + 1, req->fourier_order, n_phi);
		return XF_SCALING_INDIVIDUAL;
	}
	return m;
}

/* Angles of the ring with the fewest. */
static int fewest_angles(const xf_problem *pr)
{
	int fewest = pr->n_phi;
	for (int r = 0; r < pr->n_rings; r++) {
		int n = pr->ring_first[r + 1] - pr->ring_first[r];
		fewest = n < fewest ? n : fewest;
	}
	return fewest;
}

/* Coefficients per scaling quantity: individual one per slot, every other mode its own
 * count in each ring (the basis is block-diagonal over the rings). */
static int count_coefs(const xf_problem *pr, int fourier_order)
{
	if (pr->scaling->mode == XF_SCALING_INDIVIDUAL)
		return pr->n_phi;
	int n = 0;
	for (int r = 0; r < pr->n_rings; r++)
		n += pr->scaling->n_coefs(pr->ring_first[r + 1] - pr->ring_first[r], fourier_order);
	return n;
}

/* The coefficient groups of the scaling: group g holds coefficients [first[g],
 * first[g + 1]) of a quantity for slots [slot0[g], slot0[g] + n_slots[g]). One group per
 * ring, or one over every slot for individual (its names count the slots, as for one
 * ring). */
typedef struct xf_coef_groups {
	int n;
	int *slot0, *n_slots, *first; /* [n], [n], [n + 1] */
	int *store;
} xf_coef_groups;

static int coef_groups(const xf_problem *pr, int fourier_order, xf_coef_groups *cg)
{
	cg->n = pr->scaling->mode == XF_SCALING_INDIVIDUAL ? 1 : pr->n_rings;
	cg->store = malloc(sizeof(int) * (3 * (size_t)cg->n + 1));
	if (!cg->store)
		return -1;
	cg->slot0 = cg->store;
	cg->n_slots = cg->store + cg->n;
	cg->first = cg->store + 2 * cg->n;
	cg->first[0] = 0;
	for (int g = 0; g < cg->n; g++) {
		cg->slot0[g] = cg->n == 1 ? 0 : pr->ring_first[g];
		cg->n_slots[g] = cg->n == 1 ? pr->n_phi : pr->ring_first[g + 1] - cg->slot0[g];
		cg->first[g + 1] =
			cg->first[g] +
			(cg->n == 1 ? pr->n_basis
				    : pr->scaling->n_coefs(cg->n_slots[g], fourier_order));
	}
	return 0;
}

/* Per-angle starts of one quantity: the request's per_angle_scaling (1 or n_phi values) or
 * the quantile estimates. */
static int angle_starts(const xf_problem *pr, const char *quantity, int n_given,
			const double *given, const double *estimate, double *out, xf_error *err)
{
	if (n_given != 0 && n_given != 1 && n_given != pr->n_phi)
		return xf_fail(err, XF_ERR_CONFIG,
			       XF_KEY_SCALING_STARTS
			       ".%s: %d values given, expected 1 or %d (one per angle kept)",
			       quantity, n_given, pr->n_phi);
	for (int a = 0; a < pr->n_phi; a++)
		out[a] = n_given == 0 ? estimate[a] : given[n_given == 1 ? 0 : a];
	return 0;
}

/* Name of a coefficient of a group: the mode's name, with the ring (_r0, _r1, ...) when
 * several rings each have their own coefficients (adr/0064). */
static void coef_name(int n_groups, int group, char *name, size_t size)
{
	size_t len = strlen(name);
	if (n_groups > 1)
		snprintf(name + len, size - len, "_r%d", group);
}

/* Names, bounds, priors and starts of the scaling coefficients, and the held part. */
static int scaling_layout(xf_problem *pr, const xf_request *req, const xf_coef_groups *cg,
			  xf_error *err)
{
	const char *quantity[2] = { "contrast", "offset" };
	const xf_bound *bound[2] = { &req->bounds[XF_P_CONTRAST], &req->bounds[XF_P_OFFSET] };
	const int n_given[2] = { req->n_contrast_start, req->n_offset_start };
	const double *given[2] = { req->contrast_start, req->offset_start };
	const double *estimate[2] = { pr->quantile_contrast, pr->quantile_offset };
	double *base[2] = { pr->base_contrast, pr->base_offset };
	double *start = malloc(sizeof(double) * (size_t)pr->n_phi);
	if (!start)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory building the scaling layout");
	const int *slot0 = cg->slot0, *n_slots = cg->n_slots, *first = cg->first;
	int rc = 0;
	for (int q = 0; q < 2 && !rc; q++) {
		rc = angle_starts(pr, quantity[q], n_given[q], given[q], estimate[q], start, err);
		if (rc)
			break;
		for (int a = 0; a < pr->n_phi; a++)
			base[q][a] = pr->scaling->held_at_start ? start[a] : 0.0;
		for (int g = 0; g < cg->n && !rc; g++)
			for (int k = 0; k < first[g + 1] - first[g]; k++) {
				int idx = pr->n_phys + q * pr->n_basis + first[g] + k;
				char name[64];
				pr->scaling->coef(quantity[q], k, bound[q], start + slot0[g],
						  n_slots[g], name, sizeof name, &pr->lower[idx],
						  &pr->upper[idx], &pr->start[idx],
						  &pr->prior_mu[idx], &pr->prior_sigma[idx]);
				coef_name(cg->n, g, name, sizeof name);
				pr->names[idx] = strdup(name);
				pr->scale[idx] = pr->upper[idx] - pr->lower[idx];
				if (!pr->names[idx]) {
					rc = xf_fail(err, XF_ERR_NOMEM, "out of memory");
					break;
				}
			}
	}
	free(start);
	return rc;
}

/* The basis rows: each slot's row over its group's coefficients, zeros elsewhere (the
 * array is zeroed when allocated). */
static void basis_rows(xf_problem *pr, const xf_coef_groups *cg)
{
	for (int g = 0; g < cg->n; g++)
		for (int a = 0; a < cg->n_slots[g]; a++) {
			int slot = cg->slot0[g] + a;
			pr->scaling->basis_row(
				a + (cg->n == 1 ? cg->slot0[g] : 0),
				pr->ds->phi_deg[slot] * XF_DEG2RAD, cg->first[g + 1] - cg->first[g],
				pr->basis + (size_t)slot * pr->n_basis + cg->first[g]);
		}
}

/* The rings of the slots (adr/0064): runs of equal q in req->slot_q, or one ring at the
 * dataset's q. A q that comes back after another ring's slots is refused: the pass walks
 * a ring's slots as one range. */
static int slot_rings(xf_problem *pr, const xf_request *req, xf_error *err)
{
	int n = pr->n_phi;
	pr->ring_first = malloc(sizeof(int) * ((size_t)n + 1));
	pr->ring_q = malloc(sizeof(double) * (size_t)n);
	pr->slot_q = malloc(sizeof(double) * (size_t)n);
	pr->slot_ring = malloc(sizeof(int) * (size_t)n);
	if (!pr->ring_first || !pr->ring_q || !pr->slot_q || !pr->slot_ring)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory setting up the fit (%d angles)",
			       n);
	if (req->n_slot_q != 0 && req->n_slot_q != n)
		return xf_fail(err, XF_ERR_DATA, "%d q values given for %d angle slots",
			       req->n_slot_q, n);
	pr->n_rings = 0;
	for (int a = 0; a < n; a++) {
		double q = req->n_slot_q ? req->slot_q[a] : pr->ds->q;
		if (!(q > 0.0) || !isfinite(q))
			return xf_fail(err, XF_ERR_DATA, "q of angle slot %d is %g, not > 0", a, q);
		if (a == 0 || q != pr->slot_q[a - 1]) {
			for (int r = 0; r < pr->n_rings; r++)
				if (pr->ring_q[r] == q)
					return xf_fail(err, XF_ERR_DATA,
						       "the angle slots of q %g are not side by "
						       "side (slot %d)",
						       q, a);
			pr->ring_first[pr->n_rings] = a;
			pr->ring_q[pr->n_rings++] = q;
		}
		pr->slot_q[a] = q;
		pr->slot_ring[a] = pr->n_rings - 1;
	}
	pr->ring_first[pr->n_rings] = n;
	pr->grid.q = pr->ring_q[0];
	return 0;
}

static int alloc_arrays(xf_problem *pr)
{
	size_t nf = (size_t)pr->n_full, na = (size_t)pr->n_phi;
	pr->names = calloc(nf, sizeof(char *));
	pr->lower = malloc(sizeof(double) * nf);
	pr->upper = malloc(sizeof(double) * nf);
	pr->prior_mu = malloc(sizeof(double) * nf);
	pr->prior_sigma = malloc(sizeof(double) * nf);
	pr->scale = malloc(sizeof(double) * nf);
	pr->start = malloc(sizeof(double) * nf);
	pr->fixed = calloc(nf, sizeof(int));
	pr->basis = calloc(na * (pr->n_basis ? (size_t)pr->n_basis : 1), sizeof(double));
	pr->base_contrast = malloc(sizeof(double) * na);
	pr->base_offset = malloc(sizeof(double) * na);
	pr->quantile_contrast = malloc(sizeof(double) * na);
	pr->quantile_offset = malloc(sizeof(double) * na);
	return !(pr->names && pr->lower && pr->upper && pr->prior_mu && pr->prior_sigma &&
		 pr->scale && pr->start && pr->fixed && pr->basis && pr->base_contrast &&
		 pr->base_offset && pr->quantile_contrast && pr->quantile_offset);
}

int xf_problem_build(xf_problem *pr, const xf_request *req, const xf_dataset *ds, xf_error *err)
{
	memset(pr, 0, sizeof *pr);
	if (ds->n_frames < 3 || ds->n_phi < 1)
		return xf_fail(err, XF_ERR_DATA, "nothing to fit: %d angles, %d frames", ds->n_phi,
			       ds->n_frames);
	pr->ds = ds;
	pr->mode = req->mode;
	pr->model = xf_model_record_of(req->mode);
	pr->grid = (xf_model_grid){ req->mode, req->shear_model, ds->n_frames, ds->dt_s,
				    ds->q,     req->gap_A };
	pr->n_phys = xf_mode_n_phys(req->mode);
	pr->n_phi = ds->n_phi;
	pr->n_points = ds->n_points;
	pr->has_sigma = req->has_sigma;
	pr->sigma = req->has_sigma ? req->sigma : 1.0;
	int rc = slot_rings(pr, req, err);
	if (rc) {
		xf_problem_free(pr);
		return rc;
	}
	pr->scaling = xf_scaling_type_of(choose_scaling(req, fewest_angles(pr)));
	pr->n_basis = count_coefs(pr, req->fourier_order);
	pr->n_full = pr->n_phys + 2 * pr->n_basis;
	if (alloc_arrays(pr)) {
		xf_problem_free(pr);
		return xf_fail(err, XF_ERR_NOMEM,
			       "out of memory setting up the fit (%d angles, %d frames)", ds->n_phi,
			       ds->n_frames);
	}
	for (int k = 0; k < pr->n_phys; k++) {
		const xf_bound *b = &req->bounds[k];
		pr->names[k] = strdup(xf_model_param_name(pr->model, k));
		pr->lower[k] = b->lower;
		pr->upper[k] = b->upper;
		pr->prior_mu[k] = b->prior_mu;
		pr->prior_sigma[k] = b->prior_sigma;
		pr->scale[k] = b->upper - b->lower;
		pr->start[k] = req->start[k];
		pr->fixed[k] = req->fixed[k];
		pr->value_given[k] = req->value_given[k] || req->fixed[k];
		if (!pr->names[k]) {
			xf_problem_free(pr);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory");
		}
	}
	pr->angle_bounds[0] = req->bounds[XF_P_CONTRAST];
	pr->angle_bounds[1] = req->bounds[XF_P_OFFSET];
	xf_quantile_scaling(ds, &pr->angle_bounds[0], &pr->angle_bounds[1], pr->quantile_contrast,
			    pr->quantile_offset);
	xf_coef_groups cg;
	if (coef_groups(pr, req->fourier_order, &cg)) {
		xf_problem_free(pr);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory setting up the fit");
	}
	if (pr->n_basis > 0)
		basis_rows(pr, &cg);
	rc = scaling_layout(pr, req, &cg, err);
	free(cg.store);
	if (rc)
		xf_problem_free(pr);
	return rc;
}

void xf_problem_free(xf_problem *pr)
{
	if (pr->names)
		for (int k = 0; k < pr->n_full; k++)
			free(pr->names[k]);
	free(pr->names);
	free(pr->lower);
	free(pr->upper);
	free(pr->prior_mu);
	free(pr->prior_sigma);
	free(pr->scale);
	free(pr->start);
	free(pr->fixed);
	free(pr->basis);
	free(pr->base_contrast);
	free(pr->base_offset);
	free(pr->quantile_contrast);
	free(pr->quantile_offset);
	free(pr->ring_first);
	free(pr->ring_q);
	free(pr->slot_q);
	free(pr->slot_ring);
	memset(pr, 0, sizeof *pr);
}

void xf_problem_scaling(const xf_problem *pr, const double *x, double *contrast, double *offset)
{
	const double *cc = x + pr->n_phys, *oc = x + pr->n_phys + pr->n_basis;
	for (int p = 0; p < pr->n_phi; p++) {
		double c = pr->base_contrast[p], o = pr->base_offset[p];
		const double *row = pr->basis + (size_t)p * pr->n_basis;
		for (int k = 0; k < pr->n_basis; k++) {
			c += row[k] * cc[k];
			o += row[k] * oc[k];
		}
		contrast[p] = c;
		offset[p] = o;
	}
}
