/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SLURM_RM_H
#define GPURUN_SLURM_RM_H

/* Slurm, gpurun's first resource manager (plugins/rm.h): slurm.c holds the
 * plugin, srun.c its launch command, sbatch.c its batch scripts. */

#include "rm.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_srun;

int slurm_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err);

#endif
