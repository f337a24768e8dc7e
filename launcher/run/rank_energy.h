/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_ENERGY_H
#define GPURUN_RANK_ENERGY_H

/* A host's GPU energy read by its first rank step through a helper
 * (rank_energy.c): start() when the program has started, end() when it has
 * ended, giving the monitor's gpus_monitor array (energy_J, power) or NULL
 * with why.  The helper is `GPURUN rank --energy PCI,PCI...`. */

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#define GPURUN_ENERGY_PCIS_MAX 64
#define GPURUN_ENERGY_HELPER_MAX (256u << 10) /* its JSON: a few hundred bytes per GPU */
#define GPURUN_ENERGY_HELPER_WAIT_S 3.0       /* for its answer, once told to stop */

struct gpurun_energy_watch {
    pid_t pid; /* -1: none */
    int in, out;
    char why[256];
};

void gpurun_energy_watch_start(struct gpurun_energy_watch *w, const char *gpurun, const char *pcis);
json_t *gpurun_energy_watch_end(struct gpurun_energy_watch *w, char *why, size_t whylen);

/* gpurun rank --energy PCI,...: the helper itself (not in gpurun-rank). */
int gpurun_rank_energy_helper(const char *list);

/* In the GPU helper (`gpurun rank --energy`): the GPUs `pcis` as
 * gpurun_conditions_sample wants them, one line on standard output. */
void gpurun_conditions_gpu_answer(const char *const *pcis, int n);

#endif
