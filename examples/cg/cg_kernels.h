/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef CG_KERNELS_H
#define CG_KERNELS_H

/* The compute kernels of the cg example, behind one small interface so that
 * a device build can replace them: cg_kernels_cpu.c implements them for the
 * CPU (OpenMP threads when built with OpenMP); a CUDA build (issue 5) adds
 * cg_kernels_cuda.cu with the same functions and links it instead.  cg.c
 * holds the solver, the decomposition and all of MPI, and never touches a
 * vector's elements itself: it goes through these functions only.
 *
 * A rank owns a slab of nz whole z-planes of the n x n x n grid.  Every vector
 * is stored with a border one cell wide on each side: planes k = 0 and
 * k = nz + 1 are ghost planes (the neighbour ranks' planes, or zero at the
 * domain's boundary), and the cells i = 0, i = n + 1, j = 0, j = n + 1 of each
 * plane are the zero Dirichlet boundary.  Element (i, j, k) is at
 * (k * (n + 2) + j) * (n + 2) + i.  The kernels read and write interior cells
 * (1..n, 1..n, 1..nz) only; borders are never written, so they stay zero
 * (ghost planes are written by the halo exchange, through plane_offset()). */

#include <stddef.h>

struct cg_domain {
    int n;       /* grid edge: n x n interior cells per plane */
    int nz;      /* interior planes on this rank (>= 1) */
    size_t sx;   /* n + 2: stride of j */
    size_t sxy;  /* (n + 2)^2: stride of k, the size of one plane */
    size_t len;  /* (nz + 2) * sxy: the elements of one vector */
};

/* Fill in the strides of a rank's slab. */
void cg_domain_init(struct cg_domain *d, int n, int nz);

/* Offset of plane k (0..nz+1) in a vector: ghost planes and boundary planes
 * are contiguous, so MPI sends and receives them in place. */
static inline size_t cg_plane_offset(const struct cg_domain *d, int k)
{
    return (size_t)k * d->sxy;
}

/* "cpu" (or "cuda"...): printed by the solver. */
const char *cg_kernels_backend(void);

/* Whether vector memory is ordinary host memory that MPI may read and write
 * directly.  When not (a device build without GPU-aware MPI), cg.c copies
 * the halo planes through host buffers with cg_vec_download/upload. */
int cg_kernels_host_memory(void);

/* Threads each kernel uses (omp_get_max_threads(), or 1). */
int cg_kernels_threads(void);

/* A vector of d->len elements, all zero (first touched by the threads that
 * will use it); NULL when out of memory. */
double *cg_vec_alloc(const struct cg_domain *d);
void cg_vec_free(double *v);

/* Copy count elements at offset off between a vector and host memory. */
void cg_vec_upload(double *v, size_t off, const double *host, size_t count);
void cg_vec_download(double *host, const double *v, size_t off, size_t count);

/* y = A x on the interior planes k0 <= k < k1 (1 <= k0, k1 <= nz + 1), where
 * A is the 7-point Laplacian scaled by h^2: (A x)_c = 6 x_c - sum of the six
 * neighbours.  Planes 2..nz-1 need no ghost plane, so cg.c computes them
 * while the halo exchange is in flight.  7 flops per cell (1 mul, 6 add/sub). */
void cg_stencil(const struct cg_domain *d, const double *x, double *y, int k0, int k1);

/* The local part of a dot product over the interior: 2 flops per cell. */
double cg_dot(const struct cg_domain *d, const double *a, const double *b);

/* y += alpha x: 2 flops per cell. */
void cg_axpy(const struct cg_domain *d, double alpha, const double *x, double *y);

/* y += alpha x, then the local y . y, in one pass: 4 flops per cell. */
double cg_axpy_norm2(const struct cg_domain *d, double alpha, const double *x, double *y);

/* y = x + beta y: 2 flops per cell. */
void cg_xpby(const struct cg_domain *d, const double *x, double beta, double *y);

/* y = 0 over the interior (no flops). */
void cg_zero(const struct cg_domain *d, double *y);

/* y = x over the interior (no flops). */
void cg_copy(const struct cg_domain *d, const double *x, double *y);

#endif
