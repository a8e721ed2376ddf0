/* ring_index.c — the maps of a file grouped by q ring, once, when the file is read
 * (adr/0073): every map's q sorted, and the rings as runs of map indices. The selection
 * (select.c) then finds a ring, its maps, or the map nearest a q by binary search instead
 * of a scan of every map per ring, so that a file of n rings is selected in n log n (a
 * scan per ring was n², and a pairwise count per ring n³: 239 s for validate on 3 000
 * rings). */
#include "data/raw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t visits; /* map entries and search steps visited (xf_raw_visits) */

size_t xf_raw_visits(void)
{
	return visits;
}

void xf_raw_visit(size_t n)
{
	visits += n;
}

typedef struct keyed {
	double q;
	int index; /* into raw->maps */
	int ring;
} keyed;

static int by_q_then_index(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->q != y->q)
		return (x->q > y->q) - (x->q < y->q);
	return (x->index > y->index) - (x->index < y->index);
}

static int by_ring_then_index(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->ring != y->ring)
		return (x->ring > y->ring) - (x->ring < y->ring);
	return (x->index > y->index) - (x->index < y->index);
}

void xf_raw_index_free(xf_raw_file *raw)
{
	xf_ring_index *ix = &raw->rings;
	free(ix->q);
	free(ix->start);
	free(ix->order);
	free(ix->sorted_q);
	memset(ix, 0, sizeof *ix);
	raw->indexed = 0;
}

int xf_raw_index_rings(xf_raw_file *raw)
{
	xf_ring_index *ix = &raw->rings;
	int m = raw->n_maps;
	memset(ix, 0, sizeof *ix);
	raw->indexed = 0;
	keyed *k = malloc(sizeof *k * (size_t)(m ? m : 1));
	ix->q = malloc(sizeof *ix->q * (size_t)(m ? m : 1));
	ix->start = malloc(sizeof *ix->start * (size_t)(m + 1));
	ix->order = malloc(sizeof *ix->order * (size_t)(m ? m : 1));
	ix->sorted_q = malloc(sizeof *ix->sorted_q * (size_t)(m ? m : 1));
	if (!k || !ix->q || !ix->start || !ix->order || !ix->sorted_q) {
		free(k);
		xf_raw_index_free(raw);
		return -1;
	}
	for (int i = 0; i < m; i++)
		k[i] = (keyed){ raw->maps[i].q, i, 0 };
	qsort(k, (size_t)m, sizeof *k, by_q_then_index);
	visits += (size_t)m;
	/* a ring starts where q leaves the tolerance of the q before it; its q is that of
	 * its first map in file order, as the scans had it */
	int n = 0;
	for (int i = 0; i < m; i++) {
		ix->sorted_q[i] = k[i].q;
		if (i == 0 || !(fabs(k[i].q - k[i - 1].q) <= XF_Q_RING_TOLERANCE * fabs(k[i].q)))
			n++;
		k[i].ring = n - 1;
	}
	qsort(k, (size_t)m, sizeof *k, by_ring_then_index);
	for (int i = 0; i < m; i++) {
		if (i == 0 || k[i].ring != k[i - 1].ring) {
			ix->start[k[i].ring] = i;
			ix->q[k[i].ring] = k[i].q;
		}
		ix->order[i] = k[i].index;
	}
	ix->start[n] = m;
	ix->n = n;
	free(k);
	raw->n_q_rings = n;
	raw->indexed = 1;
	return 0;
}

/* The first position of sorted_q at or above x. */
static int lower_bound(const double *v, int n, double x)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		visits++;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int xf_raw_has_map_near(const xf_raw_file *raw, double q)
{
	const xf_ring_index *ix = &raw->rings;
	double tol = XF_Q_RING_TOLERANCE * fabs(q);
	int i = lower_bound(ix->sorted_q, raw->n_maps, q - tol);
	return i < raw->n_maps && fabs(ix->sorted_q[i] - q) <= tol;
}

double xf_raw_nearest_q(const xf_raw_file *raw, double want)
{
	const xf_ring_index *ix = &raw->rings;
	int i = lower_bound(ix->sorted_q, raw->n_maps, want);
	if (i >= raw->n_maps)
		return ix->sorted_q[raw->n_maps - 1];
	if (i > 0 && fabs(ix->sorted_q[i - 1] - want) <= fabs(ix->sorted_q[i] - want))
		return ix->sorted_q[i - 1];
	return ix->sorted_q[i];
}

int xf_raw_ring_of(const xf_raw_file *raw, double q)
{
	const xf_ring_index *ix = &raw->rings;
	int r = lower_bound(ix->q, ix->n, q);
	/* the ring at or after q, or the one before: whichever holds a map within the
	 * tolerance of q */
	for (int c = r - 1; c <= r; c++) {
		if (c < 0 || c >= ix->n)
			continue;
		for (int i = ix->start[c]; i < ix->start[c + 1]; i++) {
			visits++;
			if (fabs(raw->maps[ix->order[i]].q - q) <= XF_Q_RING_TOLERANCE * fabs(q))
				return c;
		}
	}
	return -1;
}
