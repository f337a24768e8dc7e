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
#include "runfolder.h" /* the run folder's files, shared with launcher/lib */

/* How gpurun run tells its rank steps which folder is theirs: its inode and
 * gpurun's uid.  A rank step refuses any other folder. */
#define GPURUN_ENV_RUN_DIR_INO "GPURUN_RUN_DIR_INO"
#define GPURUN_ENV_RUN_UID "GPURUN_RUN_UID"
#define GPURUN_ENV_OUTPUT "GPURUN_OUTPUT"   /* "per-host" (default) or "per-rank" */
#define GPURUN_ENV_RELAY "GPURUN_RELAY"     /* "1": output lines to gpurun's pipe too (a terminal) */
#define GPURUN_ENV_HOST "GPURUN_HOST"       /* the host name a rank step uses (test launchers) */
/* "RANK_VAR,LOCAL_RANK_VAR": the variables the resource manager's launch
 * command names a task's rank and local rank with ("SLURM_PROCID,
 * SLURM_LOCALID"), read after the launchers' own (GPURUN_LAUNCH_RANK, Open
 * MPI's, PMIx's, PMI's). */
#define GPURUN_ENV_RANK_VARS "GPURUN_RANK_VARS"

/* gpurun-rank --inside FD -- PROGRAM ARGS: report and exec; returns only
 * when the program cannot be started (126/127). */
int gpurun_rank_inside(int fd, char *const *app_argv);

/* A rank step that hands its host's planning over to gpurun (gpurun-rank
 * execs `gpurun rank`) passes the plan lock it holds as this descriptor. */
#define GPURUN_ENV_PLAN_LOCK_FD "GPURUN_PLAN_LOCK_FD"

/* Returns the program's exit status (128+N when killed by signal N), or -1
 * with err when the rank could not even be started.  `planner`: the gpurun
 * that plans a host nobody planned yet (gpurun-rank, built from this file
 * without the planner, execs it); NULL in gpurun itself, which plans. */
int gpurun_rank_step(const char *run_dir, char *const *app_argv, const char *planner, gpurun_error_t *err);
/* gpurun rank --plan-only --run-dir DIR: plan this host (plan.HOST.json,
 * as a rank step's hand-off would) and start nothing; no CUDA MPS daemon
 * (it would end with this step).  Under pyxis gpurun runs it on every host
 * outside the image before the container step.  0, or -1 with err. */
int gpurun_rank_plan_only(const char *run_dir, gpurun_error_t *err);

/* gpurun_rank_program(): plugin_support.h. */

/* Open the run folder a rank step was given: not a symlink, ours, not
 * writable by others, and the one gpurun made (GPURUN_RUN_DIR_INO).  Sets
 * *file_mode to the mode of files made in it (0640 when the group may read
 * the folder, else 0600).  Returns its descriptor or -1 with err (exit 2). */
int gpurun_open_run_dir(const char *run_dir, mode_t *file_mode, gpurun_error_t *err);

/* A JSON file of ours in `dirfd` (gpurun_open_own_at), or NULL with err. */
json_t *gpurun_read_own_json_at(int dirfd, const char *name, const char *shown, gpurun_error_t *err);

/* Local rank `local`'s entry of its host's plan (plan.HOST.json in the run
 * folder open as `dfd`; made on first use on a host gpurun did not plan),
 * read without parsing the other ranks' entries. */
json_t *gpurun_host_plan_entry(int dfd, const char *run_dir, const char *host, int local, mode_t fmode,
                               gpurun_error_t *err);
/* Write a host plan with the index gpurun_host_plan_entry reads. */
int gpurun_write_host_plan_at(int dfd, const char *name, const char *shown, json_t *plan, mode_t mode,
                              gpurun_error_t *err);
#endif
