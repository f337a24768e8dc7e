/* SPDX-License-Identifier: BSD-3-Clause */
/* netcheck_gpu.h with the CUDA runtime: the `netcheck-cuda` program.  No
 * kernels: allocations and synchronous copies only.  Build by hand:
 *
 *   nvcc -O2 -c netcheck_gpu_cuda.cu
 *   mpicc -O2 -o netcheck-cuda netcheck.c netcheck_gpu_cuda.o -L/usr/local/cuda/lib64 -lcudart
 *
 * Every CUDA call is checked; a failure comes back as -1 and a message
 * naming the call, never as an exit here (netcheck.c decides, knowing MPI). */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "netcheck_gpu.h"
}

#define TRY(what, call)                                                                     \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            snprintf(err, errlen, "%s: %s", (what), cudaGetErrorString(e_));                \
            return -1;                                                                      \
        }                                                                                   \
    } while (0)

static int local_rank(void)
{
    static const char *const vars[] = {"GPURUN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "SLURM_LOCALID",     "MPI_LOCALRANKID",
                                       "PMI_LOCAL_RANK",    NULL};
    for (const char *const *v = vars; *v; v++) {
        const char *s = getenv(*v);
        if (s && *s)
            return atoi(s);
    }
    return 0;
}

extern "C" {

int nc_gpu_built(void)
{
    return 1;
}

int nc_gpu_init(char *name, size_t namelen, char *err, size_t errlen)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        snprintf(err, errlen,
                 "no CUDA device visible: cudaGetDeviceCount: %s (CUDA_VISIBLE_DEVICES=%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", vis ? vis : "unset");
        return -1;
    }
    /* gpurun isolates: one visible GPU, device 0.  Else share them out. */
    int dev = vis && count == 1 ? 0 : local_rank() % count;
    TRY("cudaSetDevice", cudaSetDevice(dev));
    cudaDeviceProp prop;
    TRY("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, dev));
    snprintf(name, namelen, "%s (CUDA device %d of %d visible)", prop.name, dev, count);
    return 0;
}

int nc_gpu_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    *p = NULL;
    TRY("cudaMalloc", cudaMalloc(p, bytes ? bytes : 1));
    return nc_gpu_clear(*p, bytes, err, errlen);
}

int nc_gpu_free(void *p, char *err, size_t errlen)
{
    if (!p)
        return 0;
    TRY("cudaFree", cudaFree(p));
    return 0;
}

int nc_gpu_host_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    *p = NULL;
    TRY("cudaMallocHost", cudaMallocHost(p, bytes ? bytes : 1));
    memset(*p, 0, bytes);
    return 0;
}

int nc_gpu_host_free(void *p, char *err, size_t errlen)
{
    if (!p)
        return 0;
    TRY("cudaFreeHost", cudaFreeHost(p));
    return 0;
}

int nc_gpu_clear(void *dev, size_t bytes, char *err, size_t errlen)
{
    TRY("cudaMemset", cudaMemset(dev, 0, bytes));
    /* cudaMemset may return before it is done; MPI must not race it. */
    TRY("cudaDeviceSynchronize", cudaDeviceSynchronize());
    return 0;
}

int nc_gpu_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen)
{
    TRY("cudaMemcpy (host to device)", cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    return 0;
}

int nc_gpu_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen)
{
    TRY("cudaMemcpy (device to host)", cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

} /* extern "C" */
