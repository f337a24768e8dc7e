/* SPDX-License-Identifier: BSD-3-Clause */
/* mpirun: Open MPI's launcher.  gpurun binds every rank itself, so Open MPI
 * is told not to (--bind-to none). */
#include "config.h"

#include <stdlib.h>

#include "launcher.h"
#include "util.h"

static int mpirun_available(gpurun_error_t *why)
{
    char *p = gpurun_which("mpirun");
    if (!p)
        return gpurun_err(why, GPURUN_EXIT_ENV, "mpirun was not found on PATH (Debian: openmpi-bin)");
    free(p);
    return 0;
}

static int mpirun_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                           gpurun_error_t *err)
{
    (void)err;
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "mpirun");
    gpurun_argv_addf(&a, "-np");
    gpurun_argv_addf(&a, "%d", req->nranks);
    gpurun_argv_add(&a, "--map-by");
    gpurun_argv_addf(&a, "ppr:%d:node", req->ranks_per_node);
    gpurun_argv_add(&a, "--bind-to");
    gpurun_argv_add(&a, "none");
    if (req->oversubscribe)
        gpurun_argv_add(&a, "--oversubscribe");
    /* Ranks on other nodes get only what -x names. */
    for (char *const *e = req->export_env; e && *e; e++) {
        gpurun_argv_add(&a, "-x");
        gpurun_argv_add(&a, *e);
    }
    gpurun_argv_add_rank_step(&a, req);
    out->count = 1;
    out->argv = gpurun_xcalloc(1, sizeof(char **));
    out->env = gpurun_xcalloc(1, sizeof(char **));
    out->argv[0] = a;
    out->env[0] = gpurun_argv_new();
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_mpirun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "mpirun",
    .summary = "Open MPI's mpirun (--bind-to none: gpurun binds)",
    .available = mpirun_available,
    .commands = mpirun_commands,
};
