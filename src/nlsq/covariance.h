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

/* The eigen-decomposition of the Jacobi-scaled JᵀJ over the m free parameters:
 * A = D·JᵀJ_FF·D with D = diag(1/sqrt(JᵀJ_kk)) (1 where JᵀJ_kk is 0), A = V·diag(ev)·Vᵀ.
 * A direction u of A is the parameter change D·u; idx maps p < m to the parameter. */
typedef struct xf_scaled_eigen {
	int m;
	int *idx;    /* [m] parameter index of row p */
	double *d;   /* [m] D */
	double *vec; /* [m×m] row-major; column e is the eigenvector of ev[e] */
	double *ev;  /* [m] ascending */
} xf_scaled_eigen;

/* 0, or −1 (allocation or LAPACK failure: se is empty). */
int xf_scaled_eigen_of(const double *jtj, int n, const int *free_mask, xf_scaled_eigen *se);
void xf_scaled_eigen_free(xf_scaled_eigen *se);

#endif
