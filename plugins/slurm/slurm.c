/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm as a resource manager (plugins/rm.h): its allocations (SLURM_JOB_ID,
 * the GPUs it names in SLURM_STEP_GPUS / SLURM_JOB_GPUS, the cores it
 * confines the batch step to), its tasks' ranks (SLURM_PROCID,
 * SLURM_LOCALID), srun as its launch command (srun.c), its word for a step it
 * cancelled, batch scripts (sbatch.c) submitted with sbatch, and its lines
 * in gpurun doctor (srun, sbatch, PMIx for srun --mpi=pmix). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rm.h"
#include "slurm_common.h"

#define SBATCH_OUT_MAX 4096 /* `sbatch --parsable` prints "ID[;CLUSTER]" */

static int slurm_allocation(struct gpurun_rm_alloc *a)
{
    const char *job = getenv("SLURM_JOB_ID");
    if (!job)
        return 0;
    snprintf(a->job, sizeof a->job, "Slurm job %s", job);
    snprintf(a->where, sizeof a->where, "Slurm allocation %s", job);
    /* Slurm's task/affinity or task/cgroup confines the batch step to the
     * allocated cores. */
    a->cpus_bound = true;
    const char *gpus = getenv("SLURM_STEP_GPUS");
    if (!gpus || !*gpus)
        gpus = getenv("SLURM_JOB_GPUS");
    a->has_gpus = gpus != NULL;
    snprintf(a->gpus, sizeof a->gpus, "%s", gpus ? gpus : "");
    snprintf(a->gpus_from, sizeof a->gpus_from, "Slurm GPUs");
    const char *nodes = getenv("SLURM_JOB_NUM_NODES");
    a->nodes = nodes ? atoi(nodes) : 0;
    return 1;
}

/* pyxis loaded: srun --help lists --container-image (its SPANK option). */
static bool slurm_pyxis_ready(const char *srun, char *why, size_t len)
{
    char *argv[] = {(char *)srun, "--help", NULL}, *out = NULL;
    int status, errnum;
    bool ready = gpurun_rm_query(argv, 30, 65536, &out, &status, &errnum) == 0 && out &&
                 strstr(out, "--container-image");
    free(out);
    if (!ready && why)
        snprintf(why, len, "%s --help lists no --container-image, so the pyxis plugin is not loaded here", srun);
    return ready;
}

/* One srun task per node, outside the image (no --container-image). */
static void slurm_pyxis_per_node(char ***argv, int nodes)
{
    gpurun_argv_add(argv, "srun");
    gpurun_argv_add(argv, "--mpi=none");
    gpurun_argv_addf(argv, "--nodes=%d", nodes);
    gpurun_argv_addf(argv, "--ntasks=%d", nodes);
    gpurun_argv_add(argv, "--ntasks-per-node=1");
    gpurun_argv_add(argv, "--cpu-bind=none");
    gpurun_argv_add(argv, "--kill-on-bad-exit=1");
    gpurun_argv_add(argv, "--export=ALL");
}

/* NVIDIA's pyxis SPANK plugin (and enroot): srun enters the image before
 * each task starts. */
static const struct gpurun_rm_container slurm_pyxis = {
    .runtime = "pyxis",
    .option = "--container-image",
    .install = "pyxis and enroot (https://github.com/NVIDIA/pyxis) in Slurm's plugstack.conf",
    .outside = "no SLURM_JOB_ID",
    .ready = slurm_pyxis_ready,
    .per_node = slurm_pyxis_per_node,
};

/* slurmstepd's words through srun ("*** STEP 12.0 ON h1 CANCELLED AT ...
 * DUE TO TIME LIMIT ***", "... DUE TO NODE FAILURE, ..."). */
static enum gpurun_rm_end slurm_ended(const char *out)
{
    static const char *const said[][GPURUN_RM_LINE_WORDS] = {{" CANCELLED AT ", " DUE TO TIME LIMIT"},
                                                             {" CANCELLED AT ", " DUE TO NODE FAILURE"}};
    static const enum gpurun_rm_end as[] = {GPURUN_RM_END_TIME_LIMIT, GPURUN_RM_END_NODE_FAILURE};
    int r = gpurun_rm_output_says(out, said, sizeof as / sizeof *as);
    return r < 0 ? GPURUN_RM_END_NONE : as[r];
}

/* `sbatch --parsable` with the script on its standard input (sbatch reads a
 * script from stdin when given no file): "ID" or "ID;CLUSTER". */
static int slurm_submit(int script_fd, const char *script, char *said, size_t saidlen, gpurun_error_t *err)
{
    char *argv[] = {"sbatch", "--parsable", NULL};
    char *out;
    if (gpurun_rm_submit_tool(argv, script_fd, SBATCH_OUT_MAX, "sbatch", "a Slurm login node", "Slurm", script, &out,
                              err) < 0)
        return -1;
    const char *p; /* "ID" or "ID;CLUSTER" */
    size_t idlen = gpurun_rm_job_id(out, ";\r\n", GPURUN_RM_ID_DIGITS, (size_t)-1, &p);
    if (!idlen) {
        gpurun_err(err, GPURUN_EXIT_ENV, "submit: sbatch printed no job id (got '%.80s'); the batch script is at %s",
                   out, script);
        free(out);
        return -1;
    }
    int n = snprintf(said, saidlen, "%.*s", (int)idlen, p);
    if (p[idlen] == ';') {
        const char *cl = p + idlen + 1;
        size_t cllen = strcspn(cl, "\r\n");
        if (cllen && n >= 0 && (size_t)n < saidlen)
            snprintf(said + n, saidlen - (size_t)n, " on cluster %.*s", (int)cllen, cl);
    }
    free(out);
    return 0;
}

/* --- doctor --------------------------------------------------------------- */

enum { PASS, WARN, FAIL };

/* Returns whether srun is here. */
static bool check_slurm(const struct gpurun_rm_doctor *d)
{
    char srun[256], sbatch[256];
    char *a1[] = {"srun", "--version", NULL}, *a2[] = {"sbatch", "--version", NULL};
    int s1 = d->tool_line(d->ctx, a1, "slurm", srun, sizeof srun);
    int s2 = d->tool_line(d->ctx, a2, "slurm", sbatch, sizeof sbatch);
    if (s1 < 0 && s2 < 0) {
        gpurun_rm_check(d, "slurm", "Slurm", PASS, NULL,
              "not installed; gpurun runs jobs with mpirun or by itself (not needed on one node)");
        return false;
    }
    if (s1 != 0 || s2 != 0) {
        gpurun_rm_check(d, "slurm", "Slurm", WARN,
              "check that slurm.conf is readable (/etc/slurm/slurm.conf or $SLURM_CONF) and slurmctld is up",
              "%s does not work: %s", s1 != 0 ? "srun" : "sbatch",
              s1 != 0 ? (s1 < 0 ? "not found" : srun) : (s2 < 0 ? "not found" : sbatch));
        return s1 >= 0;
    }
    const char *job = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_JOB_NUM_NODES");
    if (job)
        gpurun_rm_check(d, "slurm", "Slurm", PASS, NULL, "%s; inside allocation %s (%s node%s)", srun, job,
              nodes ? nodes : "?", nodes && !strcmp(nodes, "1") ? "" : "s");
    else
        gpurun_rm_check(d, "slurm", "Slurm", PASS, NULL,
              "%s (srun, sbatch); not inside an allocation: gpurun submit or salloc gives one", srun);
    return true;
}

/* PMIx, which srun --mpi=pmix starts MPI ranks with. */
static void check_pmix(const struct gpurun_rm_doctor *d, bool slurm)
{
    char line[256];
    char *argv[] = {"pmix_info", NULL};
    int st = d->tool_line(d->ctx, argv, "PMIx:", line, sizeof line);
    if (st == 0) {
        gpurun_rm_check(d, "pmix", "PMIx", PASS, NULL, "pmix_info: %s", line[0] ? line : "found");
        return;
    }
    const char *lib = getenv("GPURUN_PMIX_LIBRARY");
    void *h = dlopen(lib && *lib ? lib : "libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        const char *(*version)(void) = NULL;
        void *s = dlsym(h, "PMIx_Get_version");
        memcpy(&version, &s, sizeof s);
        gpurun_rm_check(d, "pmix", "PMIx", PASS, NULL, "libpmix: %s", version ? version() : "found");
        dlclose(h);
        return;
    }
    if (slurm)
        gpurun_rm_check(d, "pmix", "PMIx", WARN,
              "install PMIx (Debian: libpmix2 libpmix-bin) and a Slurm built with it, so that srun --mpi=pmix works",
              "neither pmix_info nor libpmix.so.2 found: srun --mpi=pmix cannot start MPI ranks");
    else
        gpurun_rm_check(d, "pmix", "PMIx", PASS, NULL, "not found; only srun --mpi=pmix needs it (mpirun brings its own)");
}

static void slurm_doctor(const struct gpurun_rm_doctor *d)
{
    check_pmix(d, check_slurm(d));
}

static const char *const slurm_task_env[] = {"SLURM_*", NULL};

/* The GPUs Slurm gave the job and the step: its cgroup lets them alone be
 * opened, so they key the cached topology. */
static void slurm_allocated_gpus(void (*add)(void *ctx, const char *name, const char *value), void *ctx)
{
    add(ctx, "SLURM_JOB_GPUS", getenv("SLURM_JOB_GPUS"));
    add(ctx, "SLURM_STEP_GPUS", getenv("SLURM_STEP_GPUS"));
}

const gpurun_rm_plugin_t gpurun_rm_slurm = {
    .abi = GPURUN_RM_ABI,
    .name = "slurm",
    .title = "Slurm",
    .summary = "Slurm: srun inside an allocation, sbatch for gpurun submit",
    .launcher = &gpurun_launcher_srun,
    .rank_var = "SLURM_PROCID",
    .local_rank_var = "SLURM_LOCALID",
    .task_env = slurm_task_env,
    .nests = false,
    .allocation = slurm_allocation,
    .ended = slurm_ended,
    .batch_script = slurm_batch_script,
    .script_suffix = "sbatch",
    .submit_command = "sbatch",
    .submit = slurm_submit,
    .doctor = slurm_doctor,
    .array_task_var = "SLURM_ARRAY_TASK_ID",
    .energy = gpurun_slurm_energy,
    .allocated_gpus = slurm_allocated_gpus,
    .container = &slurm_pyxis,
    .init_lines = gpurun_slurm_init_lines,
    .submit_help = "The layout becomes --nodes, --ntasks-per-node, --gpus-per-node and --cpus-per-task\n"
                   "(without threads_per_rank: the site's cores_per_node shared by the ranks); its\n"
                   "timeout (times repeat) --time; each key of its slurm {} section one\n"
                   "`#SBATCH --KEY=VALUE` line (slurm.partition=gpu); the site's partition, account\n"
                   "and sbatch options follow.  A scan: a job array for configurations of one size.\n",
    .site_options_key = "sbatch",
    .site_options_hint = "is not an sbatch option: write the option alone, as in \"--qos=normal\" (gpurun adds "
                         "'#SBATCH')",
};
