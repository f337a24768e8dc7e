/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU monitors: finding one (built-in nvml, or monitor_NAME.so through the
 * loader in plugin.c), a run's monitoring in two calls, and the record's
 * `gpus_monitor` JSON. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "energy.h"
#include "monitor.h"
#include "record.h"
#include "plugin_loader.h"
#include "util.h"

/* The built-in monitors: plugins/monitors.def lists them. */
#define GPURUN_MONITOR_BUILTIN(name) extern const gpurun_monitor_plugin_t gpurun_monitor_##name;
#include "monitors.def"
#undef GPURUN_MONITOR_BUILTIN

#define GPURUN_MONITOR_BUILTIN(name) &gpurun_monitor_##name,
static const void *const builtin[] = {
#include "monitors.def"
    NULL,
};
#undef GPURUN_MONITOR_BUILTIN

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

static char builtin_names[128];

static const struct gpurun_plugin_kind monitors = {
    .kind = "monitor",
    .builtin_names = builtin_names,
    .builtin = builtin,
    .name = monitor_name,
    .check_abi = check_abi,
};

#define NBUILTIN (sizeof builtin / sizeof *builtin - 1)

static const gpurun_monitor_plugin_t *builtin_at(size_t i)
{
    return builtin[i];
}

/* "built in are nvml and rocm_smi", from the list itself. */
static void fill_builtin_names(void)
{
    if (builtin_names[0])
        return;
    size_t l = (size_t)snprintf(builtin_names, sizeof builtin_names, "built in are");
    for (size_t i = 0; i < NBUILTIN && l < sizeof builtin_names; i++)
        l += (size_t)snprintf(builtin_names + l, sizeof builtin_names - l, "%s %s",
                              i == 0 ? "" : i + 1 < NBUILTIN ? "," : " and", builtin_at(i)->name);
}

const char *gpurun_monitor_builtin_name(size_t i)
{
    return i < NBUILTIN ? builtin_at(i)->name : NULL;
}

int gpurun_monitor_find(const char *name, const gpurun_monitor_plugin_t **pp, gpurun_error_t *err)
{
    const void *p = NULL;
    fill_builtin_names();
    int rc = gpurun_plugin_find(&monitors, name, &p, err);
    *pp = p;
    return rc;
}

/* One monitor's driver version through its health(), or "". */
static void driver_of(const char *name, char *driver, size_t len)
{
    const gpurun_monitor_plugin_t *p;
    gpurun_error_t e = {0};
    struct gpurun_gpu_health *h = NULL;
    int nh = 0;
    driver[0] = '\0';
    if (gpurun_monitor_find(name, &p, &e) == 0 && p->health && p->available(&e) == 0 &&
        p->health(&h, &nh, driver, len, &e) < 0)
        driver[0] = '\0';
    free(h);
    gpurun_error_clear(&e);
}

int gpurun_monitor_driver(const char *name, char *driver, size_t len)
{
    static char cached_name[64], cached[128];
    if (!len)
        return -1;
    driver[0] = '\0';
    if (!name || !strcmp(name, "none"))
        return -1;
    if (strcmp(cached_name, name) != 0) { /* NVML's init costs: once per gpurun, not per run of a scan */
        snprintf(cached_name, sizeof cached_name, "%s", name);
        if (strcmp(name, "auto") != 0)
            driver_of(name, cached, sizeof cached);
        for (size_t i = 0; !strcmp(name, "auto") && i < NBUILTIN && !cached[0]; i++) /* the first that says */
            driver_of(builtin_at(i)->name, cached, sizeof cached);
    }
    snprintf(driver, len, "%s", cached);
    return driver[0] ? 0 : -1;
}

void gpurun_monitor_result_free(struct gpurun_monitor_result *r)
{
    if (!r)
        return;
    free(r->gpus);
    r->gpus = NULL;
    r->ngpus = 0;
}

/* To the thousandth: seconds to the millisecond, joules to the millijoule. */
static json_t *thousandths(double v)
{
    return json_real((double)(long long)(v * 1000.0 + 0.5) / 1000.0);
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
        /* From start() to stop(): the window of the energy counter's two
         * readings, to the millisecond. */
        if (r->seconds > 0)
            json_object_set_new(o, "measured_s", thousandths(r->seconds));
        json_object_set_new(o, "energy_J", s->energy_known ? thousandths(s->energy_j) : json_null());
        if (!s->energy_known && s->energy_why[0])
            json_object_set_new(o, "energy_note", json_string(s->energy_why));
        json_array_append_new(a, o);
    }
    return a;
}

/* A run's monitoring: one part per monitor, each with its GPUs.  `auto`
 * gives each GPU to the first built-in monitor that handles its vendor;
 * GPUs of no vendor one handles (a rank step's helper knows none) go to
 * the first built-in monitor that has them all. */
#define PARTS_MAX (NBUILTIN + 1) /* one per built-in monitor, the last for no known vendor */
struct part {
    const gpurun_monitor_plugin_t *plugin; /* NULL: none could start */
    gpurun_monitor_t *mon;
    const char **pcis;
    int n;
    char why[512]; /* when plugin is NULL */
};
struct gpurun_monitor_session {
    struct part parts[PARTS_MAX];
};

static double interval(void)
{
    const char *s = getenv("GPURUN_MONITOR_INTERVAL");
    char *end;
    double v = s ? strtod(s, &end) : -1;
    return s && *s && !*end && v >= 0.01 && v <= 3600 ? v : DEFAULT_INTERVAL_S;
}

/* Start `name` on the part's GPUs; false with why in the part. */
static bool part_start(struct part *pt, const char *name)
{
    gpurun_error_t err = {0};
    const gpurun_monitor_plugin_t *p;
    if (gpurun_monitor_find(name, &p, &err) < 0 || p->start(pt->pcis, pt->n, interval(), &pt->mon, &err) < 0) {
        snprintf(pt->why, sizeof pt->why, "%.511s", err.text);
        return false;
    }
    pt->plugin = p;
    return true;
}

/* The GPUs of no known vendor: the first built-in monitor that starts on
 * them all; else why each could not. */
static void part_probe(struct part *pt)
{
    char whys[sizeof pt->why] = "";
    size_t l = 0;
    for (size_t i = 0; i < NBUILTIN; i++) {
        if (part_start(pt, builtin_at(i)->name))
            return;
        if (l < sizeof whys)
            l += (size_t)snprintf(whys + l, sizeof whys - l, "%s%.250s", i ? "; " : "", pt->why);
    }
    snprintf(pt->why, sizeof pt->why, "%s", whys);
}

/* Which part a GPU of `vendor` is in under `auto`. */
static size_t part_of_vendor(const char *vendor)
{
    for (size_t i = 0; vendor && i < NBUILTIN; i++)
        for (const char *const *v = builtin_at(i)->vendors; v && *v; v++)
            if (!strcmp(*v, vendor))
                return i;
    return NBUILTIN;
}

static void session_free(gpurun_monitor_session_t *s)
{
    for (size_t k = 0; k < PARTS_MAX; k++) {
        for (int i = 0; i < s->parts[k].n; i++)
            free((char *)s->parts[k].pcis[i]);
        free(s->parts[k].pcis);
    }
    free(s);
}

gpurun_monitor_session_t *gpurun_monitor_begin(const char *name, const char *const *pcis, const char *const *vendors,
                                               int n, char *why, size_t whylen)
{
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
    gpurun_monitor_session_t *s = gpurun_xcalloc(1, sizeof *s);
    bool automatic = !name || !strcmp(name, "auto");
    /* Parts: one per built-in monitor (the first: the named monitor's), the
     * last for GPUs of no vendor one handles. */
    for (size_t k = 0; k < PARTS_MAX; k++)
        s->parts[k].pcis = gpurun_xcalloc((size_t)n, sizeof *s->parts[k].pcis);
    for (int i = 0; i < n; i++) {
        size_t k = automatic ? part_of_vendor(vendors ? vendors[i] : NULL) : 0;
        s->parts[k].pcis[s->parts[k].n++] = gpurun_xstrdup(pcis[i] ? pcis[i] : "");
    }
    int started = 0;
    char first_why[512] = "";
    for (size_t k = 0; k < PARTS_MAX; k++) {
        struct part *pt = &s->parts[k];
        if (pt->n == 0)
            continue;
        if (!automatic)
            started += part_start(pt, name);
        else if (k < NBUILTIN)
            started += part_start(pt, builtin_at(k)->name);
        else
            part_probe(pt), started += pt->plugin != NULL;
        if (!pt->plugin && !first_why[0])
            snprintf(first_why, sizeof first_why, "%s", pt->why);
    }
    if (started == 0) {
        /* Nothing to sample: the caller says why (as one part's failure). */
        if (why)
            snprintf(why, whylen, "%s", first_why);
        session_free(s);
        return NULL;
    }
    return s;
}

/* A GPU no monitor could read: its entry says why. */
static json_t *unread_gpu(const char *pci, const char *why)
{
    return json_pack("{s:s, s:n, s:n, s:n, s:n, s:n, s:n, s:n, s:n, s:i, s:n, s:s}", "pci", pci, "index", "name",
                     "util_mean", "util_peak", "mem_mean_mib", "mem_peak_mib", "power_mean_w", "power_peak_w",
                     "samples", 0, "energy_J", "energy_note", why);
}

/* "VAR=/x.so" (its library_env) when a test made the built-in monitor
 * `plugin` load a library of its choice (energy.h); NULL when not. */
static json_t *test_hook(const gpurun_monitor_plugin_t *plugin)
{
    bool builtin_one = false;
    for (const void *const *b = builtin; *b; b++)
        builtin_one = builtin_one || *b == (const void *)plugin;
    const char *var = builtin_one ? plugin->library_env : NULL;
    const char *v = var ? getenv(var) : NULL;
    if (!v || !*v)
        return NULL;
    char text[600], shown[320];
    snprintf(text, sizeof text, "%s=%s", var, v);
    gpurun_short_text(shown, sizeof shown, text); /* printable ASCII: the record's JSON takes it */
    return json_string(shown);
}

json_t *gpurun_monitor_end(gpurun_monitor_session_t *s)
{
    if (!s)
        return NULL;
    json_t *all = json_array();
    for (size_t k = 0; k < PARTS_MAX; k++) {
        struct part *pt = &s->parts[k];
        if (pt->plugin) {
            struct gpurun_monitor_result r = {0};
            json_t *j = pt->plugin->stop(pt->mon, &r) == 0 ? gpurun_monitor_json(&r) : NULL;
            json_t *hook = test_hook(pt->plugin);
            size_t i;
            json_t *g;
            json_array_foreach(j, i, g) {
                json_object_set_new(g, "monitor", json_string(pt->plugin->name));
                if (hook)
                    json_object_set(g, GPURUN_REC_TEST_HOOK, hook);
                json_array_append(all, g);
            }
            json_decref(hook);
            json_decref(j);
            gpurun_monitor_result_free(&r);
        } else {
            for (int i = 0; i < pt->n; i++)
                json_array_append_new(all, unread_gpu(pt->pcis[i], pt->why));
        }
    }
    session_free(s);
    return all;
}
