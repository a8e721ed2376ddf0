/* posterior.c — the posterior run and its estimate (posterior.h, adr/0111) */
#include "services/posterior.h"

#include <string.h>

#include "xpcsfit/dist.h"

int xf_posterior_run(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
		     const xf_estimate *warm, int n_threads, const char *shard_dir, int resume,
		     xf_cmc_progress_fn progress, void *progress_ctx, xf_posterior *post,
		     xf_error *err)
{
	memset(post, 0, sizeof *post);
	int rc = xf_cmc_run(req, o, ds, warm, n_threads, shard_dir, resume, progress, progress_ctx,
			    &post->res, err);
	/* several ranks: rank 0 alone holds the combined result */
	if (rc || !xf_dist_is_root())
		return rc;
	xf_model_grid grid = xf_request_grid(req, ds->n_frames, ds->dt_s, ds->q);
	if (xf_estimate_from_cmc(&post->res, &grid, &post->est, err) != 0)
		return err->code;
	if (xf_estimate_set_slot_q(&post->est, req->n_slot_q > 0 ? req->slot_q : NULL, err) ||
	    xf_cmc_appendix_of(&post->res, &post->app, err)) {
		xf_estimate_free(&post->est);
		return err->code;
	}
	post->published = 1;
	return 0;
}

void xf_posterior_free(xf_posterior *post)
{
	if (post->published) {
		xf_cmc_appendix_free(&post->app);
		xf_estimate_free(&post->est);
	}
	xf_cmc_result_free(&post->res);
	memset(post, 0, sizeof *post);
}
