/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_GPU_PARTITIONS_H
#define GPURUN_GPU_PARTITIONS_H

/* Partitioned GPUs: one PCI function that the vendor runtime shows as
 * several devices (AMD MI300X in CPX mode: up to 8 rsmi devices on one PCI
 * GPU; any GPU whose runtime OS devices, rsmi / cuda / nvml, number more
 * than one).  Each such device is a compute unit the planner can give a
 * rank as if it were a GPU: same PCI position and locality as its GPU, its
 * own runtime index (rsmiN -> N for ROCR_VISIBLE_DEVICES; nvmlN/cudaN -> N
 * when an NVIDIA GPU shows several, else the topology's PCI-order index).
 * An Intel GPU whose Level Zero device has sub-devices (Data Center GPU Max
 * tiles: hwloc >= 2.10 lists them as OS devices ze0.0 and ze0.1 below ze0,
 * or ze0 counts them in LevelZeroSubdevices) makes one unit per sub-device. */

#include <stdbool.h>

#include <jansson.h>

#include "error.h"
#include "topo_model.h"

typedef struct gpurun_gpu_unit {
    int gpu;               /* index into topo->gpus: the PCI function it is part of */
    int partition;         /* 0.. within that GPU */
    int index;             /* the runtime's number for it (ROCR/CUDA_VISIBLE_DEVICES) */
    char name[32];         /* the OS device ("rsmi4"); "" when the GPU has no runtime OS device */
    const char *backend;   /* "RSMI", "CUDA", "NVML", "LevelZero"; NULL when none */
    hwloc_obj_t osdev;     /* NULL when none */
} gpurun_gpu_unit_t;

typedef struct gpurun_gpu_units {
    gpurun_gpu_unit_t *units; /* per PCI GPU in topo->gpus order, then by runtime index */
    int nunits;
    int *first, *count;       /* per topo->gpus entry: its units are units[first[g] .. first[g] + count[g]);
                                 an entry sharing its PCI function with an earlier one (a topology already
                                 split into partitions) has count 0: its units are under the earlier one */
    int ngpus;                /* topo->ngpus */
    int npci;                 /* distinct PCI GPUs */
    int npartitioned;         /* PCI GPUs with more than one unit */
    bool ze_flat;             /* an Intel GPU has Level Zero sub-devices (tiles): each is a unit, and
                                 Intel units are numbered as the FLAT device hierarchy numbers them */
} gpurun_gpu_units_t;

/* Compute units per PCI GPU.  For each GPU, the backend with the most OS
 * devices below it is used (RSMI, then NVML, then CUDA when equal); a GPU
 * without one is a single unit with the topology's index.  Never fails on a
 * loaded topology; -1 only on an inconsistent one (an OS device name without
 * a number), with err. */
int gpurun_gpu_units_list(const gpurun_topo_t *topo, gpurun_gpu_units_t **unitsp, gpurun_error_t *err);
void gpurun_gpu_units_destroy(gpurun_gpu_units_t *u);

/* One entry per PCI GPU: [{"gpu": 0, "pci": "0000:03:00.0", "partitions": 4,
 *   "units": [{"index": 0, "name": "rsmi0"}, ...]}] ("gpu": its first topo->gpus entry) */
json_t *gpurun_gpu_units_json(const gpurun_topo_t *topo, const gpurun_gpu_units_t *u);

#endif
