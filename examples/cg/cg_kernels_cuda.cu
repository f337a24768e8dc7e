/* SPDX-License-Identifier: BSD-3-Clause */
/* The cg kernels (cg_kernels.h) on an NVIDIA GPU, in FP64: the same
 * functions as cg_kernels_cpu.c, linked instead of it.  Build:
 *
 *   nvcc -O3 -arch=sm_80 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
 *        -c cg_kernels_cuda.cu && mpicc -O2 -o cg cg.c cg_kernels_cuda.o -lcudart -lm
 *
 * One GPU per rank: gpurun gives each rank its own GPU in
 * CUDA_VISIBLE_DEVICES, so the rank takes device 0; run by hand with every
 * GPU visible, a rank takes device (local rank mod GPUs), the local rank from
 * the launcher's environment (Open MPI, Slurm, MPICH, gpurun).
 *
 * Vectors live in device memory, so MPI gets host copies of the halo planes
 * (cg_kernels_host_memory() is 0) unless CG_CUDA_AWARE_MPI=1 says the MPI
 * library takes device pointers (a CUDA-aware Open MPI/UCX: gpurun's cg
 * template can set it in its env {}, applied when GPUDirect is on).
 *
 * Every kernel runs on the legacy default stream: a launch returns at once
 * (so the inner planes' stencil overlaps the halo exchange cg.c has in
 * flight), and cudaMemcpy waits for the kernels before it, so the uploads and
 * downloads cg.c makes are ordered with them.  Dot products are summed in a
 * fixed order (per block, then the blocks' sums in one block), so a run
 * repeats bit for bit on one GPU model. */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cg_kernels.h"
}

#define CG_THREADS 256         /* per block, a multiple of 32 */
#define CG_MAX_REDUCE_BLOCKS 1024

#define CUDA_CHECK(call)                                                                              \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "cg: CUDA error at %s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(e_));                                                          \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

/* ---- the device ------------------------------------------------------------- */

static int device_ready;
static int reduce_blocks = 256;    /* per dot product: a few per SM, fixed for the device */
static double *partial_dev;        /* reduce_blocks partial sums */
static double *sum_dev;            /* the final sum */

static int local_rank(void)
{
    static const char *const vars[] = {"GPURUN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       "MPI_LOCALRANKID", "PMI_LOCAL_RANK", NULL};
    for (const char *const *v = vars; *v; v++) {
        const char *s = getenv(*v);
        if (s && *s)
            return atoi(s);
    }
    return 0;
}

static void ensure_device(void)
{
    if (device_ready)
        return;
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    if (count < 1) {
        fprintf(stderr, "cg: no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)\n",
                getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
        exit(1);
    }
    /* gpurun isolates: one visible GPU, device 0.  Else share them out. */
    int dev = getenv("CUDA_VISIBLE_DEVICES") && count == 1 ? 0 : local_rank() % count;
    CUDA_CHECK(cudaSetDevice(dev));
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    reduce_blocks = sms > 0 ? 4 * sms : 256;
    if (reduce_blocks > CG_MAX_REDUCE_BLOCKS)
        reduce_blocks = CG_MAX_REDUCE_BLOCKS;
    CUDA_CHECK(cudaMalloc((void **)&partial_dev, (size_t)reduce_blocks * sizeof(double)));
    CUDA_CHECK(cudaMalloc((void **)&sum_dev, sizeof(double)));
    device_ready = 1;
}

/* ---- indexing ------------------------------------------------------------------ */

/* Interior cells of planes k0 <= k < k1, numbered i fastest: cell t is at
 * (k0 + t / n^2, 1 + (t / n) mod n, 1 + t mod n) in the padded vector. */
struct span {
    size_t count;       /* n * n * (k1 - k0) */
    size_t n, sx, sxy;
    size_t k0;
};

static struct span span_of(const struct cg_domain *d, int k0, int k1)
{
    struct span s;
    s.n = (size_t)d->n;
    s.sx = d->sx;
    s.sxy = d->sxy;
    s.k0 = (size_t)k0;
    s.count = k1 > k0 ? s.n * s.n * (size_t)(k1 - k0) : 0;
    return s;
}

__device__ __forceinline__ size_t cell(const span &s, size_t t)
{
    size_t i = t % s.n, r = t / s.n;
    size_t j = r % s.n, k = r / s.n;
    return (s.k0 + k) * s.sxy + (j + 1) * s.sx + (i + 1);
}

static unsigned blocks_for(size_t count)
{
    size_t b = (count + CG_THREADS - 1) / CG_THREADS;
    if (b > (1u << 20)) /* grid-stride loops cover the rest */
        b = 1u << 20;
    return b ? (unsigned)b : 1u;
}

#define GRID_STRIDE(t, s) \
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < (s).count; t += (size_t)gridDim.x * blockDim.x)

/* ---- reductions ------------------------------------------------------------------ */

/* The sum of v over the block, in thread 0; every thread must call it. */
__device__ __forceinline__ double block_sum(double v)
{
    __shared__ double warp_sums[CG_THREADS / 32];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0;
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* The blocks' partial sums, added in a fixed order by one block. */
__global__ void sum_partials(const double *__restrict__ partial, int n, double *__restrict__ out)
{
    double v = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        v += partial[i];
    v = block_sum(v);
    if (threadIdx.x == 0)
        *out = v;
}

static double finish_sum(void)
{
    sum_partials<<<1, CG_THREADS>>>(partial_dev, reduce_blocks, sum_dev);
    CUDA_CHECK(cudaGetLastError());
    double s = 0.0;
    CUDA_CHECK(cudaMemcpy(&s, sum_dev, sizeof s, cudaMemcpyDeviceToHost)); /* waits for the kernels */
    return s;
}

/* ---- kernels ---------------------------------------------------------------------- */

__global__ void k_stencil(span s, const double *__restrict__ x, double *__restrict__ y)
{
    const ptrdiff_t sx = (ptrdiff_t)s.sx, sxy = (ptrdiff_t)s.sxy;
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        const double *p = x + c;
        y[c] = 6.0 * p[0] - p[-1] - p[1] - p[-sx] - p[sx] - p[-sxy] - p[sxy];
    }
}

__global__ void k_dot(span s, const double *__restrict__ a, const double *__restrict__ b, double *__restrict__ partial)
{
    double v = 0.0;
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        v += a[c] * b[c];
    }
    v = block_sum(v);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = v;
}

__global__ void k_axpy(span s, double alpha, const double *__restrict__ x, double *__restrict__ y)
{
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        y[c] += alpha * x[c];
    }
}

__global__ void k_axpy_norm2(span s, double alpha, const double *__restrict__ x, double *__restrict__ y,
                             double *__restrict__ partial)
{
    double v = 0.0;
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        double w = y[c] + alpha * x[c];
        y[c] = w;
        v += w * w;
    }
    v = block_sum(v);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = v;
}

__global__ void k_xpby(span s, const double *__restrict__ x, double beta, double *__restrict__ y)
{
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        y[c] = x[c] + beta * y[c];
    }
}

__global__ void k_zero(span s, double *__restrict__ y)
{
    GRID_STRIDE(t, s)
    y[cell(s, t)] = 0.0;
}

__global__ void k_copy(span s, const double *__restrict__ x, double *__restrict__ y)
{
    GRID_STRIDE(t, s)
    {
        size_t c = cell(s, t);
        y[c] = x[c];
    }
}

#define LAUNCH(kernel, s, ...)                                                   \
    do {                                                                         \
        if ((s).count) {                                                         \
            kernel<<<blocks_for((s).count), CG_THREADS>>>((s), __VA_ARGS__);      \
            CUDA_CHECK(cudaGetLastError());                                      \
        }                                                                        \
    } while (0)

/* ---- cg_kernels.h ------------------------------------------------------------------- */

extern "C" {

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
    return "cuda";
}

int cg_kernels_host_memory(void)
{
    const char *s = getenv("CG_CUDA_AWARE_MPI");
    return s && !strcmp(s, "1");
}

int cg_kernels_threads(void)
{
    return 1; /* the GPU's threads are not OpenMP threads */
}

double *cg_vec_alloc(const struct cg_domain *d)
{
    ensure_device();
    if (d->len > (SIZE_MAX - 64) / sizeof(double))
        return NULL;
    double *v = NULL;
    if (cudaMalloc((void **)&v, d->len * sizeof(double)) != cudaSuccess) {
        cudaGetLastError(); /* clear it: the caller reports out of memory */
        return NULL;
    }
    CUDA_CHECK(cudaMemset(v, 0, d->len * sizeof(double))); /* borders and ghosts start at zero */
    return v;
}

void cg_vec_free(double *v)
{
    if (v)
        CUDA_CHECK(cudaFree(v));
}

void cg_vec_upload(double *v, size_t off, const double *host, size_t count)
{
    CUDA_CHECK(cudaMemcpy(v + off, host, count * sizeof(double), cudaMemcpyHostToDevice));
}

void cg_vec_download(double *host, const double *v, size_t off, size_t count)
{
    CUDA_CHECK(cudaMemcpy(host, v + off, count * sizeof(double), cudaMemcpyDeviceToHost));
}

void cg_stencil(const struct cg_domain *d, const double *x, double *y, int k0, int k1)
{
    span s = span_of(d, k0, k1);
    LAUNCH(k_stencil, s, x, y);
}

double cg_dot(const struct cg_domain *d, const double *a, const double *b)
{
    ensure_device();
    span s = span_of(d, 1, d->nz + 1);
    k_dot<<<reduce_blocks, CG_THREADS>>>(s, a, b, partial_dev);
    CUDA_CHECK(cudaGetLastError());
    return finish_sum();
}

void cg_axpy(const struct cg_domain *d, double alpha, const double *x, double *y)
{
    span s = span_of(d, 1, d->nz + 1);
    LAUNCH(k_axpy, s, alpha, x, y);
}

double cg_axpy_norm2(const struct cg_domain *d, double alpha, const double *x, double *y)
{
    ensure_device();
    span s = span_of(d, 1, d->nz + 1);
    k_axpy_norm2<<<reduce_blocks, CG_THREADS>>>(s, alpha, x, y, partial_dev);
    CUDA_CHECK(cudaGetLastError());
    return finish_sum();
}

void cg_xpby(const struct cg_domain *d, const double *x, double beta, double *y)
{
    span s = span_of(d, 1, d->nz + 1);
    LAUNCH(k_xpby, s, x, beta, y);
}

void cg_zero(const struct cg_domain *d, double *y)
{
    span s = span_of(d, 1, d->nz + 1);
    LAUNCH(k_zero, s, y);
}

void cg_copy(const struct cg_domain *d, const double *x, double *y)
{
    span s = span_of(d, 1, d->nz + 1);
    LAUNCH(k_copy, s, x, y);
}

} /* extern "C" */
