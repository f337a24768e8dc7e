/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TOPO_MODEL_H
#define GPURUN_TOPO_MODEL_H

/* The node as data (topology.h reads and exports it): hwloc's tree, its
 * GPUs and NICs, and what a topology may hold.  Below topology.c, so that
 * the GPU partitions and the topology cache it uses need not include it. */

#include <stdbool.h>

#include <hwloc.h>

/* PCI-path classes, nearest first, named as `nvidia-smi topo -m` names them. */
enum gpurun_affinity {
    GPURUN_AFF_PIX,  /* within one PCIe switch */
    GPURUN_AFF_PXB,  /* several PCIe bridges, no host bridge */
    GPURUN_AFF_PHB,  /* through one PCIe host bridge */
    GPURUN_AFF_NODE, /* between host bridges of one NUMA node */
    GPURUN_AFF_SYS,  /* across the SMP interconnect */
};

typedef struct gpurun_gpu {
    int index;            /* what the vendor runtime calls it (PCI bus order per vendor; rsmi number for AMD) */
    int partition;        /* which compute partition of its PCI GPU (0..partitions-1) */
    int partitions;       /* 1, or how many devices the runtime makes of this PCI GPU (MI300X CPX: 8) */
    char pci[20];         /* "0000:03:00.0" */
    const char *vendor;   /* "nvidia", "amd", "intel" */
    char *name;           /* model, or "10de:20b0" when the export names none */
    bool runtime;         /* a GPU runtime (CUDA, NVML, RSMI, OpenCL, Level Zero) reported it */
    hwloc_obj_t pcidev;
    hwloc_obj_t locality; /* nearest non-I/O ancestor (NUMA node, L3, package...) */
    hwloc_bitmap_t cpuset;  /* online PUs local to it */
    hwloc_bitmap_t nodeset; /* NUMA nodes local to it */
} gpurun_gpu_t;

typedef struct gpurun_nic {
    char *name;           /* verbs/fabric device (mlx5_0, hfi1_0, rdmap...), else netdev, else PCI */
    char *netdev;         /* ib0, hsi0, eth0...; NULL when none */
    char pci[20];
    const char *kind;     /* infiniband, roce, efa, omnipath, slingshot, usnic, ethernet */
    bool high_speed;      /* false: listed apart and never planned (see note) */
    const char *note;     /* why a NIC of a fast kind is not planned; NULL otherwise */
    int port;             /* port for UCX/NCCL device names (mlx5_0:1) */
    hwloc_obj_t pcidev;
    hwloc_obj_t locality;
    hwloc_bitmap_t cpuset;
    hwloc_bitmap_t nodeset;
} gpurun_nic_t;

typedef struct gpurun_topo {
    hwloc_topology_t hw;
    char *source;         /* "local" or the XML file */
    char *hostname;
    int packages, numa_nodes, cores, pus;
    gpurun_gpu_t *gpus;   /* sorted by vendor, then PCI address */
    int ngpus;
    gpurun_nic_t *nics;   /* high-speed NICs first (PCI order), then Ethernet */
    int nnics;            /* all of them */
    int nhsnics;          /* how many of the first are high-speed */
    /* The NUMA nodes that are their CPUs' own memory, one per CPU domain:
     * not the CPU-less nodes (HBM, CXL, NVM, GPU memory) that hwloc gives
     * the cpuset of the object they hang from. */
    hwloc_bitmap_t home_nodes;
    /* Intel GPUs are split into their Level Zero tiles, numbered as the
     * FLAT device hierarchy numbers them (else whole, as COMPOSITE does). */
    bool ze_flat;
    /* GPU runtime devices (cuda0, rsmi0, ze0...) that the export has under
     * no PCI device: an SoC GPU (Jetson), an export made without PCI
     * discovery.  Named, never planned; NULL when none. */
    char *gpus_without_pci;
} gpurun_topo_t;

/* What a topology may hold (doc/gpurun.1, LIMITS).  An XML export past one
 * is refused with exit 2 before anything is planned, the live node with
 * exit 3; each is far above any real node, and keeps what gpurun computes
 * (the GPU x GPU and GPU x NIC matrices are quadratic) small. */
#define GPURUN_TOPO_MAX_FILE_BYTES (64u << 20)
#define GPURUN_TOPO_MAX_OBJECTS 100000     /* <object> elements */
#define GPURUN_TOPO_MAX_CHILDREN 4096      /* <object> elements directly in one */
#define GPURUN_TOPO_MAX_PUS 16384
#define GPURUN_TOPO_MAX_PU_INDEX 65536     /* PU numbers (os_index) and cpuset bits below this */
#define GPURUN_TOPO_MAX_NUMA 1024
#define GPURUN_TOPO_MAX_NUMA_INDEX 4096    /* NUMA node numbers and nodeset bits below this */
#define GPURUN_TOPO_MAX_DISTANCE_OBJS 1024 /* objects in one distance matrix */
#define GPURUN_TOPO_MAX_GPUS 256
#define GPURUN_TOPO_MAX_NICS 1024          /* every NIC function, Ethernet and SR-IOV VFs included */

#endif
