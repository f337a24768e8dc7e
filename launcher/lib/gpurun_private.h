/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PRIVATE_H
#define GPURUN_PRIVATE_H

/* For the gpurun program only (never exported from libgpurun.so, see
 * lib/libgpurun.map): the internal objects behind the public handles, for
 * what the program shows beyond the API (its tables).  The handles by
 * their struct tags (gpurun.h's typedefs): this header sits below gpurun.c. */

#include "plan.h"
#include "topology.h"

struct gpurun_topology;
struct gpurun_placement;
const gpurun_topo_t *gpurun_topology_internal(const struct gpurun_topology *topo);
const gpurun_plan_t *gpurun_placement_internal(const struct gpurun_placement *placement);

#endif
