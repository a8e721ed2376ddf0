/* png_palette.c — the colours of a page: counted in a small hash table, so that a page of
 * at most 256 colours is written as an 8-bit palette PNG (one byte a pixel instead of
 * three: deflate then codes a map cell in one literal, not three), and a page of more
 * colours can be brought down to 256 (xf_png_quantise). A drawn page has a few thousand
 * colours, but nearly every pixel is one of a few hundred: the painted colour tables, white,
 * black, the grey of "not fitted"; the rest are cairo's antialiasing blends on the edges
 * of text and lines, which move to the nearest kept colour (adr/0077). */
#include "plot/plot_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* distinct colours counted at most: a page has ~5 000; a photo-like image is left alone */
#define XF_PALETTE_MAX_DISTINCT 16384
#define XF_PALETTE_SLOTS	(4 * XF_PALETTE_MAX_DISTINCT) /* a power of two */

typedef struct colour_slot {
	uint32_t key;	/* rgb + 1; 0: empty */
	uint32_t count; /* pixels of this colour */
	uint32_t to;	/* its palette index once chosen */
} colour_slot;

static inline uint32_t rgb_key(const unsigned char *p)
{
	return ((uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]) + 1u;
}

static inline size_t slot_of(const colour_slot *t, uint32_t key)
{
	size_t i = (key * 2654435761u) & (XF_PALETTE_SLOTS - 1);
	while (t[i].key && t[i].key != key)
		i = (i + 1) & (XF_PALETTE_SLOTS - 1);
	return i;
}

/* the colour table of rgb, or NULL (out of memory, or more than XF_PALETTE_MAX_DISTINCT
 * colours); *n_distinct set */
static colour_slot *count_colours(const unsigned char *rgb, size_t pixels, int *n_distinct)
{
	colour_slot *t = calloc(XF_PALETTE_SLOTS, sizeof *t);
	int n = 0;
	if (!t)
		return NULL;
	uint32_t last_key = 0;
	size_t last = 0;
	for (size_t k = 0; k < pixels; k++) {
		uint32_t key = rgb_key(rgb + 3 * k);
		if (key != last_key) { /* runs of one colour are the common case */
			last = slot_of(t, key);
			last_key = key;
			if (!t[last].key) {
				if (++n > XF_PALETTE_MAX_DISTINCT) {
					free(t);
					return NULL;
				}
				t[last].key = key;
			}
		}
		t[last].count++;
	}
	*n_distinct = n;
	return t;
}

/* the occupied slots, most frequent first (ties: the lower colour), for a deterministic
 * choice of the kept colours */
static int by_count(const void *a, const void *b)
{
	const colour_slot *x = *(const colour_slot *const *)a, *y = *(const colour_slot *const *)b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int by_key(const void *a, const void *b)
{
	const colour_slot *x = *(const colour_slot *const *)a, *y = *(const colour_slot *const *)b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static colour_slot **occupied(colour_slot *t, int n)
{
	colour_slot **s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
	if (!s)
		return NULL;
	int k = 0;
	for (size_t i = 0; i < XF_PALETTE_SLOTS; i++)
		if (t[i].key)
			s[k++] = &t[i];
	return s;
}

static inline long dist2(uint32_t a, uint32_t b)
{
	long dr = (long)((a - 1) >> 16 & 255) - (long)((b - 1) >> 16 & 255);
	long dg = (long)((a - 1) >> 8 & 255) - (long)((b - 1) >> 8 & 255);
	long db = (long)((a - 1) & 255) - (long)((b - 1) & 255);
	return dr * dr + dg * dg + db * db;
}

int xf_png_quantise(unsigned char *rgb, int width, int height, const unsigned char (*keep)[3],
		    int n_keep)
{
	size_t pixels = (size_t)width * (size_t)height;
	int n = 0;
	colour_slot *t = count_colours(rgb, pixels, &n);
	if (!t)
		return -1;
	if (n <= XF_PNG_PALETTE_N) {
		free(t);
		return 0;
	}
	colour_slot **s = occupied(t, n);
	if (!s) {
		free(t);
		return -1;
	}
	/* the colours to keep (the painted maps' levels) count as the most frequent, so that
	 * every level of a map stays exact however few of its cells show it */
	for (int k = 0; k < n_keep; k++) {
		size_t i = slot_of(t, rgb_key(keep[k]));
		if (t[i].key)
			t[i].count = UINT32_MAX - (uint32_t)k;
	}
	qsort(s, (size_t)n, sizeof *s, by_count);
	/* each colour beyond the kept ones takes its nearest kept colour (the first of equals) */
	for (int k = 0; k < n; k++) {
		if (k < XF_PNG_PALETTE_N) {
			s[k]->to = s[k]->key;
			continue;
		}
		long best = -1;
		for (int j = 0; j < XF_PNG_PALETTE_N; j++) {
			long d = dist2(s[k]->key, s[j]->key);
			if (best < 0 || d < best) {
				best = d;
				s[k]->to = s[j]->key;
			}
		}
	}
	free(s);
	uint32_t last_key = 0, last_to = 0;
	for (size_t k = 0; k < pixels; k++) {
		unsigned char *p = rgb + 3 * k;
		uint32_t key = rgb_key(p);
		if (key != last_key) {
			last_key = key;
			last_to = t[slot_of(t, key)].to;
		}
		if (last_to != key) {
			p[0] = (unsigned char)((last_to - 1) >> 16);
			p[1] = (unsigned char)((last_to - 1) >> 8);
			p[2] = (unsigned char)(last_to - 1);
		}
	}
	free(t);
	return 1;
}

int xf_png_palette(const unsigned char *rgb, int width, int height, unsigned char *plte,
		   unsigned char *index)
{
	size_t pixels = (size_t)width * (size_t)height;
	int n = 0;
	colour_slot *t = count_colours(rgb, pixels, &n);
	if (!t)
		return -1;
	if (n > XF_PNG_PALETTE_N) {
		free(t);
		return -1;
	}
	colour_slot **s = occupied(t, n);
	if (!s) {
		free(t);
		return -1;
	}
	qsort(s, (size_t)n, sizeof *s, by_key); /* the table in colour order: deterministic */
	for (int k = 0; k < n; k++) {
		s[k]->to = (uint32_t)k;
		plte[3 * k] = (unsigned char)((s[k]->key - 1) >> 16);
		plte[3 * k + 1] = (unsigned char)((s[k]->key - 1) >> 8);
		plte[3 * k + 2] = (unsigned char)(s[k]->key - 1);
	}
	free(s);
	uint32_t last_key = 0, last_to = 0;
	for (size_t k = 0; k < pixels; k++) {
		uint32_t key = rgb_key(rgb + 3 * k);
		if (key != last_key) {
			last_key = key;
			last_to = t[slot_of(t, key)].to;
		}
		index[k] = (unsigned char)last_to;
	}
	free(t);
	return n;
}
