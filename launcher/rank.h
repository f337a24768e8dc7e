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

/* Files of a run folder, shared by the rank step and the run. */
#define GPURUN_RUN_PLAN "plan.json"
#define GPURUN_RUN_TOPOLOGY "topology.xml"
#define GPURUN_RUN_ENV "env.json"
#define GPURUN_RUN_REQUEST "request.json"
#define GPURUN_RUN_GPUDIRECT "gpudirect.json" /* {"mode": "auto", "env": {the template's env}} */
/* rank.N.out (stdout and stderr), rank.N.binding.json, rank.N.status.json */
char *gpurun_rank_file(const char *run_dir, int rank, const char *what);

/* How gpurun run tells its rank steps which folder is theirs: its inode and
 * gpurun's uid.  A rank step refuses any other folder. */
#define GPURUN_ENV_RUN_DIR_INO "GPURUN_RUN_DIR_INO"
#define GPURUN_ENV_RUN_UID "GPURUN_RUN_UID"
/* Said on the launcher's output when a rank's status could not be written:
 * "gpurun: status not written: rank N on HOST: WHY (exit status C)". */
#define GPURUN_STATUS_LOST_MARK "gpurun: status not written: rank "

/* Returns the program's exit status (128+N when killed by signal N), or -1
 * with err when the rank could not even be started. */
int gpurun_rank_step(const char *run_dir, char *const *app_argv, gpurun_error_t *err);

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
/* "plan.HOST.json", the host name made safe for a file name. */
char *gpurun_host_plan_name(const char *host);

#endif
