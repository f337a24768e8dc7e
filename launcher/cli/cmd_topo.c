/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun topo: what lstopo and `nvidia-smi topo -m` would tell, in one place. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "gpurun.h"
#include "gpurun_private.h"
#include "topology.h"

static const char topo_usage[] =
    "Usage: gpurun topo [--topology FILE.xml] [--json] [--export FILE.xml]\n"
    "\n"
    "Show the node's packages, NUMA nodes, GPUs and high-speed NICs, each with its PCI\n"
    "address, NUMA node(s) and local cpus, and the GPU/NIC affinity matrix.\n"
    "\n"
    "  --topology FILE.xml  read an hwloc XML export instead of this node\n"
    "  --json               print JSON instead of tables\n"
    "  --export FILE.xml    also write the topology as hwloc XML (to plan for this node elsewhere)\n"
    "  -h, --help           this help\n";

static char *nodes_str(hwloc_const_nodeset_t set)
{
    return gpurun_cpuset_list(set);
}

static void print_matrix(const gpurun_topo_t *t)
{
    int ng = t->ngpus, nn = t->nhsnics;
    if (ng == 0)
        return;
    /* Column width fits the longest NIC name, like nvidia-smi's. */
    int w = 6;
    for (int j = 0; j < nn; j++)
        if ((int)strlen(t->nics[j].name) + 1 > w)
            w = (int)strlen(t->nics[j].name) + 1;
    printf("\nAffinity (as nvidia-smi topo -m):\n%-*s", w, "");
    for (int j = 0; j < ng; j++) {
        char h[16];
        snprintf(h, sizeof h, "GPU%d", j);
        printf("%-*s", w, h);
    }
    for (int j = 0; j < nn; j++)
        printf("%-*s", w, t->nics[j].name);
    /* The CPU column fits the longest list (a GPU's cpus can be long). */
    int cw = 18;
    for (int i = 0; i < ng + nn; i++) {
        char *c = gpurun_cpuset_list(i < ng ? t->gpus[i].cpuset : t->nics[i - ng].cpuset);
        if ((int)strlen(c) + 1 > cw)
            cw = (int)strlen(c) + 1;
        free(c);
    }
    printf("%-*s%s\n", cw, "CPU Affinity", "NUMA Affinity");
    for (int i = 0; i < ng + nn; i++) {
        hwloc_obj_t a = i < ng ? t->gpus[i].pcidev : t->nics[i - ng].pcidev;
        char h[64];
        if (i < ng)
            snprintf(h, sizeof h, "GPU%d", i);
        else
            snprintf(h, sizeof h, "%s", t->nics[i - ng].name);
        printf("%-*s", w, h);
        for (int j = 0; j < ng + nn; j++) {
            hwloc_obj_t b = j < ng ? t->gpus[j].pcidev : t->nics[j - ng].pcidev;
            printf("%-*s", w, i == j ? "X" : gpurun_affinity_name(gpurun_pci_affinity(t, a, b, NULL)));
        }
        hwloc_const_cpuset_t cpus = i < ng ? t->gpus[i].cpuset : t->nics[i - ng].cpuset;
        hwloc_const_nodeset_t nodes = i < ng ? t->gpus[i].nodeset : t->nics[i - ng].nodeset;
        char *c = gpurun_cpuset_list(cpus), *n = nodes_str(nodes);
        printf("%-*s%s\n", cw, c, n);
        free(c);
        free(n);
    }
    printf("\nLegend:\n"
           "  X    = Self\n"
           "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
           "  NODE = Connection traversing PCIe and the interconnect between host bridges within a NUMA node\n"
           "  PHB  = Connection traversing PCIe as well as a PCIe host bridge\n"
           "  PXB  = Connection traversing multiple PCIe bridges (without traversing the host bridge)\n"
           "  PIX  = Connection traversing at most a single PCIe switch\n");
}

static void print_tables(const gpurun_topo_t *t)
{
    printf("Host %s (%s): %d package%s, %d NUMA node%s, %d cores, %d PUs, %d GPU%s, %d high-speed NIC%s\n",
           t->hostname, t->source, t->packages, t->packages == 1 ? "" : "s", t->numa_nodes,
           t->numa_nodes == 1 ? "" : "s", t->cores, t->pus, t->ngpus, t->ngpus == 1 ? "" : "s", t->nhsnics,
           t->nhsnics == 1 ? "" : "s");

    printf("\n%-6s %-24s %s\n", "NUMA", "cpus", "memory");
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));) {
        char *c = gpurun_cpuset_list(n->cpuset);
        printf("%-6u %-24s %.1f GiB%s%s\n", n->os_index, *c ? c : "-",
               (double)n->attr->numanode.local_memory / (1024.0 * 1024 * 1024), n->subtype ? " " : "",
               n->subtype ? n->subtype : "");
        free(c);
    }
    hwloc_bitmap_t off = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(t->hw));
    hwloc_bitmap_andnot(off, off, hwloc_topology_get_topology_cpuset(t->hw));
    if (!hwloc_bitmap_iszero(off)) {
        char *c = gpurun_cpuset_list(off);
        printf("offline PUs (never used): %s\n", c);
        free(c);
    }
    hwloc_bitmap_free(off);

    if (t->ngpus) {
        printf("\n%-4s %-14s %-7s %-28s %-6s %s\n", "GPU", "PCI", "vendor", "model", "NUMA", "cpus");
        for (int i = 0; i < t->ngpus; i++) {
            const gpurun_gpu_t *g = &t->gpus[i];
            char *c = gpurun_cpuset_list(g->cpuset), *n = nodes_str(g->nodeset);
            printf("%-4d %-14s %-7s %-28s %-6s %s\n", g->index, g->pci, g->vendor, g->name, n, c);
            free(c);
            free(n);
        }
    } else {
        printf("\nNo GPUs.\n");
    }
    if (t->gpus_without_pci)
        printf("GPU runtime devices under no PCI device (not planned): %s\n", t->gpus_without_pci);
    if (t->nhsnics) {
        printf("\n%-12s %-14s %-11s %-8s %-6s %s\n", "NIC", "PCI", "kind", "netdev", "NUMA", "cpus");
        for (int i = 0; i < t->nhsnics; i++) {
            const gpurun_nic_t *k = &t->nics[i];
            char *c = gpurun_cpuset_list(k->cpuset), *n = nodes_str(k->nodeset);
            printf("%-12s %-14s %-11s %-8s %-6s %s\n", k->name, k->pci, k->kind, k->netdev ? k->netdev : "-", n, c);
            free(c);
            free(n);
        }
    } else {
        printf("\nNo high-speed NICs (InfiniBand, RoCE, EFA, Omni-Path, Slingshot).\n");
    }
    if (t->nnics > t->nhsnics) {
        /* Plain Ethernet, and functions of fast NICs that are not planned
         * (SR-IOV VFs beside their PF, no driver): each with why. */
        printf("\nNot planned for MPI:\n");
        for (int i = t->nhsnics; i < t->nnics; i++) {
            const gpurun_nic_t *k = &t->nics[i];
            printf("  %-12s %-14s %-11s %s\n", k->name, k->pci, k->kind, k->note ? k->note : "plain Ethernet");
        }
    }
    print_matrix(t);
}

int cmd_topo(int argc, char **argv, gpurun_error_t *err)
{
    static const struct option opts[] = {
        {"topology", required_argument, NULL, 't'}, {"json", no_argument, NULL, 'j'},
        {"export", required_argument, NULL, 'e'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *xml = NULL, *export = NULL;
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 't': xml = optarg; break;
        case 'j': json = 1; break;
        case 'e': export = optarg; break;
        case 'h': fputs(topo_usage, stdout); return 0;
        default:
            return cmd_bad_option("topo", argv[optind - 1], opts, err);
        }
    }
    if (optind < argc) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "topo: unexpected argument '%s' (see gpurun topo --help)", argv[optind]);
        return GPURUN_EXIT_CONFIG;
    }
    /* Through the public API (libgpurun); the tables from what is behind it. */
    gpurun_topology_t *t;
    int rc = gpurun_topology_load(xml, GPURUN_TOPOLOGY_FROM_ENV, &t, err);
    if (rc != 0)
        return rc;
    if (export && (rc = gpurun_topology_export(t, export, err)) != 0)
        goto out;
    if (json) {
        char *doc;
        if ((rc = gpurun_topology_json(t, GPURUN_JSON_INDENT | GPURUN_JSON_FULL, &doc, err)) != 0)
            goto out;
        printf("%s\n", doc);
        free(doc);
    } else {
        print_tables(gpurun_topology_internal(t));
    }
out:
    gpurun_topology_destroy(t);
    return rc;
}
