/* SPDX-License-Identifier: BSD-3-Clause */
/* srun: Slurm's launcher, inside an allocation, with PMIx.  Slurm's own
 * binding is turned off (--cpu-bind=none): gpurun binds every rank. */
#include "config.h"

#include <stdlib.h>

#include "launcher.h"

static int srun_available(gpurun_error_t *why)
{
    if (!getenv("SLURM_JOB_ID"))
        return gpurun_err(why, GPURUN_EXIT_ENV,
                          "launcher = srun runs jobs inside a Slurm allocation and SLURM_JOB_ID is not set: "
                          "submit with gpurun submit JOB.conf, run inside salloc, or set launcher = \"auto\"");
    return gpurun_need_program("srun", NULL, why);
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
    for (char *const *o = req->launcher_args; o && *o; o++)
        gpurun_argv_add(&a, *o);
    gpurun_argv_add_rank_step(&a, req);
    gpurun_launch_cmds_one(out, a);
    /* srun's relayed signals reach every process of the step (Slurm signals
     * the whole step), the program too; its standard input goes to every
     * task: gpurun asks there. */
    out->stall_ask_stdin = 1;
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_srun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "srun",
    .summary = "Slurm's srun with PMIx, inside an allocation (--cpu-bind=none: gpurun binds)",
    .available = srun_available,
    .commands = srun_commands,
};
