/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology XML through the planner (topology.c, plan.c): the input as an
 * hwloc XML export (gpurun plan --topology FILE), then a few requests
 * planned on it, as `gpurun plan` and `gpurun run` plan them. */

#include "fuzz.h"

#include <hwloc.h>
#include <stdlib.h>

#include "plan.h"
#include "topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* hwloc loads its plugins when its first topology is made and unloads
     * them when its last is destroyed: one kept for good spares every input
     * a dlopen of each plugin and its X11 and OpenCL libraries. */
    static hwloc_topology_t keep_plugins_loaded;
    if (!keep_plugins_loaded && hwloc_topology_init(&keep_plugins_loaded) < 0)
        abort();
    const char *path = fuzz_file("topo.xml", data, size);
    gpurun_topo_t *topo = NULL;
    gpurun_error_t err;
    if (gpurun_topo_load(path, &topo, &err) < 0)
        return 0;
    gpurun_request_t req[4];
    for (int i = 0; i < 4; i++)
        gpurun_request_init(&req[i]);
    req[1].ranks_per_node = 2;
    req[1].gpus_per_rank = 1;
    req[1].smt = true;
    req[2].nodes = 2;
    req[2].ranks_per_node = 3;
    req[2].gpus_per_rank = 0;
    req[2].threads_per_rank = 2;
    req[2].bind = GPURUN_BIND_NONE;
    req[3].ranks_per_node = 8;
    req[3].oversubscribe = true;
    req[3].gpu_visibility = GPURUN_GPUVIS_SHARED;
    for (int i = 0; i < 4; i++) {
        gpurun_plan_t *plan = NULL;
        if (gpurun_plan_create(topo, &req[i], &plan, &err) == 0) {
            json_decref(gpurun_plan_json(plan));
            gpurun_plan_destroy(plan);
        }
    }
    gpurun_topo_destroy(topo);
    return 0;
}
