/* SPDX-License-Identifier: BSD-3-Clause */
/* flux: Flux's launcher, `flux run` inside a Flux instance (one started with
 * flux alloc, flux batch or flux start, also inside a Slurm allocation).
 * Flux's own binding is turned off (-o cpu-affinity=off: it would pin each
 * task to the cores of its slot; -o gpu-affinity=off: it would set
 * CUDA_VISIBLE_DEVICES, to "-1" for a task given no GPU): gpurun binds
 * every rank.  Whole nodes (--exclusive), ranks_per_node on each
 * (--tasks-per-node, which places that many tasks whatever the cores, as
 * oversubscribe allows); the submitter's environment goes with the job, as
 * `flux run` does by default.  PMI: Flux's simple PMI (its default), which
 * Open MPI 4's pmix/flux component and MPICH read. */
#include "config.h"

#include <stdlib.h>

#include "flux_common.h"

static int flux_available(gpurun_error_t *why)
{
    const char *uri = getenv("FLUX_URI");
    if (!uri || !*uri)
        return gpurun_err(why, GPURUN_EXIT_ENV,
                          "launcher = flux runs jobs inside a Flux instance and FLUX_URI is not set: submit with "
                          "gpurun submit JOB.conf, run inside flux alloc (or flux start), or set launcher = "
                          "\"auto\"");
    return gpurun_need_program("flux", "flux-core: scripts/install-flux.sh builds it", why);
}

static int flux_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                         gpurun_error_t *err)
{
    (void)err;
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "flux");
    gpurun_argv_add(&a, "run");
    gpurun_argv_addf(&a, "--nodes=%d", req->nodes);
    gpurun_argv_addf(&a, "--tasks-per-node=%d", req->ranks_per_node);
    gpurun_argv_add(&a, "--exclusive");
    gpurun_argv_add(&a, "-o");
    gpurun_argv_add(&a, "cpu-affinity=off");
    gpurun_argv_add(&a, "-o");
    gpurun_argv_add(&a, "gpu-affinity=off");
    /* Its input passed on at once (gpurun asks a stall there), its output
     * still a line at a time. */
    gpurun_argv_add(&a, "-u");
    gpurun_argv_add(&a, "-o");
    gpurun_argv_add(&a, "output.stdout.buffer.type=line");
    gpurun_argv_add(&a, "-o");
    gpurun_argv_add(&a, "output.stderr.buffer.type=line");
    for (char *const *o = req->launcher_args; o && *o; o++)
        gpurun_argv_add(&a, *o);
    gpurun_argv_add_rank_step(&a, req);
    gpurun_launch_cmds_one(out, a);
    out->stall_ask_stdin = 1; /* flux run relays no signal; its standard input goes to every task */
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_flux = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "flux",
    .summary = "Flux's flux run, inside a Flux instance (-o cpu-affinity=off, gpu-affinity=off: gpurun binds)",
    .available = flux_available,
    .commands = flux_commands,
};
