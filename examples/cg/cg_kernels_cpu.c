/* SPDX-License-Identifier: BSD-3-Clause */
/* The cg kernels (cg_kernels.h) for the CPU: plain loops over the interior
 * cells, shared among OpenMP threads when the build has OpenMP (-fopenmp
 * defines _OPENMP); without it they run on one thread and the pragmas
 * vanish, so no compiler warns about them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#define CG_PRAGMA(x) _Pragma(x)
#else
#define CG_PRAGMA(x)
#endif

/* Every kernel splits the (k, j) rows of the interior the same way (static
 * schedule), so a thread works on the memory it touched first. */
#define CG_FOR_ROWS CG_PRAGMA("omp parallel for collapse(2) schedule(static)")
#define CG_FOR_ROWS_SUM(s) CG_PRAGMA("omp parallel for collapse(2) schedule(static) reduction(+ : s)")

void cg_domain_init(struct cg_domain *d, int n, int nz)
{
    d->n = n;
    d->nz = nz;
    d->sx = (size_t)n + 2;
    d->sxy = d->sx * d->sx;
    d->len = ((size_t)nz + 2) * d->sxy;
}

const char *cg_kernels_backend(void)
{
    return "cpu";
}

int cg_kernels_host_memory(void)
{
    return 1;
}

int cg_kernels_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

double *cg_vec_alloc(const struct cg_domain *d)
{
    /* 64-byte lines; aligned_alloc wants a multiple of the alignment. */
    if (d->len > (SIZE_MAX - 64) / sizeof(double))
        return NULL;
    size_t bytes = (d->len * sizeof(double) + 63) / 64 * 64;
    double *v = aligned_alloc(64, bytes);
    if (!v)
        return NULL;
    const int nk = d->nz + 2, nj = d->n + 2;
    const size_t sx = d->sx, sxy = d->sxy;
    CG_FOR_ROWS
    for (int k = 0; k < nk; k++)
        for (int j = 0; j < nj; j++)
            memset(v + (size_t)k * sxy + (size_t)j * sx, 0, sx * sizeof(double));
    return v;
}

void cg_vec_free(double *v)
{
    free(v);
}

void cg_vec_upload(double *v, size_t off, const double *host, size_t count)
{
    memcpy(v + off, host, count * sizeof(double));
}

void cg_vec_download(double *host, const double *v, size_t off, size_t count)
{
    memcpy(host, v + off, count * sizeof(double));
}

/* The first interior cell of row (j, k). */
#define ROW(d, v, j, k) ((v) + (size_t)(k) * (d)->sxy + (size_t)(j) * (d)->sx + 1)

void cg_stencil(const struct cg_domain *d, const double *x, double *y, int k0, int k1)
{
    const int n = d->n;
    const ptrdiff_t sx = (ptrdiff_t)d->sx, sxy = (ptrdiff_t)d->sxy;
    CG_FOR_ROWS
    for (int k = k0; k < k1; k++)
        for (int j = 1; j <= n; j++) {
            const double *restrict c = ROW(d, x, j, k);
            double *restrict out = ROW(d, y, j, k);
            for (int i = 0; i < n; i++)
                out[i] = 6.0 * c[i] - c[i - 1] - c[i + 1] - c[i - sx] - c[i + sx] - c[i - sxy] -
                         c[i + sxy];
        }
}

double cg_dot(const struct cg_domain *d, const double *a, const double *b)
{
    const int n = d->n, nz = d->nz;
    double s = 0.0;
    CG_FOR_ROWS_SUM(s)
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++) {
            const double *restrict ra = ROW(d, a, j, k), *restrict rb = ROW(d, b, j, k);
            for (int i = 0; i < n; i++)
                s += ra[i] * rb[i];
        }
    return s;
}

void cg_axpy(const struct cg_domain *d, double alpha, const double *x, double *y)
{
    const int n = d->n, nz = d->nz;
    CG_FOR_ROWS
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++) {
            const double *restrict rx = ROW(d, x, j, k);
            double *restrict ry = ROW(d, y, j, k);
            for (int i = 0; i < n; i++)
                ry[i] += alpha * rx[i];
        }
}

double cg_axpy_norm2(const struct cg_domain *d, double alpha, const double *x, double *y)
{
    const int n = d->n, nz = d->nz;
    double s = 0.0;
    CG_FOR_ROWS_SUM(s)
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++) {
            const double *restrict rx = ROW(d, x, j, k);
            double *restrict ry = ROW(d, y, j, k);
            for (int i = 0; i < n; i++) {
                double v = ry[i] + alpha * rx[i];
                ry[i] = v;
                s += v * v;
            }
        }
    return s;
}

void cg_xpby(const struct cg_domain *d, const double *x, double beta, double *y)
{
    const int n = d->n, nz = d->nz;
    CG_FOR_ROWS
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++) {
            const double *restrict rx = ROW(d, x, j, k);
            double *restrict ry = ROW(d, y, j, k);
            for (int i = 0; i < n; i++)
                ry[i] = rx[i] + beta * ry[i];
        }
}

void cg_zero(const struct cg_domain *d, double *y)
{
    const int n = d->n, nz = d->nz;
    CG_FOR_ROWS
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++)
            memset(ROW(d, y, j, k), 0, (size_t)n * sizeof(double));
}

void cg_copy(const struct cg_domain *d, const double *x, double *y)
{
    const int n = d->n, nz = d->nz;
    CG_FOR_ROWS
    for (int k = 1; k <= nz; k++)
        for (int j = 1; j <= n; j++)
            memcpy(ROW(d, y, j, k), ROW(d, x, j, k), (size_t)n * sizeof(double));
}
