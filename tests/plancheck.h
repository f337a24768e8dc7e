/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLANCHECK_H
#define GPURUN_PLANCHECK_H

#include <stddef.h>

#include "plan.h"

/* Check a plan's SPEC §5 properties against its topology, independently of
 * how the planner reached it: distinct GPUs, disjoint whole cores inside the
 * GPU's locality, no offline PU, nearest NICs spread evenly, memory on the
 * cores' NUMA nodes, environment consistent with the binding.
 * Returns 0, or -1 with the first violation in `why`. */
int plancheck(const gpurun_plan_t *plan, char *why, size_t len);

/* ranks_per_gpu = n: each GPU used by n ranks of its node (the last by
 * fewer when n does not divide ranks_per_node), the sharers seeing the same
 * device and having disjoint cpus in its locality, and each rank's
 * "gpu_ranks" in the plan document listing them. */
int plancheck_ranks_per_gpu(const gpurun_plan_t *plan, int n, char *why, size_t len);

/* Load an XML topology for tests (exits the test on failure). */
gpurun_topo_t *plancheck_load(const char *path);

#endif
