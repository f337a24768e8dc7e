/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_ALLOC_H
#define GPURUN_ALLOC_H

/* What a resource manager gave this job on this node.  Inside an allocation
 * gpurun plans only with the cores this process may run on (when the
 * manager confines it to them) and the GPUs the manager names; else with
 * the GPUs the runtime's own list (CUDA_VISIBLE_DEVICES,
 * ROCR_VISIBLE_DEVICES) shows.  The manager's plugin says which
 * (launcher/run/manager.c: gpurun_alloc_apply). */

#include <stdbool.h>
#include <stddef.h>

#include "job.h"
#include "plan.h"
#include "topology.h"

/* What the manager of the allocation says of this node. */
struct gpurun_alloc_given {
    const char *job;       /* the allocation in notes: "Slurm job 12" */
    bool cpus_bound;       /* this process runs on the allocation's cores only */
    const char *gpus;      /* its list of GPU numbers; NULL: it names none */
    const char *gpus_from; /* the list in notes: "Slurm GPUs" */
};

/* Narrows req to the allocation (`given`: NULL outside one), reading the
 * NVIDIA driver's /proc files under `root` ("": /); `note` says what was
 * applied ("" if nothing).  The cpuset it sets lives until the next call. */
void gpurun_alloc_narrow_at(const char *root, const gpurun_topo_t *topo, gpurun_request_t *req,
                            const struct gpurun_alloc_given *given, char *note, size_t len);

#endif
