/* SPDX-License-Identifier: BSD-3-Clause */
/* rocm_smi: the GPU monitor for AMD GPUs, through ROCm SMI (librocm_smi64,
 * dlopen()ed at run time like NVML in nvml.c: $GPURUN_ROCM_SMI_LIBRARY
 * names another file, for tests).  Energy is the GPU's accumulated energy
 * counter (rsmi_dev_energy_count_get: ticks of counter_resolution uJ, from
 * the firmware's gpu_metrics; MI100 and later), read at start and stop;
 * power, utilisation and VRAM used are sampled.  GPUs are found by PCI
 * address.  ROCm SMI is started with a mutex private to this process
 * (RSMI_INIT_FLAG_THRAD_ONLY_MUTEX): its default is a named mutex in
 * /dev/shm that any user of the node may have made first. */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"
#include "sampler.h"

/* --- the parts of rocm_smi.h gpurun uses ----------------------------------- */

typedef int rsmi_status_t; /* RSMI_STATUS_SUCCESS = 0 */
#define RSMI_STATUS_SUCCESS 0
#define RSMI_INIT_FLAG_THRAD_ONLY_MUTEX 0x400000000000000ULL
#define RSMI_MEM_TYPE_VRAM 0
#define RSMI_TEMP_TYPE_EDGE 0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_CURRENT 0
#define RSMI_SW_COMP_DRIVER 0

struct rsmi {
    void *handle;
    char *path;
    rsmi_status_t (*init)(uint64_t);
    rsmi_status_t (*shut_down)(void);
    rsmi_status_t (*count)(uint32_t *);
    rsmi_status_t (*pci_id)(uint32_t, uint64_t *);
    /* optional */
    rsmi_status_t (*status_string)(rsmi_status_t, const char **);
    rsmi_status_t (*name)(uint32_t, char *, size_t);
    rsmi_status_t (*busy)(uint32_t, uint32_t *);
    rsmi_status_t (*memory_used)(uint32_t, int, uint64_t *);
    rsmi_status_t (*power)(uint32_t, uint64_t *, int *);     /* uW and its kind; ROCm 6 */
    rsmi_status_t (*power_ave)(uint32_t, uint32_t, uint64_t *); /* uW; before ROCm 6 */
    rsmi_status_t (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
    rsmi_status_t (*power_cap)(uint32_t, uint32_t, uint64_t *);
    rsmi_status_t (*power_cap_default)(uint32_t, uint64_t *);
    rsmi_status_t (*temperature)(uint32_t, uint32_t, uint32_t, int64_t *);
    rsmi_status_t (*version_str)(int, char *, uint32_t);
};

static pthread_mutex_t rsmi_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsmi *loaded; /* kept for the life of the process: its code may be in use */

#define LOAD(field, name) memcpy(&r->field, &(void *){dlsym(h, name)}, sizeof(void *))

/* ROCm 7, 6, 5 and an unversioned name (ld.so's search: ROCm's packages put
 * /opt/rocm/lib in ld.so.conf), then ROCm's own folder. */
static const char *const default_paths[] = {
    "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5", "librocm_smi64.so",
    "/opt/rocm/lib/librocm_smi64.so",
};

static const struct rsmi *rsmi_load(gpurun_error_t *why)
{
    const char *env = getenv("GPURUN_ROCM_SMI_LIBRARY");
    const char *want = env && *env ? env : NULL;
    pthread_mutex_lock(&rsmi_lock);
    if (loaded && (!want || !strcmp(loaded->path, want))) {
        pthread_mutex_unlock(&rsmi_lock);
        return loaded;
    }
    void *h = NULL;
    const char *path = want;
    char last[256] = "";
    if (want) {
        h = dlopen(want, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; !h && i < sizeof default_paths / sizeof *default_paths; i++) {
            path = default_paths[i];
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            const char *e = h ? NULL : dlerror();
            if (e && (!last[0] || !strstr(e, "No such file")))
                snprintf(last, sizeof last, "%s", e);
        }
    }
    if (!h) {
        const char *e = want ? dlerror() : last;
        pthread_mutex_unlock(&rsmi_lock);
        gpurun_err(why, GPURUN_EXIT_ENV, "ROCm SMI is not available: %s (ROCm's rocm-smi-lib installs librocm_smi64.so)",
                   e && *e ? e : "librocm_smi64.so not found");
        return NULL;
    }
    struct rsmi *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path)))
        abort();
    r->handle = h;
    LOAD(init, "rsmi_init");
    LOAD(shut_down, "rsmi_shut_down");
    LOAD(count, "rsmi_num_monitor_devices");
    LOAD(pci_id, "rsmi_dev_pci_id_get");
    LOAD(status_string, "rsmi_status_string");
    LOAD(name, "rsmi_dev_name_get");
    LOAD(busy, "rsmi_dev_busy_percent_get");
    LOAD(memory_used, "rsmi_dev_memory_usage_get");
    LOAD(power, "rsmi_dev_power_get");
    LOAD(power_ave, "rsmi_dev_power_ave_get");
    LOAD(energy, "rsmi_dev_energy_count_get");
    LOAD(power_cap, "rsmi_dev_power_cap_get");
    LOAD(power_cap_default, "rsmi_dev_power_cap_default_get");
    LOAD(temperature, "rsmi_dev_temp_metric_get");
    LOAD(version_str, "rsmi_version_str_get");
    if (!r->init || !r->shut_down || !r->count || !r->pci_id) {
        dlclose(h);
        free(r->path);
        free(r);
        pthread_mutex_unlock(&rsmi_lock);
        gpurun_err(why, GPURUN_EXIT_ENV, "%s lacks ROCm SMI functions gpurun needs (rsmi_init, "
                   "rsmi_num_monitor_devices, rsmi_dev_pci_id_get)", path);
        return NULL;
    }
    loaded = r; /* a previous one (another path, in tests) stays loaded */
    pthread_mutex_unlock(&rsmi_lock);
    return r;
}

static const char *rsmi_error(const struct rsmi *r, rsmi_status_t rc, char *buf, size_t len)
{
    const char *s = NULL;
    if (r->status_string && r->status_string(rc, &s) == RSMI_STATUS_SUCCESS && s)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "ROCm SMI error %d", rc);
    return buf;
}

static const struct rsmi *rsmi_open(gpurun_error_t *err)
{
    const struct rsmi *r = rsmi_load(err);
    if (!r)
        return NULL;
    rsmi_status_t rc = r->init(RSMI_INIT_FLAG_THRAD_ONLY_MUTEX);
    if (rc != RSMI_STATUS_SUCCESS) {
        char e[160];
        gpurun_err(err, GPURUN_EXIT_ENV, "ROCm SMI did not start: %s", rsmi_error(r, rc, e, sizeof e));
        return NULL;
    }
    return r;
}

/* ROCm SMI's 64-bit BDF id as "0000:c1:00.0".  Bits 63-32 domain, 15-8 bus,
 * 7-3 device, 2-0 function; a partition's number is in bits 31-28 or, in
 * some modes, in the function bits (the OS sees function 0 for all). */
static void bdf_string(uint64_t id, unsigned fn, char *out, size_t len)
{
    snprintf(out, len, "%04x:%02x:%02x.%x", (unsigned)((id >> 32) & 0xffff), (unsigned)((id >> 8) & 0xff),
             (unsigned)((id >> 3) & 0x1f), fn & 0x7);
}

/* The device index of the GPU at `pci` ("0000:c1:00.0" or "c1:00.0"), or of
 * index `pci` when it is a number: the lowest index whose address matches
 * (a partitioned GPU's first partition: the counter is the whole GPU's,
 * each partition reporting it); -1 when none. */
static int find_device(const struct rsmi *r, uint32_t count, const char *id, char *pci, size_t pcilen)
{
    char *end = NULL;
    unsigned long idx = strtoul(id, &end, 10);
    if (*id && end && !*end) {
        uint64_t bdf;
        if (idx >= count || r->pci_id((uint32_t)idx, &bdf) != RSMI_STATUS_SUCCESS)
            return -1;
        bdf_string(bdf, 0, pci, pcilen);
        return (int)idx;
    }
    unsigned dom, bus, dev, fn;
    if (sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
        dom = 0;
        if (sscanf(id, "%x:%x.%x", &bus, &dev, &fn) != 3)
            return -1;
    }
    char want[20];
    snprintf(want, sizeof want, "%04x:%02x:%02x.%x", dom & 0xffff, bus & 0xff, dev & 0x1f, fn & 0x7);
    int same_slot = -1; /* a match but for the function bits (a partition's number there) */
    for (uint32_t i = 0; i < count && i < 4096; i++) {
        uint64_t bdf;
        char have[20];
        if (r->pci_id(i, &bdf) != RSMI_STATUS_SUCCESS)
            continue;
        bdf_string(bdf, (unsigned)(bdf & 0x7), have, sizeof have);
        if (!strcmp(have, want)) {
            snprintf(pci, pcilen, "%s", want);
            return (int)i;
        }
        bdf_string(bdf, fn, have, sizeof have);
        if (same_slot < 0 && fn == 0 && !strcmp(have, want))
            same_slot = (int)i;
    }
    if (same_slot >= 0)
        snprintf(pci, pcilen, "%s", want);
    return same_slot;
}

/* ROCm SMI started (the caller shuts it down) and its devices counted, at
 * most 4096; NULL with why in err (then not started). */
static const struct rsmi *rsmi_open_counted(uint32_t *count, gpurun_error_t *err)
{
    const struct rsmi *r = rsmi_open(err);
    if (!r)
        return NULL;
    *count = 0;
    rsmi_status_t rc = r->count(count);
    if (rc != RSMI_STATUS_SUCCESS) {
        char e[160];
        r->shut_down();
        gpurun_err(err, GPURUN_EXIT_ENV, "ROCm SMI cannot count GPUs: %s", rsmi_error(r, rc, e, sizeof e));
        return NULL;
    }
    if (*count > 4096)
        *count = 4096;
    return r;
}

/* Device dev's model into name (len bytes); "" when ROCm SMI does not say. */
static void read_name(const struct rsmi *r, uint32_t dev, char *name, size_t len)
{
    if (r->name && r->name(dev, name, len) == RSMI_STATUS_SUCCESS)
        name[len - 1] = '\0';
    else
        name[0] = '\0';
}

static int rocm_available(gpurun_error_t *why)
{
    uint32_t count;
    const struct rsmi *r = rsmi_open_counted(&count, why);
    if (!r)
        return -1;
    r->shut_down();
    if (count == 0)
        return gpurun_err(why, GPURUN_EXIT_ENV, "ROCm SMI sees no GPU");
    return 0;
}

/* --- sampling --------------------------------------------------------------- */

struct gpu {
    uint32_t dev;
    struct gpurun_gpu_stats s;
    struct gpurun_metric util, mem, power;
    bool energy0_ok;
    uint64_t energy0;  /* the counter at start(), in ticks */
    float resolution;  /* uJ per tick */
};

struct gpurun_monitor {
    const struct rsmi *r;
    int ngpus;
    struct gpu *gpus;
    struct gpurun_sampler sampler;
};

/* The GPU's energy counter; false with why in g->s.energy_why. */
static bool read_energy(const struct rsmi *r, struct gpu *g, uint64_t *ticks, float *res)
{
    if (!r->energy) {
        snprintf(g->s.energy_why, sizeof g->s.energy_why,
                 "this ROCm SMI has no rsmi_dev_energy_count_get (ROCm older than 4.5)");
        return false;
    }
    uint64_t ts;
    char e[160];
    rsmi_status_t rc = r->energy(g->dev, ticks, res, &ts);
    if (rc != RSMI_STATUS_SUCCESS) {
        snprintf(g->s.energy_why, sizeof g->s.energy_why, "ROCm SMI's energy counter: %s (a GPU before MI100?)",
                 rsmi_error(r, rc, e, sizeof e));
        return false;
    }
    if (!(*res > 0 && *res < 1e6)) {
        snprintf(g->s.energy_why, sizeof g->s.energy_why, "ROCm SMI's energy counter gave a resolution of %g uJ",
                 (double)*res);
        return false;
    }
    return true;
}

/* Board power in W; false when not reported.  A reading of 0 W is none: an
 * MI250X's second die reports 0, its package's power is on the first. */
static bool read_power(const struct rsmi *r, uint32_t dev, double *w)
{
    uint64_t uw = 0;
    int kind = 0;
    bool ok = (r->power && r->power(dev, &uw, &kind) == RSMI_STATUS_SUCCESS) ||
              (r->power_ave && r->power_ave(dev, 0, &uw) == RSMI_STATUS_SUCCESS);
    *w = (double)uw / 1e6;
    return ok && uw > 0;
}

static void sample(void *arg)
{
    struct gpurun_monitor *m = arg;
    for (int i = 0; i < m->ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        uint32_t busy;
        uint64_t used;
        double w;
        g->s.samples++;
        if (m->r->busy && m->r->busy(g->dev, &busy) == RSMI_STATUS_SUCCESS && busy <= 100)
            gpurun_metric_add(&g->util, busy);
        if (m->r->memory_used && m->r->memory_used(g->dev, RSMI_MEM_TYPE_VRAM, &used) == RSMI_STATUS_SUCCESS)
            gpurun_metric_add(&g->mem, (double)used / (1024.0 * 1024.0));
        if (read_power(m->r, g->dev, &w))
            gpurun_metric_add(&g->power, w);
    }
}

static void monitor_free(struct gpurun_monitor *m)
{
    free(m->gpus);
    free(m);
}

static int rocm_start(const char *const *ids, int nids, double interval_s, gpurun_monitor_t **monp,
                      gpurun_error_t *err)
{
    uint32_t count;
    const struct rsmi *r = rsmi_open_counted(&count, err);
    if (!r)
        return -1;
    struct gpurun_monitor *m = calloc(1, sizeof *m);
    int ngpus = nids > 0 ? nids : (int)count;
    if (!m || !(m->gpus = calloc((size_t)(ngpus > 0 ? ngpus : 1), sizeof *m->gpus)))
        abort();
    m->r = r;
    m->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        char idbuf[16];
        snprintf(idbuf, sizeof idbuf, "%d", i);
        const char *id = nids > 0 ? ids[i] : idbuf;
        int dev = find_device(r, count, id ? id : "", g->s.pci, sizeof g->s.pci);
        if (dev < 0) {
            gpurun_err(err, GPURUN_EXIT_ENV, "ROCm SMI has no GPU %s (it sees %u)", id ? id : "?", count);
            monitor_free(m);
            r->shut_down();
            return -1;
        }
        g->dev = (uint32_t)dev;
        g->s.index = dev;
        read_name(r, g->dev, g->s.name, sizeof g->s.name);
    }
    /* The energy counters last, just before the first sample. */
    for (int i = 0; i < ngpus; i++)
        m->gpus[i].energy0_ok = read_energy(r, &m->gpus[i], &m->gpus[i].energy0, &m->gpus[i].resolution);
    int ec = gpurun_sampler_start(&m->sampler, sample, m, interval_s);
    if (ec) {
        monitor_free(m);
        r->shut_down();
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot start the ROCm SMI sampling thread: %s", strerror(ec));
    }
    *monp = m;
    return 0;
}

static int rocm_stop(gpurun_monitor_t *m, struct gpurun_monitor_result *out)
{
    double seconds = gpurun_sampler_stop(&m->sampler);
    for (int i = 0; i < m->ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        uint64_t ticks;
        float res;
        if (!g->energy0_ok || !read_energy(m->r, g, &ticks, &res))
            continue;
        if (ticks < g->energy0) {
            snprintf(g->s.energy_why, sizeof g->s.energy_why,
                     "ROCm SMI's energy counter went back (the driver reloaded, or its counter wrapped)");
        } else if (ticks == g->energy0 && seconds >= 1.0) {
            /* A GPU draws power whenever it is on: a counter that stood
             * still counts for another die (MI250X, MI250: the package's
             * energy is on its first GCD's counter). */
            snprintf(g->s.energy_why, sizeof g->s.energy_why,
                     "ROCm SMI's energy counter did not move in %.0f s (an MI250X or MI250's second GCD: its package's "
                     "energy is counted on the first GCD)",
                     seconds);
        } else {
            g->s.energy_known = true;
            g->s.energy_j = (double)(ticks - g->energy0) * (double)g->resolution / 1e6;
        }
    }
    gpurun_sampler_result(out, &m->sampler, seconds, m->ngpus);
    for (int i = 0; i < m->ngpus; i++) {
        out->gpus[i] = m->gpus[i].s;
        gpurun_stats_from_metrics(&out->gpus[i], &m->gpus[i].util, &m->gpus[i].mem, &m->gpus[i].power);
    }
    m->r->shut_down();
    monitor_free(m);
    return 0;
}

/* --- health ------------------------------------------------------------------ */

static int rocm_health(struct gpurun_gpu_health **healthp, int *np, char *driver, size_t driver_len,
                       gpurun_error_t *err)
{
    uint32_t count;
    const struct rsmi *r = rsmi_open_counted(&count, err);
    if (!r)
        return -1;
    if (driver && driver_len) {
        if (!r->version_str || r->version_str(RSMI_SW_COMP_DRIVER, driver, (uint32_t)driver_len) != RSMI_STATUS_SUCCESS)
            driver[0] = '\0';
        driver[driver_len - 1] = '\0';
    }
    struct gpurun_gpu_health *h = calloc(count ? count : 1, sizeof *h);
    if (!h)
        abort();
    for (uint32_t i = 0; i < count; i++) {
        struct gpurun_gpu_health *g = &h[i];
        uint64_t bdf, uw;
        int64_t mc;
        g->index = (int)i;
        g->nprocs = -1; /* its processes: not read here (ABI 3) */
        if (r->pci_id(i, &bdf) == RSMI_STATUS_SUCCESS)
            bdf_string(bdf, (unsigned)(bdf & 0x7), g->pci, sizeof g->pci);
        read_name(r, i, g->name, sizeof g->name);
        g->pcie_gen = g->pcie_gen_max = g->pcie_width = g->pcie_width_max = -1;
        g->sm_clock_mhz = g->sm_clock_max_mhz = -1;
        double w;
        g->power_w = read_power(r, i, &w) ? w : -1;
        g->power_limit_w = r->power_cap && r->power_cap(i, 0, &uw) == RSMI_STATUS_SUCCESS ? (double)uw / 1e6 : -1;
        g->power_default_limit_w =
            r->power_cap_default && r->power_cap_default(i, &uw) == RSMI_STATUS_SUCCESS ? (double)uw / 1e6 : -1;
        /* Junction (hotspot) first: MI200 and later report no edge sensor. */
        g->temperature_c = -1;
        if (r->temperature && (r->temperature(i, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT, &mc) == RSMI_STATUS_SUCCESS ||
                               r->temperature(i, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &mc) == RSMI_STATUS_SUCCESS))
            g->temperature_c = (int)(mc / 1000);
        uint64_t ticks, ts;
        float res;
        g->energy_counter = r->energy && r->energy(i, &ticks, &res, &ts) == RSMI_STATUS_SUCCESS && res > 0;
    }
    r->shut_down();
    *healthp = h;
    *np = (int)count;
    return 0;
}

static const char *const rocm_vendors[] = {"amd", NULL};

/* --- gpurun doctor ---------------------------------------------------------- */

/* AMD GPUs' energy and power: whether ROCm SMI is there and its energy
 * counter reads (MI100 and later). */
static void rocm_doctor(const struct gpurun_rm_doctor *d, int ngpus)
{
    gpurun_error_t err = {0};
    struct gpurun_gpu_health *h = NULL;
    int nh = 0;
    char driver[96] = "";
    (void)ngpus; /* the driver line is doctor's own (amdgpu loaded) */
    if (rocm_health(&h, &nh, driver, sizeof driver, &err) < 0) {
        gpurun_rm_check(d, "energy_gpu_amd", "AMD GPU energy", 1,
              "install ROCm's rocm-smi-lib (librocm_smi64.so): gpurun reads the AMD GPUs' energy and power through it",
              "the runs record no energy or power of the AMD GPUs: %s", err.text);
        return;
    }
    int counters = 0;
    for (int i = 0; i < nh; i++)
        counters += h[i].energy_counter;
    free(h);
    if (nh > 0 && counters == nh)
        gpurun_rm_check(d, "energy_gpu_amd", "AMD GPU energy", 0, NULL,
              "ROCm SMI's energy counter reads on all %d ROCm SMI device%s (driver %s): their energy is recorded", nh,
              nh == 1 ? "" : "s", driver[0] ? driver : "?");
    else
        gpurun_rm_check(d, "energy_gpu_amd", "AMD GPU energy", 1,
              "GPUs before MI100 have no energy counter: their energy is estimated from the power samples",
              "ROCm SMI's energy counter reads on %d of %d devices", counters, nh);
}

const gpurun_monitor_plugin_t gpurun_monitor_rocm_smi = {
    .abi = GPURUN_MONITOR_ABI,
    .name = "rocm_smi",
    .summary = "AMD GPUs through ROCm SMI (librocm_smi64.so, loaded at run time)",
    .available = rocm_available,
    .start = rocm_start,
    .stop = rocm_stop,
    .health = rocm_health,
    .vendors = rocm_vendors,
    .library_env = "GPURUN_ROCM_SMI_LIBRARY",
    .doctor = rocm_doctor,
};
