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

/* --- refusing malformed exports --------------------------------------------
 *
 * hwloc's XML importer trusts its input: it dereferences complete_cpuset and
 * complete_nodeset without checking they were given (hwloc 2.9 crashes on a
 * root or a child object without them, with its libxml2 parser and with its
 * own), and sizes bitmaps and matrices from numbers in the file.  So gpurun
 * first checks with libxml2 what the importer assumes of every export hwloc
 * writes, and refuses anything else with exit 2, naming the file, the line
 * and the attribute. */

enum xml_kind { XK_NORMAL, XK_MEMORY, XK_IO, XK_MISC };

struct xml_check {
    const char *file;
    gpurun_error_t *err;
    bool v1;  /* hwloc 1.x format: NUMA nodes are in the CPU tree */
    long objects, pus, numa;
    hwloc_bitmap_t root_complete_cpuset;
    unsigned long long *gp;  /* gp_index values seen, to refuse duplicates */
    size_t ngp, capgp;
};

static const char *const set_attrs[] = {"cpuset",         "complete_cpuset", "allowed_cpuset", "online_cpuset",
                                        "nodeset",        "complete_nodeset", "allowed_nodeset"};

static int xml_fail(struct xml_check *c, xmlNodePtr n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xml_fail(struct xml_check *c, xmlNodePtr n, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gpurun_err(c->err, GPURUN_EXIT_CONFIG,
                      "%s:%ld: %s; not a well-formed hwloc export, so gpurun does not load it "
                      "(export the node again with lstopo --of xml FILE)",
                      c->file, n ? (long)xmlGetLineNo(n) : 0L, what);
}

static char *xml_attr(xmlNodePtr n, const char *name)
{
    return (char *)xmlGetProp(n, (const xmlChar *)name);
}

/* hwloc's bitmap syntax, strictly: comma-separated hex words of at most 32
 * bits ("0x000000ff,,0x00000001", a zero word inside left empty), the
 * first possibly "0xf...f" for an infinite set.  *words counts the finite words. */
static bool bitmap_syntax(const char *s, size_t *words, bool *infinite)
{
    *words = 0;
    *infinite = !strncmp(s, "0xf...f", 7);
    if (*infinite) {
        s += 7;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
    }
    for (;;) {
        /* hwloc writes a zero word between others as nothing: "0x1,,0x2". */
        if (*s != ',' || *words == 0 || !s[1]) {
            if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
                return false;
            s += 2;
            size_t digits = strspn(s, "0123456789abcdefABCDEF");
            if (digits < 1 || digits > 8)
                return false;
            s += digits;
        }
        (*words)++;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
    }
}

/* Parse one set attribute into out (left untouched when absent); -1 with
 * the error when it is malformed or reaches past gpurun's limits. */
static int xml_set(struct xml_check *c, xmlNodePtr n, const char *name, hwloc_bitmap_t out, bool *present)
{
    char *v = xml_attr(n, name);
    *present = v != NULL;
    if (!v)
        return 0;
    size_t words;
    bool infinite;
    bool nodes = strstr(name, "nodeset") != NULL;
    unsigned limit = nodes ? GPURUN_TOPO_MAX_NUMA_INDEX : GPURUN_TOPO_MAX_PU_INDEX;
    int rc = 0;
    if (!bitmap_syntax(v, &words, &infinite))
        rc = xml_fail(c, n, "%s=\"%.40s%s\" is not an hwloc bitmap (0x-prefixed 32-bit hex words, comma-separated)",
                      name, v, strlen(v) > 40 ? "..." : "");
    else if (infinite && !strstr(name, "allowed") && !strstr(name, "online"))
        rc = xml_fail(c, n, "%s is infinite (0xf...f): only the allowed sets may be", name);
    else if (words > (limit + 31) / 32)
        rc = xml_fail(c, n, "%s has %zu words: more %s than gpurun accepts (numbers below %u)", name, words,
                      nodes ? "NUMA nodes" : "PUs", limit);
    else if (hwloc_bitmap_sscanf(out, v) < 0)
        rc = xml_fail(c, n, "%s=\"%.40s\" is not an hwloc bitmap", name, v);
    else if (!infinite && hwloc_bitmap_last(out) >= (int)limit)
        rc = xml_fail(c, n, "%s names %s %d: gpurun accepts numbers below %u", name, nodes ? "NUMA node" : "PU",
                      hwloc_bitmap_last(out), limit);
    xmlFree(v);
    return rc;
}

/* A decimal attribute; *present says whether it was there. */
static int xml_uint(struct xml_check *c, xmlNodePtr n, const char *name, unsigned long long max,
                    unsigned long long *value, bool *present)
{
    char *v = xml_attr(n, name), *end;
    *present = v != NULL;
    if (!v)
        return 0;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    int rc = 0;
    if (end == v || *end || errno || v[0] == '-' || x > max)
        rc = xml_fail(c, n, "%s=\"%.40s\" is not a number from 0 to %llu", name, v, max);
    xmlFree(v);
    *value = x;
    return rc;
}

static int xml_kind_of(struct xml_check *c, xmlNodePtr n, enum xml_kind *kind, hwloc_obj_type_t *type)
{
    char *v = xml_attr(n, "type");
    if (!v)
        return xml_fail(c, n, "an object without a type");
    int rc = 0;
    *type = HWLOC_OBJ_GROUP;
    *kind = XK_NORMAL;
    /* Names older and newer hwloc writes that 2.x reads as Groups/caches. */
    if (!strcasecmp(v, "Cache") || !strcasecmp(v, "Tile") || !strcasecmp(v, "Module") || !strcasecmp(v, "System"))
        *kind = XK_NORMAL;
    else if (hwloc_type_sscanf(v, type, NULL, 0) < 0)
        rc = xml_fail(c, n, "unknown object type \"%.40s\"", v);
    else if (*type == HWLOC_OBJ_NUMANODE || *type == HWLOC_OBJ_MEMCACHE)
        *kind = XK_MEMORY;
    else if (*type == HWLOC_OBJ_BRIDGE || *type == HWLOC_OBJ_PCI_DEVICE || *type == HWLOC_OBJ_OS_DEVICE)
        *kind = XK_IO;
    else if (*type == HWLOC_OBJ_MISC)
        *kind = XK_MISC;
    else
        *kind = XK_NORMAL;
    xmlFree(v);
    return rc;
}

static bool is_element(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* hwloc's importer gives up on a file (and leaks what it read so far) at an
 * attribute it does not know on <info>, <page_type>, <userdata>, and the
 * children of <distances2>: only those of `allowed` (NULL-ended) may be there. */
static int xml_only_attrs(struct xml_check *c, xmlNodePtr n, const char *const *allowed)
{
    for (xmlAttrPtr a = n->properties; a; a = a->next) {
        size_t i = 0;
        while (allowed[i] && strcmp((const char *)a->name, allowed[i]))
            i++;
        if (!allowed[i])
            return xml_fail(c, n, "<%s> with an attribute %.40s that hwloc does not know", (const char *)n->name,
                            (const char *)a->name);
    }
    return 0;
}

/* The element's text as hwloc reads it: its first child, if that is text;
 * hwloc refuses the file unless it is exactly `length` bytes long. */
static const char *xml_text(xmlNodePtr n)
{
    return n->children && n->children->type == XML_TEXT_NODE && n->children->content
               ? (const char *)n->children->content
               : "";
}

static int xml_check_length(struct xml_check *c, xmlNodePtr n, unsigned long long length)
{
    if (strlen(xml_text(n)) != length)
        return xml_fail(c, n, "<%s> whose text is not the %llu characters its length says",
                        (const char *)n->name, length);
    return 0;
}

struct xml_sets {
    hwloc_bitmap_t cpuset, complete_cpuset, nodeset, complete_nodeset;
};

static int xml_check_object(struct xml_check *c, xmlNodePtr n, enum xml_kind parent_kind,
                            hwloc_obj_type_t parent_type, const struct xml_sets *parent, int depth);

/* How many numbers hwloc reads from a distance matrix's <indexes> or
 * <u64values> text: each strtoull's, while one blank separates them. */
static unsigned long long xml_count_numbers(const char *s, bool hetero)
{
    unsigned long long k = 0;
    for (;;) {
        if (hetero) { /* "Type:index" */
            const char *colon = strchr(s, ':');
            if (!*s || !colon)
                return k;
            s = colon + 1;
        }
        char *end;
        strtoull(s, &end, 0);
        if (end == s)
            return k;
        k++;
        if (*end != ' ')
            return k;
        s = end + 1;
    }
}

/* The numbers hwloc sizes arrays from: a distance matrix of nbobjs x nbobjs;
 * and a 2.x matrix (distances2) as its importer wants it, or it gives up on
 * the file. */
static int xml_check_distances(struct xml_check *c, xmlNodePtr n)
{
    unsigned long long nb;
    bool present;
    const char *tag = (const char *)n->name;
    if (xml_uint(c, n, "nbobjs", ULLONG_MAX, &nb, &present) < 0)
        return -1;
    if (!present)
        return xml_fail(c, n, "%s without nbobjs", tag);
    if (nb > GPURUN_TOPO_MAX_DISTANCE_OBJS)
        return xml_fail(c, n, "%s between %llu objects: gpurun accepts at most %d", tag, nb,
                        GPURUN_TOPO_MAX_DISTANCE_OBJS);
    if (is_element(n, "distances"))
        return 0; /* hwloc 1.x: read leniently */
    bool hetero = is_element(n, "distances2hetero");
    char *type = xml_attr(n, "type"), *indexing = xml_attr(n, "indexing");
    hwloc_obj_type_t t;
    unsigned long long kind;
    bool has_kind;
    int rc = xml_uint(c, n, "kind", ULLONG_MAX, &kind, &has_kind);
    if (rc == 0 && (nb == 0 || !has_kind || kind == 0 || (!hetero && (!indexing || !type))))
        rc = xml_fail(c, n, "%s without nbobjs, kind%s", tag, hetero ? "" : ", indexing or type");
    else if (rc == 0 && type && hwloc_type_sscanf(type, &t, NULL, 0) < 0)
        rc = xml_fail(c, n, "%s of an unknown object type \"%.40s\"", tag, type);
    xmlFree(type);
    xmlFree(indexing);
    unsigned long long nindexes = 0, nvalues = 0;
    for (xmlNodePtr ch = n->children; ch && rc == 0; ch = ch->next) {
        if (ch->type != XML_ELEMENT_NODE)
            continue;
        if (is_element(ch, "info")) {
            rc = xml_only_attrs(c, ch, (const char *const[]){"name", "value", NULL});
            continue;
        }
        bool idx = is_element(ch, "indexes");
        if (!idx && !is_element(ch, "u64values")) {
            rc = xml_fail(c, ch, "<%.40s> inside %s", (const char *)ch->name, tag);
            break;
        }
        unsigned long long length;
        bool has_length;
        if (!ch->properties || strcmp((const char *)ch->properties->name, "length") || ch->properties->next)
            rc = xml_fail(c, ch, "<%s> whose only attribute is not length", (const char *)ch->name);
        else if ((rc = xml_uint(c, ch, "length", INT_MAX, &length, &has_length)) == 0)
            rc = xml_check_length(c, ch, length);
        if (rc == 0 && (idx ? nindexes >= nb : nvalues >= nb * nb))
            rc = xml_fail(c, ch, "%s with more %s than its %llu objects have", tag, idx ? "indexes" : "values",
                          nb);
        if (rc == 0) {
            unsigned long long k = xml_count_numbers(xml_text(ch), hetero && idx);
            if (idx)
                nindexes += k < nb - nindexes ? k : nb - nindexes;
            else
                nvalues += k < nb * nb - nvalues ? k : nb * nb - nvalues;
        }
    }
    if (rc == 0 && (nindexes != nb || nvalues != nb * nb))
        rc = xml_fail(c, n, "%s of %llu objects with %llu indexes and %llu values (it needs %llu and %llu)", tag,
                      nb, nindexes, nvalues, nb, nb * nb);
    return rc;
}

static int xml_check_children(struct xml_check *c, xmlNodePtr n, enum xml_kind kind, hwloc_obj_type_t type,
                              const struct xml_sets *sets, int depth)
{
    bool after_object = false;
    long nchildren = 0;
    for (xmlNodePtr ch = n->children; ch; ch = ch->next) {
        if (ch->type != XML_ELEMENT_NODE)
            continue;
        if (is_element(ch, "object")) {
            after_object = true;
            /* hwloc 2.9's importer finds the end of the siblings' list for
             * each child it inserts: 100,000 objects under one parent took
             * minutes. */
            if (++nchildren > GPURUN_TOPO_MAX_CHILDREN)
                return xml_fail(c, ch, "an object with more than %d child objects: gpurun accepts at most %d",
                                GPURUN_TOPO_MAX_CHILDREN, GPURUN_TOPO_MAX_CHILDREN);
            if (xml_check_object(c, ch, kind, type, sets, depth + 1) < 0)
                return -1;
            continue;
        }
        /* hwloc reads an object's own elements before its children, and
         * gives up on one that comes after them. */
        if (after_object)
            return xml_fail(c, ch, "<%.40s> after a child object (hwloc exports write them first)",
                            (const char *)ch->name);
        if (is_element(ch, "info")) {
            char *name = xml_attr(ch, "name"), *value = xml_attr(ch, "value");
            bool good = name && value;
            xmlFree(name);
            xmlFree(value);
            if (!good)
                return xml_fail(c, ch, "an info without both name and value");
            if (xml_only_attrs(c, ch, (const char *const[]){"name", "value", NULL}) < 0)
                return -1;
        } else if (is_element(ch, "distances")) { /* hwloc 1.x puts them inside objects */
            if (xml_check_distances(c, ch) < 0)
                return -1;
        } else if (is_element(ch, "page_type")) {
            if (depth > 0 && type != HWLOC_OBJ_NUMANODE)
                return xml_fail(c, ch, "a page_type inside a %s (only NUMA nodes and the Machine have them)",
                                hwloc_obj_type_string(type));
            if (xml_only_attrs(c, ch, (const char *const[]){"size", "count", NULL}) < 0)
                return -1;
        } else if (is_element(ch, "userdata")) {
            unsigned long long length = 0;
            bool has_length;
            char *encoding = xml_attr(ch, "encoding");
            bool base64 = encoding && !strcmp(encoding, "base64");
            xmlFree(encoding);
            if (xml_only_attrs(c, ch, (const char *const[]){"length", "encoding", "name", NULL}) < 0 ||
                xml_uint(c, ch, "length", INT_MAX / 2, &length, &has_length) < 0 ||
                xml_check_length(c, ch, base64 ? 4 * ((length + 2) / 3) : length) < 0)
                return -1;
        } else {
            return xml_fail(c, ch, "<%.40s> inside an object", (const char *)ch->name);
        }
    }
    return 0;
}

/* Where hwloc 2.x puts each kind; the importer refuses a few of these
 * itself, but not a CPU object below a PU. */
static int xml_check_placement(struct xml_check *c, xmlNodePtr n, enum xml_kind kind, const char *tname,
                               enum xml_kind parent_kind, hwloc_obj_type_t parent_type, bool has_parent)
{
    if (has_parent) {
        if (kind == XK_NORMAL && (parent_kind != XK_NORMAL || parent_type == HWLOC_OBJ_PU))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
        if (kind == XK_MEMORY && (parent_kind == XK_IO || parent_kind == XK_MISC))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
        if (kind == XK_IO && (parent_kind == XK_MEMORY || parent_kind == XK_MISC))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
    } else if (kind != XK_NORMAL) {
        return xml_fail(c, n, "the top object is a %s, not the Machine", tname);
    }
    return 0;
}

/* The importer drops a cache whose level is not its type's, without
 * saying why. */
static int xml_check_cache_level(struct xml_check *c, xmlNodePtr n, hwloc_obj_type_t type, const char *tname)
{
    if (type < HWLOC_OBJ_L1CACHE || type > HWLOC_OBJ_L3ICACHE)
        return 0;
    unsigned long long level, ctype;
    bool has_level, has_ctype;
    bool icache = type >= HWLOC_OBJ_L1ICACHE;
    int want = icache ? (int)(type - HWLOC_OBJ_L1ICACHE) + 1 : (int)(type - HWLOC_OBJ_L1CACHE) + 1;
    if (xml_uint(c, n, "depth", 64, &level, &has_level) < 0 ||
        xml_uint(c, n, "cache_type", ULLONG_MAX, &ctype, &has_ctype) < 0)
        return -1;
    /* hwloc drops the file when the level or the kind (cache_type 2:
     * instructions) is not the type's; it ignores a kind past 2. */
    if (!has_level)
        return xml_fail(c, n, "an %s without its depth", tname);
    if (level != (unsigned long long)want)
        return xml_fail(c, n, "an %s that says it is a level-%llu cache (depth=\"%llu\")", tname, level, level);
    if (icache != (has_ctype && ctype == HWLOC_OBJ_CACHE_INSTRUCTION))
        return xml_fail(c, n, "an %s whose cache_type says it is %s cache", tname,
                        icache ? "not an instruction" : "an instruction");
    return 0;
}

/* Read os_index, and note gp_index for the check for duplicates. */
static int xml_read_indexes(struct xml_check *c, xmlNodePtr n, unsigned long long *os_index, bool *has_os)
{
    unsigned long long gp;
    bool has_gp;
    if (xml_uint(c, n, "gp_index", ULLONG_MAX, &gp, &has_gp) < 0 ||
        xml_uint(c, n, "os_index", UINT_MAX, os_index, has_os) < 0)
        return -1;
    if (has_gp) {
        if (c->ngp == c->capgp) {
            c->capgp = c->capgp ? 2 * c->capgp : 256;
            c->gp = gpurun_xrealloc(c->gp, c->capgp * sizeof *c->gp);
        }
        c->gp[c->ngp++] = gp;
    }
    return 0;
}

/* Parse every set attribute of the object (each checked; the four that
 * matter kept in *s), and say in present[] which were there. */
static int xml_read_sets(struct xml_check *c, xmlNodePtr n, struct xml_sets *s, bool *present)
{
    hwloc_bitmap_t scratch = hwloc_bitmap_alloc();
    int rc = 0;
    for (size_t i = 0; i < sizeof set_attrs / sizeof set_attrs[0] && rc == 0; i++) {
        hwloc_bitmap_t out = !strcmp(set_attrs[i], "cpuset")             ? s->cpuset
                             : !strcmp(set_attrs[i], "complete_cpuset")  ? s->complete_cpuset
                             : !strcmp(set_attrs[i], "nodeset")          ? s->nodeset
                             : !strcmp(set_attrs[i], "complete_nodeset") ? s->complete_nodeset
                                                                         : scratch;
        rc = xml_set(c, n, set_attrs[i], out, &present[i]);
    }
    hwloc_bitmap_free(scratch);
    return rc;
}

/* A CPU or memory object's sets: all four there, each inside its complete
 * one and inside its parent's; the Machine's not empty. */
static int xml_check_cpu_sets(struct xml_check *c, xmlNodePtr n, const char *tname, const struct xml_sets *s,
                              const bool *present, const struct xml_sets *parent, hwloc_obj_type_t parent_type)
{
    /* Every CPU and memory object hwloc exports has its four sets. */
    for (size_t i = 0; i < 7; i++) {
        if (!strcmp(set_attrs[i], "cpuset") || !strcmp(set_attrs[i], "complete_cpuset") ||
            !strcmp(set_attrs[i], "nodeset") || !strcmp(set_attrs[i], "complete_nodeset")) {
            if (!present[i])
                return xml_fail(c, n, "a %s object without %s (hwloc needs cpuset, complete_cpuset, nodeset and "
                                "complete_nodeset on every CPU and memory object)", tname, set_attrs[i]);
        }
    }
    if (!hwloc_bitmap_isincluded(s->cpuset, s->complete_cpuset) ||
        !hwloc_bitmap_isincluded(s->nodeset, s->complete_nodeset))
        return xml_fail(c, n, "a %s object whose cpuset or nodeset is not inside its complete_cpuset or "
                        "complete_nodeset", tname);
    if (parent && (!hwloc_bitmap_isincluded(s->cpuset, parent->cpuset) ||
                   !hwloc_bitmap_isincluded(s->complete_cpuset, parent->complete_cpuset) ||
                   !hwloc_bitmap_isincluded(s->nodeset, parent->nodeset) ||
                   !hwloc_bitmap_isincluded(s->complete_nodeset, parent->complete_nodeset)))
        return xml_fail(c, n, "a %s object with CPUs or NUMA nodes that its parent %s does not have", tname,
                        hwloc_obj_type_string(parent_type));
    if (!parent) {
        if (hwloc_bitmap_iszero(s->cpuset) || hwloc_bitmap_iszero(s->nodeset))
            return xml_fail(c, n, "the Machine has no CPUs or no NUMA node");
        hwloc_bitmap_copy(c->root_complete_cpuset, s->complete_cpuset);
    }
    return 0;
}

/* hwloc sets bit os_index of a PU or NUMA node in its sets; and the
 * counts of both are bounded. */
static int xml_check_pu_or_numa(struct xml_check *c, xmlNodePtr n, hwloc_obj_type_t type, const char *tname,
                                const struct xml_sets *s, unsigned long long os_index, bool has_os)
{
    if (type != HWLOC_OBJ_PU && type != HWLOC_OBJ_NUMANODE)
        return 0;
    bool pu = type == HWLOC_OBJ_PU;
    unsigned limit = pu ? GPURUN_TOPO_MAX_PU_INDEX : GPURUN_TOPO_MAX_NUMA_INDEX;
    hwloc_bitmap_t own = pu ? s->complete_cpuset : s->complete_nodeset;
    if (!has_os || os_index >= limit)
        return xml_fail(c, n, "a %s %s os_index (gpurun needs one below %u)", tname,
                        has_os ? "with a too large" : "without an", limit);
    if (hwloc_bitmap_weight(own) != 1 || !hwloc_bitmap_isset(own, (unsigned)os_index))
        return xml_fail(c, n, "%s P#%llu whose %s is not just %s %llu", tname, os_index,
                        pu ? "complete_cpuset" : "complete_nodeset", pu ? "PU" : "node", os_index);
    if (pu && ++c->pus > GPURUN_TOPO_MAX_PUS)
        return xml_fail(c, n, "more than %d PUs: gpurun accepts at most %d", GPURUN_TOPO_MAX_PUS,
                        GPURUN_TOPO_MAX_PUS);
    if (!pu && ++c->numa > GPURUN_TOPO_MAX_NUMA)
        return xml_fail(c, n, "more than %d NUMA nodes: gpurun accepts at most %d", GPURUN_TOPO_MAX_NUMA,
                        GPURUN_TOPO_MAX_NUMA);
    return 0;
}

static int xml_check_object(struct xml_check *c, xmlNodePtr n, enum xml_kind parent_kind,
                            hwloc_obj_type_t parent_type, const struct xml_sets *parent, int depth)
{
    enum xml_kind kind;
    hwloc_obj_type_t type;
    if (++c->objects > GPURUN_TOPO_MAX_OBJECTS)
        return xml_fail(c, n, "more than %d objects: gpurun accepts at most %d", GPURUN_TOPO_MAX_OBJECTS,
                        GPURUN_TOPO_MAX_OBJECTS);
    /* Real trees are a few dozen levels deep; the importer recurses. */
    if (depth > 256)
        return xml_fail(c, n, "objects nested more than 256 deep");
    if (xml_kind_of(c, n, &kind, &type) < 0)
        return -1;
    if (c->v1 && kind == XK_MEMORY) /* 1.x: NUMA nodes are in the CPU tree, I/O below them */
        kind = XK_NORMAL;
    const char *tname = hwloc_obj_type_string(type);
    if (xml_check_placement(c, n, kind, tname, parent_kind, parent_type, parent != NULL) < 0 ||
        xml_check_cache_level(c, n, type, tname) < 0)
        return -1;
    unsigned long long os_index;
    bool has_os;
    if (xml_read_indexes(c, n, &os_index, &has_os) < 0)
        return -1;

    struct xml_sets s = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc()};
    bool present[sizeof set_attrs / sizeof set_attrs[0]];
    int rc = xml_read_sets(c, n, &s, present);
    if (rc < 0)
        goto out;
    if (kind == XK_IO || kind == XK_MISC) {
        for (size_t i = 0; i < sizeof set_attrs / sizeof set_attrs[0]; i++)
            if (present[i]) {
                rc = xml_fail(c, n, "a %s object with %s (I/O and Misc objects have no CPU sets)", tname,
                              set_attrs[i]);
                goto out;
            }
        /* hwloc names every OS device it writes; gpurun names NICs and
         * GPUs' runtimes by them. */
        char *name = type == HWLOC_OBJ_OS_DEVICE ? xml_attr(n, "name") : NULL;
        bool unnamed = type == HWLOC_OBJ_OS_DEVICE && (!name || !*name);
        xmlFree(name);
        rc = unnamed ? xml_fail(c, n, "an OSDev object without a name")
                     : xml_check_children(c, n, kind, type, parent, depth);
        goto out;
    }
    if (xml_check_cpu_sets(c, n, tname, &s, present, parent, parent_type) < 0 ||
        xml_check_pu_or_numa(c, n, type, tname, &s, os_index, has_os) < 0) {
        rc = -1;
        goto out;
    }
    rc = xml_check_children(c, n, kind, type, &s, depth);
out:
    hwloc_bitmap_free(s.cpuset);
    hwloc_bitmap_free(s.complete_cpuset);
    hwloc_bitmap_free(s.nodeset);
    hwloc_bitmap_free(s.complete_nodeset);
    return rc;
}

static int ull_cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* What follows the top object: distances, CPU kinds, memory attributes. */
static int xml_check_tail(struct xml_check *c, xmlNodePtr n)
{
    if (is_element(n, "distances2") || is_element(n, "distances2hetero") || is_element(n, "distances"))
        return xml_check_distances(c, n);
    if (is_element(n, "cpukind")) {
        bool present;
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        int rc = xml_set(c, n, "cpuset", set, &present);
        if (rc == 0 && !present)
            rc = xml_fail(c, n, "a cpukind without cpuset");
        else if (rc == 0 && (hwloc_bitmap_iszero(set) || !hwloc_bitmap_isincluded(set, c->root_complete_cpuset)))
            rc = xml_fail(c, n, "a cpukind whose cpuset is empty or not the Machine's");
        hwloc_bitmap_free(set);
        return rc;
    }
    return 0;
}

static int xml_check_doc(struct xml_check *c, xmlDocPtr doc)
{
    xmlNodePtr top = xmlDocGetRootElement(doc);
    if (!top || !is_element(top, "topology"))
        return xml_fail(c, top, "the document is not a <topology>");
    /* A newer format than this hwloc reads (an hwloc 3 export was rewritten
     * as 2.0 already): hwloc 2.9 tries a version 20 and leaks on it
     * (fuzz-topo), so it goes no further than here. */
    char *version = xml_attr(top, "version");
    int major = version ? atoi(version) : 1;
    xmlFree(version);
    c->v1 = major < 2;
    unsigned api = hwloc_get_api_version() >> 16;
    if (major > (int)api)
        return gpurun_err(c->err, GPURUN_EXIT_CONFIG,
                          "%s: hwloc XML version %d, newer than the hwloc %u library gpurun uses can read; export "
                          "the node again with hwloc %u's lstopo (lstopo --of xml FILE)",
                          c->file, major, api, api);
    if (doc->intSubset && doc->intSubset->entities)
        return xml_fail(c, top, "the document declares entities (hwloc exports never do)");
    /* hwloc compares the DTD's system identifier without checking there is one. */
    if (doc->intSubset && !doc->intSubset->SystemID)
        return xml_fail(c, top, "a DOCTYPE without a system identifier (hwloc exports write <!DOCTYPE topology "
                                "SYSTEM \"hwloc2.dtd\">)");
    xmlNodePtr first = NULL;
    for (xmlNodePtr n = top->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (!first) {
            first = n;
            if (!is_element(n, "object"))
                return xml_fail(c, n, "the topology starts with <%.40s>, not with the Machine <object>",
                                (const char *)n->name);
            if (xml_check_object(c, n, XK_NORMAL, HWLOC_OBJ_MACHINE, NULL, 0) < 0)
                return -1;
        } else if (is_element(n, "object")) {
            return xml_fail(c, n, "a second top object");
        } else if (xml_check_tail(c, n) < 0) {
            return -1;
        }
    }
    if (!first)
        return xml_fail(c, top, "a topology without objects");
    if (c->numa == 0)
        return xml_fail(c, top, "a topology without a NUMANode object (hwloc refuses one)");
    if (c->ngp > 1) /* hwloc 1.x exports have no gp_index: no array at all */
        qsort(c->gp, c->ngp, sizeof *c->gp, ull_cmp);
    for (size_t i = 1; i < c->ngp; i++)
        if (c->gp[i] == c->gp[i - 1])
            return xml_fail(c, top, "gp_index %llu is given to two objects", c->gp[i]);
    return 0;
}

/* Check an export before hwloc imports it. */
static int topo_xml_check(const char *file, const char *buf, size_t len, gpurun_error_t *err)
{
    struct xml_check c = {.file = file, .err = err, .root_complete_cpuset = hwloc_bitmap_alloc()};
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        abort();
    /* No network, no DTD, no entity substitution; errors come back here
     * instead of on stderr. */
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, file, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    int rc;
    if (!doc) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
        char msg[512] = "not XML";
        if (e && e->message) {
            snprintf(msg, sizeof msg, "%s", e->message);
            msg[strcspn(msg, "\n")] = '\0';
        }
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not an hwloc XML topology (line %d: %s)", file,
                        e ? e->line : 0, msg);
    } else {
        rc = xml_check_doc(&c, doc);
        xmlFreeDoc(doc);
    }
    xmlFreeParserCtxt(ctxt);
    hwloc_bitmap_free(c.root_complete_cpuset);
    free(c.gp);
    return rc;
}

/* --- hwloc 3 exports ---------------------------------------------------------
 *
 * hwloc 3 writes <topology version="3.0">, which the hwloc 2 library refuses
 * outright, and hwloc's own test exports are in that format now.  It differs
 * from 2.0 in three ways, which hwloc 3's own 2.0 export
 * (HWLOC_TOPOLOGY_EXPORT_XML_FLAG_V2) undoes as gpurun does here, in memory,
 * before the checks and the import: an OS device type is a set of flags (4
 * GPU, 8 co-processor, 16 network, 32 OpenFabrics...), which hwloc 2 would
 * read as other types or none, losing every NIC's verbs device; each object
 * has an id="objN" beside its gp_index; and the topology's own infos
 * (HostName, OSName...) follow the root object instead of being inside it.
 * Nothing is re-indented, so the checks' line numbers are the file's. */

#define V3_OSDEV_STORAGE 0x1u
#define V3_OSDEV_MEMORY 0x2u
#define V3_OSDEV_GPU 0x4u
#define V3_OSDEV_COPROC 0x8u
#define V3_OSDEV_NETWORK 0x10u
#define V3_OSDEV_OPENFABRICS 0x20u
#define V3_OSDEV_DMA 0x40u

/* The hwloc 2 osdev_type of a set of hwloc 3 flags; NULL for none (hwloc 3's
 * own 2.0 export then writes no type).  A GPU runtime's device is both a GPU
 * and a co-processor in hwloc 3: co-processor, as hwloc 2 wrote CUDA's. */
static const char *v2_osdev_type(const char *v3)
{
    char *end;
    errno = 0;
    unsigned long t = strtoul(v3, &end, 10);
    if (end == v3 || *end || errno || v3[0] == '-')
        return NULL;
    if (t & (V3_OSDEV_STORAGE | V3_OSDEV_MEMORY))
        return "0"; /* block */
    if (t & V3_OSDEV_OPENFABRICS)
        return "3";
    if (t & V3_OSDEV_NETWORK)
        return "2";
    if (t & V3_OSDEV_COPROC)
        return "5";
    if (t & V3_OSDEV_GPU)
        return "1";
    if (t & V3_OSDEV_DMA)
        return "4";
    return NULL;
}

static void v3_object_to_v2(xmlNodePtr n)
{
    xmlUnsetProp(n, (const xmlChar *)"id");
    char *type = xml_attr(n, "type"), *os = xml_attr(n, "osdev_type");
    if (type && os && !strcmp(type, "OSDev")) {
        const char *v2 = v2_osdev_type(os);
        if (v2)
            xmlSetProp(n, (const xmlChar *)"osdev_type", (const xmlChar *)v2);
        else
            xmlUnsetProp(n, (const xmlChar *)"osdev_type");
    }
    xmlFree(type);
    xmlFree(os);
}

/* Rewrite *buf in place when it is an hwloc 3 export; anything else (and a
 * file libxml2 cannot parse) is left for the checks to judge. */
static int xml_v3_to_v2(const char *file, char **buf, size_t *len, gpurun_error_t *err)
{
    /* Only a document that says version="3 near its start is parsed here. */
    size_t head = *len < 4096 ? *len : 4096;
    const char *t = memmem(*buf, head, "<topology", 9);
    const char *v = t ? memmem(t, head - (size_t)(t - *buf), "version=", 8) : NULL;
    if (!v || (size_t)(v - *buf) + 10 > head || (v[8] != '"' && v[8] != '\'') || v[9] != '3')
        return 0;
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        abort();
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, *buf, (int)*len, file, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlFreeParserCtxt(ctxt);
    xmlNodePtr top = doc ? xmlDocGetRootElement(doc) : NULL;
    char *version = top && is_element(top, "topology") ? xml_attr(top, "version") : NULL;
    if (!version || atoi(version) != 3) {
        xmlFree(version);
        xmlFreeDoc(doc);
        return 0;
    }
    xmlFree(version);
    xmlSetProp(top, (const xmlChar *)"version", (const xmlChar *)"2.0");
    xmlNodePtr root = NULL;
    for (xmlNodePtr n = top->children; n && !root; n = n->next)
        if (is_element(n, "object"))
            root = n;
    /* Every object, depth first without recursion (the checks bound the
     * depth only later). */
    for (xmlNodePtr n = root; n;) {
        if (is_element(n, "object")) {
            v3_object_to_v2(n);
            if (n->children) {
                n = n->children;
                continue;
            }
        }
        while (n != root && !n->next)
            n = n->parent;
        n = n == root ? NULL : n->next;
    }
    /* The topology's infos go where hwloc 2 wrote them: in the root object,
     * before its first child object. */
    xmlNodePtr first_child = NULL;
    for (xmlNodePtr n = root ? root->children : NULL; n && !first_child; n = n->next)
        if (is_element(n, "object"))
            first_child = n;
    for (xmlNodePtr n = top->children, next; root && n; n = next) {
        next = n->next;
        if (!is_element(n, "info"))
            continue;
        xmlUnlinkNode(n);
        if (first_child)
            xmlAddPrevSibling(first_child, n);
        else
            xmlAddChild(root, n);
    }
    xmlChar *out = NULL;
    int size = 0;
    xmlDocDumpMemory(doc, &out, &size);
    xmlFreeDoc(doc);
    if (!out || size <= 0) {
        xmlFree(out);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot rewrite this hwloc 3 export for hwloc 2", file);
    }
    free(*buf);
    *buf = gpurun_xcalloc((size_t)size + 1, 1);
    memcpy(*buf, out, (size_t)size);
    *len = (size_t)size;
    xmlFree(out);
    return 0;
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
    if (l->xml && xml_v3_to_v2(l->xml, &l->buf, &l->len, err) < 0)
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
    if (xml && (without_trial_import ? topo_xml_check(xml, l->buf, l->len, err) < 0
                                     : trial_import_start(xml, l->t->hw, l->buf, l->len, &ti, err) < 0 ||
                                           trial_import_finish(xml, &ti, topo_xml_check(xml, l->buf, l->len, err) < 0,
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
