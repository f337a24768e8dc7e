/* SPDX-License-Identifier: BSD-3-Clause */
/* Plugins in a shared object, for the loader's tests (tests/test_monitor.c
 * builds this with cc): a monitor and a launcher, both "fake".  It calls
 * nothing of gpurun's: a test program exports no symbols to call back into.
 * -DFAKE_ABI_DELTA=1 builds them for an interface version gpurun lacks. */
#include "launcher.h"
#include "monitor.h"

#ifndef FAKE_ABI_DELTA
#define FAKE_ABI_DELTA 0
#endif

static int fake_available(gpurun_error_t *why)
{
    (void)why;
    return 0;
}

static int fake_start(const char *const *gpus, int ngpus, double interval_s, gpurun_monitor_t **monp,
                      gpurun_error_t *err)
{
    (void)gpus, (void)ngpus, (void)interval_s, (void)monp, (void)err;
    return -1;
}

static int fake_stop(gpurun_monitor_t *mon, struct gpurun_monitor_result *out)
{
    (void)mon, (void)out;
    return -1;
}

static int fake_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                         gpurun_error_t *err)
{
    (void)req, (void)out, (void)err;
    return -1;
}

const gpurun_monitor_plugin_t gpurun_monitor_plugin = {
    .abi = GPURUN_MONITOR_ABI + FAKE_ABI_DELTA,
    .name = "fake",
    .summary = "a monitor for the loader's tests",
    .available = fake_available,
    .start = fake_start,
    .stop = fake_stop,
};

const gpurun_launcher_plugin_t gpurun_launcher_plugin = {
    .abi = GPURUN_LAUNCHER_ABI + FAKE_ABI_DELTA,
    .name = "fake",
    .summary = "a launcher for the loader's tests",
    .available = fake_available,
    .commands = fake_commands,
};
