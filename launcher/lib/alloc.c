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
    /* Slurm writes "0,1,2"; a range ("0-3"), as cpus lists have, is read
     * too, not as its first number. */
    hwloc_bitmap_t ids = hwloc_bitmap_alloc();
    if (gpus && *gpus && used < len && hwloc_bitmap_list_sscanf(ids, gpus) == 0 && hwloc_bitmap_weight(ids) > 0) {
        req->nallowed_gpus = 0;
        int i;
        hwloc_bitmap_foreach_begin(i, ids) {
            if (req->nallowed_gpus < 256)
                req->allowed_gpus[req->nallowed_gpus++] = i;
        }
        hwloc_bitmap_foreach_end();
        snprintf(note + used, len - used, "%sSlurm GPUs %s", used ? "; " : "", gpus);
    }
    hwloc_bitmap_free(ids);
}
