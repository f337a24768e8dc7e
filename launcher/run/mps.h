/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_MPS_H
#define GPURUN_MPS_H

/* CUDA MPS for ranks that share an NVIDIA GPU (ranks_per_gpu > 1): one
 * control daemon per host and job, its pipe and log folders private to the
 * run (mode 0700), stopped when the job ends however it ends.  A daemon the
 * user already runs is used, never replaced nor stopped. */

#include <limits.h>
#include <stdbool.h>

#include "error.h"
#include "job.h"
#include "plan.h"

#define GPURUN_MPS_CONTROL "nvidia-cuda-mps-control"

struct gpurun_mps {
    bool active;             /* the ranks are pointed at a daemon */
    bool ours;               /* started for this job: gpurun_mps_stop() quits it */
    bool tmp_pipe;           /* the pipe folder is a mkdtemp() one (run folder path too long for sockets) */
    char pipe_dir[PATH_MAX]; /* CUDA_MPS_PIPE_DIRECTORY for the ranks */
    char log_dir[PATH_MAX];  /* CUDA_MPS_LOG_DIRECTORY; "" for a daemon of the user's */
    char note[3 * PATH_MAX + 512]; /* what was done, or why not (auto's fallback) */
};

/* Whether ranks of the plan's first node share an NVIDIA GPU. */
bool gpurun_mps_wanted(const gpurun_plan_t *plan);

/* The control program's path on PATH into buf; false when there is none. */
bool gpurun_mps_find_control(char *buf, size_t len);

/* The pipe folder of a daemon this user already runs ($CUDA_MPS_PIPE_DIRECTORY,
 * else /tmp/nvidia-mps: a control socket of ours that answers), or false. */
bool gpurun_mps_running(char *pipe_dir, size_t len);

/* Start the daemon for `host` with its folders in the run folder (open as
 * run_fd): mps.HOST/pipe and mps.HOST/log, or use the user's own.  mode off:
 * nothing.  Where it cannot be done, auto leaves m->active false with the
 * reason in m->note, on fails (exit 3).  Call gpurun_mps_stop() whatever
 * happens next. */
int gpurun_mps_start(struct gpurun_mps *m, enum gpurun_mps_mode mode, int run_fd, const char *run_dir,
                     const char *host, gpurun_error_t *err);

/* The variables that point a rank at the daemon, set in this process (the
 * ranks it starts inherit them), or removed when none is active. */
void gpurun_mps_export(const struct gpurun_mps *m);

/* Quit a daemon this job started ("quit" on the control program's stdin);
 * nothing for another's.  Safe to call twice.  -1 (exit 3) when the control
 * program failed: the daemon may still run, the message says where. */
int gpurun_mps_stop(struct gpurun_mps *m, gpurun_error_t *err);

#endif
