/* SPDX-License-Identifier: BSD-3-Clause */
/* The node as the planner sees it (plan_domains.h): its NUMA domains with
 * CPUs, the GPUs by locality, and the plan's warnings.  Moved whole from plan.c. */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_domains.h"
#include "plan_model.h"
#include "topology.h"
#include "util.h"

void gpurun_plan_warn(gpurun_plan_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    p->warnings = gpurun_xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = s;
}

const char *gpurun_plan_plural(long n)
{
    return n == 1 ? "" : "s";
}

/* --- GPUs ---------------------------------------------------------------- */

/* A GPU that hwloc hangs from the whole machine has no locality in the
 * export (a VM whose PCI devices report no NUMA node, an old kernel): on a
 * node of several NUMA domains its ranks' cores and memory are then spread
 * by count, not chosen by nearness, and the plan says so. */
void gpurun_plan_warn_no_locality(gpurun_plan_t *p)
{
    const gpurun_topo_t *t = p->topo;
    if (hwloc_bitmap_weight(t->home_nodes) < 2)
        return;
    hwloc_obj_t root = hwloc_get_root_obj(t->hw);
    char *list = NULL;
    int n = 0;
    for (int i = 0; i < t->ngpus; i++) {
        const gpurun_gpu_t *g = &t->gpus[i];
        if (strcmp(g->vendor, p->gpu_vendor) || g->locality != root || (i > 0 && t->gpus[i - 1].pcidev == g->pcidev))
            continue; /* partitions of one GPU are listed once */
        char *s = gpurun_xasprintf("%s%s%s", list ? list : "", list ? ", " : "", g->pci);
        free(list);
        list = s;
        n++;
    }
    if (n)
        gpurun_plan_warn(p, "GPU%s %s %s no NUMA locality in the topology (hwloc puts %s under the whole machine, as in a VM "
                  "whose PCI devices report no NUMA node): %s ranks' cores and memory are spread over the node, not "
                  "chosen by nearness", gpurun_plan_plural(n), list, n == 1 ? "has" : "have", n == 1 ? "it" : "them",
                  n == 1 ? "its" : "their");
    free(list);
}

struct gpu_order {
    int gpu;
    unsigned first_pu; /* logical index of the first PU local to the GPU */
};

static int gpu_order_cmp(const void *a, const void *b)
{
    const struct gpu_order *x = a, *y = b;
    if (x->first_pu != y->first_pu)
        return x->first_pu < y->first_pu ? -1 : 1;
    return x->gpu - y->gpu; /* topo->gpus is in PCI order */
}

/* GPUs in locality order: consecutive ranks land on neighbouring GPUs and
 * cores, whatever order the PCI bus numbers the GPUs in. */
int *gpurun_plan_gpus_by_locality(const gpurun_topo_t *t)
{
    struct gpu_order *o = gpurun_xcalloc((size_t)t->ngpus, sizeof *o);
    for (int i = 0; i < t->ngpus; i++) {
        int first = hwloc_bitmap_first(t->gpus[i].cpuset);
        hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)first) : NULL;
        o[i].gpu = i;
        o[i].first_pu = pu ? pu->logical_index : UINT_MAX;
    }
    qsort(o, (size_t)t->ngpus, sizeof *o, gpu_order_cmp);
    int *order = gpurun_xcalloc((size_t)t->ngpus, sizeof *order);
    for (int i = 0; i < t->ngpus; i++)
        order[i] = o[i].gpu;
    free(o);
    return order;
}

/* --- CPU domains ----------------------------------------------------------- */

/* Tree order of a domain: the logical index of its first PU. */
unsigned gpurun_plan_domain_pos(const gpurun_topo_t *t, hwloc_const_cpuset_t d)
{
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)hwloc_bitmap_first(d));
    return pu ? pu->logical_index : UINT_MAX;
}

/* The cpusets of the home NUMA nodes: an HBM node that shares its DRAM
 * node's cores, or a CXL node hanging from the package or the machine, is
 * not a domain of its own.  PUs under no NUMA node form domains too, one per
 * largest object holding none of the other domains' PUs: hwloc 2 imports the
 * memoryless NUMA nodes of an hwloc 1.x export (nodeset 0x0: a Threadripper
 * 2990WX's two dies without DIMMs) as Groups, and their cores would
 * otherwise never be given to a CPU-only rank. */
hwloc_bitmap_t *gpurun_plan_cpu_numa_domains(const gpurun_topo_t *t, int *np)
{
    int nnuma = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE), cap = nnuma + 1, n = 0;
    hwloc_bitmap_t *d = gpurun_xcalloc((size_t)cap, sizeof *d);
    hwloc_bitmap_t rest = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    for (hwloc_obj_t node = NULL; (node = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, node));)
        if (hwloc_bitmap_isset(t->home_nodes, node->os_index) && !hwloc_bitmap_iszero(node->cpuset)) {
            d[n++] = hwloc_bitmap_dup(node->cpuset);
            hwloc_bitmap_andnot(rest, rest, node->cpuset);
        }
    for (int i; n > 0 && (i = hwloc_bitmap_first(rest)) >= 0;) {
        hwloc_obj_t o = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)i);
        if (!o) { /* a PU bit with no PU object: never given to a rank anyway */
            hwloc_bitmap_clr(rest, (unsigned)i);
            continue;
        }
        hwloc_bitmap_t taken = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
        hwloc_bitmap_andnot(taken, taken, rest);
        while (o->parent && !hwloc_bitmap_intersects(o->parent->cpuset, taken))
            o = o->parent;
        hwloc_bitmap_free(taken);
        if (n == cap) {
            cap *= 2;
            d = gpurun_xrealloc(d, (size_t)cap * sizeof *d);
        }
        d[n] = hwloc_bitmap_alloc();
        hwloc_bitmap_and(d[n], o->cpuset, rest);
        hwloc_bitmap_set(d[n], (unsigned)i);
        hwloc_bitmap_andnot(rest, rest, d[n++]);
    }
    hwloc_bitmap_free(rest);
    if (n == 0)
        d[n++] = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    /* Tree order, so that consecutive ranks stay neighbours (insertion sort:
     * NUMA nodes come in tree order already, the extra domains after them). */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && gpurun_plan_domain_pos(t, d[b]) < gpurun_plan_domain_pos(t, d[b - 1]); b--) {
            hwloc_bitmap_t x = d[b];
            d[b] = d[b - 1];
            d[b - 1] = x;
        }
    *np = n;
    return d;
}

/* The cores near a GPU; a GPU whose locality has no usable PU (all offline
 * or disallowed) falls back to the nearest ancestor that has some. */
hwloc_bitmap_t gpurun_plan_gpu_locality(const gpurun_topo_t *t, gpurun_plan_t *p, int gpu)
{
    const gpurun_gpu_t *g = &t->gpus[gpu];
    hwloc_obj_t loc = g->locality;
    while (loc && hwloc_bitmap_iszero(loc->cpuset))
        loc = loc->parent;
    if (loc && loc != g->locality)
        gpurun_plan_warn(p, "GPU %d (%s) has no usable cores in its own locality; using cores of %s %u", g->index, g->pci,
                  hwloc_obj_type_string(loc->type), loc->os_index);
    hwloc_bitmap_t dom = hwloc_bitmap_alloc();
    if (loc)
        hwloc_bitmap_copy(dom, loc->cpuset);
    return dom;
}

/* "NUMA node 3 (cpus 48-63)", for messages. */
char *gpurun_plan_domain_label(const gpurun_topo_t *t, hwloc_const_cpuset_t dom)
{
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, dom, nodes);
    char *n = gpurun_cpuset_list(nodes), *c = gpurun_cpuset_list(dom);
    char *s = gpurun_xasprintf("NUMA node%s %s (cpus %s)", hwloc_bitmap_weight(nodes) == 1 ? "" : "s", n, c);
    free(n);
    free(c);
    hwloc_bitmap_free(nodes);
    return s;
}
