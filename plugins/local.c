/* SPDX-License-Identifier: BSD-3-Clause */
/* local: gpurun starts the ranks itself, on this node only (no MPI
 * launcher; an MPI program started this way runs as singletons). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "launcher.h"
#include "util.h"

static int local_available(gpurun_error_t *why)
{
    (void)why;
    return 0;
}

static int local_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                          gpurun_error_t *err)
{
    if (req->nodes > 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "the local launcher runs on this node only; nodes = %d needs mpirun or srun", req->nodes);
    out->count = req->nranks;
    out->argv = gpurun_xcalloc((size_t)req->nranks, sizeof(char **));
    out->env = gpurun_xcalloc((size_t)req->nranks, sizeof(char **));
    for (int r = 0; r < req->nranks; r++) {
        out->argv[r] = gpurun_argv_new();
        gpurun_argv_add_rank_step(&out->argv[r], req);
        /* The rank step learns its rank from these, as it would from mpirun or srun. */
        out->env[r] = gpurun_argv_new();
        gpurun_argv_addf(&out->env[r], "GPURUN_LAUNCH_RANK=%d", r);
        gpurun_argv_addf(&out->env[r], "GPURUN_LAUNCH_LOCAL_RANK=%d", r);
        gpurun_argv_addf(&out->env[r], "GPURUN_LAUNCH_SIZE=%d", req->nranks);
        /* gpurun starts it: it dies with gpurun, as it checks itself */
        gpurun_argv_addf(&out->env[r], "GPURUN_LAUNCH_PARENT=%ld", (long)getpid());
    }
    out->stall_relay = SIGUSR1; /* the launcher is the rank step */
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_local = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "local",
    .summary = "gpurun starts the ranks itself on this node",
    .available = local_available,
    .commands = local_commands,
};
