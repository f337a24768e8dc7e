/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology discovery: hwloc with I/O devices, then the GPUs and high-speed
 * NICs in it, found by what the PCI tree says rather than by names. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "gpu_partitions.h"
#include "safefile.h"
#include "topocache.h"
#include "topology.h"
#include "topo_xml.h"
#include "util.h"


#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD 0x1002
#define PCI_VENDOR_INTEL 0x8086
#define PCI_VENDOR_MELLANOX 0x15b3
#define PCI_VENDOR_AMAZON 0x1d0f
#define PCI_VENDOR_CRAY 0x17db /* Cassini 1 (Slingshot 200) */
#define PCI_VENDOR_HPE 0x1590
#define PCI_DEVICE_CASSINI2 0x0371 /* Slingshot 400, under HPE's vendor id */
#define PCI_VENDOR_CISCO 0x1137

static void pci_address(hwloc_obj_t dev, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%01x", dev->attr->pcidev.domain, dev->attr->pcidev.bus,
             dev->attr->pcidev.dev, dev->attr->pcidev.func);
}

static int pci_cmp(hwloc_obj_t a, hwloc_obj_t b)
{
    const struct hwloc_pcidev_attr_s *x = &a->attr->pcidev, *y = &b->attr->pcidev;
    if (x->domain != y->domain)
        return x->domain < y->domain ? -1 : 1;
    if (x->bus != y->bus)
        return x->bus < y->bus ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    return 0;
}

static bool starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* OS devices of one kind directly below a PCI device. */
static hwloc_obj_t osdev_child(hwloc_obj_t dev, hwloc_obj_osdev_type_t type)
{
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == type)
            return c;
    return NULL;
}

static const char *gpu_vendor_name(unsigned vendor)
{
    switch (vendor) {
    case PCI_VENDOR_NVIDIA: return "nvidia";
    case PCI_VENDOR_AMD: return "amd";
    case PCI_VENDOR_INTEL: return "intel";
    default: return NULL;
    }
}

/* An OS device that only a GPU runtime creates (cuda0, nvml0, rsmi0, opencl0d0, ze0). */
static bool is_compute_osdev(hwloc_obj_t os)
{
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU && os->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC)
        return false;
    const char *backend = hwloc_obj_get_info_by_name(os, "Backend");
    const char *sub = os->subtype ? os->subtype : backend;
    if (sub && (!strcasecmp(sub, "CUDA") || !strcasecmp(sub, "NVML") || !strcasecmp(sub, "RSMI") ||
                !strcasecmp(sub, "OpenCL") || !strcasecmp(sub, "LevelZero")))
        return true;
    return starts_with(os->name, "cuda") || starts_with(os->name, "nvml") ||
           starts_with(os->name, "rsmi") || starts_with(os->name, "opencl") ||
           starts_with(os->name, "ze");
}

/* A GPU is a display/3D/accelerator-class PCI function of a GPU vendor, or
 * any function a GPU runtime reported: the vendor check keeps BMC VGA chips
 * (ASPEED, Matrox) out, the class check keeps NVSwitches and audio out. */
static bool pcidev_is_gpu(hwloc_obj_t dev)
{
    unsigned cls = dev->attr->pcidev.class_id, vendor = dev->attr->pcidev.vendor_id;
    if (!gpu_vendor_name(vendor))
        return false;
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE && is_compute_osdev(c))
            return true;
    switch (cls) {
    case 0x0300: /* VGA */
        /* Intel VGA-class functions are integrated graphics, not compute GPUs. */
        return vendor != PCI_VENDOR_INTEL;
    case 0x0302: /* 3D controller */
    case 0x0380: /* display controller, other (MI200/MI300, Intel Max) */
        return true;
    case 0x1200: /* processing accelerator */
        /* Intel's are NPUs (Meteor Lake and later clients), not GPUs. */
        return vendor != PCI_VENDOR_INTEL;
    default:
        return false;
    }
}

static char *gpu_model(hwloc_obj_t dev)
{
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        const char *m = hwloc_obj_get_info_by_name(c, "GPUModel");
        if (m && *m)
            return gpurun_xstrdup(m);
    }
    const char *m = hwloc_obj_get_info_by_name(dev, "PCIDevice");
    if (m && *m)
        return gpurun_xstrdup(m);
    return gpurun_xasprintf("%04x:%04x", dev->attr->pcidev.vendor_id, dev->attr->pcidev.device_id);
}

/* An IPoIB network device: a 20-byte hardware address (QP number and port
 * GID), whatever its name (ib0, LLNL's hsi0, ibp65s0); else by the ib name
 * when the export has no address. */
static bool is_ipoib(hwloc_obj_t net)
{
    const char *a = hwloc_obj_get_info_by_name(net, "Address");
    return a ? strlen(a) == 20 * 3 - 1 : starts_with(net->name, "ib");
}

static bool port_active(hwloc_obj_t fabric, const char *port)
{
    char key[32];
    snprintf(key, sizeof key, "Port%sState", port);
    const char *state = fabric ? hwloc_obj_get_info_by_name(fabric, key) : NULL;
    return state && !strcmp(state, "4");
}

/* The network device of a NIC.  A VPI card with one function for two ports
 * (ConnectX-3: eth2 on port 1, ib0 on port 2) has several: the InfiniBand
 * one, on an active port first, is the one MPI wants. */
static hwloc_obj_t nic_netdev(hwloc_obj_t dev, hwloc_obj_t fabric)
{
    hwloc_obj_t first = NULL, ipoib = NULL;
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK)
            continue;
        if (!first)
            first = c;
        if (is_ipoib(c)) {
            const char *port = hwloc_obj_get_info_by_name(c, "Port");
            if (port && port_active(fabric, port))
                return c;
            if (!ipoib)
                ipoib = c;
        }
    }
    return ipoib ? ipoib : first;
}

/* Decide whether a PCI function is a NIC, and which kind; NULL if not one. */
static const char *nic_kind(hwloc_obj_t dev, hwloc_obj_t fabric, hwloc_obj_t net, bool *high_speed)
{
    unsigned cls = dev->attr->pcidev.class_id, vendor = dev->attr->pcidev.vendor_id;
    unsigned device = dev->attr->pcidev.device_id;
    bool network_class = (cls >> 8) == 0x02 || cls == 0x0c06; /* network, InfiniBand (serial bus) */
    *high_speed = true;

    if (vendor == PCI_VENDOR_AMAZON && (device & 0xfff0) == 0xefa0)
        return "efa";
    /* Cisco VIC usNIC: OS-bypass UDP, a verbs-like device that UCX and NCCL
     * cannot use; not RoCE. */
    if (vendor == PCI_VENDOR_CISCO && fabric)
        return "usnic";
    /* Cassini 2 is an Ethernet-class function whose netdev is hsnN, like
     * any NIC's: only its ids tell it from plain Ethernet. */
    bool cassini = vendor == PCI_VENDOR_CRAY || (vendor == PCI_VENDOR_HPE && device == PCI_DEVICE_CASSINI2);
    if (cassini || (net && starts_with(net->name, "hsi") && !fabric))
        return network_class || cassini ? "slingshot" : NULL;
    if ((fabric && starts_with(fabric->name, "hfi1")) ||
        (vendor == PCI_VENDOR_INTEL && (device == 0x24f0 || device == 0x24f1)))
        return "omnipath";
    if (fabric) {
        const char *ll = hwloc_obj_get_info_by_name(fabric, "Port1LinkLayer");
        if (ll && !strcasecmp(ll, "Ethernet"))
            return "roce";
        if (starts_with(fabric->name, "rdmap") || starts_with(fabric->name, "efa"))
            return "efa";
        /* hwloc exports rarely carry the link layer; a verbs device whose
         * network device is not IPoIB is RoCE. */
        if (net && !is_ipoib(net))
            return "roce";
        return "infiniband";
    }
    if (cls == 0x0207 || cls == 0x0c06 || (net && is_ipoib(net)))
        return "infiniband";
    if (network_class) {
        *high_speed = false;
        return "ethernet";
    }
    return NULL;
}

/* An SR-IOV virtual function: pci.ids names them so, and Mellanox VFs have
 * device ids of their own (ConnectX-3 to ConnectX-6 VFs, then mlx5Gen VF). */
static bool is_virtual_function(hwloc_obj_t dev)
{
    const char *name = hwloc_obj_get_info_by_name(dev, "PCIDevice");
    if (name && strcasestr(name, "Virtual Function"))
        return true;
    if (dev->attr->pcidev.vendor_id != PCI_VENDOR_MELLANOX)
        return false;
    switch (dev->attr->pcidev.device_id) {
    case 0x1002: case 0x1004: case 0x1012: case 0x1014: case 0x1016:
    case 0x1018: case 0x101a: case 0x101c: case 0x101e:
    case 0xa2d3: /* BlueField's VF: an export without pci.ids names it by number only */
        return true;
    default:
        return false;
    }
}

/* The physical function a VF belongs to: a function of the same vendor
 * below the same bridge that is not a VF itself, on the VF's bus or one
 * before it.  A VF's routing ID is the PF's plus an offset, so many VFs
 * spill onto the next bus numbers, which the port reserves as buses of its
 * own (SR-IOV 1.1, 2.1.2): hwloc hangs those VFs beside the PF.  NULL
 * inside a VM, where the VF is the whole NIC. */
static hwloc_obj_t physical_function(hwloc_obj_t vf)
{
    for (hwloc_obj_t d = vf->parent ? vf->parent->io_first_child : NULL; d; d = d->next_sibling)
        if (d != vf && d->type == HWLOC_OBJ_PCI_DEVICE && d->attr->pcidev.vendor_id == vf->attr->pcidev.vendor_id &&
            d->attr->pcidev.domain == vf->attr->pcidev.domain && d->attr->pcidev.bus <= vf->attr->pcidev.bus &&
            !is_virtual_function(d))
            return d;
    return NULL;
}

/* A verbs device that lists the state of its ports and has none ACTIVE
 * (4): not cabled, or no subnet manager; MPI cannot use it.  A device that
 * lists no state (older exports) is taken as up. */
static bool ports_all_down(hwloc_obj_t fabric)
{
    bool listed = false;
    for (unsigned i = 0; fabric && i < fabric->infos_count; i++) {
        int port;
        char rest[32];
        if (sscanf(fabric->infos[i].name, "Port%d%31s", &port, rest) != 2 || port <= 0 || strcmp(rest, "State"))
            continue;
        if (!strcmp(fabric->infos[i].value, "4"))
            return false;
        listed = true;
    }
    return listed;
}

/* The port to name in UCX_NET_DEVICES/NCCL_IB_HCA: the first active one
 * (state 4 = ACTIVE in the verbs sysfs), else the first listed, else 1. */
static int fabric_port(hwloc_obj_t fabric)
{
    int first = 0;
    if (!fabric)
        return 1;
    for (unsigned i = 0; i < fabric->infos_count; i++) {
        int port;
        char rest[32];
        if (sscanf(fabric->infos[i].name, "Port%d%31s", &port, rest) != 2 || port <= 0)
            continue;
        if (!strcmp(rest, "State") && !strcmp(fabric->infos[i].value, "4"))
            return port;
        if (!first || port < first)
            first = port;
    }
    return first ? first : 1;
}

/* A node that is plain memory rather than HBM, MCDRAM, NVM or GPU memory. */
static bool plain_memory(hwloc_obj_t node)
{
    return !node->subtype || !strcasecmp(node->subtype, "DRAM");
}

/* hwloc gives a CPU-less node (HBM, CXL, NVM, GPU memory) the cpuset of the
 * object it hangs from: that of the package, of the whole machine when its
 * locality is unknown, or the same as the DRAM node beside it.  A node is a
 * home node when no node has a smaller cpuset inside its own and it is the
 * first of the nodes with its very cpuset: plain memory before HBM/MCDRAM/NVM,
 * then the lowest OS index (Linux numbers the nodes with CPUs first). */
static void find_home_nodes(gpurun_topo_t *t)
{
    t->home_nodes = hwloc_bitmap_alloc();
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));) {
        if (hwloc_bitmap_iszero(n->cpuset))
            continue;
        bool home = true;
        for (hwloc_obj_t m = NULL; home && (m = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, m));) {
            if (m == n || hwloc_bitmap_iszero(m->cpuset) || !hwloc_bitmap_isincluded(m->cpuset, n->cpuset))
                continue;
            if (!hwloc_bitmap_isequal(m->cpuset, n->cpuset))
                home = false; /* n spans more than m: n is memory of a wider object */
            else if (plain_memory(m) != plain_memory(n))
                home = plain_memory(n);
            else
                home = n->os_index < m->os_index;
        }
        if (home)
            hwloc_bitmap_set(t->home_nodes, n->os_index);
    }
    if (hwloc_bitmap_iszero(t->home_nodes)) /* no cpusets at all: keep every node */
        hwloc_bitmap_copy(t->home_nodes, hwloc_topology_get_topology_nodeset(t->hw));
}

void gpurun_topo_home_nodes(const gpurun_topo_t *t, hwloc_const_cpuset_t cpus, hwloc_nodeset_t out)
{
    hwloc_bitmap_zero(out);
    int i;
    hwloc_bitmap_foreach_begin(i, t->home_nodes)
    {
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)i);
        if (n && hwloc_bitmap_intersects(n->cpuset, cpus))
            hwloc_bitmap_set(out, (unsigned)i);
    }
    hwloc_bitmap_foreach_end();
}

static void set_locality(const gpurun_topo_t *t, hwloc_obj_t dev, hwloc_obj_t *loc, hwloc_bitmap_t *cpuset,
                         hwloc_bitmap_t *nodeset)
{
    *loc = hwloc_get_non_io_ancestor_obj(t->hw, dev);
    *cpuset = hwloc_bitmap_dup((*loc)->cpuset);
    *nodeset = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, (*loc)->cpuset, *nodeset);
    if (hwloc_bitmap_iszero(*nodeset))
        hwloc_bitmap_copy(*nodeset, (*loc)->nodeset);
}

static int gpu_cmp(const void *a, const void *b)
{
    const gpurun_gpu_t *x = a, *y = b;
    int v = strcmp(x->vendor, y->vendor);
    return v ? v : pci_cmp(x->pcidev, y->pcidev);
}

static int nic_cmp(const void *a, const void *b)
{
    const gpurun_nic_t *x = a, *y = b;
    if (x->high_speed != y->high_speed)
        return x->high_speed ? -1 : 1;
    return pci_cmp(x->pcidev, y->pcidev);
}

/* A PCI GPU that the runtime shows as several devices (AMD CPX partitions:
 * several rsmi OS devices on one function) becomes one gpurun_gpu_t per
 * device, each with the runtime's number, so that the planner gives ranks
 * partitions as it gives them GPUs.  AMD GPUs take their rsmi numbers even
 * when whole: they are what ROCR_VISIBLE_DEVICES counts. */
static void split_partitions(gpurun_topo_t *t)
{
    gpurun_gpu_units_t *u = NULL;
    if (t->ngpus == 0 || gpurun_gpu_units_list(t, &u, NULL) < 0)
        return;
    gpurun_gpu_t *g = gpurun_xcalloc((size_t)u->nunits, sizeof *g);
    for (int i = 0; i < u->nunits; i++) {
        const gpurun_gpu_unit_t *x = &u->units[i];
        const gpurun_gpu_t *whole = &t->gpus[x->gpu];
        g[i] = *whole;
        g[i].index = x->index;
        g[i].partition = x->partition;
        g[i].partitions = u->count[x->gpu];
        g[i].name = gpurun_xstrdup(whole->name);
        g[i].cpuset = hwloc_bitmap_dup(whole->cpuset);
        g[i].nodeset = hwloc_bitmap_dup(whole->nodeset);
    }
    for (int i = 0; i < t->ngpus; i++) {
        free(t->gpus[i].name);
        hwloc_bitmap_free(t->gpus[i].cpuset);
        hwloc_bitmap_free(t->gpus[i].nodeset);
    }
    free(t->gpus);
    t->gpus = g;
    t->ngpus = u->nunits;
    t->ze_flat = u->ze_flat;
    gpurun_gpu_units_destroy(u);
}

static void add_gpu(gpurun_topo_t *t, hwloc_obj_t d)
{
    gpurun_gpu_t *g = &t->gpus[t->ngpus++];
    g->pcidev = d;
    g->vendor = gpu_vendor_name(d->attr->pcidev.vendor_id);
    g->name = gpu_model(d);
    for (hwloc_obj_t c = d->io_first_child; c; c = c->next_sibling)
        g->runtime |= c->type == HWLOC_OBJ_OS_DEVICE && is_compute_osdev(c);
    pci_address(d, g->pci, sizeof g->pci);
    set_locality(t, d, &g->locality, &g->cpuset, &g->nodeset);
}

static void add_nic(gpurun_topo_t *t, hwloc_obj_t d)
{
    hwloc_obj_t fabric = osdev_child(d, HWLOC_OBJ_OSDEV_OPENFABRICS);
    hwloc_obj_t net = nic_netdev(d, fabric);
    bool hs;
    const char *kind = nic_kind(d, fabric, net, &hs);
    if (!kind)
        return;
    gpurun_nic_t *n = &t->nics[t->nnics++];
    n->pcidev = d;
    n->kind = kind;
    n->high_speed = hs;
    pci_address(d, n->pci, sizeof n->pci);
    n->name = gpurun_xstrdup(fabric ? fabric->name : net ? net->name : n->pci);
    n->netdev = net ? gpurun_xstrdup(net->name) : NULL;
    /* The port of the IPoIB device chosen, else the first active one. */
    const char *net_port = net && fabric && is_ipoib(net) ? hwloc_obj_get_info_by_name(net, "Port") : NULL;
    n->port = net_port && atoi(net_port) > 0 ? atoi(net_port) : fabric_port(fabric);
    set_locality(t, d, &n->locality, &n->cpuset, &n->nodeset);
    /* No runtime can name a function without a verbs or network device
     * (no driver, or a VF handed to a VM through vfio), and a VF beside
     * its PF is a slice of the PF's port, not one more NIC. */
    if (hs && !fabric && !net) {
        n->high_speed = false;
        n->note = "no driver: no verbs or network device";
    } else if (hs && is_virtual_function(d) && physical_function(d)) {
        n->high_speed = false;
        n->note = "SR-IOV virtual function of a NIC listed here";
    } else if (hs && ports_all_down(fabric)) {
        n->high_speed = false;
        n->note = "no port active (not cabled, or no subnet manager)";
    }
    if (n->high_speed)
        t->nhsnics++;
}

static void note_gpus_without_pci(gpurun_topo_t *t)
{
    /* A runtime's GPU that hwloc could not tie to any PCI bus hangs from a
     * CPU object instead: gpurun cannot place or number it, but says so
     * rather than plan as if the node had no GPU.  One below a bridge (AWS
     * p4d's OpenCL devices) has its PCI GPU listed already. */
    int unplaced = 0;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t->hw, o));) {
        const char *cl = hwloc_obj_get_info_by_name(o, "OpenCLDeviceType");
        if (!is_compute_osdev(o) || (cl && strcasecmp(cl, "GPU"))) /* OpenCL's CPU devices are no GPU */
            continue;
        hwloc_obj_t up = o->parent;
        while (up && up->type == HWLOC_OBJ_OS_DEVICE) /* a Level Zero tile below its device */
            up = up->parent;
        if (!up || up->type == HWLOC_OBJ_PCI_DEVICE || up->type == HWLOC_OBJ_BRIDGE || !o->name)
            continue;
        if (++unplaced > 8) /* the first few name them; an export can hold thousands */
            continue;
        char *s = gpurun_xasprintf("%s%s%s", t->gpus_without_pci ? t->gpus_without_pci : "",
                                   t->gpus_without_pci ? ", " : "", o->name);
        free(t->gpus_without_pci);
        t->gpus_without_pci = s;
    }
    if (unplaced > 8) {
        char *s = gpurun_xasprintf("%s and %d more", t->gpus_without_pci, unplaced - 8);
        free(t->gpus_without_pci);
        t->gpus_without_pci = s;
    }
}

/* Past the limits, refused before anything quadratic in the devices runs
 * (the affinity matrices, the NIC choice). */
static int find_devices(gpurun_topo_t *t, const char *xml, gpurun_error_t *err)
{
    int ngpu = 0, nnic = 0;
    for (hwloc_obj_t d = NULL; (d = hwloc_get_next_pcidev(t->hw, d));) {
        bool hs;
        if (pcidev_is_gpu(d))
            ngpu++;
        else if (nic_kind(d, osdev_child(d, HWLOC_OBJ_OSDEV_OPENFABRICS),
                          nic_netdev(d, osdev_child(d, HWLOC_OBJ_OSDEV_OPENFABRICS)), &hs))
            nnic++;
    }
    if (ngpu > GPURUN_TOPO_MAX_GPUS || nnic > GPURUN_TOPO_MAX_NICS)
        return gpurun_err(err, xml ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV,
                          "%s: %d %s, more than gpurun plans for (at most %d GPUs and %d NICs per node)",
                          xml ? xml : "this node", ngpu > GPURUN_TOPO_MAX_GPUS ? ngpu : nnic,
                          ngpu > GPURUN_TOPO_MAX_GPUS ? "GPUs" : "NICs", GPURUN_TOPO_MAX_GPUS, GPURUN_TOPO_MAX_NICS);
    t->gpus = gpurun_xcalloc((size_t)ngpu, sizeof *t->gpus);
    t->nics = gpurun_xcalloc((size_t)nnic, sizeof *t->nics);

    for (hwloc_obj_t d = NULL; (d = hwloc_get_next_pcidev(t->hw, d));) {
        if (pcidev_is_gpu(d))
            add_gpu(t, d);
        else
            add_nic(t, d);
    }
    note_gpus_without_pci(t);
    qsort(t->gpus, (size_t)t->ngpus, sizeof *t->gpus, gpu_cmp);
    qsort(t->nics, (size_t)t->nnics, sizeof *t->nics, nic_cmp);
    /* Runtimes number GPUs in PCI bus order when CUDA_DEVICE_ORDER=PCI_BUS_ID
     * (always exported), and ROCm does so by default. */
    for (int i = 0; i < t->ngpus; i++)
        t->gpus[i].index = (i > 0 && !strcmp(t->gpus[i - 1].vendor, t->gpus[i].vendor))
                               ? t->gpus[i - 1].index + 1
                               : 0;
    split_partitions(t);
    if (t->ngpus > GPURUN_TOPO_MAX_GPUS) /* compute partitions count as GPUs */
        return gpurun_err(err, xml ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV,
                          "%s: %d GPU partitions, more than gpurun plans for (at most %d GPUs per node)",
                          xml ? xml : "this node", t->ngpus, GPURUN_TOPO_MAX_GPUS);
    return 0;
}

static int topo_load(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err);

int gpurun_topo_load_xml(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err)
{
    return topo_load(xml, topop, err);
}

int gpurun_topo_load(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err)
{
    /* A site or test can stand in another node's export for the live one;
     * %h names this host's own (one variable serves every host of a job). */
    char *per_host = NULL;
    const char *env = getenv("GPURUN_TOPOLOGY");
    if (!xml && env && *env) {
        const char *h = strstr(env, "%h");
        if (h) {
            char host[256] = "";
            gethostname(host, sizeof host - 1);
            char *dot = strchr(host, '.');
            if (dot)
                *dot = '\0';
            per_host = gpurun_xasprintf("%.*s%s%s", (int)(h - env), env, host, h + 2);
        }
        xml = per_host ? per_host : env;
    }
    int rc = topo_load(xml, topop, err);
    free(per_host);
    return rc;
}


/* A safety net for what the checks above miss: hwloc imports the file once
 * in another process first, so that a crash there becomes exit 2 here.  That
 * process only loads and exits, while this one runs the checks; its stderr
 * is dropped (the real import prints hwloc's warnings once).  It is a fresh
 * program, gpurun-topocheck (topocheck_main.c), not a fork of this process:
 * a fork of a threaded caller of libgpurun inherits the locks its other
 * threads hold (the allocator's, libxml2's) and can hang on them.  Only
 * where that program is not installed does the child fork. */
struct trial_import {
    pid_t pid;
    struct sigaction old_chld;
};

/* fuzz-topo (tests/fuzz) imports in this process, without the net, at the
 * speed of the import itself: there a crash is a hole in the checks, which
 * are what must hold. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
static const bool without_trial_import = true;
#else
static const bool without_trial_import = false;
#endif

/* gpurun-topocheck: beside the program or library that holds this code, or
 * in its prefix's libexec (an installation moved as a whole), else where it
 * was installed.  In a build tree libtool keeps the shared library in
 * lib/.libs/, the program in launcher/. */
static char topocheck_path[PATH_MAX];
static pthread_once_t topocheck_once = PTHREAD_ONCE_INIT;

static void topocheck_find(void)
{
    char dir[PATH_MAX] = "";
    Dl_info info;
    if (dladdr((void *)topocheck_find, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        char *real = realpath(info.dli_fname, NULL);
        if (real) {
            *strrchr(real, '/') = '\0';
            snprintf(dir, sizeof dir, "%s", real);
            free(real);
        }
    }
    size_t dl = strlen(dir);
    bool libtool_tree = dl > 6 && !strcmp(dir + dl - 6, "/.libs");
    const char *cand[] = {"/gpurun-topocheck", "/../libexec/gpurun/gpurun-topocheck",
                          "/../../libexec/gpurun/gpurun-topocheck",
                          libtool_tree ? "/../../launcher/gpurun-topocheck" : NULL};
    for (size_t i = 0; dl && i < sizeof cand / sizeof cand[0] && cand[i]; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s", dir, cand[i]) < (int)sizeof path && gpurun_executable_file(path) &&
            realpath(path, topocheck_path))
            return;
    }
#ifdef GPURUN_PKGLIBEXECDIR /* (not in the fuzz harnesses' builds) */
    if (gpurun_executable_file(GPURUN_PKGLIBEXECDIR "/gpurun-topocheck"))
        snprintf(topocheck_path, sizeof topocheck_path, "%s", GPURUN_PKGLIBEXECDIR "/gpurun-topocheck");
#endif
}

static const char *topocheck_program(void)
{
    pthread_once(&topocheck_once, topocheck_find);
    return topocheck_path[0] ? topocheck_path : NULL;
}

/* The XML, on gpurun-topocheck's standard input: an unlinked file of its
 * own, so that it reads what this process checks, whatever the path names
 * by then. */
static int trial_spawn(const char *program, const char *file, const char *buf, size_t len, pid_t *pid,
                       gpurun_error_t *err)
{
    int fd = memfd_create("gpurun-topology", MFD_CLOEXEC);
    if (fd < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot make a copy to import: %s", file, strerror(errno));
    if (gpurun_write_all(fd, buf, len) < 0) {
        int e = errno;
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot make a copy to import: %s", file, strerror(e));
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&fa, fd, STDIN_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    /* Whatever this process blocks or ignores, the check starts clean. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)"gpurun-topocheck", (char *)file, NULL};
    int rc = posix_spawn(pid, program, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fd);
    if (rc != 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot run %s to import the topology: %s", file, program,
                          strerror(rc));
    return 0;
}

static int trial_import_start(const char *file, hwloc_topology_t hw, const char *buf, size_t len,
                              struct trial_import *ti, gpurun_error_t *err)
{
    /* A SIGCHLD ignored by whoever started gpurun would reap the child
     * before waitpid could see how it ended. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &ti->old_chld);
    const char *program = topocheck_program();
    if (program) {
        if (trial_spawn(program, file, buf, len, &ti->pid, err) < 0) {
            sigaction(SIGCHLD, &ti->old_chld, NULL);
            return -1;
        }
        return 0;
    }
    fflush(NULL);
    ti->pid = fork();
    if (ti->pid < 0) {
        sigaction(SIGCHLD, &ti->old_chld, NULL);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot fork to import the topology: %s", file, strerror(errno));
    }
    if (ti->pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        /* A hang is a failure too. */
        sigset_t alrm;
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        signal(SIGALRM, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, &alrm, NULL);
        alarm(120);
        _exit(hwloc_topology_load(hw) < 0 ? 3 : 0);
    }
    return 0;
}

/* How the child ended; with `cancel` (the checks refused the file) it is
 * killed instead and nothing is reported. */
static int trial_import_finish(const char *file, struct trial_import *ti, bool cancel, gpurun_error_t *err)
{
    if (cancel)
        kill(ti->pid, SIGKILL);
    int status, rc;
    while ((rc = (int)waitpid(ti->pid, &status, 0)) < 0 && errno == EINTR)
        ;
    int saved = errno;
    sigaction(SIGCHLD, &ti->old_chld, NULL);
    if (cancel)
        return -1;
    if (rc < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: lost the topology import: %s", file, strerror(saved));
    /* 3: hwloc refused the file cleanly; the real import says why. */
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3))
        return 0;
    if (WIFSIGNALED(status))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: hwloc crashed importing this file (signal %d, %s): it is not a well-formed hwloc "
                          "export; export the node again with lstopo --of xml FILE",
                          file, WTERMSIG(status), strsignal(WTERMSIG(status)));
    return gpurun_err(err, GPURUN_EXIT_CONFIG,
                      "%s: hwloc failed importing this file (exit %d): it is not a well-formed hwloc export; export "
                      "the node again with lstopo --of xml FILE",
                      file, WEXITSTATUS(status));
}

static int topo_load_one(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err);

/* A live discovery without the cache: when a cached export would not load. */
static int topo_load_live(gpurun_topo_t **topop, gpurun_error_t *err)
{
    bool was = gpurun_topocache_enabled();
    gpurun_topocache_enable(false);
    int rc = topo_load_one(NULL, topop, err);
    gpurun_topocache_enable(was);
    return rc;
}

/* One load at a time in a process (libgpurun may be called from threads):
 * the trial import forks, and a child forked while another thread is inside
 * libxml2 (whose dictionary lock it then inherits, held) or swaps SIGCHLD's
 * disposition hangs or loses its status.  Seen as test_libgpurun's 4
 * threads under ASan: the child hung until its alarm. */
static pthread_mutex_t topo_load_lock = PTHREAD_MUTEX_INITIALIZER;

static int topo_load(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err)
{
    pthread_mutex_lock(&topo_load_lock);
    int rc = topo_load_one(xml, topop, err);
    pthread_mutex_unlock(&topo_load_lock);
    return rc;
}

/* One load under way: where the export comes from (a file, this boot's
 * cache, or a live discovery) and the topology being filled. */
struct topo_loading {
    const char *xml;  /* a file's path; NULL for this node */
    char *cache_name; /* this node's cached export, if caching is on */
    bool cached;      /* buf holds the cache's export */
    char *buf;
    size_t len;
    gpurun_topo_t *t;
};

static void topo_loading_fail(struct topo_loading *l)
{
    if (l->t && l->t->hw)
        hwloc_topology_destroy(l->t->hw);
    free(l->t);
    free(l->buf);
    free(l->cache_name);
    l->t = NULL;
    l->buf = NULL;
    l->cache_name = NULL;
}

/* The export's text: the file named, or this boot's cached one. */
static int topo_read_export(struct topo_loading *l, gpurun_error_t *err)
{
    l->cache_name = l->xml ? NULL : gpurun_topocache_name();
    l->cached = l->cache_name && gpurun_topocache_read(l->cache_name, &l->buf, &l->len) == 0;
    if (l->xml && gpurun_read_file(l->xml, "topology file", GPURUN_TOPO_MAX_FILE_BYTES, &l->buf, &l->len, err) < 0) {
        err->code = GPURUN_EXIT_CONFIG;
        return -1;
    }
    if (l->xml && gpurun_topo_xml_v3_to_v2(l->xml, &l->buf, &l->len, err) < 0)
        return -1;
    if (hwloc_topology_init(&l->t->hw) < 0) {
        l->t->hw = NULL;
        return gpurun_err(err, GPURUN_EXIT_ENV, "hwloc could not be initialised");
    }
    return 0;
}

static void topo_configure(struct topo_loading *l)
{
    hwloc_topology_t hw = l->t->hw;
    /* An export keeps what its writer kept; the live node needs only the
     * bridges that lead somewhere, as lstopo shows them. */
    hwloc_topology_set_io_types_filter(hw, l->xml || l->cached ? HWLOC_TYPE_FILTER_KEEP_ALL
                                                               : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* It is this node: binding and allowed sets are the OS's, and what the
     * discovery supported is the export's (an export without it is read as
     * a discovery of nothing: no binding support). */
    if (l->cached)
        hwloc_topology_set_flags(hw, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM
#if HWLOC_API_VERSION >= 0x00020300
                                         | HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT
#endif
        );
#if HWLOC_API_VERSION >= 0x00020100
    /* hwloc's GL component only adds X displays (":0.0") to GPUs, which
     * nothing here plans with, and to find them it tries ten X displays:
     * about 1 ms of a 16 ms discovery, on every host of every job.  A
     * site that sets HWLOC_COMPONENTS chooses for itself. */
    if (!l->xml && !getenv("HWLOC_COMPONENTS"))
        hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
#endif
}

enum topo_import_result { TOPO_IMPORTED, TOPO_GO_LIVE, TOPO_FAILED };

/* hwloc's import of the export (or the live discovery).  A cached export
 * that will not load, or is another host's, sends the caller to a live
 * discovery instead. */
static enum topo_import_result topo_import(struct topo_loading *l, gpurun_error_t *err)
{
    const char *xml = l->xml;
    if ((l->cached || xml) && hwloc_topology_set_xmlbuffer(l->t->hw, l->buf, (int)l->len + 1) < 0) {
        if (l->cached)
            return TOPO_GO_LIVE;
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not an hwloc XML topology", xml);
        return TOPO_FAILED;
    }
    /* The trial import and the checks run side by side; a file the checks
     * refuse never reaches the real import. */
    struct trial_import ti;
    if (xml && (without_trial_import ? gpurun_topo_xml_check(xml, l->buf, l->len, err) < 0
                                     : trial_import_start(xml, l->t->hw, l->buf, l->len, &ti, err) < 0 ||
                                           trial_import_finish(xml, &ti, gpurun_topo_xml_check(xml, l->buf, l->len, err) < 0,
                                                               err) < 0))
        return TOPO_FAILED;
    if (hwloc_topology_load(l->t->hw) < 0) {
        if (l->cached)
            return TOPO_GO_LIVE;
        /* (An export newer than this hwloc never gets here: the check
         * refused it.) */
        gpurun_err(err, xml ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV, xml ? "%s: hwloc could not load this topology" : "%s",
                   xml ? xml : "hwloc could not discover this node's topology");
        return TOPO_FAILED;
    }
    free(l->buf);
    l->buf = NULL;
    if (l->cache_name && !l->cached)
        gpurun_topocache_write(l->cache_name, l->t->hw);
    if (l->cached) { /* another host's export, however it came there, is not this node */
        char here[256] = "";
        const char *there = hwloc_obj_get_info_by_name(hwloc_get_root_obj(l->t->hw), "HostName");
        if (gethostname(here, sizeof here - 1) < 0 || !there || strcmp(here, there))
            return TOPO_GO_LIVE;
    }
    return TOPO_IMPORTED;
}

/* What the plan counts: the host's name and its levels. */
static void topo_count(gpurun_topo_t *t, const char *xml)
{
    t->source = gpurun_xstrdup(xml ? xml : "local");
    hwloc_obj_t root = hwloc_get_root_obj(t->hw);
    const char *host = hwloc_obj_get_info_by_name(root, "HostName");
    char hbuf[256] = "";
    if (!host && !xml && gethostname(hbuf, sizeof hbuf - 1) == 0)
        host = hbuf;
    t->hostname = gpurun_xstrdup(host ? host : "unknown");
    t->packages = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
    t->numa_nodes = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);
    t->cores = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE);
    t->pus = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
    if (t->cores <= 0) /* some exports have no Core level: every PU is its own core */
        t->cores = t->pus;
}

static int topo_load_one(const char *xml, gpurun_topo_t **topop, gpurun_error_t *err)
{
    /* The live node: its export from an earlier run of this boot, when one
     * of ours fits what this process would discover (topocache.h). */
    struct topo_loading l = {.xml = xml, .t = gpurun_xcalloc(1, sizeof *l.t)};
    if (topo_read_export(&l, err) < 0) {
        topo_loading_fail(&l);
        return -1;
    }
    topo_configure(&l);
    enum topo_import_result r = topo_import(&l, err);
    if (r != TOPO_IMPORTED) {
        topo_loading_fail(&l);
        return r == TOPO_GO_LIVE ? topo_load_live(topop, err) : -1;
    }
    free(l.cache_name);
    gpurun_topo_t *t = l.t;
    topo_count(t, xml);
    find_home_nodes(t);
    if (find_devices(t, xml, err) < 0) {
        gpurun_topo_destroy(t);
        return -1;
    }
    *topop = t;
    return 0;
}

void gpurun_topo_destroy(gpurun_topo_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ngpus; i++) {
        free(t->gpus[i].name);
        hwloc_bitmap_free(t->gpus[i].cpuset);
        hwloc_bitmap_free(t->gpus[i].nodeset);
    }
    for (int i = 0; i < t->nnics; i++) {
        free(t->nics[i].name);
        free(t->nics[i].netdev);
        hwloc_bitmap_free(t->nics[i].cpuset);
        hwloc_bitmap_free(t->nics[i].nodeset);
    }
    free(t->gpus);
    free(t->nics);
    free(t->source);
    free(t->hostname);
    free(t->gpus_without_pci);
    hwloc_bitmap_free(t->home_nodes);
    hwloc_topology_destroy(t->hw);
    free(t);
}

/* Complete or absent, never through a symlink: hwloc writes into memory,
 * safefile writes a temporary file of ours beside the target and renames it. */
static int topo_export(const gpurun_topo_t *t, int dirfd, const char *name, const char *shown, gpurun_error_t *err)
{
    char *xml = NULL;
    int len = 0;
    if (hwloc_topology_export_xmlbuffer(t->hw, &xml, &len, 0) < 0 || !xml || len <= 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot write the topology export: hwloc could not export it",
                          shown);
    /* hwloc counts the closing NUL in len. */
    size_t n = strnlen(xml, (size_t)len);
    int rc = dirfd == AT_FDCWD ? gpurun_write_atomic(name, xml, n, 0644, 0, err)
                               : gpurun_write_atomic_at(dirfd, name, shown, xml, n, 0644, 0, err);
    hwloc_free_xmlbuffer(t->hw, xml);
    return rc;
}

int gpurun_topo_export(const gpurun_topo_t *t, const char *path, gpurun_error_t *err)
{
    return topo_export(t, AT_FDCWD, path, path, err);
}

int gpurun_topo_export_at(const gpurun_topo_t *t, int dirfd, const char *name, const char *shown, gpurun_error_t *err)
{
    return topo_export(t, dirfd, name, shown ? shown : name, err);
}

static bool is_host_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* Bridges strictly between a device and its ancestor `top`. */
static int bridges_below(hwloc_obj_t dev, hwloc_obj_t top)
{
    int n = 0;
    for (hwloc_obj_t o = dev->parent; o && o != top; o = o->parent)
        if (o->type == HWLOC_OBJ_BRIDGE)
            n++;
    return n;
}

static hwloc_obj_t package_of(hwloc_topology_t hw, hwloc_obj_t o)
{
    hwloc_obj_t loc = hwloc_get_non_io_ancestor_obj(hw, o);
    if (loc->type == HWLOC_OBJ_PACKAGE)
        return loc;
    return hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, loc);
}

/* Ranks within a class stay below this, so class*SPAN + rank orders all. */
#define AFFINITY_SPAN 1000

/* Compared by home nodes: a CPU-less node hanging from the machine is in
 * every object's nodeset and would make any two devices look near. */
static enum gpurun_affinity sys_or_node(const gpurun_topo_t *t, hwloc_const_nodeset_t a_nodes,
                                        hwloc_obj_t a_pkg, hwloc_obj_t b, int *rank)
{
    hwloc_obj_t bloc = hwloc_get_non_io_ancestor_obj(t->hw, b);
    hwloc_bitmap_t b_nodes = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, bloc->cpuset, b_nodes);
    enum gpurun_affinity a = GPURUN_AFF_NODE;
    if (!hwloc_bitmap_iszero(a_nodes) && hwloc_bitmap_isequal(a_nodes, b_nodes)) {
        *rank = GPURUN_AFF_NODE * AFFINITY_SPAN;
    } else if (hwloc_bitmap_intersects(a_nodes, b_nodes)) { /* overlapping, not equal: still near */
        *rank = GPURUN_AFF_NODE * AFFINITY_SPAN + 1;
    } else {
        hwloc_obj_t bpkg = package_of(t->hw, b);
        *rank = GPURUN_AFF_SYS * AFFINITY_SPAN + (a_pkg && a_pkg == bpkg ? 0 : 1);
        a = GPURUN_AFF_SYS;
    }
    hwloc_bitmap_free(b_nodes);
    return a;
}

/* hwloc_get_common_ancestor_obj() compares depths, which I/O objects do not
 * have; walk the parents instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

enum gpurun_affinity gpurun_pci_affinity(const gpurun_topo_t *t, hwloc_obj_t a, hwloc_obj_t b, int *rank)
{
    int dummy;
    if (!rank)
        rank = &dummy;
    if (a == b) { /* two partitions of one GPU */
        *rank = GPURUN_AFF_PIX * AFFINITY_SPAN;
        return GPURUN_AFF_PIX;
    }
    hwloc_obj_t common = common_ancestor(a, b);
    if (common && common->type == HWLOC_OBJ_BRIDGE && !is_host_bridge(common)) {
        int ha = bridges_below(a, common), hb = bridges_below(b, common);
        /* One switch: each side at most one downstream port below the
         * switch's upstream port (or both on the same port). */
        if (ha <= 1 && hb <= 1) {
            *rank = GPURUN_AFF_PIX * AFFINITY_SPAN + ha + hb;
            return GPURUN_AFF_PIX;
        }
        *rank = GPURUN_AFF_PXB * AFFINITY_SPAN + ha + hb;
        return GPURUN_AFF_PXB;
    }
    if (common && is_host_bridge(common)) {
        *rank = GPURUN_AFF_PHB * AFFINITY_SPAN + bridges_below(a, common) + bridges_below(b, common);
        return GPURUN_AFF_PHB;
    }
    hwloc_obj_t aloc = hwloc_get_non_io_ancestor_obj(t->hw, a);
    hwloc_bitmap_t a_nodes = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, aloc->cpuset, a_nodes);
    enum gpurun_affinity aff = sys_or_node(t, a_nodes, package_of(t->hw, a), b, rank);
    hwloc_bitmap_free(a_nodes);
    return aff;
}

enum gpurun_affinity gpurun_cpu_affinity(const gpurun_topo_t *t, hwloc_const_cpuset_t cpus, hwloc_obj_t dev,
                                         int *rank)
{
    int dummy;
    if (!rank)
        rank = &dummy;
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, cpus, nodes);
    hwloc_obj_t pkg = NULL;
    int first = hwloc_bitmap_first(cpus);
    if (first >= 0) {
        hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)first);
        if (pu)
            pkg = hwloc_get_ancestor_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, pu);
    }
    enum gpurun_affinity a = sys_or_node(t, nodes, pkg, dev, rank);
    hwloc_bitmap_free(nodes);
    return a;
}

const char *gpurun_affinity_name(enum gpurun_affinity a)
{
    static const char *const names[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "?";
}

json_t *gpurun_nodeset_json(hwloc_const_nodeset_t set)
{
    json_t *a = json_array();
    int i;
    hwloc_bitmap_foreach_begin(i, set) json_array_append_new(a, json_integer(i));
    hwloc_bitmap_foreach_end();
    return a;
}

char *gpurun_cpuset_list(hwloc_const_cpuset_t set)
{
    char *s = NULL;
    if (hwloc_bitmap_list_asprintf(&s, set) < 0 || !s)
        abort();
    return s;
}

struct bitmap_fill {
    hwloc_bitmap_t set;
    bool oom;
};

static void bitmap_add_range(unsigned lo, unsigned hi, void *arg)
{
    struct bitmap_fill *f = arg;
    if (!f->oom && hwloc_bitmap_set_range(f->set, lo, (int)hi) < 0)
        f->oom = true;
}

int gpurun_bitmap_list_parse(hwloc_bitmap_t set, const char *list, unsigned limit, const char **why)
{
    struct bitmap_fill f = {set, false};
    const char *w = NULL;
    hwloc_bitmap_zero(set);
    if (gpurun_id_list_parse(list, limit, bitmap_add_range, &f, &w) < 0 || f.oom) {
        if (why)
            *why = f.oom ? "out of memory" : w;
        hwloc_bitmap_zero(set);
        return -1;
    }
    return 0;
}

static json_t *cpus_json(hwloc_const_cpuset_t set)
{
    char *s = gpurun_cpuset_list(set);
    json_t *j = json_string(s);
    free(s);
    return j;
}

/* The plan document holds exactly SPEC §5's keys; `topo --json` adds more. */
static json_t *nic_json(const gpurun_nic_t *n, bool full)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "name", n->name, "pci", n->pci, "kind", n->kind);
    if (full && n->netdev)
        json_object_set_new(o, "netdev", json_string(n->netdev));
    if (full && n->note)
        json_object_set_new(o, "note", json_string(n->note));
    json_object_set_new(o, "numa", gpurun_nodeset_json(n->nodeset));
    json_object_set_new(o, "cpus", cpus_json(n->cpuset));
    return o;
}

static json_t *affinity_json(const gpurun_topo_t *t)
{
    json_t *gg = json_array(), *gn = json_array(), *nics = json_array();
    for (int i = 0; i < t->nhsnics; i++)
        json_array_append_new(nics, json_string(t->nics[i].name));
    for (int i = 0; i < t->ngpus; i++) {
        json_t *row = json_array(), *nrow = json_array();
        for (int j = 0; j < t->ngpus; j++)
            json_array_append_new(row, json_string(i == j ? "X"
                                                          : gpurun_affinity_name(gpurun_pci_affinity(
                                                                t, t->gpus[i].pcidev, t->gpus[j].pcidev, NULL))));
        for (int j = 0; j < t->nhsnics; j++)
            json_array_append_new(nrow, json_string(gpurun_affinity_name(
                                            gpurun_pci_affinity(t, t->gpus[i].pcidev, t->nics[j].pcidev, NULL))));
        json_array_append_new(gg, row);
        json_array_append_new(gn, nrow);
    }
    return json_pack("{s:o, s:o, s:o}", "nics", nics, "gpu_gpu", gg, "gpu_nic", gn);
}

json_t *gpurun_topo_json(const gpurun_topo_t *t, bool full)
{
    json_t *numa = json_array(), *gpus = json_array(), *nics = json_array(), *eth = json_array();
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));)
        json_array_append_new(numa, json_integer(n->os_index));
    for (int i = 0; i < t->ngpus; i++) {
        const gpurun_gpu_t *g = &t->gpus[i];
        json_t *gj = json_pack("{s:i, s:s, s:s, s:s, s:o, s:o}", "index", g->index, "pci", g->pci, "vendor",
                               g->vendor, "name", g->name, "numa", gpurun_nodeset_json(g->nodeset), "cpus",
                               cpus_json(g->cpuset));
        if (full && g->partitions > 1) {
            json_object_set_new(gj, "partition", json_integer(g->partition));
            json_object_set_new(gj, "partitions", json_integer(g->partitions));
        }
        json_array_append_new(gpus, gj);
    }
    for (int i = 0; i < t->nnics; i++)
        json_array_append_new(t->nics[i].high_speed ? nics : eth, nic_json(&t->nics[i], full));

    json_t *o = json_pack("{s:s, s:s, s:i, s:o, s:i, s:i, s:o, s:o}", "source", t->source, "hostname",
                          t->hostname, "packages", t->packages, "numa_nodes", numa, "cores", t->cores, "pus",
                          t->pus, "gpus", gpus, "nics", nics);
    if (!full) {
        json_decref(eth);
        return o;
    }
    json_object_set_new(o, "ethernet", eth);
    if (t->gpus_without_pci)
        json_object_set_new(o, "gpus_without_pci", json_string(t->gpus_without_pci));
    json_t *numa_detail = json_array();
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));) {
        json_t *d = json_pack("{s:i, s:o, s:I}", "os_index", (int)n->os_index, "cpus", cpus_json(n->cpuset),
                              "memory_bytes", (json_int_t)n->attr->numanode.local_memory);
        if (n->subtype)
            json_object_set_new(d, "subtype", json_string(n->subtype));
        json_array_append_new(numa_detail, d);
    }
    json_object_set_new(o, "numa", numa_detail);
    /* PUs the OS knows but that are offline: never planned, shown so users see why. */
    hwloc_bitmap_t off = hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(t->hw));
    hwloc_bitmap_andnot(off, off, hwloc_topology_get_topology_cpuset(t->hw));
    json_object_set_new(o, "offline_pus", cpus_json(off));
    hwloc_bitmap_free(off);
    json_object_set_new(o, "affinity", affinity_json(t));
    return o;
}
