/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLAN_MODEL_H
#define GPURUN_PLAN_MODEL_H

/* A plan as data (plan.h makes and writes one): the request, each rank's
 * place, the plan.  Below the planner's parts (plan_domains.c, plan_cores.c). */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "job.h"
#include "topo_model.h"

/* An allocation's GPUs: at most GPURUN_MAX_ALLOWED_GPUS of them, each index
 * below GPURUN_MAX_GPU_INDEX (a resource manager's list is refused past it). */
#define GPURUN_MAX_ALLOWED_GPUS 256
#define GPURUN_MAX_GPU_INDEX 4096

typedef struct gpurun_request {
    int nodes;             /* >= 1 */
    int ranks_per_node;    /* GPURUN_UNSET: one per GPU group, or per NUMA domain */
    int gpus_per_rank;     /* GPURUN_UNSET: 1 where the node has GPUs (and the allocation some), else 0 */
    int threads_per_rank;  /* GPURUN_UNSET: the rank's share of its domain */
    int ranks_per_gpu;     /* >= 1: consecutive local ranks sharing each GPU (gpus_per_rank 1) */
    bool smt;
    bool oversubscribe;
    enum gpurun_bind bind;
    enum gpurun_gpu_visibility gpu_visibility;
    enum gpurun_cpu_locality cpu_locality;
    /* What a resource manager gave this job on this node (see alloc.h):
     * only cores inside allowed_cpus (NULL: all), only GPUs whose index is
     * in allowed_gpus (nallowed_gpus < 0: all). */
    hwloc_const_cpuset_t allowed_cpus;
    int allowed_gpus[GPURUN_MAX_ALLOWED_GPUS];
    int nallowed_gpus;
    /* The GPU runtime's list of the allowed GPUs in this environment
     * (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES), whose items name
     * allowed_gpus in order, where a resource manager renumbered them (Slurm's
     * cgroup: "0,1" for GPUs 4 and 5); ranks get those names.  NULL: the GPUs'
     * own numbers. */
    const char *visible_cuda, *visible_rocr;
} gpurun_request_t;

typedef struct gpurun_rank_plan {
    int rank, node, local_rank;
    int ngpus;
    int *gpus;                 /* indexes into topo->gpus */
    int nnics;
    int *nics;                 /* indexes into topo->nics */
    enum gpurun_affinity nic_affinity; /* meaningful when nnics > 0 */
    int gpu_first_rank, gpu_nranks; /* the local ranks gpu_first_rank.. (gpu_nranks of them) share its GPUs */
    hwloc_bitmap_t cpuset;     /* empty when bind = none */
    hwloc_bitmap_t nodeset;    /* memory binding; empty when bind = none */
    /* Which of the cores go with which GPU: per GPU, in the order of gpus
     * (NULL when bind = none; an empty set for a GPU that got no core of its
     * own, when the rank has fewer threads than GPU localities). */
    hwloc_bitmap_t *gpu_cpus;
    /* The rank's OpenMP places in order, each named by its first PU: the
     * cores of its first GPU first.  OMP_PLACES lists them when the order
     * is not ascending. */
    int *places;
    int nplaces;
    int threads;
    json_t *env;               /* object: variable -> value, in export order */
} gpurun_rank_plan_t;

typedef struct gpurun_plan {
    const gpurun_topo_t *topo;
    gpurun_request_t req;      /* with every GPURUN_UNSET resolved */
    const char *gpu_vendor;    /* the one vendor whose GPUs ranks get; NULL without GPUs */
    int nranks;                /* nodes * ranks_per_node */
    gpurun_rank_plan_t *ranks;
    char **warnings;
    size_t nwarnings;
} gpurun_plan_t;

#endif
