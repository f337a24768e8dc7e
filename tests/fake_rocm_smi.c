/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake librocm_smi64.so for the tests (built by `make check` as
 * tests/fake-rocm-smi/librocm_smi64.so.7; gpurun loads it through
 * GPURUN_ROCM_SMI_LIBRARY).  Its GPUs are those of FAKE_RSMI_DEVICES
 * ("0000:c1:00.0,0000:c6:00.0", default one GPU at 0000:c1:00.0), each
 * FAKE_RSMI_PARTITIONS times (default 1; more: ROCm SMI devices that share
 * the PCI address, the partition's number in bits 31-28 of the BDF id, as
 * on an MI300X in CPX mode).  Device d (in that order) reads:
 *   busy       40 + 10 d %,   VRAM used  2048 (d + 1) MiB,
 *   power      FAKE_RSMI_POWER_W (default 300) W, and an energy counter
 *              in ticks of 15.3 uJ that advances at that power on
 *              CLOCK_MONOTONIC (shared by every process of the machine).
 * FAKE_RSMI_IDLE_ODD=1: odd devices read 0 W and their counter stands
 * still (an MI250X's second GCD); FAKE_RSMI_NO_ENERGY=1: the counter is
 * not supported; FAKE_RSMI_INIT_FAIL=1: rsmi_init fails;
 * FAKE_RSMI_INIT_LOG=FILE: rsmi_init writes the flags it was given there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { OK = 0, INVALID_ARGS = 1, NOT_SUPPORTED = 2, INIT_ERROR = 8, UNKNOWN = 0x7fffffff };
#define RESOLUTION_UJ 15.3f

static uint64_t bdf[64];
static unsigned ndev, inits;

#define API(ret, name, ...) ret name(__VA_ARGS__); ret name(__VA_ARGS__)
#define DEV(d) if (!inits) return INIT_ERROR; if ((d) >= ndev) return INVALID_ARGS

static double watts(void)
{
    const char *s = getenv("FAKE_RSMI_POWER_W");
    return s && *s ? strtod(s, NULL) : 300.0;
}
static int idle(uint32_t d)
{
    return getenv("FAKE_RSMI_IDLE_ODD") && (d & 1);
}

API(int, rsmi_init, uint64_t flags)
{
    const char *log = getenv("FAKE_RSMI_INIT_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "0x%llx\n", (unsigned long long)flags);
        fclose(f);
    }
    if (getenv("FAKE_RSMI_INIT_FAIL"))
        return INIT_ERROR;
    if (inits++)
        return OK;
    const char *list = getenv("FAKE_RSMI_DEVICES");
    const char *parts = getenv("FAKE_RSMI_PARTITIONS");
    unsigned np = parts && *parts ? (unsigned)strtoul(parts, NULL, 10) : 1;
    if (np < 1 || np > 8)
        np = 1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list ? list : "0000:c1:00.0");
    ndev = 0;
    for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s)) {
        unsigned dom, bus, dev, fn;
        if (sscanf(t, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
            continue;
        for (unsigned p = 0; p < np && ndev < 64; p++)
            bdf[ndev++] = ((uint64_t)dom << 32) | ((uint64_t)p << 28) | (bus << 8) | (dev << 3) | fn;
    }
    return OK;
}
API(int, rsmi_shut_down, void) { return inits ? (inits--, OK) : INIT_ERROR; }
API(int, rsmi_status_string, int rc, const char **s)
{
    *s = rc == NOT_SUPPORTED ? "RSMI_STATUS_NOT_SUPPORTED: This function is not supported in the current environment."
         : rc == INIT_ERROR  ? "RSMI_STATUS_INIT_ERROR: An error occurred during initialization"
                             : "RSMI_STATUS_UNKNOWN_ERROR";
    return OK;
}
API(int, rsmi_num_monitor_devices, uint32_t *n)
{
    if (!inits)
        return INIT_ERROR;
    *n = ndev;
    return OK;
}
API(int, rsmi_dev_pci_id_get, uint32_t d, uint64_t *id)
{
    DEV(d);
    *id = bdf[d];
    return OK;
}
API(int, rsmi_dev_name_get, uint32_t d, char *name, size_t len)
{
    DEV(d);
    snprintf(name, len, "%s", getenv("FAKE_RSMI_NAME") ? getenv("FAKE_RSMI_NAME") : "AMD Instinct MI250X");
    return OK;
}
API(int, rsmi_dev_busy_percent_get, uint32_t d, uint32_t *busy)
{
    DEV(d);
    *busy = 40 + 10 * d;
    return OK;
}
API(int, rsmi_dev_memory_usage_get, uint32_t d, int type, uint64_t *used)
{
    DEV(d);
    if (type != 0)
        return NOT_SUPPORTED;
    *used = 2048ULL * (d + 1) * 1024 * 1024;
    return OK;
}
API(int, rsmi_dev_power_get, uint32_t d, uint64_t *uw, int *kind)
{
    DEV(d);
    *uw = idle(d) ? 0 : (uint64_t)(watts() * 1e6);
    *kind = 1; /* RSMI_CURRENT_POWER */
    return OK;
}
API(int, rsmi_dev_power_ave_get, uint32_t d, uint32_t sensor, uint64_t *uw)
{
    int kind;
    (void)sensor;
    return rsmi_dev_power_get(d, uw, &kind);
}
API(int, rsmi_dev_energy_count_get, uint32_t d, uint64_t *ticks, float *res, uint64_t *ts)
{
    DEV(d);
    if (getenv("FAKE_RSMI_NO_ENERGY"))
        return NOT_SUPPORTED;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double secs = (double)t.tv_sec + (double)t.tv_nsec / 1e9;
    /* A counter that did not start at 0: a GPU up for a while. */
    *ticks = idle(d) ? 123456789ULL : 1000000000ULL + (uint64_t)(watts() * secs / (RESOLUTION_UJ * 1e-6));
    if (res)
        *res = RESOLUTION_UJ;
    *ts = (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
    return OK;
}
API(int, rsmi_dev_power_cap_get, uint32_t d, uint32_t sensor, uint64_t *uw)
{
    DEV(d);
    (void)sensor;
    *uw = 560000000ULL;
    return OK;
}
API(int, rsmi_dev_power_cap_default_get, uint32_t d, uint64_t *uw)
{
    DEV(d);
    *uw = 560000000ULL;
    return OK;
}
API(int, rsmi_dev_temp_metric_get, uint32_t d, uint32_t sensor, uint32_t metric, int64_t *mc)
{
    DEV(d);
    if (sensor != 1 || metric != 0) /* junction, current: MI200 has no edge sensor */
        return NOT_SUPPORTED;
    *mc = 55000;
    return OK;
}
API(int, rsmi_version_str_get, int component, char *s, uint32_t len)
{
    if (component != 0)
        return NOT_SUPPORTED;
    snprintf(s, len, "6.8.5");
    return OK;
}
