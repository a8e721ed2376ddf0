/* h5util.c — HDF5 helpers of the data module: reads through HDF5's type conversion
 * (any integer/float width and byte order become double), rank-agnostic 1-D lists,
 * strings, and translation of HDF5 failures into one line. HDF5's own error stack is
 * never printed: users get "what, where", not forty lines of library internals. */
#include "data/h5util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/files.h"
#include "util/lockfile.h"
#include "util/size.h"

#define XF_LIBLZF_SONAME "liblzf.so.1"

/* Debian's hdf5-plugin-lzf (3.7.0-8) calls lzf_compress/lzf_decompress from liblzf1
 * but does not record liblzf.so.1 as a needed library, so libhdf5's dlopen of the
 * plugin fails with "undefined symbol: lzf_decompress". Loading liblzf globally first
 * lets the plugin resolve them; where liblzf is absent nothing changes (the filter is
 * then reported missing with the package to install). */
static void preload_liblzf(void)
{
	static int done;
	if (!done) {
		done = 1;
		dlopen(XF_LIBLZF_SONAME, RTLD_NOW | RTLD_GLOBAL);
	}
}

void xf_h5_quiet(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	preload_liblzf();
}

struct walk_ctx {
	char *buf;
	size_t len;
	int done;
};

static herr_t walk_first(unsigned n, const H5E_error2_t *e, void *data)
{
	struct walk_ctx *c = data;
	(void)n;
	if (!c->done && e->desc && e->desc[0]) {
		snprintf(c->buf, c->len, "%s", e->desc);
		c->done = 1;
	}
	return 0;
}

void xf_h5_last_error(char *buf, size_t len)
{
	struct walk_ctx c = { buf, len, 0 };
	buf[0] = '\0';
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_first, &c);
	H5Eclear2(H5E_DEFAULT);
}

/* Where a path leads (locate). A link that leads out of the file is present (the writer
 * put something there) but never followed: an optional dataset stored as such a link is
 * refused, not taken as absent and defaulted (ADR 0051). */
enum link_place {
	LINK_ABSENT,	/* no link at the path, or a parent is missing or not a group */
	LINK_HERE,	/* an object of this file (through hard and soft links) */
	LINK_ELSEWHERE, /* a link on the way leads to another file */
	LINK_NOWHERE,	/* a soft link on the way leads to nothing in this file */
};

#define LINK_TARGET_MAX 600

/* Link access that refuses to traverse any external link, through however many soft
 * links it is reached: its callback runs before HDF5 opens the target file, and fails.
 * An external link may name any file, a FIFO included (reading it blocks), or one that
 * changes under a run: data is read only from the file the user named (ADR 0016). The
 * target is kept for the message. */
typedef struct link_guard {
	hid_t lapl;
	int denied;
	char link[1024];	      /* the link on the path that leads out or nowhere */
	char target[LINK_TARGET_MAX]; /* "FILE:/object", or a soft link's value */
	char via[LINK_TARGET_MAX];    /* a soft link's value when it leads out */
} link_guard;

static herr_t deny_external(const char *parent_file, const char *parent_group,
			    const char *child_file, const char *child_object, unsigned *flags,
			    hid_t fapl, void *data)
{
	link_guard *g = data;
	(void)parent_file;
	(void)parent_group;
	(void)flags;
	(void)fapl;
	if (!g->denied)
		snprintf(g->target, sizeof g->target, "%s:%s", child_file, child_object);
	g->denied = 1;
	return -1;
}

/* An access property list of class cls (link, dataset or group access: the latter two
 * derive from link access) that denies external links into g; -1 on failure. */
static hid_t guarded_access(hid_t cls, link_guard *g)
{
	hid_t pl = H5Pcreate(cls);
	if (pl >= 0 && H5Pset_elink_cb(pl, deny_external, g) < 0) {
		H5Pclose(pl);
		pl = -1;
	}
	H5Eclear2(H5E_DEFAULT);
	return pl;
}

static void guard_open(link_guard *g)
{
	memset(g, 0, sizeof *g);
	g->lapl = guarded_access(H5P_LINK_ACCESS, g);
}

/* Open the dataset or group at path (located here) with external links denied. */
static hid_t guarded_open(hid_t file, const char *path, int group, link_guard *g)
{
	hid_t pl = guarded_access(group ? H5P_GROUP_ACCESS : H5P_DATASET_ACCESS, g);
	hid_t id = -1;
	if (pl >= 0) {
		id = group ? H5Gopen2(file, path, pl) : H5Dopen2(file, path, pl);
		H5Pclose(pl);
	}
	H5Eclear2(H5E_DEFAULT);
	return id;
}

static void guard_close(link_guard *g)
{
	if (g->lapl >= 0)
		H5Pclose(g->lapl);
	g->lapl = -1;
}

/* The value of the link at prefix into out (LINK_TARGET_MAX bytes): the file and object
 * of an external link, the path of a soft link. */
static void link_value(hid_t file, const char *prefix, const H5L_info_t *info, hid_t lapl,
		       char *out)
{
	char val[LINK_TARGET_MAX];
	const char *fname = NULL, *obj = NULL;
	unsigned flags;
	size_t n = info->u.val_size;
	snprintf(out, LINK_TARGET_MAX, "%s",
		 info->type == H5L_TYPE_SOFT ? "?" : "a user-defined link");
	if (n == 0 || n > sizeof val || H5Lget_val(file, prefix, val, n, lapl) < 0) {
		H5Eclear2(H5E_DEFAULT);
		return;
	}
	if (info->type == H5L_TYPE_SOFT)
		snprintf(out, LINK_TARGET_MAX, "%.*s", (int)strnlen(val, n), val);
	else if (info->type == H5L_TYPE_EXTERNAL &&
		 H5Lunpack_elink_val(val, n, &flags, &fname, &obj) >= 0 && fname && obj)
		snprintf(out, LINK_TARGET_MAX, "%s:%s", fname, obj);
	H5Eclear2(H5E_DEFAULT);
}

/* Check one link of a path (prefix, every parent already found here). */
static enum link_place locate_link(hid_t file, const char *prefix, link_guard *g)
{
	H5L_info_t info;
	htri_t yes = H5Lexists(file, prefix, g->lapl);
	if (yes <= 0 || H5Lget_info(file, prefix, &info, g->lapl) < 0) {
		H5Eclear2(H5E_DEFAULT);
		return LINK_ABSENT; /* the parent is a dataset, not a group: nothing can be here */
	}
	snprintf(g->link, sizeof g->link, "%s", prefix);
	if (info.type == H5L_TYPE_HARD)
		return LINK_HERE;
	if (info.type != H5L_TYPE_SOFT) {
		link_value(file, prefix, &info, g->lapl, g->target);
		return LINK_ELSEWHERE;
	}
	/* a soft link resolves within the file, or through an external link (denied), or
	 * to nothing (a missing target, a loop longer than HDF5's 16 links) */
	g->denied = 0;
	htri_t there = H5Oexists_by_name(file, prefix, g->lapl);
	H5Eclear2(H5E_DEFAULT);
	if (there > 0)
		return LINK_HERE;
	link_value(file, prefix, &info, g->lapl, g->denied ? g->via : g->target);
	return g->denied ? LINK_ELSEWHERE : LINK_NOWHERE;
}

/* Walk the links of path from the root (H5Lexists fails, not "no", when a parent is
 * missing, so every prefix is checked in turn). */
static enum link_place locate(hid_t file, const char *path, link_guard *g)
{
	char part[1024];
	size_t len = strlen(path);
	if (len >= sizeof part || g->lapl < 0)
		return LINK_ABSENT;
	for (size_t k = 1; k <= len; k++) {
		if (k < len && path[k] != '/')
			continue;
		memcpy(part, path, k);
		part[k] = '\0';
		enum link_place at = locate_link(file, part, g);
		if (at != LINK_HERE)
			return at;
	}
	return LINK_HERE;
}

int xf_h5_present(hid_t file, const char *path)
{
	link_guard g;
	guard_open(&g);
	enum link_place at = locate(file, path, &g);
	guard_close(&g);
	return at != LINK_ABSENT;
}

/* The one line for a path that is present but not read (a link out of the file or to
 * nothing), or missing; XF_ERR_DATA. The link at fault is named when it is a parent of
 * path, and a soft link's value when one is on the way. */
static int refuse_path(enum link_place at, const link_guard *g, const char *path,
		       const char *file_name, xf_error *err)
{
	char way[sizeof g->link + LINK_TARGET_MAX + 16] = "";
	int n = 0;
	if (strcmp(g->link, path))
		n = snprintf(way, sizeof way, "through %s", g->link);
	if (at == LINK_ELSEWHERE && g->via[0])
		snprintf(way + n, sizeof way - (size_t)n, "%s %s",
			 n ? " →" : "through the soft link to", g->via);
	if (at == LINK_ELSEWHERE)
		return xf_fail(err, XF_ERR_DATA,
			       "%s in %s is a link to another file, which is not followed (%s%s%s; "
			       "copy the data into the file)",
			       path, file_name, way[0] ? way : "it leads",
			       way[0] ? ", to " : " to ", g->target);
	if (at == LINK_NOWHERE)
		return xf_fail(err, XF_ERR_DATA,
			       "%s in %s is a soft link to nothing in the file (%s → %s)", path,
			       file_name, g->link, g->target);
	return xf_fail(err, XF_ERR_DATA, "missing dataset %s in %s", path, file_name);
}

hid_t xf_h5_open_group(hid_t file, const char *file_name, const char *path, xf_error *err)
{
	link_guard g;
	guard_open(&g);
	enum link_place at = locate(file, path, &g);
	hid_t id = -1;
	if (at != LINK_HERE) {
		refuse_path(at, &g, path, file_name, err);
	} else if ((id = guarded_open(file, path, 1, &g)) < 0) {
		xf_fail(err, XF_ERR_DATA, "%s in %s is not a group", path, file_name);
	}
	guard_close(&g);
	return id;
}

int xf_h5_lzf_available(void)
{
	xf_h5_quiet();
	return H5Zfilter_avail(XF_H5_FILTER_LZF) > 0;
}

/* 1 when another process holds an exclusive lock on path: HDF5 (1.10.7 and later)
 * flock()s every file it opens, shared for readers and exclusive for writers, so a
 * failed open of a file that an h5py.File(path, "a") keeps open is this, not damage
 * (ADR 0014). */
static int locked_by_writer(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return locked;
}

/* The file access of every open and create: HDF5's file lock on (locking 1) or off (0);
 * with it on, a filesystem that says ENOSYS is ignored by HDF5 itself. Made once and kept
 * for the life of the process. */
static hid_t file_access(int locking)
{
	static hid_t fapl[2] = { -1, -1 };
	if (fapl[locking] < 0 && (fapl[locking] = H5Pcreate(H5P_FILE_ACCESS)) >= 0)
		H5Pset_file_locking(fapl[locking], locking ? 1 : 0, 1);
	return fapl[locking] >= 0 ? fapl[locking] : H5P_DEFAULT;
}

/* After a failed open or create of path: the errno of a flock() there when it says the
 * filesystem has no locks (HDF5 ignores ENOSYS only), else 0. */
static int locks_missing(const char *path)
{
	int why = xf_flock_probe(path);
	return xf_lock_unsupported(why) ? why : 0;
}

static hid_t open_or_create(const char *path, unsigned flags, hid_t fcpl, int create)
{
	hid_t f = create ? H5Fcreate(path, flags, fcpl, file_access(1))
			 : H5Fopen(path, flags, file_access(1));
	int why = f < 0 ? locks_missing(path) : 0;
	if (why) {
		H5Eclear2(H5E_DEFAULT);
		f = create ? H5Fcreate(path, flags, fcpl, file_access(0))
			   : H5Fopen(path, flags, file_access(0));
		if (f >= 0)
			xf_info("hdf5: file locking off (the filesystem has no locks: %s), %s",
				xf_errno_name(why), path);
	}
	return f;
}

hid_t xf_h5_fopen(const char *path, unsigned flags)
{
	/* only a regular file: HDF5's open of a FIFO would wait for a writer forever */
	struct stat st;
	int fd = xf_open_regular(path, 0, &st);
	if (fd < 0 && errno == EINVAL)
		return -1;
	if (fd >= 0)
		close(fd);
	return open_or_create(path, flags, H5P_DEFAULT, 0);
}

hid_t xf_h5_fcreate(const char *path, hid_t fcpl)
{
	return open_or_create(path, H5F_ACC_TRUNC, fcpl, 1);
}

int xf_h5_lock_error(const char *why)
{
	/* HDF5's words for a failed flock ("unable to lock file, errno = 37, ..."); a bare
	 * "lock" would match "sblock", the superblock of a truncated file */
	return why && strstr(why, "unable to lock") != NULL;
}

int xf_h5_open_read(const char *path, hid_t *file, xf_error *err)
{
	struct stat st;
	char why[512];
	xf_h5_quiet();
	if (stat(path, &st) != 0)
		return xf_fail(err, XF_ERR_DATA, "data file not found: %s (%s)", path,
			       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return xf_fail(err, XF_ERR_DATA, "data file is not a regular file: %s", path);
	htri_t is = H5Fis_hdf5(path);
	if (is <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return xf_fail(err, XF_ERR_DATA, "not an HDF5 file (no HDF5 signature): %s", path);
	}
	*file = xf_h5_fopen(path, H5F_ACC_RDONLY);
	if (*file < 0) {
		xf_h5_last_error(why, sizeof why);
		if (locked_by_writer(path))
			return xf_fail(err, XF_ERR_DATA,
				       "data file is locked by another program (an HDF5 writer has "
				       "it open): close that program, or set "
				       "HDF5_USE_FILE_LOCKING=FALSE to read it anyway, %s",
				       path);
		if (xf_h5_lock_error(why))
			return xf_fail(
				err, XF_ERR_DATA,
				"cannot open the data file: HDF5 could not lock it (%s), a "
				"fault of the filesystem's locking, not of the file: set "
				"HDF5_USE_FILE_LOCKING=FALSE to read it without the lock, %s",
				why, path);
		return xf_fail(err, XF_ERR_DATA,
			       "cannot open HDF5 file, truncated or damaged (%s): %s",
			       why[0] ? why : "unknown HDF5 error", path);
	}
	return 0;
}

/* 1 when the dataset's values live outside the file (external raw storage or a virtual
 * dataset): those files are not read, for the reason links to them are not followed. */
static int stored_elsewhere(hid_t d, const char *file_name, const char *path, xf_error *err)
{
	hid_t dcpl = H5Dget_create_plist(d);
	int ext = dcpl >= 0 ? H5Pget_external_count(dcpl) : 0;
	int virt = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	H5Eclear2(H5E_DEFAULT);
	if (ext > 0 || virt)
		return xf_fail(err, XF_ERR_DATA,
			       "dataset %s in %s keeps its values in other files (%s), which are "
			       "not read (copy the data into the file)",
			       path, file_name,
			       virt ? "a virtual dataset" : "external raw storage");
	return 0;
}

/* 1 when a chunk of the dataset is larger than XF_H5_CHUNK_MAX bytes: HDF5 decompresses
 * a whole chunk to read any part of it, so a compressed 3 GB chunk of a tiny file would
 * cost 3 GB for a 40-frame window. */
static int chunk_too_big(hid_t d, const char *file_name, const char *path, xf_error *err)
{
	hid_t dcpl = H5Dget_create_plist(d), t = H5Dget_type(d);
	hsize_t dims[H5S_MAX_RANK];
	size_t bytes = t >= 0 ? H5Tget_size(t) : 1;
	int rank = -1, over = 0;
	if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED)
		rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
	for (int k = 0; k < rank && !over; k++)
		over = xf_size_mul(bytes, (size_t)dims[k], &bytes) != 0;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (t >= 0)
		H5Tclose(t);
	H5Eclear2(H5E_DEFAULT);
	if (rank > 0 && (over || bytes > XF_H5_CHUNK_MAX))
		return xf_fail(err, XF_ERR_DATA,
			       "dataset %s in %s is stored in chunks of more than %d MiB, above "
			       "the limit (docs/input-formats.md)",
			       path, file_name, XF_H5_CHUNK_MAX >> 20);
	return 0;
}

/* The one home of every read of a dataset (numbers, strings, maps): it is opened only
 * when its whole path lies in the file (ADR 0016, ADR 0051), and refused when its values
 * live elsewhere or its chunks are too big. */
static hid_t open_dataset(hid_t file, const char *file_name, const char *path, xf_error *err)
{
	link_guard g;
	guard_open(&g);
	enum link_place at = locate(file, path, &g);
	hid_t d = -1;
	if (at != LINK_HERE) {
		refuse_path(at, &g, path, file_name, err);
		guard_close(&g);
		return -1;
	}
	d = guarded_open(file, path, 0, &g);
	guard_close(&g);
	if (d < 0) {
		xf_fail(err, XF_ERR_DATA, "%s is not a dataset in %s", path, file_name);
	} else if (stored_elsewhere(d, file_name, path, err) ||
		   chunk_too_big(d, file_name, path, err)) {
		H5Dclose(d);
		d = -1;
	}
	return d;
}

/* 1 when the dataset uses a filter that cannot be applied here; names it in err. */
static int filter_missing(hid_t d, const char *file_name, const char *path, xf_error *err)
{
	hid_t dcpl = H5Dget_create_plist(d);
	int bad = 0;
	int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
	for (int k = 0; k < nf && !bad; k++) {
		unsigned flags, cd[8];
		size_t ncd = 8;
		char name[128] = "";
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, sizeof name,
						 name, NULL);
		if (id < 0 || H5Zfilter_avail(id) > 0)
			continue;
		bad = 1;
		if (id == XF_H5_FILTER_LZF)
			xf_fail(err, XF_ERR_DATA, XF_H5_LZF_MESSAGE ", needed by %s in %s", path,
				file_name);
		else
			xf_fail(err, XF_ERR_DATA,
				"HDF5 filter %d (%s) needed by %s in %s is not available", (int)id,
				name[0] ? name : "unknown", path, file_name);
	}
	if (dcpl >= 0)
		H5Pclose(dcpl);
	H5Eclear2(H5E_DEFAULT);
	return bad;
}

/* Read the selection file_space of d into out (mem_space), as double; H5S_ALL twice
 * reads the whole dataset. */
static int read_doubles(hid_t d, const char *file_name, const char *path, hid_t mem_space,
			hid_t file_space, double *out, xf_error *err)
{
	hid_t t = H5Dget_type(d);
	H5T_class_t cls = H5Tget_class(t);
	H5Tclose(t);
	if (cls != H5T_INTEGER && cls != H5T_FLOAT)
		return xf_fail(err, XF_ERR_DATA, "dataset %s in %s is not numeric", path,
			       file_name);
	if (stored_elsewhere(d, file_name, path, err) || filter_missing(d, file_name, path, err))
		return XF_ERR_DATA;
	if (H5Dread(d, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, out) < 0) {
		char why[512];
		xf_h5_last_error(why, sizeof why);
		return xf_fail(err, XF_ERR_DATA, "cannot read dataset %s in %s (%s)", path,
			       file_name, why[0] ? why : "unknown HDF5 error");
	}
	return 0;
}

int xf_h5_read_list(hid_t file, const char *file_name, const char *path, double **out, size_t *n,
		    xf_error *err)
{
	*out = NULL;
	*n = 0;
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_ERR_DATA;
	hid_t s = H5Dget_space(d);
	int rank = H5Sget_simple_extent_ndims(s);
	hsize_t dims[H5S_MAX_RANK];
	int rc = 0;
	if (rank < 0 || rank > H5S_MAX_RANK) {
		rc = xf_fail(err, XF_ERR_DATA, "cannot read the shape of %s in %s", path,
			     file_name);
		goto out;
	}
	H5Sget_simple_extent_dims(s, dims, NULL);
	int long_dims = 0;
	for (int k = 0; k < rank; k++)
		long_dims += dims[k] > 1;
	if (long_dims > 1) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "dataset %s in %s should be a 1-D list (scalar, (M,), (1, M) or "
			     "(M, 1)) but has rank %d with %d dimensions longer than 1",
			     path, file_name, rank, long_dims);
		goto out;
	}
	hssize_t np = H5Sget_simple_extent_npoints(s);
	if (np <= 0) {
		rc = xf_fail(err, XF_ERR_DATA, "dataset %s in %s is empty", path, file_name);
		goto out;
	}
	if ((unsigned long long)np > XF_H5_LIST_MAX) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "dataset %s in %s declares %lld entries, above the limit of %d for a "
			     "list (docs/input-formats.md)",
			     path, file_name, (long long)np, XF_H5_LIST_MAX);
		goto out;
	}
	*out = xf_malloc_array((size_t)np, sizeof **out);
	if (!*out) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
		goto out;
	}
	rc = read_doubles(d, file_name, path, H5S_ALL, H5S_ALL, *out, err);
	if (rc) {
		free(*out);
		*out = NULL;
	} else {
		*n = (size_t)np;
	}
out:
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_scalar(hid_t file, const char *file_name, const char *path, double *out,
		      xf_error *err)
{
	double *v;
	size_t n;
	int rc = xf_h5_read_list(file, file_name, path, &v, &n, err);
	if (rc)
		return rc;
	if (n != 1)
		rc = xf_fail(err, XF_ERR_DATA, "dataset %s in %s should hold one number, not %zu",
			     path, file_name, n);
	else
		*out = v[0];
	free(v);
	return rc;
}

/* Memory type of a fixed-length string cell of sz bytes: null-padded, so that HDF5's
 * conversion keeps all sz characters. A null-terminated memory type of the same size
 * would drop the last one ("phi" stored as h5py's S3 read as "ph"). */
static hid_t fixed_string_type(size_t sz, hid_t file_type)
{
	hid_t mt = H5Tcopy(H5T_C_S1);
	H5Tset_size(mt, sz);
	H5Tset_strpad(mt, H5T_STR_NULLPAD);
	H5Tset_cset(mt, H5Tget_cset(file_type)); /* HDF5 converts no ASCII ↔ UTF-8 */
	return mt;
}

/* A fixed-length cell of sz bytes as a C string: cut at the first NUL (null-terminated
 * or null-padded) and drop trailing spaces (space-padded, Fortran style). cell has room
 * for sz + 1 bytes. */
static void trim_cell(char *cell, size_t sz)
{
	size_t n = strnlen(cell, sz);
	while (n > 0 && cell[n - 1] == ' ')
		n--;
	cell[n] = '\0';
}

int xf_h5_read_string(hid_t file, const char *file_name, const char *path, char *buf, size_t len,
		      xf_error *err)
{
	buf[0] = '\0';
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_ERR_DATA;
	int rc = 0;
	hid_t t = H5Dget_type(d), s = H5Dget_space(d);
	if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) {
		rc = xf_fail(err, XF_ERR_DATA, "dataset %s in %s is not a single string", path,
			     file_name);
	} else if (H5Tis_variable_str(t) > 0) {
		char *v = NULL;
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(t));
		if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) {
			rc = xf_fail(err, XF_ERR_DATA, "cannot read string %s in %s", path,
				     file_name);
		} else {
			snprintf(buf, len, "%s", v ? v : "");
			H5Dvlen_reclaim(mt, s, H5P_DEFAULT, &v);
		}
		H5Tclose(mt);
	} else {
		size_t sz = H5Tget_size(t);
		char *tmp = sz <= XF_H5_STRING_MAX ? calloc(sz + 1, 1) : NULL;
		hid_t mt = fixed_string_type(sz, t);
		if (!tmp || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, tmp) < 0) {
			rc = xf_fail(err, XF_ERR_DATA, "cannot read string %s in %s", path,
				     file_name);
		} else {
			trim_cell(tmp, sz);
			snprintf(buf, len, "%s", tmp);
		}
		free(tmp);
		H5Tclose(mt);
	}
	H5Eclear2(H5E_DEFAULT);
	H5Tclose(t);
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_string_list(hid_t file, const char *file_name, const char *path, char *names,
			   size_t len, size_t max, size_t *n, xf_error *err)
{
	*n = 0;
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_ERR_DATA;
	int rc = 0;
	hid_t t = H5Dget_type(d), s = H5Dget_space(d), mt = -1;
	hssize_t np = H5Sget_simple_extent_npoints(s);
	size_t sz = H5Tget_size(t);
	void *buf = NULL;
	if (H5Tget_class(t) != H5T_STRING || np < 1) {
		rc = xf_fail(err, XF_ERR_DATA, "dataset %s in %s is not a list of strings", path,
			     file_name);
		goto out;
	}
	if ((unsigned long long)np > XF_H5_STRINGS_MAX || sz > XF_H5_STRING_MAX) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "dataset %s in %s declares %lld strings of %zu bytes, above the "
			     "limits of %d strings of %d bytes (docs/input-formats.md)",
			     path, file_name, (long long)np, sz, XF_H5_STRINGS_MAX,
			     XF_H5_STRING_MAX);
		goto out;
	}
	/* read in the file's own string kind: variable length as char *, fixed as
	 * sz-byte null-padded cells (not necessarily NUL-terminated) */
	int vlen = H5Tis_variable_str(t) > 0;
	if (vlen) {
		mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
	} else {
		mt = fixed_string_type(sz, t);
	}
	H5Tset_cset(mt, H5Tget_cset(t));
	buf = xf_calloc_array((size_t)np, vlen ? sizeof(char *) : sz);
	if (!buf || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		rc = xf_fail(err, XF_ERR_DATA, "cannot read strings %s in %s", path, file_name);
		goto out;
	}
	for (size_t k = 0; k < (size_t)np && k < max; k++) {
		char *dst = names + k * len;
		if (vlen) {
			const char *v = ((char **)buf)[k];
			snprintf(dst, len, "%s", v ? v : "");
			trim_cell(dst, strlen(dst));
		} else {
			size_t m = sz < len - 1 ? sz : len - 1;
			memcpy(dst, (char *)buf + k * sz, m);
			dst[m] = '\0';
			trim_cell(dst, m);
		}
	}
	*n = (size_t)np;
	if (vlen)
		H5Dvlen_reclaim(mt, s, H5P_DEFAULT, buf);
out:
	free(buf);
	if (mt >= 0)
		H5Tclose(mt);
	H5Eclear2(H5E_DEFAULT);
	H5Tclose(t);
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_matrix_shape(hid_t file, const char *file_name, const char *path, size_t *rows,
		       size_t *cols, xf_error *err)
{
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_ERR_DATA;
	hid_t s = H5Dget_space(d);
	hsize_t dims[H5S_MAX_RANK];
	int rank = H5Sget_simple_extent_ndims(s);
	int rc = 0;
	if (rank != 2) {
		rc = xf_fail(err, XF_ERR_DATA, "map %s in %s should be 2-D but has rank %d", path,
			     file_name, rank);
	} else {
		H5Sget_simple_extent_dims(s, dims, NULL);
		*rows = (size_t)dims[0];
		*cols = (size_t)dims[1];
	}
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_block(hid_t file, const char *file_name, const char *path, size_t first, size_t n,
		     double *out, xf_error *err)
{
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_ERR_DATA;
	hsize_t start[2] = { first, first }, count[2] = { n, n };
	hid_t fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
	int rc;
	if (fs < 0 || ms < 0 ||
	    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
	    H5Sselect_valid(fs) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		rc = xf_fail(err, XF_ERR_DATA,
			     "cannot select rows %zu to %zu of map %s in %s (outside the map)",
			     first + 1, first + n, path, file_name);
	} else {
		rc = read_doubles(d, file_name, path, ms, fs, out, err);
	}
	if (ms >= 0)
		H5Sclose(ms);
	if (fs >= 0)
		H5Sclose(fs);
	H5Dclose(d);
	return rc;
}

int xf_h5_list_to_long(const double *v, size_t n, long *out, const char *file_name,
		       const char *path, xf_error *err)
{
	for (size_t k = 0; k < n; k++) {
		if (!isfinite(v[k]) || v[k] != floor(v[k]))
			return xf_fail(err, XF_ERR_DATA,
				       "dataset %s in %s should hold integers, entry %zu is %.17g",
				       path, file_name, k, v[k]);
		/* an integer all the same: say what is wrong with it */
		if (fabs(v[k]) > XF_H5_INTEGER_MAX)
			return xf_fail(
				err, XF_ERR_DATA,
				"dataset %s in %s: entry %zu is %.17g, out of range (bin and "
				"cell numbers are at most 2^53 = %.0f in magnitude, the "
				"largest integer a number read keeps exactly)",
				path, file_name, k, v[k], XF_H5_INTEGER_MAX);
		out[k] = (long)v[k];
	}
	return 0;
}
