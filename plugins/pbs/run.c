/* SPDX-License-Identifier: BSD-3-Clause */
/* pbs: PBS's launcher, inside a PBS job.  Where `mpiexec` is Cray PALS's
 * (HPE Cray EX), `mpiexec -n N --ppn R --cpu-bind none`: PALS knows the
 * job's hosts, and binds nothing when told so.  Elsewhere the mpirun
 * launcher (Open MPI's, or Hydra's) with the job's node file as its host
 * file (-machinefile, which both take): OpenPBS sites' Open MPI is often
 * built without PBS's TM interface, and the node file is what PBS gave the
 * job either way; the mpirun launcher turns the MPI's own binding off.
 * gpurun's rank step binds every rank. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "pbs_common.h"

/* The launcher PBS's is built on, by its name (plugin_support.h). */
static const gpurun_launcher_plugin_t *mpirun_launcher(gpurun_error_t *why)
{
    const gpurun_launcher_plugin_t *p = NULL;
    return gpurun_launcher_named("mpirun", &p, why) < 0 ? NULL : p;
}

static int pbs_available(gpurun_error_t *why)
{
    const char *job = getenv("PBS_JOBID"), *nodefile = getenv("PBS_NODEFILE");
    if (!job || !*job || !nodefile || !*nodefile)
        return gpurun_err(why, GPURUN_EXIT_ENV,
                          "launcher = pbs runs jobs inside a PBS job and %s is not set: submit with gpurun submit "
                          "JOB.conf, run inside qsub -I, or set launcher = \"auto\"",
                          !job || !*job ? "PBS_JOBID" : "PBS_NODEFILE");
    if (pbs_mpiexec_is_pals())
        return 0;
    const gpurun_launcher_plugin_t *mpirun = mpirun_launcher(why);
    return mpirun ? mpirun->available(why) : -1;
}

static int pals_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out)
{
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "mpiexec");
    gpurun_argv_add(&a, "-n");
    gpurun_argv_addf(&a, "%d", req->nranks);
    gpurun_argv_add(&a, "--ppn");
    gpurun_argv_addf(&a, "%d", req->ranks_per_node);
    gpurun_argv_add(&a, "--cpu-bind");
    gpurun_argv_add(&a, "none");
    for (char *const *o = req->launcher_args; o && *o; o++)
        gpurun_argv_add(&a, *o);
    gpurun_argv_add_rank_step(&a, req);
    gpurun_launch_cmds_one(out, a);
    return 0;
}

static int pbs_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out, gpurun_error_t *err)
{
    if (pbs_mpiexec_is_pals())
        return pals_commands(req, out);
    const char *nodefile = getenv("PBS_NODEFILE");
    if (!nodefile || nodefile[0] != '/')
        return gpurun_err(err, GPURUN_EXIT_ENV, "launcher = pbs: PBS_NODEFILE is %s",
                          nodefile ? "not an absolute path" : "not set");
    const gpurun_launcher_plugin_t *mpirun = mpirun_launcher(err);
    if (!mpirun || mpirun->commands(req, out, err) < 0)
        return -1;
    /* mpirun's own argv, with the host file after the program name. */
    char **old = out->argv[0], **a = gpurun_argv_new();
    gpurun_argv_add(&a, old[0]);
    gpurun_argv_add(&a, "-machinefile");
    gpurun_argv_add(&a, nodefile);
    for (size_t i = 1; old[i]; i++)
        gpurun_argv_add(&a, old[i]);
    gpurun_argv_free(old);
    out->argv[0] = a;
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_pbs = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "pbs",
    .summary = "inside a PBS job: mpirun -machinefile $PBS_NODEFILE --bind-to none, or Cray PALS mpiexec --cpu-bind "
               "none (gpurun binds)",
    .available = pbs_available,
    .commands = pbs_commands,
};
