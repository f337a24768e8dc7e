/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef NETCHECK_GPU_H
#define NETCHECK_GPU_H

/* GPU memory for netcheck's --buffers gpu, behind one small interface so
 * that netcheck.c builds without CUDA: netcheck_gpu_none.c (the `netcheck`
 * program) has no GPU; netcheck_gpu_cuda.cu (nvcc; the `netcheck-cuda`
 * program) implements it with the CUDA runtime.  netcheck.c holds all of MPI
 * and the data checks; these functions only allocate and copy.
 *
 * Every function but nc_gpu_built returns 0, or -1 with err filled in (the
 * CUDA call and cudaGetErrorString's text).  Host memory here is pinned
 * (cudaMallocHost), so every copy is synchronous: when one returns, the data
 * is where it was copied to, and MPI may read it. */

#include <stddef.h>

/* 1 when this build has GPU buffers (netcheck-cuda), 0 otherwise. */
int nc_gpu_built(void);

/* Take this rank's GPU: device 0 when CUDA_VISIBLE_DEVICES shows one (what
 * gpurun gives each rank), else (local rank mod devices).  name gets the
 * device's name and number.  Fails "no CUDA device visible: ..." without one. */
int nc_gpu_init(char *name, size_t namelen, char *err, size_t errlen);

/* bytes of device memory, all zero. */
int nc_gpu_alloc(void **p, size_t bytes, char *err, size_t errlen);
int nc_gpu_free(void *p, char *err, size_t errlen);

/* bytes of pinned host memory, all zero. */
int nc_gpu_host_alloc(void **p, size_t bytes, char *err, size_t errlen);
int nc_gpu_host_free(void *p, char *err, size_t errlen);

/* Zero bytes of device memory; done when it returns. */
int nc_gpu_clear(void *dev, size_t bytes, char *err, size_t errlen);

/* Copy bytes between (pinned) host memory and device memory. */
int nc_gpu_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen);
int nc_gpu_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen);

#endif
