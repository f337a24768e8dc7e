/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU monitors: finding one (built-in nvml, or monitor_NAME.so through the
 * loader in plugin.c), a run's monitoring in two calls, and the record's
 * `gpus_monitor` JSON. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "monitor.h"
#include "plugin.h"
#include "util.h"

extern const gpurun_monitor_plugin_t gpurun_monitor_nvml;

static const void *const builtin[] = {
    &gpurun_monitor_nvml,
    NULL,
};

#define DEFAULT_INTERVAL_S 1.0

static const char *monitor_name(const void *plugin)
{
    return ((const gpurun_monitor_plugin_t *)plugin)->name;
}

static int check_abi(const void *plugin, const char *where, gpurun_error_t *err)
{
    const gpurun_monitor_plugin_t *p = plugin;
    if (p->abi != GPURUN_MONITOR_ABI || !p->name || !p->available || !p->start || !p->stop)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: monitor plugin interface version %d, gpurun needs %d", where,
                          p->abi, GPURUN_MONITOR_ABI);
    return 0;
}

static const struct gpurun_plugin_kind monitors = {
    .kind = "monitor",
    .builtin_names = "built in is nvml",
    .builtin = builtin,
    .name = monitor_name,
    .check_abi = check_abi,
};

int gpurun_monitor_find(const char *name, const gpurun_monitor_plugin_t **pp, gpurun_error_t *err)
{
    const void *p = NULL;
    int rc = gpurun_plugin_find(&monitors, name, &p, err);
    *pp = p;
    return rc;
}

void gpurun_monitor_result_free(struct gpurun_monitor_result *r)
{
    if (!r)
        return;
    free(r->gpus);
    r->gpus = NULL;
    r->ngpus = 0;
}

static json_t *metric(long n, double v)
{
    /* Two decimals: enough for %, MiB and W, and stable in records. */
    return n > 0 ? json_real((double)(long long)(v * 100.0 + (v >= 0 ? 0.5 : -0.5)) / 100.0) : json_null();
}

json_t *gpurun_monitor_json(const struct gpurun_monitor_result *r)
{
    json_t *a = json_array();
    for (int i = 0; r && i < r->ngpus; i++) {
        const struct gpurun_gpu_stats *s = &r->gpus[i];
        json_t *o = json_object();
        json_object_set_new(o, "pci", json_string(s->pci));
        json_object_set_new(o, "index", s->index >= 0 ? json_integer(s->index) : json_null());
        json_object_set_new(o, "name", s->name[0] ? json_string(s->name) : json_null());
        json_object_set_new(o, "util_mean", metric(s->util_n, s->util_mean));
        json_object_set_new(o, "util_peak", metric(s->util_n, s->util_peak));
        json_object_set_new(o, "mem_mean_mib", metric(s->mem_n, s->mem_mean_mib));
        json_object_set_new(o, "mem_peak_mib", metric(s->mem_n, s->mem_peak_mib));
        json_object_set_new(o, "power_mean_w", metric(s->power_n, s->power_mean_w));
        json_object_set_new(o, "power_peak_w", metric(s->power_n, s->power_peak_w));
        json_object_set_new(o, "samples", json_integer(s->samples));
        json_object_set_new(o, "energy_J", s->energy_known ? json_real((double)(long long)(s->energy_j * 1000.0 + 0.5) / 1000.0)
                                                           : json_null());
        if (!s->energy_known && s->energy_why[0])
            json_object_set_new(o, "energy_note", json_string(s->energy_why));
        json_array_append_new(a, o);
    }
    return a;
}

struct gpurun_monitor_session {
    const gpurun_monitor_plugin_t *plugin;
    gpurun_monitor_t *mon;
};

static double interval(void)
{
    const char *s = getenv("GPURUN_MONITOR_INTERVAL");
    char *end;
    double v = s ? strtod(s, &end) : -1;
    return s && *s && !*end && v >= 0.01 && v <= 3600 ? v : DEFAULT_INTERVAL_S;
}

gpurun_monitor_session_t *gpurun_monitor_begin(const char *name, const char *const *pcis, int n, char *why,
                                               size_t whylen)
{
    gpurun_error_t err = {0};
    const gpurun_monitor_plugin_t *p;
    if (why && whylen)
        why[0] = '\0';
    if (name && !strcmp(name, "none")) {
        if (why)
            snprintf(why, whylen, "monitor = none");
        return NULL;
    }
    if (n <= 0) {
        if (why)
            snprintf(why, whylen, "no GPUs to monitor");
        return NULL;
    }
    gpurun_monitor_t *mon = NULL;
    if (gpurun_monitor_find(!name || !strcmp(name, "auto") ? "nvml" : name, &p, &err) < 0 || p->start(pcis, n, interval(), &mon, &err) < 0) {
        if (why)
            snprintf(why, whylen, "%s", err.text);
        return NULL;
    }
    gpurun_monitor_session_t *s = gpurun_xcalloc(1, sizeof *s);
    s->plugin = p;
    s->mon = mon;
    return s;
}

json_t *gpurun_monitor_end(gpurun_monitor_session_t *s)
{
    if (!s)
        return NULL;
    struct gpurun_monitor_result r = {0};
    json_t *j = NULL;
    if (s->plugin->stop(s->mon, &r) == 0)
        j = gpurun_monitor_json(&r);
    gpurun_monitor_result_free(&r);
    free(s);
    return j;
}
