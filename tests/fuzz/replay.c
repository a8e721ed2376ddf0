/* replay.c — plain driver for the fuzz targets without libFuzzer: runs the target over
 * every file named on the command line, or every regular file of every folder named.
 * `make test` uses it to replay the kept corpora (tests/fuzz/corpus_*) with the normal
 * compiler, so every input the fuzzers found interesting stays a regression test.
 * Files are read through zlib: the HDF5 corpus is kept gzip-compressed (a 15 KB file
 * of mostly zeros is 2 KB), plain files are read as they are. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "fuzz_common.h"

static int replay_file(const char *path)
{
	gzFile f = gzopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return 1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 65536;
			uint8_t *nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				gzclose(f);
				fprintf(stderr, "replay: out of memory reading %s\n", path);
				return 1;
			}
			buf = nb;
			cap = ncap;
		}
		int r = gzread(f, buf + len, (unsigned)(cap - len));
		if (r <= 0) {
			int errnum = Z_OK;
			gzerror(f, &errnum);
			gzclose(f);
			if (r < 0 || errnum != Z_OK) {
				free(buf);
				fprintf(stderr, "replay: read error on %s\n", path);
				return 1;
			}
			break;
		}
		len += (size_t)r;
	}
	if (getenv("XF_REPLAY_VERBOSE"))
		fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (stable output). Returns files replayed or -1. */
static int replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			char **nn = realloc(names, ncap * sizeof *nn);
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
			cap = ncap;
		}
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		if (!(names[n] = malloc(len))) {
			rc = -1;
			break;
		}
		snprintf(names[n], len, "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	if (rc == 0) {
		if (n > 0) /* qsort(NULL, 0, ...) is undefined */
			qsort(names, n, sizeof *names, cmp_names);
		for (size_t k = 0; k < n; k++) {
			struct stat st;
			if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
				if (replay_file(names[k]))
					rc = -1;
				else
					rc++;
			}
		}
	}
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	long total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: not found\n", argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			int n = replay_dir(argv[i]);
			if (n < 0) {
				fprintf(stderr, "replay: cannot read folder %s\n", argv[i]);
				return 1;
			}
			total += n;
		} else {
			if (replay_file(argv[i]))
				return 1;
			total++;
		}
	}
	printf("replay: %ld inputs, no crash\n", total);
	return 0;
}
