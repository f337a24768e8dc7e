/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "util.h"

/* A list of GPU numbers ("0,2", "1-3"), or false. */
static bool gpu_numbers(const char *list, hwloc_bitmap_t ids)
{
    return list && *list && strspn(list, "0123456789,-") == strlen(list) && hwloc_bitmap_list_sscanf(ids, list) == 0 &&
           hwloc_bitmap_weight(ids) > 0 && hwloc_bitmap_last(ids) < 4096;
}

/* The GPUs a runtime's own list (CUDA_VISIBLE_DEVICES) shows, read as CUDA
 * reads it: numbers up to the first item that is not one ("-1" hides every
 * GPU, "" too).  -1: it names GPUs by UUID (GPU-..., MIG-...), which only the
 * driver can place. */
static int runtime_numbers(const char *list, hwloc_bitmap_t ids)
{
    hwloc_bitmap_zero(ids);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 4 || strspn(p, "0123456789") != n) {
            bool uuid = !strncmp(p, "GPU-", 4) || !strncmp(p, "MIG-", 4);
            return uuid && hwloc_bitmap_iszero(ids) ? -1 : hwloc_bitmap_weight(ids);
        }
        hwloc_bitmap_set(ids, (unsigned)atoi(p));
        p += n + (p[n] == ',');
    }
    return hwloc_bitmap_weight(ids);
}

static size_t items(const char *list)
{
    size_t n = 1;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

/* The runtime's list (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES) beside
 * Slurm's, when it names the same number of GPUs: Slurm writes both from one
 * list, the runtime's renumbered from 0 when its cgroup hides the node's
 * other GPUs (ConstrainDevices). */
static const char *beside_slurm(const char *var, int ngpus, char *note, size_t len, size_t *used)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return NULL;
    if (strspn(v, ",") == 0 && !strstr(v, ",,") && v[strlen(v) - 1] != ',' && items(v) == (size_t)ngpus)
        return v;
    *used += (size_t)snprintf(note + *used, len - *used, "; %s=%s does not name them one by one: ranks get their numbers",
                              var, v);
    return NULL;
}

void gpurun_alloc_apply(const gpurun_topo_t *t, gpurun_request_t *req, char *note, size_t len)
{
    static hwloc_bitmap_t allowed;
    note[0] = '\0';
    if (strcmp(t->source, "local"))
        return;
    size_t used = 0;
    const char *job = getenv("SLURM_JOB_ID");
    if (!allowed)
        allowed = hwloc_bitmap_alloc();
    /* Slurm's task/affinity or task/cgroup confines the batch step to the
     * allocated cores; hwloc already hides what a cgroup forbids. */
    if (job && hwloc_get_cpubind(t->hw, allowed, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(allowed) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(t->hw), allowed)) {
        req->allowed_cpus = allowed;
        char *s = gpurun_cpuset_list(allowed);
        used += (size_t)snprintf(note + used, len - used, "Slurm job %s: cpus %s", job, s);
        free(s);
    }
    const char *gpus = job ? getenv("SLURM_STEP_GPUS") : NULL;
    if (job && (!gpus || !*gpus))
        gpus = getenv("SLURM_JOB_GPUS");
    /* Without Slurm's list, the one the GPU runtime was given (a user, PBS,
     * LSF): the same numbers, so ranks are named by their own. */
    const char *from = "Slurm GPUs", *cuda = getenv("CUDA_VISIBLE_DEVICES"), *rocr = getenv("ROCR_VISIBLE_DEVICES");
    hwloc_bitmap_t ids = hwloc_bitmap_alloc();
    bool slurm = gpu_numbers(gpus, ids);
    if (!slurm) {
        from = cuda ? "CUDA_VISIBLE_DEVICES" : rocr ? "ROCR_VISIBLE_DEVICES" : NULL;
        gpus = cuda ? cuda : rocr;
        if (gpus && runtime_numbers(gpus, ids) < 0) {
            if (used < len)
                used += (size_t)snprintf(note + used, len - used, "%s%s=%s is not a list of GPU numbers: not applied",
                                         used ? "; " : "", from, gpus);
            gpus = NULL;
        }
    }
    /* Slurm writes "0,1,2"; a range ("0-3"), as cpus lists have, is read
     * too, not as its first number. */
    if (gpus && used < len) {
        req->nallowed_gpus = 0;
        int i;
        hwloc_bitmap_foreach_begin(i, ids) {
            if (req->nallowed_gpus < 256)
                req->allowed_gpus[req->nallowed_gpus++] = i;
        }
        hwloc_bitmap_foreach_end();
        used += (size_t)snprintf(note + used, len - used, "%s%s %s%s", used ? "; " : "", from, *gpus ? gpus : "\"\"",
                                 req->nallowed_gpus ? "" : " (no GPU)");
        if (slurm && used < len) {
            req->visible_cuda = beside_slurm("CUDA_VISIBLE_DEVICES", req->nallowed_gpus, note, len, &used);
            if (used < len)
                req->visible_rocr = beside_slurm("ROCR_VISIBLE_DEVICES", req->nallowed_gpus, note, len, &used);
        }
    }
    hwloc_bitmap_free(ids);
}
