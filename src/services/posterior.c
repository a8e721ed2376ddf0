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
	if (xf_posterior_estimate(&post->res, &grid, req->n_slot_q > 0 ? req->slot_q : NULL,
				  &post->est, &post->app, err))
		return err->code;
	post->published = 1;
	return 0;
}

int xf_posterior_estimate(const xf_cmc_result *res, const xf_model_grid *grid, const double *slot_q,
			  xf_estimate *est, xf_cmc_appendix *app, xf_error *err)
{
	if (xf_estimate_from_cmc(res, grid, est, err) != 0)
		return err->code;
	if (xf_estimate_set_slot_q(est, slot_q, err) || xf_cmc_appendix_of(res, app, err)) {
		xf_estimate_free(est);
		return err->code;
	}
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
