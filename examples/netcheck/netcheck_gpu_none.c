/* SPDX-License-Identifier: BSD-3-Clause */
/* netcheck_gpu.h without CUDA: the `netcheck` program.  netcheck.c refuses
 * --buffers gpu when nc_gpu_built() is 0, so nothing else is ever called;
 * each still fails cleanly rather than pretend. */
#include "netcheck_gpu.h"

#include <stdio.h>

static int no_gpu(char *err, size_t errlen)
{
    snprintf(err, errlen, "built without CUDA: --buffers gpu needs netcheck-cuda");
    return -1;
}

int nc_gpu_built(void)
{
    return 0;
}

int nc_gpu_init(char *name, size_t namelen, char *err, size_t errlen)
{
    if (namelen)
        name[0] = '\0';
    return no_gpu(err, errlen);
}

int nc_gpu_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    (void)bytes;
    *p = NULL;
    return no_gpu(err, errlen);
}

int nc_gpu_free(void *p, char *err, size_t errlen)
{
    return p ? no_gpu(err, errlen) : 0;
}

int nc_gpu_host_alloc(void **p, size_t bytes, char *err, size_t errlen)
{
    (void)bytes;
    *p = NULL;
    return no_gpu(err, errlen);
}

int nc_gpu_host_free(void *p, char *err, size_t errlen)
{
    return p ? no_gpu(err, errlen) : 0;
}

int nc_gpu_clear(void *dev, size_t bytes, char *err, size_t errlen)
{
    (void)dev, (void)bytes;
    return no_gpu(err, errlen);
}

int nc_gpu_upload(void *dev, const void *host, size_t bytes, char *err, size_t errlen)
{
    (void)dev, (void)host, (void)bytes;
    return no_gpu(err, errlen);
}

int nc_gpu_download(void *host, const void *dev, size_t bytes, char *err, size_t errlen)
{
    (void)host, (void)dev, (void)bytes;
    return no_gpu(err, errlen);
}
