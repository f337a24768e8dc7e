/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SLURM_RM_H
#define GPURUN_SLURM_RM_H

/* What the files of plugins/slurm share (none includes the registering
 * file's header: no circle).  Slurm, gpurun's first resource manager
 * (plugins/rm.h): slurm.c holds the
 * plugin, srun.c its launch command, sbatch.c its batch scripts. */

#include "rm.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_srun;

/* init.c: its section in gpurun init's job file (rm.h init_lines). */
void gpurun_slurm_init_lines(FILE *f, const struct gpurun_rm_site *site);

int slurm_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err);

/* energy.c: Slurm's ConsumedEnergy of the run, inside an allocation
 * (SLURM_JOB_ID): of the step gpurun runs in (SLURM_STEP_ID), else of the
 * job so far, in joules; -1 when there is none, `note` saying why (always
 * filled: where the figure came from when there is one).  Nothing is asked
 * when slurm.conf (SLURM_CONF, else /etc/slurm/slurm.conf), where readable,
 * has AcctGatherEnergyType none; else one `sacct -j ID
 * --format=ConsumedEnergyRaw -n -P` (from PATH), stopped after
 * GPURUN_SACCT_TIMEOUT_MS: bounded, never a failure. */
#define GPURUN_SACCT_TIMEOUT_MS 3000
double gpurun_slurm_energy(char *note, size_t len);
/* slurm.conf's text: 1 when AcctGatherEnergyType gathers energy, 0 when
 * none (absent: Slurm's default), -1 unknown (an Include line). */
int gpurun_slurm_conf_gathers(const char *text);
/* sacct's output: the first line's joules, or -1 with why (empty, 0,
 * Slurm's no-value, not a number). */
double gpurun_slurm_sacct_parse(const char *out, char *why, size_t len);

#endif
