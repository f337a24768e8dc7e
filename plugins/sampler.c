/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in monitors' sampling thread and running metrics (sampler.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

static void *sampler_main(void *arg)
{
    struct gpurun_sampler *s = arg;
    struct timespec next = s->t0;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        pthread_mutex_unlock(&s->mu);
        s->sample(s->arg);
        pthread_mutex_lock(&s->mu);
        s->taken++;
        /* The next tick on a fixed grid, so sampling does not drift. */
        long ns = (long)(s->interval_s * 1e9);
        next.tv_sec += ns / 1000000000L;
        next.tv_nsec += ns % 1000000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &next) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int gpurun_sampler_start(struct gpurun_sampler *s, void (*sample)(void *), void *arg, double interval_s)
{
    s->sample = sample;
    s->arg = arg;
    s->interval_s = interval_s > 0.001 ? interval_s : 0.001;
    s->stopping = false;
    s->taken = 0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    clock_gettime(CLOCK_MONOTONIC, &s->t0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&s->thread, NULL, sampler_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
    }
    return e;
}

double gpurun_sampler_stop(struct gpurun_sampler *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    if (s->taken == 0) { /* stopped before the thread ran: the start's sample, late */
        s->sample(s->arg);
        s->taken++;
    }
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - s->t0.tv_sec) + (double)(t1.tv_nsec - s->t0.tv_nsec) / 1e9;
}

void gpurun_metric_add(struct gpurun_metric *m, double v)
{
    m->sum += v;
    if (m->n++ == 0 || v > m->peak)
        m->peak = v;
}

double gpurun_metric_mean(const struct gpurun_metric *m)
{
    return m->n ? m->sum / (double)m->n : 0;
}

void gpurun_sampler_result(struct gpurun_monitor_result *out, const struct gpurun_sampler *s, double seconds,
                           int ngpus)
{
    memset(out, 0, sizeof *out);
    out->ngpus = ngpus;
    out->interval_s = s->interval_s;
    out->seconds = seconds;
    out->gpus = calloc((size_t)(ngpus > 0 ? ngpus : 1), sizeof *out->gpus);
    if (!out->gpus)
        abort();
}

void gpurun_stats_from_metrics(struct gpurun_gpu_stats *s, const struct gpurun_metric *util,
                               const struct gpurun_metric *mem, const struct gpurun_metric *power)
{
    s->util_n = util->n;
    s->util_mean = gpurun_metric_mean(util);
    s->util_peak = util->peak;
    s->mem_n = mem->n;
    s->mem_mean_mib = gpurun_metric_mean(mem);
    s->mem_peak_mib = mem->peak;
    s->power_n = power->n;
    s->power_mean_w = gpurun_metric_mean(power);
    s->power_peak_w = power->peak;
}
