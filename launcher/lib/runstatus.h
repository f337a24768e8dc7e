/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUNSTATUS_H
#define GPURUN_RUNSTATUS_H

/* What a run says of itself while it runs (SPEC §1 `gpurun status`, §6):
 * RUN_FOLDER/status.json, which the head rewrites (atomically) when the run
 * starts, at each progress report and when it ends; and RESULTS/JOB/latest,
 * a symlink to the newest run folder.  Reading them back is bounded: one
 * readdir of each job folder, the newest run folders only, small files,
 * never a symlink or another user's file. */

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "error.h"

#define GPURUN_RUN_STATUS "status.json"
#define GPURUN_LATEST "latest"
#define GPURUN_STATUS_RUNS_MAX 32         /* run folders of a job looked at, the newest */
#define GPURUN_STATUS_FILE_MAX (64 * 1024) /* a status.json larger is not one */

/* Points RESULTS/JOB/latest (in the job folder open as `jfd`) at
 * `run_name`: a symlink made under a random name, then renamed over
 * `latest`, so that a reader never finds it half made.  A `latest` that
 * is not a symlink of this user (a folder, a file, someone else's), or a
 * job folder that is not this user's, is left alone: 1, with `why` saying
 * so.  0 when done; -1 with `why` when it could not be. */
int gpurun_latest_update(int jfd, const char *job_shown, const char *run_name, char *why, size_t whylen);

/* A process as a status file names it: its pid, its start (clock ticks
 * since boot, /proc/PID/stat) and the boot's id, so that a pid used again
 * after the run's gpurun died, or after a reboot, is not taken for it. */
struct gpurun_proc_id {
    long pid;
    unsigned long long start;
    char boot_id[40];
};
void gpurun_proc_id_self(struct gpurun_proc_id *id);
/* Whether `id` is a process alive on this host. */
bool gpurun_proc_id_alive(const struct gpurun_proc_id *id);

/* How a status document stands at `now`, seen from host `host`: its own
 * final state ("ok", "failed", ...) once the run ended; "running"; or
 * "stale": the run says it is running, but its gpurun is gone (this host,
 * pid not alive or another process) or has not written for longer than it
 * should (another host: 2 intervals and 2 minutes).  `note` says why (""
 * when there is nothing to say). */
const char *gpurun_status_judge(json_t *doc, time_t now, const char *host, char *note, size_t notelen);

/* The runs `gpurun status` shows, from the results folder `results`: of
 * each job folder (or only `job`), the runs among its
 * GPURUN_STATUS_RUNS_MAX newest that are running (or stale); with `job`,
 * its newest run with a status when none is.  Each is its status.json
 * with "run_dir" and "shown" (gpurun_status_judge's state) and "note"
 * added.  Job and run folders that are not the user's (the results folder
 * may be shared) are skipped and counted in *skippedp.  0, or -1 with err
 * (exit 2: no such results folder, or not one gpurun would use). */
int gpurun_status_scan(const char *results, const char *job, json_t **runsp, size_t *skippedp,
                       gpurun_error_t *err);

#endif
