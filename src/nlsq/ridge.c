/* ridge.c — what the data identify when a fit ends on a ridge (ridge.h, adr/0047).
 *
 * The Jacobi-scaled JᵀJ is split by its eigenvalues: directions below XF_RIDGE_RATIO of
 * the largest are ill-determined, the rest well-determined. The parameters with a large
 * share in the ill subspace are not identified one by one; the linear combinations of
 * them that do not change along the ill directions are, and their sd comes from the
 * well-determined directions alone. The combinations are written in reduced row-echelon
 * form in the canonical parameter order, so each starts with its own parameter (its
 * coefficient 1) and the parameters left over are the ones to fix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/covariance.h"
#include "nlsq/ridge.h"
#include "util/numfmt.h"

#define XF_RREF_TOL 1e-8 /* pivots below this (the projector's entries are ≤ 1) vanish */
/* a scaled coefficient below this is no term: the ill subspace is known to about
 * ε/XF_RIDGE_RATIO, so smaller ones are rounding */
#define XF_TERM_TOL 1e-6
#define XF_COEF_ONE 5e-4 /* a coefficient this close to ±1 is written without a number */

typedef struct ridge_work {
	xf_scaled_eigen se;
	int n_ill;     /* ill-determined directions: columns 0 … n_ill−1 (ascending) */
	int s;	       /* parameters not identified one by one */
	int *set;      /* [s] their rows p in se */
	double *basis; /* [s×s] orthonormal rows of the ill subspace restricted to the set */
	double *rref;  /* [s×s] the identified combinations in scaled coordinates */
	int *pivot;    /* [s] pivot column of each rref row, −1: none */
} ridge_work;

static void work_free(ridge_work *w)
{
	xf_scaled_eigen_free(&w->se);
	free(w->set);
	free(w->basis);
	free(w->rref);
	free(w->pivot);
}

/* The ill-determined directions and the parameters with at least XF_WEAK_COMPONENT of
 * their unit vector in that subspace. */
static int split(ridge_work *w)
{
	int m = w->se.m;
	double emax = w->se.ev[m - 1];
	w->n_ill = 0;
	while (w->n_ill < m && !(w->se.ev[w->n_ill] >= XF_RIDGE_RATIO * emax))
		w->n_ill++;
	w->set = malloc(sizeof(int) * (size_t)m);
	w->basis = calloc((size_t)m * m, sizeof(double));
	w->rref = calloc((size_t)m * m, sizeof(double));
	w->pivot = malloc(sizeof(int) * (size_t)m);
	if (!w->set || !w->basis || !w->rref || !w->pivot)
		return -1;
	w->s = 0;
	for (int p = 0; p < m; p++) {
		double share = 0.0;
		for (int e = 0; e < w->n_ill; e++)
			share += w->se.vec[p * m + e] * w->se.vec[p * m + e];
		if (sqrt(share) >= XF_WEAK_COMPONENT)
			w->set[w->s++] = p;
	}
	return 0;
}

/* Orthonormal rows spanning the ill directions restricted to the set (Gram-Schmidt);
 * returns their number, the rank of the restriction. */
static int ill_basis(ridge_work *w)
{
	int m = w->se.m, s = w->s, r = 0;
	for (int e = 0; e < w->n_ill; e++) {
		double *row = w->basis + (size_t)r * s;
		for (int j = 0; j < s; j++)
			row[j] = w->se.vec[w->set[j] * m + e];
		for (int q = 0; q < r; q++) {
			const double *prev = w->basis + (size_t)q * s;
			double dot = 0.0;
			for (int j = 0; j < s; j++)
				dot += row[j] * prev[j];
			for (int j = 0; j < s; j++)
				row[j] -= dot * prev[j];
		}
		double norm = 0.0;
		for (int j = 0; j < s; j++)
			norm += row[j] * row[j];
		norm = sqrt(norm);
		if (norm < XF_WEAK_COMPONENT)
			continue; /* this direction lies mostly outside the set */
		for (int j = 0; j < s; j++)
			row[j] /= norm;
		r++;
	}
	return r;
}

/* The projector onto the complement of the ill basis, brought to reduced row-echelon form
 * with partial pivoting, column by column in the canonical order; returns its rows. */
static int identified_rows(ridge_work *w, int r)
{
	int s = w->s, rows = 0;
	double *a = w->rref;
	for (int i = 0; i < s; i++)
		for (int j = 0; j < s; j++) {
			double v = i == j ? 1.0 : 0.0;
			for (int q = 0; q < r; q++)
				v -= w->basis[(size_t)q * s + i] * w->basis[(size_t)q * s + j];
			a[(size_t)i * s + j] = v;
		}
	for (int j = 0; j < s && rows < s; j++) {
		int best = rows;
		for (int i = rows + 1; i < s; i++)
			if (fabs(a[(size_t)i * s + j]) > fabs(a[(size_t)best * s + j]))
				best = i;
		if (!(fabs(a[(size_t)best * s + j]) > XF_RREF_TOL))
			continue;
		for (int c = 0; c < s; c++) {
			double t = a[(size_t)best * s + c];
			a[(size_t)best * s + c] = a[(size_t)rows * s + c];
			a[(size_t)rows * s + c] = t;
		}
		double piv = a[(size_t)rows * s + j];
		for (int c = 0; c < s; c++)
			a[(size_t)rows * s + c] /= piv;
		for (int i = 0; i < s; i++) {
			double f = a[(size_t)i * s + j];
			if (i == rows || f == 0.0)
				continue;
			for (int c = 0; c < s; c++)
				a[(size_t)i * s + c] -= f * a[(size_t)rows * s + c];
		}
		w->pivot[rows++] = j;
	}
	return rows;
}

/* "D0 + D_offset", "D0 - 0.5*alpha": a coefficient within XF_COEF_ONE of ±1 unwritten. */
static void combo_text(xf_identified_combo *c)
{
	size_t len = 0, size = sizeof c->text;
	c->text[0] = '\0';
	for (int t = 0; t < c->n_terms && len < size; t++) {
		double v = c->coef[t], a = fabs(v);
		const char *sign = t == 0 ? (v < 0.0 ? "-" : "") : (v < 0.0 ? " - " : " + ");
		int wrote = fabs(a - 1.0) <= XF_COEF_ONE
				    ? snprintf(c->text + len, size - len, "%s%s", sign, c->names[t])
				    : snprintf(c->text + len, size - len, "%s%.4g*%s", sign, a,
					       c->names[t]);
		len += wrote > 0 ? (size_t)wrote : 0;
	}
}

/* One combination from rref row i: coefficients in the parameters (θ = D·z, so a scaled
 * coefficient w_j is w_j/D_j on θ_j), its value at x and its sd over the well-determined
 * directions. */
static int fill_combo(const ridge_work *w, const xf_problem *pr, int i, const double *x,
		      double noise_factor, xf_identified_combo *c)
{
	int s = w->s, m = w->se.m, terms = 0;
	const double *row = w->rref + (size_t)i * s;
	int pj = w->pivot[i];
	double scale = w->se.d[w->set[pj]]; /* the pivot's coefficient becomes 1 */
	for (int j = 0; j < s; j++)
		terms += fabs(row[j]) > XF_TERM_TOL;
	if (terms > XF_IDENTIFIED_TERMS)
		return -1; /* too long to name: not reported rather than cut short */
	c->n_terms = 0;
	c->value = 0.0;
	for (int j = 0; j < s; j++) {
		if (fabs(row[j]) <= XF_TERM_TOL)
			continue;
		int p = w->set[j], k = w->se.idx[p];
		double coef = row[j] / w->se.d[p] * scale;
		snprintf(c->names[c->n_terms], sizeof c->names[0], "%s", pr->names[k]);
		c->coef[c->n_terms++] = coef;
		c->value += coef * x[k];
	}
	double var = 0.0;
	for (int e = w->n_ill; e < m; e++) {
		double proj = 0.0;
		for (int j = 0; j < s; j++)
			proj += row[j] * scale * w->se.vec[w->set[j] * m + e];
		var += proj * proj / w->se.ev[e];
	}
	c->sd = sqrt(var * noise_factor);
	combo_text(c);
	return 0;
}

/* The parameters left without a pivot are the ones to hold: offsets at 0 when every
 * combination's own parameter (its value with the held ones at 0) stays within its bounds
 * (the model without the offset), otherwise at their values. A scaling coefficient is
 * not a --fix name: it is named to hold. */
static void fix_hint(const ridge_work *w, const xf_problem *pr, const double *x, int rows,
		     xf_identified *id)
{
	int s = w->s, zero_ok = 1;
	id->fix[0] = '\0';
	for (int j = 0; j < s; j++) {
		int k = w->se.idx[w->set[j]], pivot = 0;
		for (int i = 0; i < rows; i++)
			pivot |= w->pivot[i] == j;
		if (!pivot && !(pr->lower[k] <= 0.0 && pr->upper[k] >= 0.0))
			zero_ok = 0;
	}
	/* a combination's first term is its own parameter (coefficient 1) */
	for (int i = 0; i < id->n_combos && zero_ok; i++)
		for (int k = 0; k < pr->n_full; k++)
			if (!strcmp(pr->names[k], id->combo[i].names[0]) &&
			    !(id->combo[i].value >= pr->lower[k] &&
			      id->combo[i].value <= pr->upper[k]))
				zero_ok = 0;
	for (int j = 0; j < s; j++) {
		int k = w->se.idx[w->set[j]], pivot = 0;
		for (int i = 0; i < rows; i++)
			pivot |= w->pivot[i] == j;
		if (pivot)
			continue;
		size_t len = strlen(id->fix);
		const char *sep = len ? " " : "";
		int offset = strstr(pr->names[k], "_offset") != NULL;
		if (len >= sizeof id->fix)
			break;
		if (k >= pr->n_phys)
			snprintf(id->fix + len, sizeof id->fix - len, "%shold %s", sep,
				 pr->names[k]);
		else if (offset && zero_ok)
			snprintf(id->fix + len, sizeof id->fix - len, "%s--fix %s=0", sep,
				 pr->names[k]);
		else
			snprintf(id->fix + len, sizeof id->fix - len, "%s--fix %s=%.6g", sep,
				 pr->names[k], x[k]);
	}
}

/* The Gauss-Newton step over the well-determined directions, in standard errors, with
 * the bounds as the convergence check takes them (xf_fit_distance_se): JᵀJ with its
 * ill-determined directions made as stiff as the stiffest one, so that no step goes
 * along them. NAN when out of memory. */
static double well_distance(const ridge_work *w, const xf_problem *pr, const double *x,
			    const double *jtj, const double *b, double chi2)
{
	int n = pr->n_full, m = w->se.m;
	double *h = malloc(sizeof(double) * (size_t)n * n);
	if (!h) {
		xf_note_no_memory();
		return NAN;
	}
	memcpy(h, jtj, sizeof(double) * (size_t)n * n);
	double emax = w->se.ev[m - 1];
	for (int e = 0; e < w->n_ill; e++)
		for (int p = 0; p < m; p++)
			for (int q = 0; q < m; q++)
				h[(size_t)w->se.idx[p] * n + w->se.idx[q]] +=
					(emax - w->se.ev[e]) * w->se.vec[p * m + e] *
					w->se.vec[q * m + e] / (w->se.d[p] * w->se.d[q]);
	double d = xf_fit_distance_se(pr, x, h, b, chi2);
	free(h);
	return d;
}

int xf_ridge_identify(const xf_problem *pr, const int *free_mask, const double *x,
		      const double *jtj, const double *b, double chi2, double noise_factor,
		      xf_identified *id, double *well_se)
{
	ridge_work w;
	memset(&w, 0, sizeof w);
	memset(id, 0, sizeof *id);
	id->ratio_threshold = XF_RIDGE_RATIO;
	*well_se = NAN;
	if (xf_scaled_eigen_of(jtj, pr->n_full, free_mask, &w.se))
		return -1;
	int rc = 0, m = w.se.m;
	if (m == 0 || !(w.se.ev[m - 1] > 0.0))
		goto done;
	id->min_ratio = w.se.ev[0] / w.se.ev[m - 1];
	if ((rc = split(&w)))
		goto done;
	*well_se = well_distance(&w, pr, x, jtj, b, chi2);
	if (w.n_ill == 0 || w.s == 0)
		goto done;
	int rows = identified_rows(&w, ill_basis(&w));
	for (int j = 0; j < w.s && id->n_not_identified < XF_IDENTIFIED_TERMS; j++)
		snprintf(id->not_identified[id->n_not_identified++], sizeof id->not_identified[0],
			 "%s", pr->names[w.se.idx[w.set[j]]]);
	for (int i = 0; i < rows && id->n_combos < XF_IDENTIFIED_MAX; i++)
		if (fill_combo(&w, pr, i, x, noise_factor, &id->combo[id->n_combos]) == 0)
			id->n_combos++;
	if (id->n_combos > 0)
		fix_hint(&w, pr, x, rows, id);
	else
		id->n_not_identified = 0;
done:
	if (rc)
		xf_note_no_memory();
	work_free(&w);
	return rc;
}

/* The free parameters of the fit. */
static int *free_mask_of(const xf_problem *pr)
{
	int *mask = malloc(sizeof(int) * (size_t)pr->n_full);
	for (int k = 0; mask && k < pr->n_full; k++)
		mask[k] = !pr->fixed[k];
	return mask;
}

/* Every free parameter that the data do not inform (checks.c's rule: no effect on the
 * model, or an uncertainty beyond its bound width) is one the ridge leaves unidentified. */
static int explains_all(const xf_problem *pr, const double *jtj, const xf_nlsq_result *res,
			const xf_identified *id)
{
	for (int k = 0; k < pr->n_full; k++) {
		double h = jtj[(size_t)k * pr->n_full + k], width = pr->upper[k] - pr->lower[k];
		if (pr->fixed[k] || (h > 0.0 && res->uncertainties[k] <= width))
			continue;
		int named = 0;
		for (int j = 0; j < id->n_not_identified; j++)
			named |= !strcmp(id->not_identified[j], pr->names[k]);
		if (!named)
			return 0;
	}
	return 1;
}

int xf_ridge_judge(const xf_fit_ctx *ctx, const xf_fit_point *best, xf_nlsq_result *res)
{
	const xf_problem *pr = ctx->pr;
	xf_quality *q = &res->quality;
	if (q->all_informed && best->stop != XF_STOP_RIDGE)
		return 0;
	if (best->stop == XF_STOP_NON_FINITE || best->stop == XF_STOP_INTERRUPTED ||
	    xf_fit_zero_noise(pr, res->residual_sd))
		return 0;
	int *mask = free_mask_of(pr);
	if (!mask) {
		xf_note_no_memory();
		return 0;
	}
	double s2 = best->chi2 / fmax(1.0, (double)pr->n_points - res->n_free);
	double well_se;
	xf_identified id;
	int rc = xf_ridge_identify(pr, mask, best->x, best->jtj, best->b, best->chi2,
				   pr->has_sigma ? 1.0 : s2, &id, &well_se);
	free(mask);
	if (rc)
		return 0;
	xf_info("nlsq: ridge check: smallest eigenvalue ratio %.3g (ill-determined below %.0e), "
		"%d identified combinations, %.3g standard errors from the valley floor",
		id.min_ratio, XF_RIDGE_RATIO, id.n_combos, well_se);
	if (id.n_combos == 0 || !(well_se <= XF_CONVERGED_SE))
		return 0;
	char text[256];
	q->identified = id;
	xf_identified_text(&id, text, sizeof text);
	if (!explains_all(pr, best->jtj, res, &id)) {
		/* something else is wrong too: the fit failed, the ridge is one reason */
		xf_quality_add_reason(q, "ridge: %s", text);
		return 0;
	}
	res->status = XF_STATUS_RIDGE;
	xf_quality_add_first_reason(q, "ridge: %s", text);
	return 1;
}

/* The crawl watcher: the last XF_RIDGE_WINDOW accepted points of the run. */
struct xf_ridge_watch {
	const xf_problem *pr;
	int *mask;
	int n_free;
	int count;   /* accepted points seen */
	double *x;   /* [XF_RIDGE_WINDOW][n_full] ring */
	double *dir; /* [n_full] the displacement over the window that fired */
	double chi2[XF_RIDGE_WINDOW];
};

xf_ridge_watch *xf_ridge_watch_create(const xf_problem *pr, const int *free_mask)
{
	xf_ridge_watch *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->pr = pr;
	w->mask = malloc(sizeof(int) * (size_t)pr->n_full);
	w->x = malloc(sizeof(double) * XF_RIDGE_WINDOW * (size_t)pr->n_full);
	w->dir = calloc((size_t)pr->n_full, sizeof(double));
	if (!w->mask || !w->x || !w->dir) {
		xf_ridge_watch_free(w);
		return NULL;
	}
	for (int k = 0; k < pr->n_full; k++) {
		w->mask[k] = free_mask[k];
		w->n_free += free_mask[k] != 0;
	}
	return w;
}

void xf_ridge_watch_free(xf_ridge_watch *w)
{
	if (!w)
		return;
	free(w->mask);
	free(w->x);
	free(w->dir);
	free(w);
}

/* The share of the scaled displacement x − then that lies in the ill subspace of jtj
 * (0 when there is none). */
static double ill_share(const xf_ridge_watch *w, const double *then, const double *x,
			const double *jtj)
{
	xf_scaled_eigen se;
	if (xf_scaled_eigen_of(jtj, w->pr->n_full, w->mask, &se))
		return 0.0;
	int m = se.m;
	double total = 0.0, along = 0.0;
	for (int p = 0; p < m; p++) {
		double dz = (x[se.idx[p]] - then[se.idx[p]]) / se.d[p];
		total += dz * dz;
	}
	for (int e = 0; m > 0 && se.ev[e] < XF_RIDGE_RATIO * se.ev[m - 1]; e++) {
		double proj = 0.0;
		for (int p = 0; p < m; p++)
			proj += se.vec[p * m + e] * (x[se.idx[p]] - then[se.idx[p]]) / se.d[p];
		along += proj * proj;
	}
	xf_scaled_eigen_free(&se);
	return total > 0.0 ? along / total : 0.0;
}

int xf_ridge_watch_edge(const xf_ridge_watch *w, const double *x, double *edge)
{
	const xf_problem *pr = w->pr;
	double t = INFINITY;
	for (int k = 0; k < pr->n_full; k++) {
		double d = w->dir[k];
		if (!w->mask[k] || d == 0.0)
			continue;
		t = fmin(t, (d > 0.0 ? pr->upper[k] - x[k] : pr->lower[k] - x[k]) / d);
	}
	if (!(t > 0.0 && isfinite(t)))
		return -1;
	for (int k = 0; k < pr->n_full; k++)
		edge[k] = fmin(fmax(x[k] + (w->mask[k] ? t * w->dir[k] : 0.0), pr->lower[k]),
			       pr->upper[k]);
	return 0;
}

void xf_ridge_watch_reset(xf_ridge_watch *w)
{
	w->count = 0;
}

int xf_ridge_watch_step(void *watch, const double *x, double chi2, const double *jtj)
{
	xf_ridge_watch *w = watch;
	int n = w->pr->n_full, slot = w->count % XF_RIDGE_WINDOW, fire = 0;
	double *then = w->x + (size_t)slot * n;
	if (w->count >= XF_RIDGE_WINDOW) {
		double s2 = chi2 / fmax(1.0, (double)w->pr->n_points - w->n_free);
		fire = w->chi2[slot] - chi2 <= XF_RIDGE_CRAWL_NOISE * s2 &&
		       ill_share(w, then, x, jtj) >= XF_RIDGE_ALONG;
		for (int k = 0; fire && k < n; k++)
			w->dir[k] = x[k] - then[k];
	}
	memcpy(then, x, sizeof(double) * (size_t)n);
	w->chi2[slot] = chi2;
	w->count++;
	return fire;
}
