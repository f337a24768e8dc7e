/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "util.h"

void gpurun_alloc_apply(const gpurun_topo_t *t, gpurun_request_t *req, char *note, size_t len)
{
    static hwloc_bitmap_t allowed;
    note[0] = '\0';
    if (!getenv("SLURM_JOB_ID") || strcmp(t->source, "local"))
        return;
    size_t used = 0;
    if (!allowed)
        allowed = hwloc_bitmap_alloc();
    /* Slurm's task/affinity or task/cgroup confines the batch step to the
     * allocated cores; hwloc already hides what a cgroup forbids. */
    if (hwloc_get_cpubind(t->hw, allowed, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(allowed) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(t->hw), allowed)) {
        req->allowed_cpus = allowed;
        char *s = gpurun_cpuset_list(allowed);
        used += (size_t)snprintf(note + used, len - used, "Slurm job %s: cpus %s", getenv("SLURM_JOB_ID"), s);
        free(s);
    }
    const char *gpus = getenv("SLURM_STEP_GPUS");
    if (!gpus || !*gpus)
        gpus = getenv("SLURM_JOB_GPUS");
    if (gpus && *gpus && used < len) {
        req->nallowed_gpus = 0;
        char *copy = gpurun_xstrdup(gpus);
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && req->nallowed_gpus < 256;
             tok = strtok_r(NULL, ",", &save))
            req->allowed_gpus[req->nallowed_gpus++] = atoi(tok);
        free(copy);
        snprintf(note + used, len - used, "%sSlurm GPUs %s", used ? "; " : "", gpus);
    }
}
