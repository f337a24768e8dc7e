/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_PLAN_H
#define GPURUN_RANK_PLAN_H

/* The run folder as a rank step opens it, and its host's plan
 * (plan.HOST.json): rank_plan.c.  rank.h includes this. */

#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "runfolder.h"

/* How gpurun run tells its rank steps which folder is theirs: its inode and
 * gpurun's uid.  A rank step refuses any other folder. */
#define GPURUN_ENV_RUN_DIR_INO "GPURUN_RUN_DIR_INO"
#define GPURUN_ENV_RUN_UID "GPURUN_RUN_UID"
#define GPURUN_ENV_HOST "GPURUN_HOST"       /* the host name a rank step uses (test launchers) */

/* A rank step that hands its host's planning over to gpurun (gpurun-rank
 * execs `gpurun rank`) passes the plan lock it holds as this descriptor. */
#define GPURUN_ENV_PLAN_LOCK_FD "GPURUN_PLAN_LOCK_FD"

/* gpurun rank --plan-only --run-dir DIR: plan this host (plan.HOST.json,
 * as a rank step's hand-off would) and start nothing; no CUDA MPS daemon
 * (it would end with this step).  Under pyxis gpurun runs it on every host
 * outside the image before the container step.  0, or -1 with err. */
int gpurun_rank_plan_only(const char *run_dir, gpurun_error_t *err);

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

/* What the rank step was started with, for the planning of a host nobody
 * planned yet: the gpurun that plans it (NULL: this program plans), the
 * run folder, the program, and the plan lock gpurun-rank handed over (-1:
 * none). */
void gpurun_host_plan_handover(const char *planner, const char *run_dir, char *const *app_argv, int lock_fd);
/* Write a host plan with the index gpurun_host_plan_entry reads. */
int gpurun_write_host_plan_at(int dfd, const char *name, const char *shown, json_t *plan, mode_t mode,
                              gpurun_error_t *err);
#endif
