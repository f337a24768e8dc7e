/* SPDX-License-Identifier: BSD-3-Clause */
/* spank_gpurun.so: gpurun's binding for every srun task (docs/sites/slurm-spank.md).
 *
 *   plugstack.conf:  optional /usr/lib/x86_64-linux-gnu/slurm/spank_gpurun.so [ARGS]
 *   ARGS:  default=off|closest|none   what a step gets without --gpurun [off]
 *          required                   a plugin failure fails the task (else logged, task runs unbound)
 *          verbose                    log each task's binding
 *          topology=FILE.xml          plan for this hwloc export, not the node (tests)
 *          cpu_locality=package|gpu   GPU tasks also share out their package's NUMA nodes
 *                                     without GPUs (package, the default), or not (gpu)
 *   srun --gpurun[=closest|none|verbose|off]
 *
 * slurmstepd loads the topology and plans once per step and node, in
 * slurm_spank_user_init (the stepd's own cpuset and the step's GPUs are the
 * allocation the plan stays inside); each task, before exec
 * (slurm_spank_task_init), takes its local rank's binding from that plan.
 * What the user asked of Slurm itself (--cpu-bind, --gpu-bind: srun sees it
 * and passes it on in GPURUN_SPANK_SLURM_BINDS) is left to Slurm. */
#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "gpurun.h"
#include "util.h"

SPANK_PLUGIN(gpurun, 1);

enum mode { MODE_UNSET, MODE_OFF, MODE_CLOSEST, MODE_NONE };

/* The plugin's state lives in the process that loaded it: srun, or one
 * slurmstepd for one step on one node, where the plan serves every task. */
static struct {
    enum mode site_default, user; /* user: --gpurun's, MODE_UNSET without it */
    bool required, verbose, user_verbose;
    int cpu_locality; /* GPURUN_REQ_CPUS_PACKAGE or _GPU */
    char topology[PATH_MAX];
    bool slurm_cpu_bind, slurm_gpu_bind;
    gpurun_topology_t *topo;
    gpurun_placement_t *placement;
    char failed[3072]; /* why there is no plan; "" when there is or none was wanted */
} st;

#define BINDS_VAR "GPURUN_SPANK_SLURM_BINDS"
/* As many ranks as libgpurun plans on one node (GPURUN_REQ_RANKS_PER_NODE). */
#define GPURUN_SPANK_MAX_TASKS 4096

static int parse_mode(const char *v, enum mode *m, bool *verbose)
{
    if (!v || !*v || !strcmp(v, "closest"))
        *m = MODE_CLOSEST;
    else if (!strcmp(v, "none"))
        *m = MODE_NONE;
    else if (!strcmp(v, "off"))
        *m = MODE_OFF;
    else if (!strcmp(v, "verbose")) {
        *m = MODE_CLOSEST;
        *verbose = true;
    } else
        return -1;
    return 0;
}

static int opt_gpurun(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    bool verbose = false;
    enum mode m;
    if (parse_mode(optarg, &m, &verbose) < 0) {
        char shown[64]; /* the user's text, in slurmd's log too: cut, one line */
        gpurun_short_text(shown, sizeof shown, optarg);
        slurm_error("gpurun: --gpurun=%s: not one of closest, none, verbose, off", shown);
        return -1;
    }
    st.user = m;
    st.user_verbose = verbose;
    return 0;
}

struct spank_option spank_options[] = {
    {"gpurun", "closest|none|verbose|off",
     "bind each task to its closest GPUs, NICs, cores and memory as gpurun plans (none: GPUs and NICs only)", 2, 0,
     opt_gpurun},
    SPANK_OPTIONS_TABLE_END,
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    (void)sp;
    /* Options are processed after this: keep what a callback set. */
    enum mode user = st.user;
    bool user_verbose = st.user_verbose;
    memset(&st, 0, sizeof st);
    st.user = user;
    st.user_verbose = user_verbose;
    st.site_default = MODE_OFF;
    for (int i = 0; i < ac; i++) {
        bool v = false;
        if (!strncmp(av[i], "default=", 8) && parse_mode(av[i] + 8, &st.site_default, &v) == 0 && !v)
            continue;
        if (!strcmp(av[i], "required"))
            st.required = true;
        else if (!strcmp(av[i], "verbose"))
            st.verbose = true;
        else if (!strncmp(av[i], "topology=", 9) && av[i][9] && strlen(av[i] + 9) < sizeof st.topology)
            snprintf(st.topology, sizeof st.topology, "%s", av[i] + 9);
        else if (!strcmp(av[i], "cpu_locality=package") || !strcmp(av[i], "cpu_locality=gpu"))
            st.cpu_locality = !strcmp(av[i], "cpu_locality=gpu") ? GPURUN_REQ_CPUS_GPU : GPURUN_REQ_CPUS_PACKAGE;
        else {
            /* A site's typo must not stop its users' jobs. */
            char shown[128];
            gpurun_short_text(shown, sizeof shown, av[i]);
            slurm_error("gpurun: plugstack.conf argument '%s' not understood (default=off|closest|none, required, "
                        "verbose, topology=FILE.xml shorter than %d bytes, cpu_locality=package|gpu); ignored",
                        shown, PATH_MAX);
        }
    }
    return 0;
}

/* Did the user ask srun for a binding of Slurm's?  srun's own command line
 * and the variables srun reads say so. */
static void note_slurm_binds(void)
{
    bool cpu = getenv("SLURM_CPU_BIND") != NULL, gpu = getenv("SLURM_GPU_BIND") != NULL;
    FILE *f = fopen("/proc/self/cmdline", "re");
    if (f) {
        char arg[4096];
        size_t n = 0;
        int c;
        while ((c = fgetc(f)) != EOF) {
            if (n < sizeof arg - 1)
                arg[n++] = (char)c;
            if (c != '\0')
                continue;
            arg[n < sizeof arg ? n : sizeof arg - 1] = '\0';
            if (!strcmp(arg, "--")) /* the user's program and its arguments follow */
                break;
            cpu |= !strncmp(arg, "--cpu-bind", 10) || !strncmp(arg, "--cpu_bind", 10);
            gpu |= !strncmp(arg, "--gpu-bind", 10) || !strncmp(arg, "--gpu_bind", 10);
            n = 0;
        }
        fclose(f);
    }
    if (cpu || gpu) {
        /* The user's own terminal: srun logs info only when -v. */
        fprintf(stderr, "srun: gpurun: %s given: that binding is Slurm's, gpurun leaves it alone\n",
                cpu && gpu ? "--cpu-bind and --gpu-bind" : cpu ? "--cpu-bind" : "--gpu-bind");
        setenv(BINDS_VAR, cpu && gpu ? "cpu,gpu" : cpu ? "cpu" : "gpu", 1);
    } else
        unsetenv(BINDS_VAR);
}

/* --gpurun's mode (its callback runs in srun and in slurmstepd), else the site's. */
static enum mode wanted(bool *verbose)
{
    *verbose = st.verbose || st.user_verbose;
    return st.user != MODE_UNSET ? st.user : st.site_default;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    bool verbose;
    if (spank_context() == S_CTX_LOCAL && wanted(&verbose) != MODE_OFF)
        note_slurm_binds();
    return 0;
}

/* A failure: logged, and the task runs as without the plugin unless the
 * site made the plugin required. */
static int give_up(const char *why)
{
    /* One line in slurmd's log, whatever a path or value in it holds. */
    gpurun_short_text(st.failed, sizeof st.failed, why);
    slurm_error("gpurun: %s; %s", st.failed, st.required ? "failing the task (plugstack.conf: required)"
                                                         : "tasks run without gpurun's binding");
    return st.required ? -1 : 0;
}

/* The job's variable `name` into buf (len bytes): 0; 1 when it is not set
 * or empty; -1, with the reason in why, when it does not fit or SPANK
 * fails.  The job chooses the value: one that does not fit is refused,
 * never taken as unset, or the next variable would stand in for it (a
 * user's CUDA_VISIBLE_DEVICES for Slurm's SLURM_STEP_GPUS). */
static int getenv_job(spank_t sp, const char *name, char *buf, int len, char *why, size_t wlen)
{
    buf[0] = '\0';
    spank_err_t e = spank_getenv(sp, name, buf, len);
    if (e == ESPANK_ENV_NOEXIST || (e == ESPANK_SUCCESS && !buf[0]))
        return 1;
    if (e == ESPANK_SUCCESS)
        return 0;
    if (e == ESPANK_NOSPACE)
        snprintf(why, wlen, "the job's %s is longer than %d bytes: refused", name, len - 1);
    else
        snprintf(why, wlen, "cannot read the job's %s: %s", name, spank_strerror(e));
    buf[0] = '\0';
    return -1;
}

/* Where the step's GPUs are named, first found first: Slurm's gres, then
 * the GPU runtimes' lists. */
static const char *const gpu_vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES",
                                       "ROCR_VISIBLE_DEVICES"};

/* slurmstepd, once per step on this node: discover and plan. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp))
        return 0;
    bool verbose;
    enum mode m = wanted(&verbose);
    st.verbose = verbose;
    if (m == MODE_OFF)
        return 0;
    char buf[4096], why[3072];
    int got = getenv_job(sp, BINDS_VAR, buf, sizeof buf, why, sizeof why);
    if (got < 0)
        return give_up(why);
    if (got == 0) {
        st.slurm_cpu_bind = strstr(buf, "cpu") != NULL;
        st.slurm_gpu_bind = strstr(buf, "gpu") != NULL;
        slurm_info("gpurun: srun was given --%s-bind: that binding is Slurm's, gpurun leaves it alone",
                   st.slurm_cpu_bind && st.slurm_gpu_bind ? "cpu-bind and --gpu" : st.slurm_cpu_bind ? "cpu" : "gpu");
    }
    uint32_t ntasks = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || ntasks < 1)
        return give_up("cannot learn how many tasks the step has on this node");
    if (ntasks > GPURUN_SPANK_MAX_TASKS) {
        snprintf(why, sizeof why, "%" PRIu32 " tasks on this node: gpurun plans at most %d", ntasks,
                 GPURUN_SPANK_MAX_TASKS);
        return give_up(why);
    }
    /* The step's GPUs, read before anything is planned. */
    const char *gpus_from = NULL;
    for (size_t i = 0; i < sizeof gpu_vars / sizeof gpu_vars[0] && !gpus_from; i++) {
        if ((got = getenv_job(sp, gpu_vars[i], buf, sizeof buf, why, sizeof why)) < 0)
            return give_up(why);
        if (got == 0)
            gpus_from = gpu_vars[i];
    }
    /* CUDA's and ROCm's way to hide every GPU: no GPU for the tasks. */
    if (gpus_from && strcmp(gpus_from, "SLURM_STEP_GPUS") && strcmp(gpus_from, "SLURM_JOB_GPUS") &&
        !strcmp(buf, "-1"))
        buf[0] = '\0';

    gpurun_error_t err;
    gpurun_plan_request_t *req = NULL;
    int rc = gpurun_plan_request_create(&req, &err);
    if (!rc)
        rc = gpurun_plan_request_set(req, GPURUN_REQ_RANKS_PER_NODE, (int)ntasks, &err);
    if (!rc && m == MODE_NONE)
        rc = gpurun_plan_request_set(req, GPURUN_REQ_BIND, GPURUN_REQ_BIND_NONE, &err);
    if (!rc)
        rc = gpurun_plan_request_set(req, GPURUN_REQ_CPU_LOCALITY, st.cpu_locality, &err);
    /* Slurm's allocation: the cpus slurmstepd may use (its cgroup's cpuset
     * where the site confines jobs) and the GPUs gres gave the step. */
    char *cpus = NULL;
    if (!rc && (rc = gpurun_binding_read(0, &cpus, NULL, &err)) == 0)
        rc = gpurun_plan_request_allow_cpus(req, cpus, &err);
    free(cpus);
    if (!rc && gpus_from && (rc = gpurun_plan_request_allow_gpus(req, buf, &err)) != 0) {
        /* the job's text: the library's message shows it cut, on one line */
        gpurun_plan_request_destroy(req);
        snprintf(why, sizeof why, "the job's %s refused: %s", gpus_from, err.text);
        return give_up(why);
    }
    if (!rc)
        rc = gpurun_topology_load(st.topology[0] ? st.topology : NULL, 0, &st.topo, &err);
    if (!rc)
        rc = gpurun_placement_create(st.topo, req, &st.placement, &err);
    gpurun_plan_request_destroy(req);
    if (rc) {
        snprintf(why, sizeof why, "no plan for %u task%s on this node: %s", ntasks, ntasks == 1 ? "" : "s",
                 err.text);
        return give_up(why);
    }
    for (size_t i = 0; i < gpurun_placement_warnings(st.placement); i++) {
        gpurun_short_text(why, sizeof why, gpurun_placement_warning(st.placement, i));
        slurm_info("gpurun: %s", why);
    }
    if (st.verbose) {
        uint32_t job = 0, step = 0;
        spank_get_item(sp, S_JOB_ID, &job);
        spank_get_item(sp, S_JOB_STEPID, &step);
        gpurun_short_text(why, sizeof why, st.topology[0] ? st.topology : "the node's topology");
        slurm_info("gpurun: step %u.%u: planned %u task%s on this node from %s", job, step, ntasks,
                   ntasks == 1 ? "" : "s", why);
    }
    return 0;
}

static bool is_gpu_var(const char *name)
{
    return !strcmp(name, "CUDA_VISIBLE_DEVICES") || !strcmp(name, "ROCR_VISIBLE_DEVICES") ||
           !strcmp(name, "HIP_VISIBLE_DEVICES") || !strcmp(name, "ZE_AFFINITY_MASK") || !strcmp(name, "GPURUN_GPUS");
}

/* Each task, before exec, as the user. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!st.placement)
        return st.failed[0] && st.required ? -1 : 0;
    int local = -1;
    if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local < 0)
        return give_up("cannot learn the task's local id");
    gpurun_error_t err;
    gpurun_binding_t *b;
    if (gpurun_binding_get(st.placement, 0, local, &b, &err) != 0) {
        char why[2300];
        snprintf(why, sizeof why, "task %d: %s", local, err.text);
        return give_up(why);
    }
    int rc = 0;
    if (!st.slurm_cpu_bind && gpurun_binding_apply(b, 0, &err) != 0) {
        char why[2300];
        snprintf(why, sizeof why, "task %d: %s", local, err.text);
        rc = give_up(why);
    }
    const char *name, *value;
    for (size_t i = 0; rc == 0 && (name = gpurun_binding_env(b, i, &value)); i++) {
        if (st.slurm_gpu_bind && is_gpu_var(name))
            continue;
        if (!strcmp(name, "GPURUN_RANK")) /* the step's rank is Slurm's */
            continue;
        spank_setenv(sp, name, value, 1);
    }
    if (st.verbose)
        slurm_info("gpurun: task %d: cpus %s, memory NUMA %s, CUDA_VISIBLE_DEVICES=%s, UCX_NET_DEVICES=%s%s%s", local,
                   st.slurm_cpu_bind ? "(Slurm's)" : *gpurun_binding_cpus(b) ? gpurun_binding_cpus(b) : "(unbound)",
                   st.slurm_cpu_bind || !*gpurun_binding_mems(b) ? "-" : gpurun_binding_mems(b),
                   gpurun_binding_getenv(b, "CUDA_VISIBLE_DEVICES") ? gpurun_binding_getenv(b, "CUDA_VISIBLE_DEVICES") : "-",
                   gpurun_binding_getenv(b, "UCX_NET_DEVICES") ? gpurun_binding_getenv(b, "UCX_NET_DEVICES") : "-",
                   st.slurm_gpu_bind ? ", GPUs left to --gpu-bind" : "", "");
    gpurun_binding_destroy(b);
    return rc;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    gpurun_placement_destroy(st.placement);
    gpurun_topology_destroy(st.topo);
    st.placement = NULL;
    st.topo = NULL;
    return 0;
}
