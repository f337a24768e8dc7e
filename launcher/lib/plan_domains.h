/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLAN_DOMAINS_H
#define GPURUN_PLAN_DOMAINS_H

/* Internal to the planner (plan_domains.c): the node's CPU NUMA domains, the
 * GPUs in locality order, a GPU's locality, and a warning added to a plan. */

#include <hwloc.h>

#include "plan_model.h"

void gpurun_plan_warn(gpurun_plan_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *gpurun_plan_plural(long n);
void gpurun_plan_warn_no_locality(gpurun_plan_t *p);
int *gpurun_plan_gpus_by_locality(const gpurun_topo_t *t);
unsigned gpurun_plan_domain_pos(const gpurun_topo_t *t, hwloc_const_cpuset_t d);
hwloc_bitmap_t *gpurun_plan_cpu_numa_domains(const gpurun_topo_t *t, int *np);
hwloc_bitmap_t gpurun_plan_gpu_locality(const gpurun_topo_t *t, gpurun_plan_t *p, int gpu);
char *gpurun_plan_domain_label(const gpurun_topo_t *t, hwloc_const_cpuset_t dom);

#endif
