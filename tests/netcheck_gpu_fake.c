/* SPDX-License-Identifier: BSD-3-Clause */
/* netcheck_gpu.h with a fake GPU, for tests/cli-netcheck.sh: "device" memory
 * is ordinary host memory, so that netcheck's --buffers gpu path (the staging
 * through pinned copies, the fills and checks through copies, the CUDA-aware
 * path with NETCHECK_CUDA_AWARE=1) runs and is checked on machines without a
 * GPU.  Every copy must stay inside one device and one pinned allocation,
 * as with cudaMemcpy; one that does not is an abort.
 *
 * NETCHECK_FAKE_GPU (read on local rank 1 only, so that one rank of a pair
 * fails while the other waits on it):
 *   none     no device: nc_gpu_init fails as netcheck-cuda's does
 *   fail     the 50th copy fails (in the middle of the measurements)
 *   corrupt  every upload changes the first byte it copies */
#include "../examples/netcheck/netcheck_gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOCS 8

static struct {
    char *p;
    size_t bytes;
    int device;
} allocs[MAX_ALLOCS];
static const char *mode = "";
static long copies;

static int local_rank(void)
{
    static const char *const vars[] = {"GPURUN_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", NULL};
    for (const char *const *v = vars; *v; v++) {
        const char *s = getenv(*v);
        if (s && *s)
            return atoi(s);
    }
    return 0;
}

/* Whether [p, p + bytes) lies in one allocation of the kind. */
static int inside(const void *p, size_t bytes, int device)
{
    const char *c = p;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p && allocs[i].device == device && c >= allocs[i].p &&
            bytes <= allocs[i].bytes && (size_t)(c - allocs[i].p) <= allocs[i].bytes - bytes)
            return 1;
    return 0;
}

static int add(void **p, size_t bytes, int device, char *err, size_t errlen)
{
    *p = NULL;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            allocs[i].p = calloc(1, bytes ? bytes : 1);
            if (!allocs[i].p) {
                snprintf(err, errlen, "fake cudaMalloc: out of memory");
                return -1;
            }
            allocs[i].bytes = bytes;
            allocs[i].device = device;
            *p = allocs[i].p;
            return 0;
        }
    snprintf(err, errlen, "fake cudaMalloc: more than %d allocations", MAX_ALLOCS);
    return -1;
}

static int drop(void *p, int device, char *err, size_t errlen)
{
    if (!p)
        return 0;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p == p && allocs[i].device == device) {
            free(p);
            allocs[i].p = NULL;
            return 0;
        }
    snprintf(err, errlen, "fake cudaFree: %p is not a %s allocation", p,
             device ? "device" : "pinned");
    return -1;
}

static int copy(char *dst, int dst_device, const char *src, size_t bytes, char *err, size_t errlen)
{
    if (!inside(dst, bytes, dst_device) || !inside(src, bytes, !dst_device)) {
        fprintf(stderr, "fake GPU: a copy of %zu bytes outside the %s allocations\n", bytes,
                dst_device ? "pinned -> device" : "device -> pinned");
        abort();
    }
    if (!strcmp(mode, "fail") && ++copies == 50) {
        snprintf(err, errlen, "cudaMemcpy: fake failure of copy 50");
        return -1;
    }
    memcpy(dst, src, bytes);
    if (!strcmp(mode, "corrupt") && dst_device && bytes)
        dst[0] ^= 0x5a;
    return 0;
}

int nc_gpu_built(void)
{
    return 1;
}

int nc_gpu_init(char *name, size_t namelen, char *err, size_t errlen)
{
    const char *m = getenv("NETCHECK_FAKE_GPU");
    mode = m && local_rank() == 1 ? m : "";
    if (!strcmp(mode, "none")) {
        snprintf(err, errlen, "no CUDA device visible: cudaGetDeviceCount: fake: no device");
        return -1;
    }
    snprintf(name, namelen, "fake GPU (host memory)");
    return 0;
}

int nc_gpu_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    return add(p, bytes, 1, err, errlen);
}

int nc_gpu_free(void *p, char *err, size_t errlen)
{
    return drop(p, 1, err, errlen);
}

int nc_gpu_host_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    return add(p, bytes, 0, err, errlen);
}

int nc_gpu_host_free(void *p, char *err, size_t errlen)
{
    return drop(p, 0, err, errlen);
}

int nc_gpu_clear(void *dev, size_t bytes, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (!inside(dev, bytes, 1)) {
        fprintf(stderr, "fake GPU: a memset of %zu bytes outside the device allocations\n", bytes);
        abort();
    }
    memset(dev, 0, bytes);
    return 0;
}

int nc_gpu_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen)
{
    return copy(dev, 1, host, bytes, err, errlen);
}

int nc_gpu_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen)
{
    return copy(host, 0, dev, bytes, err, errlen);
}
