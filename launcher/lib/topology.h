/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TOPOLOGY_H
#define GPURUN_TOPOLOGY_H

/* The node as gpurun sees it: hwloc's tree plus the GPUs and NICs found in
 * it, each with its PCI position and locality. */

#include <stdbool.h>

#include <hwloc.h>
#include <jansson.h>

#include "error.h"
#include "topo_model.h"

/* Load an XML export, or (xml == NULL) the export named by $GPURUN_TOPOLOGY,
 * else the live node; I/O devices included. */
int gpurun_topo_load(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err);
/* The same, xml (NULL: the live node) only: $GPURUN_TOPOLOGY not read. */
int gpurun_topo_load_xml(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err);
void gpurun_topo_destroy(gpurun_topo_t *topo);

/* Write the topology as hwloc XML (to plan for this node elsewhere). */
int gpurun_topo_export(const gpurun_topo_t *topo, const char *path, gpurun_error_t *err);
/* The same into the folder open as `dirfd` (a run folder); `shown` names it in messages. */
int gpurun_topo_export_at(const gpurun_topo_t *t, int dirfd, const char *name, const char *shown, gpurun_error_t *err);

/* How far apart two PCI devices are.  The class is returned; *rank orders
 * pairs of one class (fewer bridges, same package) so that a smaller value is
 * always nearer. */
enum gpurun_affinity gpurun_pci_affinity(const gpurun_topo_t *topo, hwloc_obj_t a, hwloc_obj_t b,
                                         int *rank);
/* How far a device is from a set of PUs: NODE when local to them, else SYS. */
enum gpurun_affinity gpurun_cpu_affinity(const gpurun_topo_t *topo, hwloc_const_cpuset_t cpus,
                                         hwloc_obj_t dev, int *rank);
const char *gpurun_affinity_name(enum gpurun_affinity a);

/* The home NUMA nodes of a set of PUs (see home_nodes). */
void gpurun_topo_home_nodes(const gpurun_topo_t *topo, hwloc_const_cpuset_t cpus, hwloc_nodeset_t out);

/* NUMA os indexes of a nodeset as a JSON array. */
json_t *gpurun_nodeset_json(hwloc_const_nodeset_t set);
/* A cpuset in hwloc list form ("0-7,16-23"); caller frees. */
char *gpurun_cpuset_list(hwloc_const_cpuset_t set);
/* `set` from a list in that form whose numbers are all below `limit`
 * (util.h's gpurun_id_list_parse: no open or huge range, checked before
 * the set grows, so it never holds more than `limit` bits); -1 with *why
 * when the text is not such a list (set emptied). */
int gpurun_bitmap_list_parse(hwloc_bitmap_t set, const char *list, unsigned limit, const char **why);

/* The "topology" object of SPEC §5; `full` adds what `gpurun topo --json`
 * shows beyond the plan (NUMA details, Ethernet, affinity matrix). */
json_t *gpurun_topo_json(const gpurun_topo_t *topo, bool full);

#endif
