/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLAN_CORES_H
#define GPURUN_PLAN_CORES_H

/* The planner's placing of cores and memory (plan_cores.c). */

#include <hwloc.h>

#include "error.h"
#include "plan_model.h"

/* The performance class of the CPU kind of a core (of its first PU): 0 for
 * the slowest, higher for faster.  Kinds that do not really differ (the
 * same core type, frequencies less than 10 % apart) share a class, so a CPU
 * that is no hybrid has class 0 everywhere. */
int gpurun_core_class(const gpurun_topo_t *topo, hwloc_obj_t core);

/* Internal to the planner (plan.c). */
int gpurun_plan_place_cores(const gpurun_topo_t *t, gpurun_plan_t *p, hwloc_bitmap_t *numa, int nd, int rpn, int gpr,
                       gpurun_error_t *err);
void gpurun_plan_warn_unused_cores(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn);

#endif
