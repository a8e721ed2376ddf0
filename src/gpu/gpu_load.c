/* gpu_load.c — gpu.h for the programs: the CUDA module (libxpcsfit-cuda.so, adr/0055)
 * dlopen()ed the first time a caller asks for a device, its table (gpu_ops.h) behind
 * every call; without a loadable module, gpu_none.c's table and the reason why.
 *
 * Where the module is looked for, in order (docs/gpu.md "How the module is found"):
 * XPCSFIT_CUDA_MODULE (that file only); the program's own folder (the build tree); the
 * lib dir of the install tree the program sits in (bin/../lib/xpcsfit, so a moved tree
 * still finds it); the configured install lib dir. A file that is found but does not
 * load ends the search with its loader's message: a second copy elsewhere is never taken
 * silently. A build without CUDA (XF_GPU_SEARCH 0) honours XPCSFIT_CUDA_MODULE only.
 *
 * Every file passes gpu_file.c's checks before dlopen() (a regular file, a whole ELF
 * shared object of this machine: adr/0072), so a FIFO or a truncated copy is a reason,
 * never a hang or SIGBUS. A bare name in XPCSFIT_CUDA_MODULE is a file in the current
 * folder, as every path given to the program is: it is loaded as ./NAME, never through
 * the dynamic loader's own search (LD_LIBRARY_PATH, the cache), which would load another
 * file than the one checked. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/policy.h"
#include "gpu/gpu.h"
#include "gpu/gpu_file.h"
#include "gpu/gpu_ops.h"

#ifndef XF_GPU_SEARCH
#define XF_GPU_SEARCH 0
#endif
#ifndef XF_GPU_MODULE_RELDIR
#define XF_GPU_MODULE_RELDIR "../lib/xpcsfit"
#endif
#ifndef XF_GPU_MODULE_LIBDIR
#define XF_GPU_MODULE_LIBDIR "/usr/local/lib/xpcsfit"
#endif

static const xf_gpu_ops *ops = &xf_gpu_none_ops;
static void *module_handle; /* kept open for the life of the process */
static char module_path[PATH_MAX];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void no_module(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void no_module(const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	xf_gpu_none_set_reason(why);
}

/* A table this program can use: the same interface number and struct sizes. */
static int table_fits(const xf_gpu_ops *t)
{
	return t && t->abi == XF_GPU_MODULE_ABI && t->data_size == sizeof(xf_gpu_data) &&
	       t->params_size == sizeof(xf_gpu_params) && t->frames_size == sizeof(xf_frames) &&
	       t->device_count && t->why_none && t->device_info && t->create && t->destroy &&
	       t->accumulate && t->c2;
}

/* Load the module at path (it exists); on failure the reason names it. */
static void open_module(const char *path)
{
	char bad[256];
	if (xf_gpu_module_file_check(path, bad, sizeof bad)) {
		no_module("the CUDA module %s cannot be loaded: %s", path, bad);
		return;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		no_module("the CUDA module %s cannot be loaded: %s", path, dlerror());
		return;
	}
	xf_gpu_module_entry entry;
	*(void **)&entry = dlsym(h, XF_GPU_MODULE_ENTRY); /* ISO C: no object→function cast */
	const xf_gpu_ops *t = entry ? entry() : NULL;
	if (!table_fits(t)) {
		no_module("the CUDA module %s belongs to another xpcsfit build (interface %d, "
			  "this program's %d)",
			  path, t ? t->abi : -1, XF_GPU_MODULE_ABI);
		dlclose(h);
		return;
	}
	snprintf(module_path, sizeof module_path, "%s", path);
	module_handle = h;
	ops = t;
}

static int is_there(const char *path)
{
	return access(path, F_OK) == 0;
}

#if XF_GPU_SEARCH
/* The folder of the running program ("" when /proc/self/exe cannot be read). */
static void program_dir(char *dir, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	dir[0] = '\0';
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash) {
		*slash = '\0';
		snprintf(dir, len, "%s", exe[0] ? exe : "/");
	}
}

static void search(void)
{
	char here[PATH_MAX], dirs[3][PATH_MAX], path[PATH_MAX + 64];
	int n = 0;
	program_dir(here, sizeof here);
	if (here[0]) {
		snprintf(dirs[n++], PATH_MAX, "%s", here);
		char rel[PATH_MAX + 64];
		if (XF_GPU_MODULE_RELDIR[0] == '/') /* an absolute lib dir was configured */
			snprintf(rel, sizeof rel, "%s", XF_GPU_MODULE_RELDIR);
		else
			snprintf(rel, sizeof rel, "%s/%s", here, XF_GPU_MODULE_RELDIR);
		/* realpath: one spelling per folder, so the configured one is not tried twice */
		if (realpath(rel, dirs[n]))
			n++;
	}
	if (n < 2 || strcmp(dirs[n - 1], XF_GPU_MODULE_LIBDIR))
		snprintf(dirs[n++], PATH_MAX, "%s", XF_GPU_MODULE_LIBDIR);
	for (int k = 0; k < n; k++) {
		int len = snprintf(path, sizeof path, "%s/%s", dirs[k], XF_GPU_MODULE_FILE);
		if (len < (int)sizeof path && is_there(path)) {
			open_module(path);
			return;
		}
	}
	char where[3 * PATH_MAX + 8] = "";
	for (int k = 0; k < n; k++) {
		size_t at = strlen(where);
		snprintf(where + at, sizeof where - at, "%s%s", k ? ", " : "", dirs[k]);
	}
	no_module("no CUDA module (%s is not in %s; XPCSFIT_CUDA_MODULE=FILE names one)",
		  XF_GPU_MODULE_FILE, where);
}
#endif

static void load(void)
{
	const char *env = getenv("XPCSFIT_CUDA_MODULE");
	if (env && *env) {
		char here[PATH_MAX + 2];
		const char *path = env;
		if (!strchr(env, '/')) { /* NAME is ./NAME, never the loader's search */
			if (snprintf(here, sizeof here, "./%s", env) >= (int)sizeof here) {
				no_module("no CUDA module at XPCSFIT_CUDA_MODULE=%s", env);
				return;
			}
			path = here;
		}
		if (is_there(path))
			open_module(path);
		else
			no_module("no CUDA module at XPCSFIT_CUDA_MODULE=%s", env);
		return;
	}
#if XF_GPU_SEARCH
	search();
#endif
}

static const xf_gpu_ops *table(void)
{
	pthread_once(&load_once, load);
	return ops;
}

const char *xf_gpu_backend(void)
{
	return table()->backend;
}

int xf_gpu_device_count(void)
{
	return table()->device_count();
}

const char *xf_gpu_why_none(void)
{
	return table()->why_none();
}

const char *xf_gpu_module_path(void)
{
	table();
	return module_path[0] ? module_path : NULL;
}

int xf_gpu_device_info(int dev, char *name, size_t name_len, double *score)
{
	return table()->device_info(dev, name, name_len, score);
}

/* The blocks are split here, so the module needs nothing of the programs. */
xf_gpu_ctx *xf_gpu_create(const xf_gpu_data *d, const int *devices, const double *scores, int n_dev,
			  int fp32, char *err_msg, size_t err_len)
{
	size_t first[XF_GPU_MAX_DEVICES], count[XF_GPU_MAX_DEVICES];
	if (n_dev < 1 || n_dev > XF_GPU_MAX_DEVICES ||
	    xf_device_split(scores, n_dev, xf_gpu_blocks(d->n_pairs), first, count)) {
		snprintf(err_msg, err_len, "no usable GPU (%d devices given)", n_dev);
		return NULL;
	}
	return table()->create(d, devices, first, count, n_dev, fp32, err_msg, err_len);
}

void xf_gpu_destroy(xf_gpu_ctx *ctx)
{
	if (ctx)
		table()->destroy(ctx);
}

int xf_gpu_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
		      xf_gpu_timing *t)
{
	return table()->accumulate(ctx, prm, level, total, t);
}

int xf_gpu_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t)
{
	return table()->c2(ctx, prm, c2_out, t);
}
