/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_ALLOC_H
#define GPURUN_ALLOC_H

/* What a resource manager gave this job on this node.  Inside a Slurm
 * allocation gpurun plans only with the cores this process may run on and
 * the GPUs Slurm names (SLURM_STEP_GPUS / SLURM_JOB_GPUS). */

#include <stddef.h>

#include "job.h"
#include "plan.h"
#include "topology.h"

/* Narrows req to the allocation; `note` says what was applied ("" if
 * nothing).  The cpuset it sets lives until the next call. */
void gpurun_alloc_apply(const gpurun_topo_t *topo, gpurun_request_t *req, char *note, size_t len);
/* The same, reading the NVIDIA driver's /proc files under `root` ("": /). */
void gpurun_alloc_apply_at(const char *root, const gpurun_topo_t *topo, gpurun_request_t *req, char *note,
                           size_t len);

#endif
