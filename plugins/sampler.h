/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SAMPLER_H
#define GPURUN_SAMPLER_H

/* What the built-in GPU monitors (nvml.c, rocm_smi.c) share: a thread that
 * calls a function every interval on a fixed grid until stopped, and the
 * running mean and peak of a metric.  Not part of the plugin interface. */

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "monitor.h"

struct gpurun_sampler {
    void (*sample)(void *arg);
    void *arg;
    double interval_s;
    struct timespec t0; /* CLOCK_MONOTONIC at start */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    long taken; /* samples taken: the thread's until it is joined */
};

/* Start calling sample(arg) at once, then every interval_s (at least 1 ms),
 * in a thread that blocks every signal (gpurun's supervisor waits for
 * SIGCHLD, SIGINT and SIGTERM with sigwaitinfo(): a thread that let them
 * through would take them).  0, or an errno value. */
int gpurun_sampler_start(struct gpurun_sampler *s, void (*sample)(void *), void *arg, double interval_s);
/* Stop and join; the seconds since start.  A session stopped before its
 * thread first ran gets its one sample here: never none. */
double gpurun_sampler_stop(struct gpurun_sampler *s);

/* One metric's running sum, count and peak. */
struct gpurun_metric {
    double sum, peak;
    long n;
};
void gpurun_metric_add(struct gpurun_metric *m, double v);
double gpurun_metric_mean(const struct gpurun_metric *m);
/* `out` for a session of `ngpus` GPUs: zeroed, the sampler's interval, the
 * session's seconds, and room for the GPUs' figures (calloc()ed). */
void gpurun_sampler_result(struct gpurun_monitor_result *out, const struct gpurun_sampler *s, double seconds,
                           int ngpus);
/* A GPU's utilisation, memory and power figures from its metrics. */
void gpurun_stats_from_metrics(struct gpurun_gpu_stats *s, const struct gpurun_metric *util,
                               const struct gpurun_metric *mem, const struct gpurun_metric *power);

#endif
