/* covariance.h — parameter covariance from JᵀJ at the solution (nlsq.md). */
#ifndef XPCSFIT_NLSQ_COVARIANCE_H
#define XPCSFIT_NLSQ_COVARIANCE_H

/* cov (n×n) = scale_factor·(JᵀJ_FF)⁺ on the free parameters, NaN elsewhere.
 * rank receives the numerical rank. weak_dir (n values, may be NULL) receives the least
 * determined direction: the eigenvector of the smallest eigenvalue of the Jacobi-scaled
 * JᵀJ (unit length, 0 on fixed parameters), whose large components name the parameters
 * the data cannot tell apart. Returns 0, or −1 on failure. */
int xf_covariance(const double *jtj, int n, const int *free_mask, double scale_factor, double *cov,
		  int *rank, double *weak_dir);

#endif
