/* blas_limits.c — OpenBLAS under a limited address space (ulimit -v, SGE's h_vmem;
 * adr/0072). OpenBLAS 0.3.21 (Debian 12's) takes a 128 MiB work buffer per thread that
 * calls it and per worker thread of its own pool (started by its library constructor, one
 * per core), and when an allocation of that buffer fails it retries forever: a tiny fit
 * under `ulimit -v 300000` never ended. Two measures, both only when the address space
 * or the data segment is limited:
 *
 * - before any library's constructor runs (.preinit_array of the program), run the
 *   program again with OPENBLAS_NUM_THREADS=1, so OpenBLAS starts no pool of its own:
 *   each of its threads takes a buffer at its start and, failing, spins in that retry
 *   and then blocks the exit, which joins it. The fits never use that pool anyway
 *   (xf_blas_single_thread, pool.c); only the address space it reserved is saved;
 * - at the start of a fit (xf_blas_reserve), take the one buffer the calling thread needs
 *   while there is room, after a probe of its size: if the limit leaves no room, one line
 *   "out of memory", exit 1, instead of OpenBLAS's endless retry. OpenBLAS keeps a freed
 *   buffer for the next call, so the fit's own calls allocate nothing more. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "xpcsfit/error.h"
#include "xpcsfit/vdev.h"

/* OpenBLAS 0.3.21's BUFFER_SIZE on x86-64 (128 MiB) plus its guard page and malloc's
 * header (134 225 920 bytes mapped, seen in gdb), rounded up to 1 MiB of room. */
#define XF_BLAS_BUFFER_BYTES ((size_t)129 << 20)

/* OpenBLAS's buffer pool (exported by libopenblas, not in its headers): weak, so a BLAS
 * without them (another build) only skips the early take. */
void *blas_memory_alloc(int procpos) __attribute__((weak));
void blas_memory_free(void *buffer) __attribute__((weak));

/* The smaller finite limit of the address space and the data segment (Linux counts
 * private writable mappings in both); 0 when neither is limited. */
static rlim_t space_limit(void)
{
	rlim_t lim = 0;
	int which[2] = { RLIMIT_AS, RLIMIT_DATA };
	for (int k = 0; k < 2; k++) {
		struct rlimit rl;
		if (!getrlimit(which[k], &rl) && rl.rlim_cur != RLIM_INFINITY &&
		    (!lim || rl.rlim_cur < lim))
			lim = rl.rlim_cur;
	}
	return lim;
}

/* "OPENBLAS_NUM_THREADS=" at the start of entry e: its value, else NULL (no libc: this
 * runs before the libraries are set up, a sanitizer's interceptors among them). */
static const char *blas_threads_value(const char *e)
{
	static const char key[] = "OPENBLAS_NUM_THREADS=";
	for (size_t k = 0; k < sizeof key - 1; k++)
		if (e[k] != key[k])
			return NULL;
	return e + sizeof key - 1;
}

/* Runs before the shared libraries' constructors, OpenBLAS's among them (ld.so runs a
 * program's preinit array first). A setenv() here is lost (libc sets its environment
 * from the original block afterwards; measured), so the program is executed again, at
 * once, with OPENBLAS_NUM_THREADS=1 in its environment: same argv, same pid, nothing
 * run yet. Only when the space is limited and the variable is not 1 already; should the
 * exec fail (no /proc), the run goes on as before. */
static void blas_env(int argc, char **argv, char **envp)
{
	(void)argc;
	if (!space_limit() || !envp)
		return;
	size_t n = 0;
	for (char **e = envp; *e; e++, n++) {
		const char *v = blas_threads_value(*e);
		if (v && v[0] == '1' && !v[1])
			return;
	}
	char **env = malloc((n + 2) * sizeof *env); /* kept: the exec replaces it all */
	if (!env)
		return;
	size_t k = 0;
	for (char **e = envp; *e; e++)
		if (!blas_threads_value(*e))
			env[k++] = *e;
	env[k++] = (char *)"OPENBLAS_NUM_THREADS=1";
	env[k] = NULL;
	execve("/proc/self/exe", argv, env);
	free(env);
}

__attribute__((section(".preinit_array"),
	       used)) static void (*const xf_blas_preinit)(int, char **, char **) = blas_env;

int xf_blas_reserve(xf_error *err)
{
	static int taken; /* once per process: OpenBLAS keeps the buffer */
	rlim_t lim = space_limit();
	if (!lim || taken)
		return 0;
	/* the probe: the buffer's size, writable (as OpenBLAS's is), never touched */
	void *probe = mmap(NULL, XF_BLAS_BUFFER_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (probe == MAP_FAILED)
		return xf_fail(err, XF_ERR_NOMEM,
			       "out of memory: the address-space limit (ulimit -v, SGE h_vmem) of "
			       "%llu MiB leaves no room for the %zu MiB work buffer of the linear "
			       "algebra (OpenBLAS); allow more (docs/cluster.md, \"Memory "
			       "limits\")",
			       (unsigned long long)(lim >> 20), XF_BLAS_BUFFER_BYTES >> 20);
	munmap(probe, XF_BLAS_BUFFER_BYTES);
	if (blas_memory_alloc && blas_memory_free) {
		void *buf = blas_memory_alloc(0);
		if (buf)
			blas_memory_free(buf);
	}
	taken = 1;
	return 0;
}
