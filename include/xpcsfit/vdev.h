/* vdev.h — virtual devices: a fixed pool of worker threads that evaluates numbered
 * blocks of work. Each block writes only its own result slot; callers reduce the slots
 * in block order, so results never depend on the number of threads or on timing. */
#ifndef XPCSFIT_VDEV_H
#define XPCSFIT_VDEV_H

#include "xpcsfit/error.h"

typedef struct xf_pool xf_pool;

/* task(ctx, block) evaluates one block; it must touch only block-owned state. */
typedef void (*xf_block_task)(void *ctx, int block);

/* n_threads ≥ 1 (the calling thread counts as one). NULL on failure. */
xf_pool *xf_pool_create(int n_threads);
void xf_pool_destroy(xf_pool *pool);
int xf_pool_threads(const xf_pool *pool);
/* Run blocks 0..n_blocks-1 and return when all are done. */
void xf_pool_run(xf_pool *pool, int n_blocks, xf_block_task task, void *ctx);
/* Keep OpenBLAS to one thread (the virtual devices are the parallelism). */
void xf_blas_single_thread(void);
/* Under a limited address space (ulimit -v, SGE h_vmem), take OpenBLAS's work buffer now
 * while it fits (src/vdev/blas_limits.c, adr/0072): 0, or XF_ERR_NOMEM with one line
 * "out of memory: ..." when the limit leaves no room for it, where OpenBLAS itself would
 * retry forever. Without a limit: 0, nothing done. Call before the first BLAS/LAPACK call
 * of a fit, on the thread that makes it. */
int xf_blas_reserve(xf_error *err);
/* The cores this process was given (XF_KEY_VIRTUAL_DEVICES: auto; docs/cli.md):
 * SLURM_CPUS_PER_TASK when set, else OMP_NUM_THREADS, else the CPUs of its affinity mask
 * (what mpirun/srun bind it to), else the online cores; at most XF_VIRTUAL_DEVICES_MAX.
 * *source names which one. */
int xf_cores_given(const char **source);
/* The same count without its source. */
int xf_online_cores(void);

#endif
