/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake libnvidia-ml.so.1 for the tests (built by `make check` as
 * tests/fake-nvml/libnvidia-ml.so.1; gpurun loads it through
 * GPURUN_NVML_LIBRARY).  It knows the GPUs of FAKE_NVML_DEVICES
 * ("0000:13:00.0,0000:15:00.0", default one GPU at 0000:13:00.0) and
 * returns scripted values that change with every sample, so a test can
 * check means and peaks: the k-th reading (from 0) of GPU d is
 *   utilisation  10 (d + 1) + 10 (k mod 4)            %
 *   memory used  1024 (d + 1) + 256 (k mod 4)         MiB
 *   power        100 + 50 d + 25 (k mod 4)            W
 * Other knobs: FAKE_NVML_INIT_FAIL=1 (nvmlInit fails), FAKE_NVML_NO_POWER=1
 * (power not supported), FAKE_NVML_DRIVER (default 550.54.15),
 * FAKE_NVML_LINK="gen,maxgen,width,maxwidth" (default 4,4,16,16),
 * FAKE_NVML_THROTTLE (clock event reasons, default 0x1: idle).
 * Energy: FAKE_NVML_POWER_W=P makes every GPU draw P watts exactly: its
 * power samples read P and its total-energy counter advances P mJ per
 * millisecond of CLOCK_MONOTONIC (shared by every process of the machine),
 * so a run's GPU energy is P times the time it was measured over (without
 * it the counter advances at 100 W, whatever the scripted samples say);
 * FAKE_NVML_NO_ENERGY=1: the counter is not supported (a GPU before Volta).
 * Processes: FAKE_NVML_PROCS="PID,PID,parent" are the compute processes on
 * every GPU ("parent": the caller's parent, the rank step that started
 * gpurun's GPU helper); none by default. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
enum { OK = 0, UNINITIALIZED = 1, INVALID = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, UNKNOWN = 999 };

struct nvmlDevice_st { unsigned dom, bus, dev, fn; unsigned long util_k, mem_k, power_k; };
static struct nvmlDevice_st gpus[16];
static unsigned ngpus, inits;

#define API(name, ...) int name(__VA_ARGS__); int name(__VA_ARGS__)
static unsigned knob(const char *name, int field, unsigned dflt)
{
    const char *s = getenv(name);
    for (int i = 0; s && i < field; i++)
        s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL;
    return s && *s ? (unsigned)strtoul(s, NULL, 0) : dflt;
}
#define DEV(d) if (!inits || !(d)) return UNINITIALIZED; unsigned long di = (unsigned long)((d) - gpus); (void)di

API(nvmlInit_v2, void)
{
    if (getenv("FAKE_NVML_INIT_FAIL"))
        return UNKNOWN;
    if (inits++) /* nested: keep the GPUs and their counters */
        return OK;
    const char *list = getenv("FAKE_NVML_DEVICES");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list ? list : "0000:13:00.0");
    ngpus = 0;
    for (char *s = NULL, *t = strtok_r(buf, ",", &s); t && ngpus < 16; t = strtok_r(NULL, ",", &s)) {
        struct nvmlDevice_st *g = &gpus[ngpus];
        memset(g, 0, sizeof *g);
        if (sscanf(t, "%x:%x:%x.%x", &g->dom, &g->bus, &g->dev, &g->fn) == 4)
            ngpus++;
    }
    return OK;
}
API(nvmlShutdown, void) { return inits ? (inits--, OK) : UNINITIALIZED; }
const char *nvmlErrorString(int rc);
const char *nvmlErrorString(int rc)
{
    return rc == NOT_FOUND ? "Not Found" : rc == UNKNOWN ? "Unknown Error" : "fake error";
}
API(nvmlSystemGetDriverVersion, char *v, unsigned len)
{
    snprintf(v, len, "%s", getenv("FAKE_NVML_DRIVER") ? getenv("FAKE_NVML_DRIVER") : "550.54.15");
    return OK;
}
API(nvmlDeviceGetCount_v2, unsigned *n) { if (!inits) return UNINITIALIZED; *n = ngpus; return OK; }
API(nvmlDeviceGetHandleByIndex_v2, unsigned i, nvmlDevice_t *d)
{
    if (!inits) return UNINITIALIZED;
    if (i >= ngpus) return INVALID;
    *d = &gpus[i];
    return OK;
}
API(nvmlDeviceGetHandleByPciBusId_v2, const char *id, nvmlDevice_t *d)
{
    unsigned dom = 0, bus, dev, fn;
    if (!inits) return UNINITIALIZED;
    if (sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4 && sscanf(id, "%x:%x.%x", &bus, &dev, &fn) != 3)
        return INVALID;
    for (unsigned i = 0; i < ngpus; i++)
        if (gpus[i].dom == dom && gpus[i].bus == bus && gpus[i].dev == dev && gpus[i].fn == fn)
            return *d = &gpus[i], OK;
    return NOT_FOUND;
}
API(nvmlDeviceGetIndex, nvmlDevice_t d, unsigned *i) { DEV(d); *i = (unsigned)di; return OK; }
API(nvmlDeviceGetName, nvmlDevice_t d, char *name, unsigned len)
{
    DEV(d);
    snprintf(name, len, "Fake A100 %lu", di);
    return OK;
}
API(nvmlDeviceGetPciInfo_v3, nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV(d);
    memset(p, 0, sizeof *p);
    snprintf(p->busId, sizeof p->busId, "%08x:%02x:%02x.%x", d->dom, d->bus, d->dev, d->fn);
    return OK;
}
API(nvmlDeviceGetUtilizationRates, nvmlDevice_t d, nvmlUtilization_t *u)
{
    DEV(d);
    u->gpu = 10 * (unsigned)(di + 1) + 10 * (unsigned)(d->util_k++ % 4);
    u->memory = u->gpu / 2;
    return OK;
}
API(nvmlDeviceGetMemoryInfo, nvmlDevice_t d, nvmlMemory_t *m)
{
    DEV(d);
    m->total = 40ULL << 30;
    m->used = (1024ULL * (di + 1) + 256ULL * (d->mem_k++ % 4)) << 20;
    m->free = m->total - m->used;
    return OK;
}
API(nvmlDeviceGetPowerUsage, nvmlDevice_t d, unsigned *mw)
{
    DEV(d);
    if (getenv("FAKE_NVML_NO_POWER")) return NOT_SUPPORTED;
    if (getenv("FAKE_NVML_POWER_W")) {
        d->power_k++;
        *mw = knob("FAKE_NVML_POWER_W", 0, 0) * 1000;
        return OK;
    }
    *mw = (100 + 50 * (unsigned)di + 25 * (unsigned)(d->power_k++ % 4)) * 1000;
    return OK;
}
#define LINK(name, field, dflt) \
    API(name, nvmlDevice_t d, unsigned *v) { DEV(d); *v = knob("FAKE_NVML_LINK", field, dflt); return OK; }
LINK(nvmlDeviceGetCurrPcieLinkGeneration, 0, 4)
LINK(nvmlDeviceGetMaxPcieLinkGeneration, 1, 4)
LINK(nvmlDeviceGetCurrPcieLinkWidth, 2, 16)
LINK(nvmlDeviceGetMaxPcieLinkWidth, 3, 16)
API(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDevice_t d, unsigned long long *r)
{
    DEV(d);
    *r = knob("FAKE_NVML_THROTTLE", 0, 1);
    return OK;
}
API(nvmlDeviceGetEnforcedPowerLimit, nvmlDevice_t d, unsigned *mw) { DEV(d); *mw = 400000; return OK; }
API(nvmlDeviceGetPowerManagementDefaultLimit, nvmlDevice_t d, unsigned *mw) { DEV(d); *mw = 400000; return OK; }
API(nvmlDeviceGetClockInfo, nvmlDevice_t d, int type, unsigned *mhz) { DEV(d); (void)type; *mhz = 1410; return OK; }
API(nvmlDeviceGetMaxClockInfo, nvmlDevice_t d, int type, unsigned *mhz) { DEV(d); (void)type; *mhz = 1410; return OK; }
API(nvmlDeviceGetTemperature, nvmlDevice_t d, int type, unsigned *c) { DEV(d); (void)type; *c = 35; return OK; }
API(nvmlDeviceGetTotalEnergyConsumption, nvmlDevice_t d, unsigned long long *mj)
{
    DEV(d);
    if (getenv("FAKE_NVML_NO_ENERGY")) return NOT_SUPPORTED;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    unsigned long long ms = (unsigned long long)t.tv_sec * 1000ULL + (unsigned long long)t.tv_nsec / 1000000ULL;
    *mj = 1000000ULL + knob("FAKE_NVML_POWER_W", 0, 100) * ms; /* P W = P mJ per ms */
    return OK;
}
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gi, ci; } nvmlProcessInfo_t;
API(nvmlDeviceGetComputeRunningProcesses_v3, nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *infos)
{
    DEV(d);
    const char *list = getenv("FAKE_NVML_PROCS");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    unsigned n = 0;
    for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
        if (n < *count) {
            memset(&infos[n], 0, sizeof infos[n]);
            infos[n].pid = !strcmp(t, "parent") ? (unsigned)getppid() : (unsigned)strtoul(t, NULL, 10);
            infos[n].usedGpuMemory = 1ULL << 30;
        }
        n++;
    }
    int rc = n > *count ? 7 : OK; /* NVML_ERROR_INSUFFICIENT_SIZE */
    *count = n;
    return rc;
}
