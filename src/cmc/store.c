/* store.c — the shard store (cmc.md "Failure and resume"): each finished shard's sampler
 * output in <dir>/shard_<id>.bin, written atomically the moment the shard is done, so a
 * killed run loses no finished shard. Plain binary (native byte order; the store is a
 * cache for this machine's --resume, not an exchange format — results.h5 is that):
 *   "XFSHARD1", input hash, counts, σ scale and noise, failure reason, step sizes, then
 *   the per-draw arrays, and a trailing FNV-1a checksum of everything before it.
 * A file whose hash or checksum does not match is ignored (the shard runs again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"
#include "util/files.h"

#define XF_STORE_MAGIC "XFSHARD1"

uint64_t xf_hash_bytes(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t k = 0; k < n; k++) {
		h ^= p[k];
		h *= 1099511628211ULL;
	}
	return h;
}

/* zeroed: a failed chain leaves its slots as zeros, so a stored shard is always the same
 * bytes */
int xf_shard_draws_alloc(xf_shard_draws *s, int n_chains, int n_draws, int dim)
{
	memset(s, 0, sizeof *s);
	size_t n = (size_t)n_chains * (size_t)n_draws;
	s->n_chains = n_chains;
	s->n_draws = n_draws;
	s->dim = dim;
	s->draws = calloc(n * (size_t)dim, sizeof(double));
	s->logp = calloc(n, sizeof(double));
	s->energy = calloc(n, sizeof(double));
	s->accept_stat = calloc(n, sizeof(double));
	s->depth = calloc(n, sizeof(int));
	s->n_leapfrog = calloc(n, sizeof(int));
	s->divergent = calloc(n, sizeof(int));
	s->step_size = calloc((size_t)n_chains, sizeof(double));
	return !(s->draws && s->logp && s->energy && s->accept_stat && s->depth && s->n_leapfrog &&
		 s->divergent && s->step_size);
}

void xf_shard_draws_free(xf_shard_draws *s)
{
	free(s->draws);
	free(s->logp);
	free(s->energy);
	free(s->accept_stat);
	free(s->depth);
	free(s->n_leapfrog);
	free(s->divergent);
	free(s->step_size);
	memset(s, 0, sizeof *s);
}

/* A growing byte buffer for the file image. */
typedef struct buf {
	unsigned char *p;
	size_t n, cap;
	int failed;
} buf;

static void put(buf *b, const void *data, size_t n)
{
	if (b->failed)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		unsigned char *q = realloc(b->p, cap);
		if (!q) {
			b->failed = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void shard_path(char *path, size_t size, const char *dir, long id)
{
	snprintf(path, size, "%s/shard_%06ld.bin", dir, id);
}

int xf_store_image(long id, uint64_t hash, const xf_shard_draws *s, unsigned char **image,
		   size_t *len, xf_error *err)
{
	buf b = { 0 };
	size_t n = (size_t)s->n_chains * (size_t)s->n_draws;
	int32_t counts[4] = { s->n_chains, s->n_draws, s->dim, s->failed };
	int64_t evals = s->grad_evals;
	int32_t wdiv = s->warmup_divergent;
	put(&b, XF_STORE_MAGIC, 8);
	put(&b, &hash, sizeof hash);
	put(&b, counts, sizeof counts);
	put(&b, &evals, sizeof evals);
	put(&b, &wdiv, sizeof wdiv);
	put(&b, &s->sigma_scale, sizeof(double));
	put(&b, &s->noise, sizeof(double));
	put(&b, s->reason, sizeof s->reason);
	put(&b, s->step_size, sizeof(double) * (size_t)s->n_chains);
	put(&b, s->draws, sizeof(double) * n * (size_t)s->dim);
	put(&b, s->logp, sizeof(double) * n);
	put(&b, s->energy, sizeof(double) * n);
	put(&b, s->accept_stat, sizeof(double) * n);
	put(&b, s->depth, sizeof(int) * n);
	put(&b, s->n_leapfrog, sizeof(int) * n);
	put(&b, s->divergent, sizeof(int) * n);
	uint64_t check = xf_hash_bytes(XF_HASH_SEED, b.p, b.n);
	put(&b, &check, sizeof check);
	if (b.failed) {
		free(b.p);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory saving shard %ld", id);
	}
	*image = b.p;
	*len = b.n;
	return 0;
}

int xf_store_save_image(const char *dir, long id, const unsigned char *image, size_t len,
			xf_error *err)
{
	char path[4200];
	shard_path(path, sizeof path, dir, id);
	return xf_write_file_atomic(path, image, len, err);
}

int xf_store_save(const char *dir, long id, uint64_t hash, const xf_shard_draws *s, xf_error *err)
{
	unsigned char *image;
	size_t len;
	int rc = xf_store_image(id, hash, s, &image, &len, err);
	if (rc)
		return rc;
	rc = xf_store_save_image(dir, id, image, len, err);
	free(image);
	return rc;
}

/* Reads the next n bytes of the image; 0 when they are there. */
static int take(const unsigned char **p, const unsigned char *end, void *out, size_t n)
{
	if ((size_t)(end - *p) < n)
		return -1;
	memcpy(out, *p, n);
	*p += n;
	return 0;
}

int xf_store_load(const char *dir, long id, uint64_t hash, xf_shard_draws *s, xf_error *err)
{
	char path[4200];
	shard_path(path, sizeof path, dir, id);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	unsigned char *img = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 1 << 16;
			unsigned char *q = realloc(img, cap);
			if (!q) {
				free(img);
				fclose(f);
				xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
				return -1;
			}
			img = q;
		}
		size_t got = fread(img + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	const unsigned char *p = img, *end = img + len;
	char magic[8];
	uint64_t file_hash, check;
	int32_t counts[4], wdiv = 0;
	int64_t evals = 0;
	int ok = len > sizeof check && take(&p, end, magic, 8) == 0 &&
		 !memcmp(magic, XF_STORE_MAGIC, 8) && take(&p, end, &file_hash, 8) == 0 &&
		 (hash == 0 || file_hash == hash) && take(&p, end, counts, sizeof counts) == 0 &&
		 counts[0] > 0 && counts[1] > 0 && counts[2] > 0;
	if (ok) {
		memcpy(&check, end - sizeof check, sizeof check);
		ok = check == xf_hash_bytes(XF_HASH_SEED, img, len - sizeof check);
	}
	if (ok && xf_shard_draws_alloc(s, counts[0], counts[1], counts[2])) {
		xf_shard_draws_free(s);
		free(img);
		xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
		return -1;
	}
	if (ok) {
		size_t n = (size_t)counts[0] * (size_t)counts[1];
		s->failed = counts[3];
		ok = take(&p, end, &evals, sizeof evals) == 0 &&
		     take(&p, end, &wdiv, sizeof wdiv) == 0 &&
		     take(&p, end, &s->sigma_scale, sizeof(double)) == 0 &&
		     take(&p, end, &s->noise, sizeof(double)) == 0 &&
		     take(&p, end, s->reason, sizeof s->reason) == 0 &&
		     take(&p, end, s->step_size, sizeof(double) * (size_t)counts[0]) == 0 &&
		     take(&p, end, s->draws, sizeof(double) * n * (size_t)counts[2]) == 0 &&
		     take(&p, end, s->logp, sizeof(double) * n) == 0 &&
		     take(&p, end, s->energy, sizeof(double) * n) == 0 &&
		     take(&p, end, s->accept_stat, sizeof(double) * n) == 0 &&
		     take(&p, end, s->depth, sizeof(int) * n) == 0 &&
		     take(&p, end, s->n_leapfrog, sizeof(int) * n) == 0 &&
		     take(&p, end, s->divergent, sizeof(int) * n) == 0 &&
		     (size_t)(end - p) == sizeof check;
		s->grad_evals = evals;
		s->warmup_divergent = wdiv;
		s->reason[sizeof s->reason - 1] = '\0';
		if (!ok)
			xf_shard_draws_free(s);
	}
	free(img);
	return ok ? 1 : 0;
}
