/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_MPS_H
#define GPURUN_MPS_H

/* CUDA MPS for ranks that share an NVIDIA GPU (ranks_per_gpu > 1): one
 * control daemon per host and job, its pipe and log folders private to the
 * run (mode 0700), stopped when the host's ranks end however they end.  A
 * daemon the user already runs is used, never replaced nor stopped.
 *
 * Whoever plans a host (gpurun for its own, the first rank step of any
 * other) starts the daemon through a guard: a small process of its own
 * session that runs the control program, listens on a unix socket in the
 * pipe folder (GPURUN_MPS_GUARD), and quits the daemon once the host's
 * ranks, which each hold a connection to it for their life, have all
 * closed theirs (the kernel closes the sockets of killed processes too);
 * also when the planner asks (gpurun_mps_stop), and it ends when the
 * daemon dies. */

#include <limits.h>
#include <stdbool.h>

#include <jansson.h>

#include "error.h"
#include "job.h"
#include "plan.h"

#define GPURUN_MPS_CONTROL "nvidia-cuda-mps-control"
#define GPURUN_MPS_GUARD "gpurun-guard" /* the guard's socket, in the pipe folder */

struct gpurun_mps {
    bool active;             /* the ranks are pointed at a daemon */
    bool ours;               /* started for this job: gpurun_mps_stop() quits it */
    bool tmp_pipe;           /* the pipe folder is a mkdtemp() one (run folder path too long for sockets) */
    int holder_fd;           /* the planner's link to the guard, -1 when none */
    char pipe_dir[PATH_MAX]; /* CUDA_MPS_PIPE_DIRECTORY for the ranks */
    char log_dir[PATH_MAX];  /* CUDA_MPS_LOG_DIRECTORY; "" for a daemon of the user's */
    char guard[PATH_MAX];    /* the guard's socket the ranks connect to; "" for a daemon of the user's */
    char note[3 * PATH_MAX + 512]; /* what was done, or why not (auto's fallback) */
    char warning[2 * PATH_MAX + 256]; /* "" or what the planner must say: the default pipe folder passed over */
};

/* Whether ranks of the plan's first node share an NVIDIA GPU. */
bool gpurun_mps_wanted(const gpurun_plan_t *plan);

/* "auto", "on", "off" (what gpurun_mps_mode_name gives); auto for others. */
enum gpurun_mps_mode gpurun_mps_mode_from_name(const char *name);

/* The control program's path on PATH into buf; false when there is none. */
bool gpurun_mps_find_control(char *buf, size_t len);

/* Whether `dir` is an MPS folder gpurun must not use: there, and a symlink,
 * not a folder, another user's (root's is accepted), or writable by group
 * or others; `why` says which ("is owned by another user (uid 65534)"). */
bool gpurun_mps_folder_problem(const char *dir, char *why, size_t size);

/* The pipe folder of a daemon this user already runs ($CUDA_MPS_PIPE_DIRECTORY,
 * else /tmp/nvidia-mps: a control socket of ours that answers, in a folder
 * that gpurun_mps_folder_problem accepts): 1 with pipe_dir, else 0.  The
 * default folder refused is 0 with `why` saying so (another user's
 * /tmp/nvidia-mps is passed over); $CUDA_MPS_PIPE_DIRECTORY naming one is
 * -1 with `why` (the user named it: refused, not passed over). */
int gpurun_mps_running(char *pipe_dir, size_t len, char *why, size_t whylen);

/* The ranks' CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, the job's
 * env { } or else gpurun's environment: one naming a folder that
 * gpurun_mps_folder_problem refuses is exit 2, naming where it was set. */
int gpurun_mps_check_env(const gpurun_job_t *job, gpurun_error_t *err);

/* Start the daemon and its guard for `host`, whose plan has `nlocal` ranks,
 * with its folders in the run folder (open as run_fd): mps.HOST/pipe and
 * mps.HOST/log, or use the user's own.  mode off: nothing.  Where it cannot
 * be done, auto leaves m->active false with the reason in m->note, on fails
 * (exit 3); $CUDA_MPS_PIPE_DIRECTORY naming a folder of another user's is
 * exit 2 (gpurun_mps_running).  m->warning: what the planner says, once
 * (the default pipe folder passed over).  Then gpurun_mps_stop() (the planner outlives the ranks) or
 * gpurun_mps_release() (it is one of them). */
int gpurun_mps_start(struct gpurun_mps *m, enum gpurun_mps_mode mode, int run_fd, const char *run_dir,
                     const char *host, int nlocal, gpurun_error_t *err);

/* Point the plan's first-node ranks at the daemon: CUDA_MPS_PIPE_DIRECTORY
 * and CUDA_MPS_LOG_DIRECTORY in their "env", the guard's socket as
 * "mps_guard"; and the plan's "mps" says what was done (gpurun_mps_json). */
void gpurun_mps_plan_add(const struct gpurun_mps *m, enum gpurun_mps_mode mode, json_t *plan);

/* What the record says of a host's MPS: mode, active, started (a daemon of
 * the job's), user_daemon (the user's, used), pipe_dir, log_dir, note. */
json_t *gpurun_mps_json(const struct gpurun_mps *m, enum gpurun_mps_mode mode);

/* Leave the daemon to its guard alone (a rank step that planned its host:
 * the guard quits it after the host's last rank). */
void gpurun_mps_release(struct gpurun_mps *m);

/* Quit a daemon this job started (the guard runs the control program with
 * "quit" and says how it went); nothing for another's.  Safe to call twice.
 * -1 (exit 3) when the control program failed: the daemon may still run,
 * the message says where. */
int gpurun_mps_stop(struct gpurun_mps *m, gpurun_error_t *err);

#endif
