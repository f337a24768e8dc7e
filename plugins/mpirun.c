/* SPDX-License-Identifier: BSD-3-Clause */
/* mpirun: Open MPI's launcher.  gpurun binds every rank itself, so Open MPI
 * is told not to (--bind-to none). */
#include "config.h"

#include "launcher.h"

static int mpirun_available(gpurun_error_t *why)
{
    return gpurun_need_program("mpirun", "Debian: openmpi-bin", why);
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
    gpurun_launch_cmds_one(out, a);
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_mpirun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "mpirun",
    .summary = "Open MPI's mpirun (--bind-to none: gpurun binds)",
    .available = mpirun_available,
    .commands = mpirun_commands,
};
