/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_MONITOR_PLUGIN_H
#define GPURUN_MONITOR_PLUGIN_H

/* The GPU monitor plugin interface, version GPURUN_MONITOR_ABI.  A plugin is
 * one `gpurun_monitor_plugin_t` named `gpurun_monitor_plugin` in a shared
 * object `monitor_NAME.so` (or a built-in one of the same type, like `nvml`);
 * the loader refuses any whose `abi` differs.  A monitor samples the GPUs a
 * run uses, in a thread of its own, from start() to stop(), and hands back
 * each GPU's mean and peak; it never fails a run: a node without the
 * vendor's library is "unavailable", with why.  Driver libraries are
 * dlopen()ed at run time, so one build serves nodes with and without GPUs. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "plugin_support.h" /* struct gpurun_rm_doctor: how doctor lines are said */

/* 2: gpurun_gpu_stats gained the energy counter's figures;
 * 3: gpurun_gpu_health gained the processes on the GPU */
#define GPURUN_MONITOR_ABI 3
#define GPURUN_HEALTH_PIDS_MAX 16

/* One GPU over a run.  A metric the GPU does not report has n = 0 (its
 * mean and peak are then meaningless). */
struct gpurun_gpu_stats {
    char pci[20];        /* "0000:13:00.0" */
    int index;           /* the vendor library's index; -1 when unknown */
    char name[96];       /* model; "" when unknown */
    long samples;        /* samples taken */
    double util_mean, util_peak;       /* GPU busy, % */
    long util_n;
    double mem_mean_mib, mem_peak_mib; /* memory used, MiB */
    long mem_n;
    double power_mean_w, power_peak_w; /* board power, W */
    long power_n;
    /* The GPU's energy counter from start() to stop() (NVML's total energy,
     * mJ, Volta and later); energy_known false: energy_why says why. */
    bool energy_known;
    double energy_j;
    char energy_why[160];
};

struct gpurun_monitor_result {
    int ngpus;
    struct gpurun_gpu_stats *gpus; /* malloc()ed by the plugin; gpurun_monitor_result_free() */
    double interval_s;             /* between samples */
    double seconds;                /* from start to stop */
};

/* A one-shot look at a GPU's health, for `gpurun doctor`.  -1 (or < 0): the
 * library does not say. */
struct gpurun_gpu_health {
    char pci[20];
    int index;
    char name[96];
    int pcie_gen, pcie_gen_max;     /* current and maximum PCIe link generation */
    int pcie_width, pcie_width_max; /* lanes */
    bool throttle_known;
    unsigned long long throttle;    /* NVML clock event reasons (GPURUN_THROTTLE_*) */
    double power_w, power_limit_w, power_default_limit_w;
    int sm_clock_mhz, sm_clock_max_mhz;
    int temperature_c;
    bool energy_counter; /* NVML's total-energy counter can be read (ABI 2) */
    /* The compute processes on it now (ABI 3): how many (-1: the library
     * does not say), the first GPURUN_HEALTH_PIDS_MAX of their pids. */
    int nprocs;
    unsigned int pids[GPURUN_HEALTH_PIDS_MAX];
};

/* The reasons NVML gives for clocks below their maximum (nvml.h's values). */
#define GPURUN_THROTTLE_IDLE 0x1ULL
#define GPURUN_THROTTLE_APP_CLOCKS 0x2ULL
#define GPURUN_THROTTLE_SW_POWER_CAP 0x4ULL
#define GPURUN_THROTTLE_HW_SLOWDOWN 0x8ULL
#define GPURUN_THROTTLE_SYNC_BOOST 0x10ULL
#define GPURUN_THROTTLE_SW_THERMAL 0x20ULL
#define GPURUN_THROTTLE_HW_THERMAL 0x40ULL
#define GPURUN_THROTTLE_HW_POWER_BRAKE 0x80ULL

typedef struct gpurun_monitor gpurun_monitor_t; /* a plugin's own sampling session */

typedef struct gpurun_monitor_plugin {
    int abi;             /* GPURUN_MONITOR_ABI */
    const char *name;    /* "nvml" */
    const char *summary; /* one line for doctor */
    /* 0 when it can sample here; else -1 with why (library missing, no driver). */
    int (*available)(gpurun_error_t *why);
    /* Start sampling `gpus` (PCI addresses "0000:13:00.0", or indexes "0";
     * ngpus = 0: every GPU) every interval_s seconds in a thread (a first
     * sample at once).  -1 with err when the library or a GPU is missing. */
    int (*start)(const char *const *gpus, int ngpus, double interval_s, gpurun_monitor_t **monp, gpurun_error_t *err);
    /* Stop, join the thread, hand back the figures and free the session. */
    int (*stop)(gpurun_monitor_t *mon, struct gpurun_monitor_result *out);
    /* Health of every GPU the library sees, and the driver version ("" when
     * unknown); *healthp is malloc()ed.  NULL in a plugin that cannot tell. */
    int (*health)(struct gpurun_gpu_health **healthp, int *np, char *driver, size_t driver_len, gpurun_error_t *err);
    /* What it handles, so that no caller names a monitor: the GPU vendors
     * (as the topology names them: "nvidia", "amd") whose GPUs `monitor =
     * auto` gives it, NULL-terminated; NULL: none by vendor (it samples
     * when named, and GPUs of no known vendor when it sees them all). */
    const char *const *vendors;
    /* The variable that makes a built-in monitor load another library (a
     * test hook: the GPUs it reads are marked so in the record); NULL:
     * none.  Honoured for built-in monitors only. */
    const char *library_env;
    /* Its lines in gpurun doctor (the driver, energy counters, each GPU's
     * health), for the node's `ngpus` GPUs of its vendors (> 0), said
     * through d (plugin_support.h); NULL: none. */
    void (*doctor)(const struct gpurun_rm_doctor *d, int ngpus);
} gpurun_monitor_plugin_t;

/* --- gpurun's side (launcher/run/monitor.c) ----------------------------------- */

/* Find a monitor by name: built-in first, else
 * $GPURUN_PLUGIN_PATH/monitor_NAME.so, else the installed plugin folder;
 * checked for GPURUN_MONITOR_ABI. */
int gpurun_monitor_find(const char *name, const gpurun_monitor_plugin_t **pp, gpurun_error_t *err);
/* The i-th built-in monitor's name, in the order `auto` tries them; NULL
 * past the last. */
const char *gpurun_monitor_builtin_name(size_t i);
void gpurun_monitor_result_free(struct gpurun_monitor_result *r);

/* A run's monitoring in two calls.  begin() starts the monitor `name` (a
 * job's `monitor`: "none": none; "auto": each GPU to the first built-in
 * monitor whose `vendors` has its vendor, and those of no vendor one handles
 * (vendors NULL, or an entry NULL) to the first built-in that has them all)
 * on the given PCI addresses every $GPURUN_MONITOR_INTERVAL seconds (default
 * 1); NULL, with why, when no monitor could start (never an error: the run
 * goes on).  end() stops it and returns the record's `gpus_monitor` array
 * (NULL for NULL): each entry names its "monitor"; the GPUs of a part whose
 * monitor could not start while another's did are listed with null figures
 * and an "energy_note" saying why. */
typedef struct gpurun_monitor_session gpurun_monitor_session_t;
struct json_t; /* jansson's json_t: the plugin interface above needs no jansson */
gpurun_monitor_session_t *gpurun_monitor_begin(const char *name, const char *const *pcis, const char *const *vendors,
                                               int n, char *why, size_t whylen);
struct json_t *gpurun_monitor_end(gpurun_monitor_session_t *s);
/* [{"pci", "index", "name", "util_mean", "util_peak", "mem_mean_mib",
 *   "mem_peak_mib", "power_mean_w", "power_peak_w", "samples", "energy_J"}]
 * (and "energy_note" when energy_J is null); a metric the GPU does not
 * report is null. */
struct json_t *gpurun_monitor_json(const struct gpurun_monitor_result *r);
/* The GPU driver's version as the monitor `name` (a job's `monitor`:
 * "auto" tries the built-in ones in order; "none": none) reads it, once per
 * process and name: 0 with `driver`, or -1 (driver "") when none says. */
int gpurun_monitor_driver(const char *name, char *driver, size_t len);

#endif
