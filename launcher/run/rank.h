/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_H
#define GPURUN_RANK_H

/* The per-rank step: every rank starts as `gpurun rank --run-dir DIR -- APP`,
 * whatever the launcher.  It finds its rank, applies the plan's binding and
 * environment, records the binding it really got, starts the program with
 * its output in the run folder, and records how the program ended. */

#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "rank_report.h"
#include "rank_plan.h"
#include "runfolder.h" /* the run folder's files, shared with launcher/lib */

#define GPURUN_ENV_OUTPUT "GPURUN_OUTPUT"   /* "per-host" (default) or "per-rank" */
#define GPURUN_ENV_RELAY "GPURUN_RELAY"     /* "1": output lines to gpurun's pipe too (a terminal) */
/* "RANK_VAR,LOCAL_RANK_VAR": the variables the resource manager's launch
 * command names a task's rank and local rank with ("SLURM_PROCID,
 * SLURM_LOCALID"), read after the launchers' own (GPURUN_LAUNCH_RANK, Open
 * MPI's, PMIx's, PMI's). */
#define GPURUN_ENV_RANK_VARS "GPURUN_RANK_VARS"

/* gpurun-rank --inside FD -- PROGRAM ARGS: report and exec; returns only
 * when the program cannot be started (126/127). */
int gpurun_rank_inside(int fd, char *const *app_argv);

/* Returns the program's exit status (128+N when killed by signal N), or -1
 * with err when the rank could not even be started.  `planner`: the gpurun
 * that plans a host nobody planned yet (gpurun-rank, built from this file
 * without the planner, execs it); NULL in gpurun itself, which plans. */
int gpurun_rank_step(const char *run_dir, char *const *app_argv, const char *planner, gpurun_error_t *err);

/* gpurun_rank_program(): plugin_support.h. */

#endif
