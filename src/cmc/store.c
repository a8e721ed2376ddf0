/* store.c — the shard store (cmc.md "Failure and resume"): each finished shard's sampler
 * output in <dir>/shard_<id>.bin, written atomically the moment the shard is done, so a
 * killed run loses no finished shard. Plain binary (native byte order; the store is a
 * cache for this machine's --resume, not an exchange format — results.h5 is that):
 *   "XFSHARD2", input hash, counts, σ scale and noise, failure reason, step sizes, each
 *   chain's status, then the per-draw arrays, and a trailing FNV-1a checksum of
 *   everything before it.
 * A file whose hash or checksum does not match is ignored (the shard runs again), and so
 * is one with a chain that neither completed nor failed with a reason: an interrupted
 * chain's slots are zeros, and resuming them would be a wrong posterior, not a slow one
 * (adr/0038). Files of the older "XFSHARD1" layout had no such record: ignored too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmc/cmc_internal.h"
#include "util/files.h"

#define XF_STORE_MAGIC "XFSHARD2"

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
	s->chain_status = calloc((size_t)n_chains, 1); /* XF_CHAIN_PENDING */
	return !(s->draws && s->logp && s->energy && s->accept_stat && s->depth && s->n_leapfrog &&
		 s->divergent && s->step_size && s->chain_status);
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
	free(s->chain_status);
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

/* Every chain completed or failed with a reason: −1, else the first pending chain. */
static int pending_chain(const xf_shard_draws *s)
{
	for (int c = 0; c < s->n_chains; c++)
		if (s->chain_status[c] != XF_CHAIN_DONE && s->chain_status[c] != XF_CHAIN_FAILED)
			return c;
	return -1;
}

int xf_store_image(long id, uint64_t hash, const xf_shard_draws *s, unsigned char **image,
		   size_t *len, xf_error *err)
{
	buf b = { 0 };
	int c = s->chain_status ? pending_chain(s) : 0;
	if (c >= 0) /* run.c saves whole shards only: this is a bug, not a user's error */
		return xf_fail(err, XF_ERR_DATA,
			       "shard %ld is not whole (chain %d did not finish): not saved", id,
			       c);
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
	put(&b, s->chain_status, (size_t)s->n_chains);
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
	/* an empty folder in the shard's place is no shard (adr/0071): the rename needs its
	 * name; one holding files of the user's stays, and the write says so */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		(void)rmdir(path);
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

/* Parse a file image into *s: 1 when it is a whole shard with this hash (0: any), 0 when
 * not (nothing left allocated), −1 when out of memory. */
static int parse_image(const unsigned char *img, size_t len, uint64_t hash, xf_shard_draws *s)
{
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
	if (!ok)
		return 0;
	if (xf_shard_draws_alloc(s, counts[0], counts[1], counts[2])) {
		xf_shard_draws_free(s);
		return -1;
	}
	size_t n = (size_t)counts[0] * (size_t)counts[1];
	s->failed = counts[3];
	ok = take(&p, end, &evals, sizeof evals) == 0 && take(&p, end, &wdiv, sizeof wdiv) == 0 &&
	     take(&p, end, &s->sigma_scale, sizeof(double)) == 0 &&
	     take(&p, end, &s->noise, sizeof(double)) == 0 &&
	     take(&p, end, s->reason, sizeof s->reason) == 0 &&
	     take(&p, end, s->step_size, sizeof(double) * (size_t)counts[0]) == 0 &&
	     take(&p, end, s->chain_status, (size_t)counts[0]) == 0 &&
	     take(&p, end, s->draws, sizeof(double) * n * (size_t)counts[2]) == 0 &&
	     take(&p, end, s->logp, sizeof(double) * n) == 0 &&
	     take(&p, end, s->energy, sizeof(double) * n) == 0 &&
	     take(&p, end, s->accept_stat, sizeof(double) * n) == 0 &&
	     take(&p, end, s->depth, sizeof(int) * n) == 0 &&
	     take(&p, end, s->n_leapfrog, sizeof(int) * n) == 0 &&
	     take(&p, end, s->divergent, sizeof(int) * n) == 0 &&
	     (size_t)(end - p) == sizeof check && pending_chain(s) < 0;
	s->grad_evals = evals;
	s->warmup_divergent = wdiv;
	s->reason[sizeof s->reason - 1] = '\0';
	if (!ok)
		xf_shard_draws_free(s);
	return ok;
}

int xf_store_image_whole(const unsigned char *image, size_t len, uint64_t hash)
{
	xf_shard_draws s;
	int got = parse_image(image, len, hash, &s);
	if (got == 1)
		xf_shard_draws_free(&s);
	return got == 1;
}

int xf_store_load(const char *dir, long id, uint64_t hash, xf_shard_draws *s, xf_error *err)
{
	char path[4200];
	shard_path(path, sizeof path, dir, id);
	/* anything but a regular file (a FIFO would block, a link leads out of the folder)
	 * is absent, as a truncated file is: the shard runs again (adr/0071) */
	struct stat st;
	int fd = xf_open_regular(path, 1, &st);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
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
	int got = parse_image(img, len, hash, s);
	free(img);
	if (got < 0)
		xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	return got;
}
