/* SPDX-License-Identifier: BSD-3-Clause */
/* srun: Slurm's launcher, inside an allocation, with PMIx.  Slurm's own
 * binding is turned off (--cpu-bind=none): gpurun binds every rank. */
#include "config.h"

#include <stdlib.h>

#include "launcher.h"
#include "util.h"

static int srun_available(gpurun_error_t *why)
{
    if (!getenv("SLURM_JOB_ID"))
        return gpurun_err(why, GPURUN_EXIT_ENV,
                          "launcher = srun runs jobs inside a Slurm allocation and SLURM_JOB_ID is not set: "
                          "submit with gpurun submit JOB.conf, run inside salloc, or set launcher = \"auto\"");
    char *p = gpurun_which("srun");
    if (!p)
        return gpurun_err(why, GPURUN_EXIT_ENV, "srun was not found on PATH");
    free(p);
    return 0;
}

static int srun_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                         gpurun_error_t *err)
{
    (void)err;
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "srun");
    gpurun_argv_add(&a, "--mpi=pmix");
    gpurun_argv_addf(&a, "--nodes=%d", req->nodes);
    gpurun_argv_addf(&a, "--ntasks=%d", req->nranks);
    gpurun_argv_addf(&a, "--ntasks-per-node=%d", req->ranks_per_node);
    gpurun_argv_add(&a, "--cpu-bind=none");
    if (req->oversubscribe)
        gpurun_argv_add(&a, "--overcommit");
    gpurun_argv_add(&a, "--kill-on-bad-exit=1");
    gpurun_argv_add(&a, "--export=ALL");
    gpurun_argv_add_rank_step(&a, req);
    out->count = 1;
    out->argv = gpurun_xcalloc(1, sizeof(char **));
    out->env = gpurun_xcalloc(1, sizeof(char **));
    out->argv[0] = a;
    out->env[0] = gpurun_argv_new();
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_srun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "srun",
    .summary = "Slurm's srun with PMIx, inside an allocation (--cpu-bind=none: gpurun binds)",
    .available = srun_available,
    .commands = srun_commands,
};
