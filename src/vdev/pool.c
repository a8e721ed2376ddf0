/* pool.c — the virtual-device thread pool (vdev.h). Workers take block numbers from a
 * shared counter; which worker computes a block does not matter because every block
 * writes its own slot and the caller reduces slots in block order. */
#include "xpcsfit/vdev.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/interrupt.h"
#include "xpcsfit/options.h"

struct xf_pool {
	int n_threads;	    /* including the calling thread */
	pthread_t *threads; /* n_threads - 1 workers */
	pthread_mutex_t lock;
	pthread_cond_t work_ready;
	pthread_cond_t work_done;
	unsigned long generation; /* bumped for every xf_pool_run */
	int shutting_down;
	/* the current job */
	xf_block_task task;
	void *ctx;
	int n_blocks;
	int next_block;
	int workers_busy;
};

static int take_block(xf_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	int b = pool->next_block < pool->n_blocks ? pool->next_block++ : -1;
	pthread_mutex_unlock(&pool->lock);
	return b;
}

static void run_blocks(xf_pool *pool)
{
	for (int b = take_block(pool); b >= 0; b = take_block(pool))
		pool->task(pool->ctx, b);
}

static void *worker_main(void *arg)
{
	xf_pool *pool = arg;
	unsigned long seen = 0;
	for (;;) {
		pthread_mutex_lock(&pool->lock);
		while (!pool->shutting_down && pool->generation == seen)
			pthread_cond_wait(&pool->work_ready, &pool->lock);
		if (pool->shutting_down) {
			pthread_mutex_unlock(&pool->lock);
			return NULL;
		}
		seen = pool->generation;
		pthread_mutex_unlock(&pool->lock);

		run_blocks(pool);

		pthread_mutex_lock(&pool->lock);
		if (--pool->workers_busy == 0)
			pthread_cond_signal(&pool->work_done);
		pthread_mutex_unlock(&pool->lock);
	}
}

xf_pool *xf_pool_create(int n_threads)
{
	if (n_threads < 1)
		n_threads = 1;
	xf_pool *pool = calloc(1, sizeof *pool);
	if (!pool)
		return NULL;
	pool->n_threads = n_threads;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_ready, NULL);
	pthread_cond_init(&pool->work_done, NULL);
	if (n_threads > 1) {
		pool->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
		if (!pool->threads) {
			free(pool);
			return NULL;
		}
		for (int t = 0; t < n_threads - 1; t++)
			if (xf_thread_create(&pool->threads[t], worker_main, pool)) {
				pool->n_threads = t + 1; /* keep the ones that started */
				break;
			}
	}
	return pool;
}

void xf_pool_destroy(xf_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->shutting_down = 1;
	pthread_cond_broadcast(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);
	for (int t = 0; t < pool->n_threads - 1; t++)
		pthread_join(pool->threads[t], NULL);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->work_ready);
	pthread_cond_destroy(&pool->work_done);
	free(pool->threads);
	free(pool);
}

int xf_pool_threads(const xf_pool *pool)
{
	return pool->n_threads;
}

void xf_pool_run(xf_pool *pool, int n_blocks, xf_block_task task, void *ctx)
{
	if (pool->n_threads == 1 || n_blocks <= 1) {
		for (int b = 0; b < n_blocks; b++)
			task(ctx, b);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	pool->task = task;
	pool->ctx = ctx;
	pool->n_blocks = n_blocks;
	pool->next_block = 0;
	pool->workers_busy = pool->n_threads - 1;
	pool->generation++;
	pthread_cond_broadcast(&pool->work_ready);
	pthread_mutex_unlock(&pool->lock);

	run_blocks(pool);

	pthread_mutex_lock(&pool->lock);
	while (pool->workers_busy > 0)
		pthread_cond_wait(&pool->work_done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

/* A positive count from the environment ("4", or the first of OpenMP's "4,2"), else 0. */
static int env_count(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end;
	long n = strtol(v, &end, 10);
	if (end == v || (*end && *end != ',') || n < 1)
		return 0;
	return n > XF_VIRTUAL_DEVICES_MAX ? XF_VIRTUAL_DEVICES_MAX : (int)n;
}

int xf_cores_given(const char **source)
{
	static const char *const vars[] = { "SLURM_CPUS_PER_TASK", "OMP_NUM_THREADS" };
	for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
		int n = env_count(vars[k]);
		if (n) {
			*source = vars[k];
			return n;
		}
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
		int n = CPU_COUNT(&set);
		*source = "CPU affinity";
		return n > XF_VIRTUAL_DEVICES_MAX ? XF_VIRTUAL_DEVICES_MAX : n;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	*source = "online cores";
	return n > 0 ? (n > XF_VIRTUAL_DEVICES_MAX ? XF_VIRTUAL_DEVICES_MAX : (int)n) : 1;
}

int xf_online_cores(void)
{
	const char *source;
	return xf_cores_given(&source);
}

/* OpenBLAS's own thread pool would compete with the virtual devices; our BLAS/LAPACK
 * calls are small p × p solves, so the virtual-device count alone sets the parallelism
 * (design/architecture.md). Declared here: the cblas.h on the include path may be
 * another BLAS's. */
void openblas_set_num_threads(int num_threads);

void xf_blas_single_thread(void)
{
	openblas_set_num_threads(1);
}
