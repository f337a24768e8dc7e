/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLAN_H
#define GPURUN_PLAN_H

/* The binding planner (SPEC §5): topology + request in, plan out.  Pure:
 * it never prints, exits or touches the machine. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "job.h"
#include "topology.h"

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

/* Defaults of a job without a job file. */
void gpurun_request_init(gpurun_request_t *req);
void gpurun_request_from_job(gpurun_request_t *req, const gpurun_job_t *job);

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

/* Errors: GPURUN_EXIT_CONFIG for a malformed request, GPURUN_EXIT_ENV when
 * this topology cannot meet it (with what would work). */
int gpurun_plan_create(const gpurun_topo_t *topo, const gpurun_request_t *req, gpurun_plan_t **planp,
                       gpurun_error_t *err);
void gpurun_plan_destroy(gpurun_plan_t *plan);

/* The performance class of the CPU kind of a core (of its first PU): 0 for
 * the slowest, higher for faster.  Kinds that do not really differ (the
 * same core type, frequencies less than 10 % apart) share a class, so a CPU
 * that is no hybrid has class 0 everywhere. */
int gpurun_core_class(const gpurun_topo_t *topo, hwloc_obj_t core);

/* The request as JSON and back (run folders keep it, so that every host
 * of a job plans its own ranks with it). */
json_t *gpurun_request_json(const gpurun_request_t *req);
void gpurun_request_from_json(gpurun_request_t *req, json_t *j);

/* The version-1 document of SPEC §5. */
json_t *gpurun_plan_json(const gpurun_plan_t *plan);

#endif
