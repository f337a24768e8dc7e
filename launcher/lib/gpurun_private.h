/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PRIVATE_H
#define GPURUN_PRIVATE_H

/* For the gpurun program only (never exported from libgpurun.so, see
 * lib/libgpurun.map): the internal objects behind the public handles, for
 * what the program shows beyond the API (its tables). */

#include "gpurun.h"
#include "plan.h"
#include "topology.h"

const gpurun_topo_t *gpurun_topology_internal(const gpurun_topology_t *topo);
const gpurun_plan_t *gpurun_placement_internal(const gpurun_placement_t *placement);

#endif
