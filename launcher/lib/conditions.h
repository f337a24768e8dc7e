/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CONDITIONS_H
#define GPURUN_CONDITIONS_H

/* A run's conditions (issue 39): how much of its cores' time other
 * processes took, the load, the clocks, throttling, and other processes on
 * its GPUs.  The host's first rank step measures them (run/conditions.c)
 * and sends its host's figures to the head as a 'C' report; this module is
 * the pure part: reading /proc's texts, the host's figures as JSON, the
 * verdict "busy" with its threshold, the record's `conditions` and the
 * warning's words.  Nothing here reads a file. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

/* The busy threshold: a share of the run's cores' time (0.10 = 10 %), or
 * "off" (measured, no verdict).  Read by gpurun and by the rank steps. */
#define GPURUN_ENV_BUSY_SHARE "GPURUN_BUSY_SHARE"
#define GPURUN_COND_SHARE_DEFAULT 0.10
/* Below this much CPU time others took, a run is not busy whatever the
 * share: a 0.3-second run is not busy because of one kernel worker. */
#define GPURUN_COND_FLOOR_S 0.5
#define GPURUN_COND_CPUS_MAX 8192 /* CPU numbers read; the rest ignored */
#define GPURUN_COND_NAMED_MAX 5   /* foreign processes a warning names per host */
#define GPURUN_COND_KEPT_MAX 10   /* ... and the record keeps (the most CPU first) */
#define GPURUN_COND_HOSTS_SAID 4  /* hosts a warning or `why` names */

/* ---- the run's cores ---------------------------------------------------- */

struct gpurun_cond_cores {
    unsigned char on[GPURUN_COND_CPUS_MAX];
    int n;
};
/* Add the CPUs of "0-3,8" (hwloc's list syntax): 0, or -1 when it is not
 * such a list (what was read before stays). */
int gpurun_cond_cores_add(struct gpurun_cond_cores *c, const char *list);
/* "0-3,8"; malloc'ed. */
char *gpurun_cond_cores_text(const struct gpurun_cond_cores *c);

/* ---- /proc's texts ------------------------------------------------------ */

/* /proc/stat: the clock ticks of the cores in `c`, busy (user, nice,
 * system, irq, softirq, steal) and in all (and idle, iowait).  The number
 * of those cores found. */
struct gpurun_cond_ticks {
    unsigned long long busy, total;
};
int gpurun_cond_stat_ticks(const char *text, const struct gpurun_cond_cores *c, struct gpurun_cond_ticks *out);

/* /proc/PID/stat: its fields gpurun uses; 0, or -1 when it is not one. */
struct gpurun_cond_proc {
    long pid, ppid;
    char comm[64];
    unsigned long long utime, stime, cutime, cstime, starttime;
    int processor; /* the CPU it last ran on */
};
int gpurun_cond_proc_stat(const char *text, struct gpurun_cond_proc *p);

double gpurun_cond_load1(const char *loadavg);          /* NAN when unreadable */
long gpurun_cond_mem_available_mib(const char *meminfo); /* -1 when absent */
/* /proc/cpuinfo: the mean "cpu MHz" of the cores in `c`; NAN when none. */
double gpurun_cond_cpuinfo_mhz(const char *cpuinfo, const struct gpurun_cond_cores *c);

/* ---- GPUs ---------------------------------------------------------------- */

/* NVML's clock event reasons that mean the GPU was slowed by its
 * conditions (heat, a hardware slowdown, the power brake), not by its own
 * work (idle, application clocks, the software power cap a loaded GPU
 * meets, sync boost). */
#define GPURUN_COND_GPU_SLOWDOWN (0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL)
/* ["hw_thermal", ...] for the reasons' bits. */
json_t *gpurun_cond_gpu_reasons(unsigned long long reasons);

/* ---- a host's figures (the 'C' report) --------------------------------- */

/* What the host's first rank step has measured from the start to its
 * latest sample; NAN or -1: unknown. */
struct gpurun_cond_host {
    const char *cores;        /* "0-3" */
    double seconds;           /* from the first sample to the latest */
    double foreign_s, own_s, cores_s;
    double load1_max;
    double mhz_mean, mhz_min; /* NAN: unknown */
    long mem_min_mib;         /* -1: unknown */
    long throttle_events;     /* -1: unknown (no thermal_throttle) */
    int samples;
    bool final;
};
/* The host's JSON (GPURUN_REC_COND_* keys); the caller adds "gpus",
 * "gpu_others" and "foreign". */
json_t *gpurun_cond_host_json(const struct gpurun_cond_host *h);
/* Others' share of the cores' time, 0..1 (0 when nothing is known). */
double gpurun_cond_share(double foreign_s, double cores_s);
/* Whether the CPU figures call for naming the processes (and a verdict):
 * the share at or over `threshold` and at least GPURUN_COND_FLOOR_S. */
bool gpurun_cond_cpu_over(double foreign_s, double cores_s, double threshold);

/* ---- the verdict ------------------------------------------------------- */

/* "0.1", "10%" or "off" (then *share < 0); NULL or "": the default.  -1
 * with err for anything else. */
int gpurun_cond_threshold(const char *text, double *share, gpurun_error_t *err);
/* One host's verdict under `threshold` (< 0: off, always false); `why`
 * says what (other processes and how much, GPUs, throttling). */
bool gpurun_cond_host_busy(const json_t *host, double threshold, char *why, size_t whylen);

/* The head's view: each host's latest figures, and which hosts it has
 * said were busy. */
struct gpurun_cond_head {
    double threshold; /* < 0: off */
    json_t *hosts;    /* {HOST: figures} */
    json_t *said;     /* {HOST: true}: warned while running */
};
void gpurun_cond_head_init(struct gpurun_cond_head *h, double threshold);
void gpurun_cond_head_free(struct gpurun_cond_head *h);
/* Take a 'C' report (one host's figures as JSON, at most `len` bytes):
 * true when it was one.  *warning: the text to say (malloc'ed) when it
 * made a host busy that had not been said yet, else NULL. */
bool gpurun_cond_head_take(struct gpurun_cond_head *h, const char *run_id, const char *payload, size_t len,
                           char **warning);
/* The record's `conditions` (NULL when no host reported). */
json_t *gpurun_cond_head_record(const struct gpurun_cond_head *h);
/* The end's warning lines, "run R ran busy on HOST: WHY; figures are
 * likely low", one per busy host (at most GPURUN_COND_HOSTS_SAID, then
 * "and N more"), '\n' between; NULL when none is busy.  Malloc'ed. */
char *gpurun_cond_head_end_text(const struct gpurun_cond_head *h, const char *run_id);

#endif
