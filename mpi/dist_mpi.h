/* dist_mpi.h — the MPI implementation of the library's distribution hook
 * (xpcsfit/dist.h), on MPI_COMM_WORLD. */
#ifndef XPCSFIT_MPI_DIST_MPI_H
#define XPCSFIT_MPI_DIST_MPI_H

#include "xpcsfit/dist.h"

/* Fill d for this rank (after MPI_Init_thread). */
void xf_dist_mpi_hook(xf_dist *d);

#endif
