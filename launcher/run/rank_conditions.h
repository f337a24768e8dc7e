/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_CONDITIONS_H
#define GPURUN_RANK_CONDITIONS_H

/* A host's conditions, measured by its first rank step (local rank 0) at
 * the program's start, every interval and at its end, and sent to the
 * head as a 'C' report (rank.h): how much of the run's cores' time other
 * processes took (the cores' busy ticks in /proc/stat less the run's own
 * processes' CPU time), the load, the cores' clock, their thermal-throttle
 * counters, the memory available and, through the host's GPU helper
 * (rank_energy.h), the GPUs' clocks, slowdown reasons and the other
 * processes on them.  Only when the share is over the threshold does it
 * read all of /proc, once per sample, to name who took it.
 *
 * The run's own processes on a host: the tree under the rank steps'
 * parent there (the launcher's process: gpurun itself, mpirun's daemon,
 * slurmstepd, ...), and gpurun, when it is an ancestor.  The lib part
 * (conditions.h) holds the arithmetic and the verdict. */

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "conditions.h"
#include "error.h"

/* What gpurun tells the rank steps: the interval (seconds, the job's
 * progress_interval; 0 or unset: GPURUN_CONDITIONS_DEFAULT_S) and its pid
 * (an ancestor whose CPU time is the run's). */
#define GPURUN_ENV_CONDITIONS_INTERVAL "GPURUN_CONDITIONS_INTERVAL"
#define GPURUN_ENV_HEAD_PID "GPURUN_HEAD_PID"
#define GPURUN_CONDITIONS_DEFAULT_S 60.0

struct gpurun_conditions_scan; /* the last /proc scan's processes */
struct gpurun_energy_watch;   /* rank_energy.h: the GPU helper */

/* Local rank `local`'s entry of its host's plan: rank.h's
 * gpurun_host_plan_entry, passed in by the rank step (which owns the plan). */
typedef json_t *(*gpurun_plan_entry_fn)(int dfd, const char *run_dir, const char *host, int local, mode_t fmode,
                                        gpurun_error_t *err);

struct gpurun_conditions_probe {
    bool on;
    struct gpurun_cond_cores *cores;
    char *cores_text;
    double period, t0, next, threshold;
    long tck; /* clock ticks per second */
    pid_t root, head;
    struct gpurun_cond_ticks ticks0;
    unsigned long long own0;
    long throttle0; /* -1: unknown */
    struct gpurun_cond_host fig;
    double mhz_sum;
    int mhz_n;
    json_t *gpus, *gpu_others, *foreign;
    struct gpurun_conditions_scan *scan;
};

/* On the host's first rank step: find the run's cores there (the host
 * plan's, each local rank's entry read by `plan_entry` through the run folder
 * `dfd`; the step's own CPUs when the plan binds none) and take the first sample.  Not on: nothing. */
void gpurun_conditions_begin(struct gpurun_conditions_probe *p, gpurun_plan_entry_fn plan_entry, int dfd,
                             const char *run_dir, const char *host, mode_t fmode);
/* How long a poll may wait before the next sample is due (ms; -1: none). */
int gpurun_conditions_wait_ms(const struct gpurun_conditions_probe *p);
/* The host's figures so far, when a sample is due (or `final`, the end's),
 * with `host` in them: the 'C' report's payload; else NULL.  The GPUs are
 * asked through `gw` (the helper; none: no GPU figures). */
json_t *gpurun_conditions_sample(struct gpurun_conditions_probe *p, const char *host, struct gpurun_energy_watch *gw,
                                 bool final);
void gpurun_conditions_free(struct gpurun_conditions_probe *p);

#endif
