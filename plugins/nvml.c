/* SPDX-License-Identifier: BSD-3-Clause */
/* nvml: the GPU monitor for NVIDIA GPUs.  libnvidia-ml.so.1 is dlopen()ed at
 * run time ($GPURUN_NVML_LIBRARY names another file, for tests), so nothing
 * of NVML is needed to build, and a node without the driver only makes the
 * monitor "unavailable".  The few NVML types and functions used are declared
 * here, as Slurm's gpu/nvml plugin does; GPUs are found by PCI bus id. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"
#include "sampler.h"

/* --- the parts of nvml.h gpurun uses --------------------------------------- */

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
#define NVML_SUCCESS 0
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory; /* % of the last sample period */
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32]; /* "00000000:13:00.0" */
} nvmlPciInfo_t;
#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0

struct nvml {
    void *handle;
    char *path;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
    /* optional */
    nvmlReturn_t (*driver_version)(char *, unsigned int);
    nvmlReturn_t (*index)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*link_gen)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*link_gen_max)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*link_width)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*link_width_max)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*power_default_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*clock_max)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *); /* mJ since the driver loaded; Volta and later */
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, void *); /* compute processes, entries of procs_size */
    size_t procs_size;
};

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvml *loaded; /* kept for the life of the process: its code may be in use */

static void *sym(void *h, const char *name)
{
    return dlsym(h, name);
}

/* Assign a symbol to a function pointer without a cast from void *. */
#define LOAD(field, name) memcpy(&n->field, &(void *){sym(h, name)}, sizeof(void *))

static const char *library_path(void)
{
    const char *p = getenv("GPURUN_NVML_LIBRARY");
    return p && *p ? p : "libnvidia-ml.so.1";
}

/* The library's functions, loaded once per path; NULL with why. */
static const struct nvml *nvml_load(gpurun_error_t *why)
{
    const char *path = library_path();
    pthread_mutex_lock(&nvml_lock);
    if (loaded && !strcmp(loaded->path, path)) {
        pthread_mutex_unlock(&nvml_lock);
        return loaded;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        pthread_mutex_unlock(&nvml_lock);
        gpurun_err(why, GPURUN_EXIT_ENV, "NVML is not available: %s (the NVIDIA driver installs libnvidia-ml.so.1)",
                   e ? e : path);
        return NULL;
    }
    struct nvml *n = calloc(1, sizeof *n);
    if (!n)
        abort();
    n->handle = h;
    n->path = strdup(path);
    if (!n->path)
        abort();
    LOAD(init, "nvmlInit_v2");
    if (!n->init)
        LOAD(init, "nvmlInit");
    LOAD(shutdown, "nvmlShutdown");
    LOAD(error_string, "nvmlErrorString");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    LOAD(utilization, "nvmlDeviceGetUtilizationRates");
    LOAD(memory, "nvmlDeviceGetMemoryInfo");
    LOAD(power, "nvmlDeviceGetPowerUsage");
    LOAD(driver_version, "nvmlSystemGetDriverVersion");
    LOAD(index, "nvmlDeviceGetIndex");
    LOAD(name, "nvmlDeviceGetName");
    LOAD(pci_info, "nvmlDeviceGetPciInfo_v3");
    LOAD(link_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    LOAD(link_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
    LOAD(link_width, "nvmlDeviceGetCurrPcieLinkWidth");
    LOAD(link_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
    LOAD(throttle, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n->throttle)
        LOAD(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    LOAD(power_default_limit, "nvmlDeviceGetPowerManagementDefaultLimit");
    LOAD(clock, "nvmlDeviceGetClockInfo");
    LOAD(clock_max, "nvmlDeviceGetMaxClockInfo");
    LOAD(temperature, "nvmlDeviceGetTemperature");
    LOAD(energy, "nvmlDeviceGetTotalEnergyConsumption");
    /* nvmlProcessInfo_t: {pid, usedGpuMemory, gpuInstanceId, computeInstanceId} for _v3 and _v2, 24 bytes;
     * {pid, usedGpuMemory}, 16 bytes, for the first */
    n->procs_size = 24;
    LOAD(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!n->procs)
        LOAD(procs, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!n->procs) {
        n->procs_size = 16;
        LOAD(procs, "nvmlDeviceGetComputeRunningProcesses");
    }
    if (!n->init || !n->shutdown || !n->count || !n->by_index || !n->by_pci || !n->utilization || !n->memory ||
        !n->power) {
        dlclose(h);
        free(n->path);
        free(n);
        pthread_mutex_unlock(&nvml_lock);
        gpurun_err(why, GPURUN_EXIT_ENV, "%s lacks NVML functions gpurun needs (a driver older than 2017?)", path);
        return NULL;
    }
    loaded = n; /* a previous one (another path, in tests) stays loaded */
    pthread_mutex_unlock(&nvml_lock);
    return n;
}

static const char *nvml_error(const struct nvml *n, nvmlReturn_t rc)
{
    const char *s = n->error_string ? n->error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

/* "00000000:13:00.0" -> "0000:13:00.0" */
static void pci_normalise(const char *in, char *out, size_t len)
{
    unsigned dom, bus, dev, fn;
    if (sscanf(in, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
        snprintf(out, len, "%04x:%02x:%02x.%x", dom & 0xffff, bus & 0xff, dev & 0x1f, fn & 0x7);
    else if (sscanf(in, "%x:%x.%x", &bus, &dev, &fn) == 3)
        snprintf(out, len, "0000:%02x:%02x.%x", bus & 0xff, dev & 0x1f, fn & 0x7);
    else
        snprintf(out, len, "%.*s", (int)len - 1, in);
}

static void describe(const struct nvml *n, nvmlDevice_t d, char *pci, size_t pcilen, int *index, char *name,
                     size_t namelen)
{
    nvmlPciInfo_t info;
    if (n->pci_info && n->pci_info(d, &info) == NVML_SUCCESS) {
        info.busId[sizeof info.busId - 1] = '\0';
        pci_normalise(info.busId, pci, pcilen);
    }
    unsigned idx;
    if (n->index && n->index(d, &idx) == NVML_SUCCESS)
        *index = (int)idx;
    if (n->name && n->name(d, name, (unsigned)namelen) == NVML_SUCCESS)
        name[namelen - 1] = '\0';
}

/* The library loaded and initialised (the caller shuts it down), or NULL
 * with why in err. */
static const struct nvml *nvml_open(gpurun_error_t *err)
{
    const struct nvml *n = nvml_load(err);
    if (!n)
        return NULL;
    nvmlReturn_t rc = n->init();
    if (rc != NVML_SUCCESS) {
        gpurun_err(err, GPURUN_EXIT_ENV, "NVML did not start: %s", nvml_error(n, rc));
        return NULL;
    }
    return n;
}

static int nvml_available(gpurun_error_t *why)
{
    const struct nvml *n = nvml_open(why);
    if (!n)
        return -1;
    unsigned count = 0;
    nvmlReturn_t rc = n->count(&count);
    n->shutdown();
    if (rc != NVML_SUCCESS)
        return gpurun_err(why, GPURUN_EXIT_ENV, "NVML cannot count GPUs: %s", nvml_error(n, rc));
    if (count == 0)
        return gpurun_err(why, GPURUN_EXIT_ENV, "NVML sees no GPU");
    return 0;
}

/* --- sampling --------------------------------------------------------------- */

struct gpu {
    nvmlDevice_t dev;
    struct gpurun_gpu_stats s;
    struct gpurun_metric util, mem, power;
    bool energy0_ok;
    unsigned long long energy0_mj; /* the counter at start() */
};

/* The GPU's energy counter, mJ; false with why in g->s.energy_why. */
static bool read_energy(const struct nvml *n, struct gpu *g, unsigned long long *mj)
{
    if (!n->energy) {
        snprintf(g->s.energy_why, sizeof g->s.energy_why,
                 "this NVML has no nvmlDeviceGetTotalEnergyConsumption (a driver older than 2017)");
        return false;
    }
    nvmlReturn_t rc = n->energy(g->dev, mj);
    if (rc != NVML_SUCCESS) {
        snprintf(g->s.energy_why, sizeof g->s.energy_why, "NVML's energy counter: %s (a GPU before Volta?)",
                 nvml_error(n, rc));
        return false;
    }
    return true;
}

struct gpurun_monitor {
    const struct nvml *n;
    int ngpus;
    struct gpu *gpus;
    struct gpurun_sampler sampler;
};

static void sample(void *arg)
{
    struct gpurun_monitor *m = arg;
    for (int i = 0; i < m->ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        nvmlUtilization_t u;
        nvmlMemory_t mem;
        unsigned mw;
        g->s.samples++;
        if (m->n->utilization(g->dev, &u) == NVML_SUCCESS)
            gpurun_metric_add(&g->util, u.gpu);
        if (m->n->memory(g->dev, &mem) == NVML_SUCCESS)
            gpurun_metric_add(&g->mem, (double)mem.used / (1024.0 * 1024.0));
        if (m->n->power(g->dev, &mw) == NVML_SUCCESS)
            gpurun_metric_add(&g->power, mw / 1000.0);
    }
}

static void monitor_free(struct gpurun_monitor *m)
{
    free(m->gpus);
    free(m);
}

static int nvml_start(const char *const *ids, int nids, double interval_s, gpurun_monitor_t **monp,
                      gpurun_error_t *err)
{
    const struct nvml *n = nvml_open(err);
    if (!n)
        return -1;
    nvmlReturn_t rc;
    unsigned count = 0;
    if (nids <= 0 && (rc = n->count(&count)) != NVML_SUCCESS) {
        n->shutdown();
        return gpurun_err(err, GPURUN_EXIT_ENV, "NVML cannot count GPUs: %s", nvml_error(n, rc));
    }
    struct gpurun_monitor *m = calloc(1, sizeof *m);
    int ngpus = nids > 0 ? nids : (int)count;
    if (!m || !(m->gpus = calloc((size_t)(ngpus > 0 ? ngpus : 1), sizeof *m->gpus)))
        abort();
    m->n = n;
    m->ngpus = ngpus;
    for (int i = 0; i < ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        const char *id = nids > 0 ? ids[i] : NULL;
        char *end = NULL;
        unsigned long idx = id ? strtoul(id, &end, 10) : (unsigned long)i;
        bool by_index = !id || (*id && end && !*end);
        rc = by_index ? n->by_index((unsigned)idx, &g->dev) : n->by_pci(id, &g->dev);
        if (rc != NVML_SUCCESS) {
            gpurun_err(err, GPURUN_EXIT_ENV, "NVML has no GPU %s: %s", id ? id : "?", nvml_error(n, rc));
            monitor_free(m);
            n->shutdown();
            return -1;
        }
        g->s.index = -1;
        if (id && !by_index)
            pci_normalise(id, g->s.pci, sizeof g->s.pci);
        describe(n, g->dev, g->s.pci, sizeof g->s.pci, &g->s.index, g->s.name, sizeof g->s.name);
    }
    /* The energy counters last, just before the first sample. */
    for (int i = 0; i < ngpus; i++)
        m->gpus[i].energy0_ok = read_energy(n, &m->gpus[i], &m->gpus[i].energy0_mj);
    int e = gpurun_sampler_start(&m->sampler, sample, m, interval_s);
    if (e) {
        monitor_free(m);
        n->shutdown();
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot start the NVML sampling thread: %s", strerror(e));
    }
    *monp = m;
    return 0;
}

static int nvml_stop(gpurun_monitor_t *m, struct gpurun_monitor_result *out)
{
    double seconds = gpurun_sampler_stop(&m->sampler);
    for (int i = 0; i < m->ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        unsigned long long mj;
        if (g->energy0_ok && read_energy(m->n, g, &mj)) {
            /* A counter that went back (the driver reloaded) is unknown,
             * never negative. */
            g->s.energy_known = mj >= g->energy0_mj;
            g->s.energy_j = g->s.energy_known ? (double)(mj - g->energy0_mj) / 1000.0 : 0;
            if (!g->s.energy_known)
                snprintf(g->s.energy_why, sizeof g->s.energy_why, "the energy counter went back (driver reloaded?)");
        }
    }
    gpurun_sampler_result(out, &m->sampler, seconds, m->ngpus);
    for (int i = 0; i < m->ngpus; i++) {
        struct gpu *g = &m->gpus[i];
        struct gpurun_gpu_stats *s = &out->gpus[i];
        *s = g->s;
        gpurun_stats_from_metrics(s, &g->util, &g->mem, &g->power);
    }
    m->n->shutdown();
    monitor_free(m);
    return 0;
}

/* --- health ------------------------------------------------------------------ */

#define NVML_INSUFFICIENT_SIZE 7

/* The compute processes on GPU `d`: their count and first pids. */
static void health_procs(const struct nvml *n, nvmlDevice_t d, struct gpurun_gpu_health *g)
{
    enum { ROOM = 64 };
    unsigned char infos[ROOM * 24]; /* the entries' first member is the pid (unsigned int) */
    unsigned count = ROOM;
    g->nprocs = -1;
    nvmlReturn_t rc = n->procs ? n->procs(d, &count, infos) : -1;
    if (rc == NVML_INSUFFICIENT_SIZE) {
        g->nprocs = (int)count; /* more than ROOM: counted, not named */
        return;
    }
    if (rc != NVML_SUCCESS)
        return;
    g->nprocs = (int)(count < ROOM ? count : ROOM);
    for (int i = 0; i < g->nprocs && i < GPURUN_HEALTH_PIDS_MAX; i++)
        memcpy(&g->pids[i], infos + (size_t)i * n->procs_size, sizeof g->pids[i]);
}

static int nvml_health(struct gpurun_gpu_health **healthp, int *np, char *driver, size_t driver_len,
                       gpurun_error_t *err)
{
    const struct nvml *n = nvml_open(err);
    if (!n)
        return -1;
    nvmlReturn_t rc;
    if (driver && driver_len) {
        driver[0] = '\0';
        if (n->driver_version && n->driver_version(driver, (unsigned)driver_len) == NVML_SUCCESS)
            driver[driver_len - 1] = '\0';
        else
            driver[0] = '\0';
    }
    unsigned count = 0;
    if ((rc = n->count(&count)) != NVML_SUCCESS) {
        n->shutdown();
        return gpurun_err(err, GPURUN_EXIT_ENV, "NVML cannot count GPUs: %s", nvml_error(n, rc));
    }
    struct gpurun_gpu_health *h = calloc(count ? count : 1, sizeof *h);
    if (!h)
        abort();
    int got = 0;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t d;
        if (n->by_index(i, &d) != NVML_SUCCESS)
            continue;
        struct gpurun_gpu_health *g = &h[got++];
        unsigned v;
        g->index = (int)i;
        describe(n, d, g->pci, sizeof g->pci, &g->index, g->name, sizeof g->name);
#define ASK(fn, field)                                                     \
    g->field = -1;                                                         \
    if (n->fn && n->fn(d, &v) == NVML_SUCCESS)                             \
        g->field = (int)v;
        ASK(link_gen, pcie_gen)
        ASK(link_gen_max, pcie_gen_max)
        ASK(link_width, pcie_width)
        ASK(link_width_max, pcie_width_max)
#undef ASK
        unsigned long long reasons;
        g->throttle_known = n->throttle && n->throttle(d, &reasons) == NVML_SUCCESS;
        g->throttle = g->throttle_known ? reasons : 0;
        g->power_w = n->power(d, &v) == NVML_SUCCESS ? v / 1000.0 : -1;
        g->power_limit_w = n->power_limit && n->power_limit(d, &v) == NVML_SUCCESS ? v / 1000.0 : -1;
        g->power_default_limit_w =
            n->power_default_limit && n->power_default_limit(d, &v) == NVML_SUCCESS ? v / 1000.0 : -1;
        g->sm_clock_mhz = n->clock && n->clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS ? (int)v : -1;
        g->sm_clock_max_mhz = n->clock_max && n->clock_max(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS ? (int)v : -1;
        g->temperature_c =
            n->temperature && n->temperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS ? (int)v : -1;
        unsigned long long mj;
        g->energy_counter = n->energy && n->energy(d, &mj) == NVML_SUCCESS;
        health_procs(n, d, g);
    }
    n->shutdown();
    *healthp = h;
    *np = got;
    return 0;
}

static const char *const nvml_vendors[] = {"nvidia", NULL};

/* --- gpurun doctor ---------------------------------------------------------- */

/* One GPU's line: its link, clocks, temperature and power, and what holds
 * it back (a narrow link, throttling, a lowered power limit). */
static void nvml_doctor_gpu(const struct gpurun_rm_doctor *d, const struct gpurun_gpu_health *g)
{
    char id[32], title[64], detail[512] = "", problem[512] = "";
    const char *fix = NULL;
    snprintf(id, sizeof id, "gpu%d", g->index);
    snprintf(title, sizeof title, "GPU %d health", g->index);
    size_t dl = 0;
    int st = 0;
    if (g->pcie_gen > 0 && g->pcie_width > 0)
        dl += (size_t)snprintf(detail + dl, sizeof detail - dl, "%s PCIe Gen%d x%d (max Gen%d x%d)", g->pci,
                               g->pcie_gen, g->pcie_width, g->pcie_gen_max, g->pcie_width_max);
    else
        dl += (size_t)snprintf(detail + dl, sizeof detail - dl, "%s", g->pci);
    if (g->sm_clock_mhz > 0 && dl < sizeof detail)
        dl += (size_t)snprintf(detail + dl, sizeof detail - dl, ", SM %d of %d MHz", g->sm_clock_mhz,
                               g->sm_clock_max_mhz);
    if (g->temperature_c >= 0 && dl < sizeof detail)
        dl += (size_t)snprintf(detail + dl, sizeof detail - dl, ", %d C", g->temperature_c);
    if (g->power_w >= 0 && dl < sizeof detail)
        dl += (size_t)snprintf(detail + dl, sizeof detail - dl, ", %.0f W of %.0f W", g->power_w,
                               g->power_limit_w);
    unsigned long long bad = GPURUN_THROTTLE_HW_SLOWDOWN | GPURUN_THROTTLE_HW_THERMAL |
                             GPURUN_THROTTLE_SW_THERMAL | GPURUN_THROTTLE_HW_POWER_BRAKE;
    if (g->pcie_width > 0 && g->pcie_width_max > 0 && g->pcie_width < g->pcie_width_max) {
        st = 1;
        snprintf(problem, sizeof problem, "PCIe link x%d of x%d", g->pcie_width, g->pcie_width_max);
        fix = "reseat the GPU or check the slot and BIOS bifurcation: a narrow link cuts host-GPU bandwidth";
    } else if (g->throttle_known && (g->throttle & bad)) {
        st = 1;
        snprintf(problem, sizeof problem, "clocks held down:%s%s%s%s",
                 g->throttle & GPURUN_THROTTLE_HW_SLOWDOWN ? " HW slowdown" : "",
                 g->throttle & GPURUN_THROTTLE_HW_THERMAL ? " HW thermal" : "",
                 g->throttle & GPURUN_THROTTLE_SW_THERMAL ? " SW thermal" : "",
                 g->throttle & GPURUN_THROTTLE_HW_POWER_BRAKE ? " power brake" : "");
        fix = "check cooling, airflow and power supply (nvidia-smi -q -d PERFORMANCE shows the reasons)";
    } else if (g->power_limit_w > 0 && g->power_default_limit_w > 0 &&
               g->power_limit_w < 0.95 * g->power_default_limit_w) {
        st = 1;
        snprintf(problem, sizeof problem, "power limit %.0f W, below the default %.0f W", g->power_limit_w,
                 g->power_default_limit_w);
        fix = "raise it (sudo nvidia-smi -pl DEFAULT) or ask the admins why the GPU is capped";
    }
    if (st == 0 && g->pcie_gen > 0 && g->pcie_gen < g->pcie_gen_max)
        gpurun_rm_check(d, id, title, st, fix, "%s (an idle GPU lowers its link speed; check under load)", detail);
    else if (st == 0)
        gpurun_rm_check(d, id, title, st, fix, "%s", detail);
    else
        gpurun_rm_check(d, id, title, st, fix, "%s: %s", problem, detail);
}

/* The driver, the energy counters and each GPU's health, for the node's
 * `ngpus` NVIDIA GPUs (its topology's). */
static void nvml_doctor(const struct gpurun_rm_doctor *d, int ngpus)
{
    gpurun_error_t err = {0};
    struct gpurun_gpu_health *h = NULL;
    int nh = 0;
    char driver[96] = "";
    if (nvml_health(&h, &nh, driver, sizeof driver, &err) < 0) {
        gpurun_rm_check(d, "driver", "NVIDIA driver", 2,
              "install the NVIDIA driver (nvidia-smi must work) and reboot if its kernel module is new",
              "%d NVIDIA GPU%s on the PCI bus, but %s", ngpus, ngpus == 1 ? "" : "s", err.text);
        return;
    }
    if (nh != ngpus)
        gpurun_rm_check(d, "driver", "NVIDIA driver", 1,
              "check nvidia-smi and dmesg for GPUs that fell off the bus (Xid errors), or CUDA_VISIBLE_DEVICES-style "
              "limits of a container",
              "driver %s; NVML sees %d GPU%s, the topology %d", driver[0] ? driver : "?", nh, nh == 1 ? "" : "s",
              ngpus);
    else
        gpurun_rm_check(d, "driver", "NVIDIA driver", 0, NULL, "driver %s; NVML sees all %d GPU%s",
              driver[0] ? driver : "(version unknown)", nh, nh == 1 ? "" : "s");

    int counters = 0;
    for (int i = 0; i < nh; i++)
        counters += h[i].energy_counter;
    if (counters == nh)
        gpurun_rm_check(d, "energy_gpu", "GPU energy", 0, NULL,
              "NVML's energy counter reads on all %d GPU%s: their energy is recorded", nh, nh == 1 ? "" : "s");
    else
        gpurun_rm_check(d, "energy_gpu", "GPU energy", 1,
              "GPUs before Volta have no energy counter: their energy is estimated from the power samples",
              "NVML's energy counter reads on %d of %d GPUs", counters, nh);
    for (int i = 0; i < nh; i++)
        nvml_doctor_gpu(d, &h[i]);
    free(h);
}

const gpurun_monitor_plugin_t gpurun_monitor_nvml = {
    .abi = GPURUN_MONITOR_ABI,
    .name = "nvml",
    .summary = "NVIDIA GPUs through NVML (libnvidia-ml.so.1, loaded at run time)",
    .available = nvml_available,
    .start = nvml_start,
    .stop = nvml_stop,
    .health = nvml_health,
    .vendors = nvml_vendors,
    .library_env = "GPURUN_NVML_LIBRARY",
    .doctor = nvml_doctor,
};
