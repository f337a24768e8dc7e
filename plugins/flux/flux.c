/* SPDX-License-Identifier: BSD-3-Clause */
/* Flux as a resource manager (plugins/rm.h): its instances (FLUX_URI: one
 * given by flux alloc or flux batch, or started with flux start, also
 * inside a Slurm allocation, which makes it the inner one), its tasks'
 * ranks (FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID), flux run as its launch command
 * (run.c), its word for a job it ended (an exception of type timeout or
 * node-failure), batch scripts (batch.c) submitted with flux batch, and its
 * line in gpurun doctor. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flux_common.h"

#define BATCH_OUT_MAX 4096 /* flux batch prints the job id */

static int flux_allocation(struct gpurun_rm_alloc *a)
{
    const char *uri = getenv("FLUX_URI"), *job = getenv("FLUX_JOB_ID");
    if (!uri || !*uri)
        return 0;
    /* In a batch script or flux alloc, the instance is the allocation: the
     * job that holds it is FLUX_JOB_ID. */
    if (job && *job)
        snprintf(a->job, sizeof a->job, "Flux job %.100s", job);
    else
        snprintf(a->job, sizeof a->job, "Flux instance %.140s", uri);
    snprintf(a->where, sizeof a->where, "Flux instance %.180s", uri);
    /* The job shell binds an instance's broker to its cores; a process
     * bound to every core narrows nothing. */
    a->cpus_bound = true;
    /* Flux names a job's GPUs to the runtime only (CUDA_VISIBLE_DEVICES),
     * which gpurun reads anyway. */
    a->has_gpus = false;
    const char *nodes = getenv("FLUX_JOB_NNODES");
    a->nodes = nodes ? atoi(nodes) : 0;
    return 1;
}

/* flux run's word for an exception ("0.3s: job.exception f2Ab type=timeout
 * severity=0 resource allocation expired"); node-failure and lost-shell
 * are a node lost. */
static enum gpurun_rm_end flux_ended(const char *out)
{
    static const char *const said[][GPURUN_RM_LINE_WORDS] = {{"job.exception ", " type=timeout "},
                                                             {"job.exception ", " type=node-failure "},
                                                             {"job.exception ", " type=lost-shell "}};
    static const enum gpurun_rm_end as[] = {GPURUN_RM_END_TIME_LIMIT, GPURUN_RM_END_NODE_FAILURE,
                                            GPURUN_RM_END_NODE_FAILURE};
    int r = gpurun_rm_output_says(out, said, sizeof as / sizeof *as);
    return r < 0 ? GPURUN_RM_END_NONE : as[r];
}

/* `flux batch` with the script on its standard input (it reads one from
 * there when given none): it prints the job id. */
static int flux_submit(int script_fd, const char *script, char *said, size_t saidlen, gpurun_error_t *err)
{
    char *argv[] = {"flux", "batch", NULL};
    char *out;
    if (gpurun_rm_submit_tool(argv, script_fd, BATCH_OUT_MAX, "flux batch", "a Flux system", "Flux", script, &out,
                              err) < 0)
        return -1;
    /* A job id: "f" or "ƒ" and base 58, or decimal, hex, words: one word
     * of printable bytes. */
    const char *p;
    size_t idlen = gpurun_rm_job_id(out, " \t\r\n", GPURUN_RM_ID_UTF8, 64, &p);
    if (!idlen) {
        gpurun_err(err, GPURUN_EXIT_ENV, "submit: flux batch printed no job id; the batch script is at %s",
                   script);
        free(out);
        return -1;
    }
    snprintf(said, saidlen, "%.*s", (int)idlen, p);
    free(out);
    return 0;
}

static void flux_doctor(const struct gpurun_rm_doctor *d)
{
    char version[256], size[64];
    char *v[] = {"flux", "version", NULL};
    int st = d->tool_line(d->ctx, v, "commands:", version, sizeof version);
    if (st < 0) {
        gpurun_rm_check(d, "flux", "Flux", 0, NULL, "not installed; only launcher = flux and gpurun submit to Flux need it");
        return;
    }
    if (st != 0) {
        gpurun_rm_check(d, "flux", "Flux", 1, "check the flux on PATH (flux version must work; a build of flux-core: scripts/install-flux.sh)",
              "flux version does not work: %s", version);
        return;
    }
    const char *num = strncmp(version, "commands:", 9) ? version : version + 9 + strspn(version + 9, " \t");
    const char *uri = getenv("FLUX_URI");
    if (!uri || !*uri) {
        gpurun_rm_check(d, "flux", "Flux", 0, NULL, "flux-core %s (flux run, flux batch); not inside an instance: flux alloc, flux start or "
              "gpurun submit gives one", num);
        return;
    }
    char *s[] = {"flux", "getattr", "size", NULL};
    if (d->tool_line(d->ctx, s, NULL, size, sizeof size) != 0) {
        gpurun_rm_check(d, "flux", "Flux", 1, "check that the instance is up (flux uptime) or unset a stale FLUX_URI",
              "flux-core %s; FLUX_URI=%s, but the instance does not answer: %s", num, uri, size);
        return;
    }
    const char *slurm = getenv("SLURM_JOB_ID");
    gpurun_rm_check(d, "flux", "Flux", 0, NULL, "flux-core %s; inside instance %s (%s broker%s)%s%s%s", num, uri, size,
          strcmp(size, "1") ? "s" : "", slurm ? ", started in Slurm allocation " : "", slurm ? slurm : "",
          slurm ? ": auto picks flux, the inner one" : "");
}

static const char *const flux_task_env[] = {"FLUX_*", NULL};

const gpurun_rm_plugin_t gpurun_rm_flux = {
    .abi = GPURUN_RM_ABI,
    .name = "flux",
    .title = "Flux",
    .summary = "Flux: flux run inside an instance, flux batch for gpurun submit",
    .launcher = &gpurun_launcher_flux,
    .rank_var = "FLUX_TASK_RANK",
    .local_rank_var = "FLUX_TASK_LOCAL_ID",
    .task_env = flux_task_env,
    .nests = true, /* flux start inside a Slurm allocation */
    .allocation = flux_allocation,
    .ended = flux_ended,
    .batch_script = flux_batch_script,
    .script_suffix = "flux",
    .submit_command = "flux batch",
    .submit = flux_submit,
    .doctor = flux_doctor,
    .submit_help = "#flux: lines for whole nodes, a slot per rank, the time limit and the job's\n"
                   "flux {} keys; the site's partition is the queue, its account the bank.\n",
};
