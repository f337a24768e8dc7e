/* SPDX-License-Identifier: BSD-3-Clause */
/* PBS (OpenPBS, PBS Professional) as a resource manager (plugins/rm.h): its
 * jobs (PBS_JOBID, the hosts of PBS_NODEFILE), its launch command (run.c:
 * Open MPI's mpirun with the node file, or Cray PALS's mpiexec), the ranks'
 * identity (Open MPI's variables, which the rank step reads first, else
 * PALS_RANKID), its word for a job it killed at its walltime (job.c: in the
 * job's standard error), batch scripts (batch.c) submitted with qsub, job
 * arrays (PBS_ARRAY_INDEX), and its line in gpurun doctor. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbs_common.h"

#define QSUB_OUT_MAX 4096 /* qsub prints the job id: "12.server" or "12[].server" */

static int pbs_allocation(struct gpurun_rm_alloc *a)
{
    const char *job = getenv("PBS_JOBID");
    if (!job || !*job)
        return 0;
    struct pbs_nodes nodes;
    char why[256];
    if (pbs_nodefile_read(getenv("PBS_NODEFILE"), &nodes, why, sizeof why) == 0)
        snprintf(a->job, sizeof a->job, "PBS job %.80s: %d host%s, %ld MPI slot%s", job, nodes.hosts,
                 nodes.hosts == 1 ? "" : "s", nodes.slots, nodes.slots == 1 ? "" : "s");
    else
        snprintf(a->job, sizeof a->job, "PBS job %.80s (node file: %.40s)", job, why);
    snprintf(a->where, sizeof a->where, "PBS job %.180s", job);
    /* PBS's cgroups hook confines the job to its cores; without it the job
     * may use every core, and a process bound to all narrows nothing. */
    a->cpus_bound = true;
    /* The cgroups hook names the job's GPUs to the runtime only
     * (CUDA_VISIBLE_DEVICES), which gpurun reads anyway. */
    a->has_gpus = false;
    a->nodes = nodes.hosts;
    return 1;
}

/* mom writes why it killed a job to the job's standard error, not to the
 * launcher's output (nor is a lost sister mom said anywhere the job sees:
 * mpirun's lost daemon makes the rank steps' hosts lost, as for any
 * launcher). */
static enum gpurun_rm_end pbs_ended(const char *out)
{
    (void)out;
    return pbs_walltime_killed() ? GPURUN_RM_END_TIME_LIMIT : GPURUN_RM_END_NONE;
}

/* `qsub` with the script on its standard input (it reads one from there
 * when given no file): it prints the job id, "12.server" ("12[].server" for
 * an array). */
static int pbs_submit(int script_fd, const char *script, char *said, size_t saidlen, gpurun_error_t *err)
{
    char *argv[] = {"qsub", NULL};
    char *out;
    if (gpurun_rm_submit_tool(argv, script_fd, QSUB_OUT_MAX, "qsub", "a PBS system (PBS_EXEC/bin on PATH)", "PBS",
                              script, &out, err) < 0)
        return -1;
    const char *p;
    size_t idlen = gpurun_rm_job_id(out, " \t\r\n", GPURUN_RM_ID_ASCII, 128, &p);
    if (!idlen) {
        free(out);
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: qsub printed no job id; the batch script is at %s", script);
    }
    snprintf(said, saidlen, "%.*s", (int)idlen, p);
    free(out);
    return 0;
}

/* "select 2:ncpus=8:mpiprocs=8 (16 MPI processes, 0 GPUs)" of qstat -f's
 * Resource_List.select line, into buf. */
static void describe_select(const char *line, char *buf, size_t len)
{
    const char *v = strstr(line, "= ");
    v = v ? v + 2 : line;
    struct pbs_chunk c[PBS_CHUNKS_MAX];
    size_t n = 0;
    char why[128];
    if (pbs_select_parse(v, c, PBS_CHUNKS_MAX, &n, why, sizeof why) < 0) {
        snprintf(buf, len, "select %.200s (%s)", v, why);
        return;
    }
    long procs = 0, gpus = 0;
    for (size_t i = 0; i < n; i++) {
        procs += c[i].count * (c[i].mpiprocs >= 0 ? c[i].mpiprocs : 1);
        gpus += c[i].count * (c[i].ngpus > 0 ? c[i].ngpus : 0);
    }
    snprintf(buf, len, "select %.200s (%zu chunk%s: %ld MPI process%s, %ld GPU%s)", v, n, n == 1 ? "" : "s", procs,
             procs == 1 ? "" : "es", gpus, gpus == 1 ? "" : "s");
}

static void pbs_doctor(const struct gpurun_rm_doctor *d)
{
    char version[256], sel[512], detail[400];
    char *v[] = {"qstat", "--version", NULL};
    int st = d->tool_line(d->ctx, v, "pbs_version", version, sizeof version);
    if (st < 0) {
        gpurun_rm_check(d, "pbs", "PBS", 0, NULL, "not installed; only launcher = pbs and gpurun submit to PBS need it");
        return;
    }
    if (st != 0) {
        gpurun_rm_check(d, "pbs", "PBS", 1, "check the qstat on PATH (PBS_EXEC/bin; an OpenPBS build: scripts/install-pbs.sh)",
              "qstat --version does not work: %s", version);
        return;
    }
    const char *num = strstr(version, "= ") ? strstr(version, "= ") + 2 : version;
    const char *job = getenv("PBS_JOBID");
    if (!job || !*job) {
        gpurun_rm_check(d, "pbs", "PBS", 0, NULL, "PBS %s (qsub); not inside a job: gpurun submit or qsub -I gives one", num);
        return;
    }
    struct pbs_nodes nodes;
    if (pbs_nodefile_read(getenv("PBS_NODEFILE"), &nodes, detail, sizeof detail) < 0) {
        gpurun_rm_check(d, "pbs", "PBS", 1, "run gpurun inside the job's own shell, where PBS sets PBS_NODEFILE", "PBS %s; job %s: %s", num,
              job, detail);
        return;
    }
    char *q[] = {"qstat", "-f", (char *)job, NULL};
    if (d->tool_line(d->ctx, q, "Resource_List.select", sel, sizeof sel) == 0 && strstr(sel, "Resource_List.select"))
        describe_select(sel, detail, sizeof detail);
    else
        snprintf(detail, sizeof detail, "select statement not known (qstat -f %.100s: %.200s)", job, sel);
    gpurun_rm_check(d, "pbs", "PBS", 0, NULL, "PBS %s; inside job %s: %d host%s, %ld MPI slot%s (%s); %s; launch: %s", num, job, nodes.hosts,
          nodes.hosts == 1 ? "" : "s", nodes.slots, nodes.slots == 1 ? "" : "s", getenv("PBS_NODEFILE"), detail,
          pbs_mpiexec_is_pals() ? "Cray PALS mpiexec" : "mpirun with the node file");
}

static const char *const pbs_task_env[] = {"PBS_*", "PALS_*", NULL};

const gpurun_rm_plugin_t gpurun_rm_pbs = {
    .abi = GPURUN_RM_ABI,
    .name = "pbs",
    .title = "PBS",
    .summary = "PBS: mpirun with the job's node file (or Cray PALS mpiexec) inside a job, qsub for gpurun submit",
    .launcher = &gpurun_launcher_pbs,
    /* Open MPI's OMPI_COMM_WORLD_RANK comes first in the rank step; these
     * are PALS's. */
    .rank_var = "PALS_RANKID",
    .local_rank_var = "PALS_LOCAL_RANKID",
    .task_env = pbs_task_env,
    .allocation = pbs_allocation,
    .ended = pbs_ended,
    .batch_script = pbs_batch_script,
    .script_suffix = "pbs",
    .submit_command = "qsub",
    .submit = pbs_submit,
    .doctor = pbs_doctor,
    .array_task_var = "PBS_ARRAY_INDEX",
    .submit_help = "#PBS lines: -l select chunks for the layout, -l walltime, -q for the site's\n"
                   "partition, -A for its account, and the job's pbs {} keys.\n",
};
