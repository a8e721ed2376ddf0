/* fail_alloc.c — allocation-failure injection for the test copy of the CLI
 * (xpcsfit_faults, tests/faults/CMakeLists.txt; adr/0019-fuzzing-and-fault-injection.md).
 *
 * The copy is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,
 * so every allocation made by xpcsfit's own code (the CLI and libxpcsfit.a) comes here;
 * allocations inside the shared HDF5, GSL, libyaml, cJSON and PLplot libraries do not
 * (their own calls are not rewritten by --wrap).
 *
 *   XF_FAIL_ALLOC=N        the N-th wrapped allocation (1-based) returns NULL; later
 *                          ones succeed again (SQLite's one-shot mode)
 *   XF_FAIL_ALLOC_REPORT=F at exit, write the number of wrapped allocations made to F
 *                          (the loop in run_faults.py takes its range from it)
 *   XF_FAIL_ALLOC_TRACE=1  print the call stack of the failed allocation to stderr
 *                          (binary(+offset) frames; `addr2line -f -e BINARY OFFSET`)
 *
 * Thread-safe (an atomic counter): the order of allocations in worker threads is not
 * fixed, which is why the loop runs the fits with one thread. */
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);

static atomic_long n_calls;
static long fail_at = -1; /* -1: not read yet; 0: never fail */
static const char *report_path;
static int trace;

static void write_report(void)
{
	FILE *f = fopen(report_path, "w");
	if (f) {
		fprintf(f, "%ld\n", (long)atomic_load(&n_calls));
		fclose(f);
	}
}

/* 1 when this call is the one to fail. getenv allocates nothing. */
static int should_fail(void)
{
	if (fail_at < 0) {
		const char *v = getenv("XF_FAIL_ALLOC");
		long n = v ? strtol(v, NULL, 10) : 0;
		report_path = getenv("XF_FAIL_ALLOC_REPORT");
		if (report_path && *report_path)
			atexit(write_report);
		trace = getenv("XF_FAIL_ALLOC_TRACE") != NULL;
		fail_at = n > 0 ? n : 0;
	}
	long k = atomic_fetch_add(&n_calls, 1) + 1;
	if (fail_at > 0 && k == fail_at && trace) {
		void *frames[32];
		int n = backtrace(frames, 32); /* preloaded by the libgcc unwinder: no malloc */
		backtrace_symbols_fd(frames, n, 2);
	}
	return fail_at > 0 && k == fail_at;
}

void *__wrap_malloc(size_t size)
{
	return should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return should_fail() ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
	if (should_fail())
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = __real_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}
