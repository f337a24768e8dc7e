/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_LAUNCH_H
#define GPURUN_LAUNCH_H

/* Starting the launcher's processes and supervising them: signals forwarded
 * to every rank, the time limit, a grace period before SIGKILL, the first
 * failure stopping the rest, rank output relayed to a terminal, and nothing
 * left running afterwards. */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "launcher.h"
#include <jansson.h>

#include "error.h"

struct gpurun_supervise {
    const char *run_dir;
    int dir_fd;            /* the run folder, open: files in it are made through this, and the processes
                            * start in it (fchdir: its path may name another folder by then) */
    mode_t file_mode;      /* of the files made in it */
    int nranks;
    double timeout_s;      /* 0: none */
    double grace_s;        /* after the stop signal, before SIGKILL */
    int stop_signal;       /* what the ranks get on a stop (Ctrl-C, SIGTERM, the timeout): the template's;
                            * 0: the signal gpurun got (SIGHUP as SIGTERM), SIGTERM on the timeout */
    bool relay_output;     /* copy rank output to stdout with [rank] labels */
    bool status_line;      /* one line: elapsed, ranks alive, progress */
    struct gpurun_watch *watch; /* progress, its lines and status.json (watch.h); NULL: none */
    struct gpurun_stall *stall; /* stall detection (stall.h); NULL: off */
};

struct gpurun_outcome {
    bool timed_out;
    int interrupted;       /* the signal gpurun got (SIGINT, SIGTERM), or 0 */
    bool killed;           /* the launchers outlived the grace period and got SIGKILL */
    int launcher_status;   /* worst exit status of the started processes (128+N for signals) */
    double wall_s;
    json_t *bindings;      /* what each rank step reported, by rank (null: nothing); the caller's */
    json_t *statuses;
    json_t *stops;         /* by rank: the signal that told its rank step to stop ({"signal": N}), or null */
    int nbound, nended;    /* ranks that reported a binding, an end */
    bool stalled;          /* ended because it stalled (on_stall = "kill") */
};

/* Start `cmds` and wait for them.  Returns 0 once everything has ended (the
 * outcome says how), -1 with err if nothing could be started. */
int gpurun_launch(const struct gpurun_launch_cmds *cmds, const struct gpurun_supervise *sv,
                  struct gpurun_outcome *out, gpurun_error_t *err);

/* Run one command to completion in the folder open as `cwd_fd` (`cwd`
 * names it in messages), output appended to `log_fd` (setup steps).
 * Returns its exit status (128+N for signals), or -1 with err when it
 * could not be started. */
int gpurun_run_step(char *const *argv, int cwd_fd, const char *cwd, int log_fd, gpurun_error_t *err);

/* SIGINT, SIGTERM and SIGHUP while a run is under way: caught (true, the
 * old actions kept in old[]) or given back (false).  Caught, one is noted
 * wherever gpurun is: a setup step or the ranks get it at once, anything
 * else finishes its step and the run ends as interrupted with its record.
 * gpurun_stop_signal(): the first noted since, 0 for none. */
void gpurun_stop_signals(bool catch, struct sigaction old[3]);
int gpurun_stop_signal(void);

/* A helper process that serves the ranks while they run (the rendezvous
 * store): started like a setup step (its own process group, in the folder
 * open as `cwd_fd`, dying with gpurun), its standard output a pipe whose
 * read end goes to *out_fd, its standard error to `log_fd`.  Returns its
 * pid, or -1 with err. */
pid_t gpurun_start_service(char *const *argv, int cwd_fd, const char *cwd, int log_fd, int *out_fd,
                           gpurun_error_t *err);
/* SIGTERM to it and its group, SIGKILL after `grace_s`; reaps it.  Its exit
 * status (128+N for a signal), or -1. */
int gpurun_stop_service(pid_t pid, double grace_s);
#endif
