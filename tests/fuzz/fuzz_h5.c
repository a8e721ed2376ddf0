/* fuzz_h5.c — fuzz target: the HDF5 reader behind `xpcsfit validate` (xf_dataset_load)
 * on arbitrary bytes as the data file, with one fixed config (static mode, q = 0.01,
 * dt = 0.1 s, all frames). Any input must end in a dataset or one error line — never a
 * crash, leak, hang or sanitizer report. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "cli/request_build.h"

static const char fixed_config[] = "analysis_mode: static\n"
				   "analyzer_parameters:\n"
				   "  dt: 0.1\n"
				   "  scattering: {wavevector_q: 0.01}\n";

static xf_config cfg;
static int have_cfg;

static void free_config(void)
{
	xf_config_free(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *h5 = xf_fuzz_scratch(".h5");
	if (!h5)
		abort();
	if (!have_cfg) {
		const char *yaml = xf_fuzz_scratch(".yaml");
		xf_error err = { 0 };
		if (!yaml ||
		    xf_fuzz_write(yaml, (const uint8_t *)fixed_config, strlen(fixed_config)) ||
		    xf_config_load(yaml, &cfg, &err)) {
			fprintf(stderr, "fuzz_h5: fixed config: %s\n", err.msg);
			abort();
		}
		have_cfg = 1;
		atexit(free_config);
	}
	if (xf_fuzz_write(h5, data, size))
		abort();
	xf_dataset ds;
	xf_error err = { 0 };
	int rc = xf_cli_dataset_load(&cfg, h5, &ds, &err);
	if (rc == 0) {
		/* touch every stored value the way validate does */
		size_t np = xf_packed_size((size_t)ds.n_frames);
		double sum = 0.0;
		for (int a = 0; a < ds.n_phi; a++)
			for (size_t k = 0; k < np; k++)
				sum += ds.c2[a][k];
		if (sum != sum && np == 0)
			abort(); /* unreachable; keeps the reads */
		xf_dataset_free(&ds);
	} else if ((rc != XF_ERR_CONFIG && rc != XF_ERR_DATA) || err.msg[0] == '\0' ||
		   strchr(err.msg, '\n')) {
		fprintf(stderr, "fuzz_h5: exit code %d, not one error line: '%s'\n", rc, err.msg);
		abort();
	}
	/* every file, dataset, group, type, space and attribute opened is closed again */
	if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) {
		fprintf(stderr, "fuzz_h5: %ld HDF5 objects left open\n",
			(long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL));
		abort();
	}
	xf_log_reset();
	return 0;
}
