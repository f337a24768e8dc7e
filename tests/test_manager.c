/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in resource managers (plugins/rm.h) through gpurun's side of
 * the seam (launcher/run/manager.c), with no manager running: which one
 * gpurun is inside from the environment (Flux started in a Slurm job is
 * the inner one), what each says of its allocation, which one gpurun
 * submit picks, their word for a step they ended (lines captured from srun
 * 22.05 and flux run 0.88), and what Flux's batch script refuses or quotes.
 * The real managers are in tests/cli-slurm.sh and tests/cli-flux.sh. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager.h"
#include "tap.h"

static void clear_env(void)
{
    static const char *const vars[] = {"SLURM_JOB_ID", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_JOB_NUM_NODES",
                                       "FLUX_URI",     "FLUX_JOB_ID",     "FLUX_JOB_NNODES", NULL};
    for (const char *const *v = vars; *v; v++)
        unsetenv(*v);
}

static const gpurun_rm_plugin_t *named(const char *name)
{
    const gpurun_rm_plugin_t *m = NULL;
    gpurun_error_t err = {0};
    if (gpurun_rm_find(name, &m, &err) < 0)
        diag("%s", err.text);
    return m;
}

static void test_found(void)
{
    const gpurun_rm_plugin_t *s = named("slurm"), *f = named("flux");
    ok(s && !strcmp(s->launcher->name, "srun") && !strcmp(s->rank_var, "SLURM_PROCID") &&
           !strcmp(s->local_rank_var, "SLURM_LOCALID"),
       "slurm: srun, SLURM_PROCID, SLURM_LOCALID");
    ok(f && !strcmp(f->launcher->name, "flux") && !strcmp(f->rank_var, "FLUX_TASK_RANK") &&
           !strcmp(f->local_rank_var, "FLUX_TASK_LOCAL_ID") && f->nests,
       "flux: flux run, FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID, nests in another's allocation");
    ok(gpurun_rm_of_launcher("srun") == s && gpurun_rm_of_launcher("flux") == f && !gpurun_rm_of_launcher("mpirun") &&
           !gpurun_rm_of_launcher("local"),
       "each launch command's manager; mpirun and local have none");
    const gpurun_rm_plugin_t *m = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_rm_find("lsf", &m, &err) < 0 && err.code == GPURUN_EXIT_ENV &&
           strstr(err.text, "built in are slurm, flux and pbs"),
       "an unknown manager: exit 3, naming the built-in ones (%s)", err.text);
}

static void test_current(void)
{
    struct gpurun_rm_alloc a;
    clear_env();
    ok(gpurun_rm_current(&a) == NULL, "no manager's variables: outside every allocation");
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_STEP_GPUS", "", 1);
    setenv("SLURM_JOB_GPUS", "0,2", 1);
    setenv("SLURM_JOB_NUM_NODES", "2", 1);
    const gpurun_rm_plugin_t *m = gpurun_rm_current(&a);
    ok(m && !strcmp(m->name, "slurm"), "SLURM_JOB_ID: inside Slurm");
    is_str(a.job, "Slurm job 77", "... the allocation in notes");
    is_str(a.where, "Slurm allocation 77", "... in the launcher's choice");
    ok(a.cpus_bound && a.has_gpus && !strcmp(a.gpus, "0,2") && !strcmp(a.gpus_from, "Slurm GPUs") && a.nodes == 2,
       "... confined to its cores, GPUs 0,2 from SLURM_JOB_GPUS (SLURM_STEP_GPUS empty), 2 nodes");
    setenv("FLUX_URI", "local:///tmp/flux-x/local-0", 1);
    m = gpurun_rm_current(&a);
    ok(m && !strcmp(m->name, "flux"), "FLUX_URI beside SLURM_JOB_ID (flux start in a Slurm job): Flux, the inner one");
    is_str(a.job, "Flux instance local:///tmp/flux-x/local-0", "... an instance gpurun is the first program of");
    ok(!a.has_gpus, "... Flux names no GPUs of its own: the runtime's list stands");
    setenv("FLUX_JOB_ID", "\xc6\x92" "2Ab3", 1);
    gpurun_rm_current(&a);
    is_str(a.job, "Flux job \xc6\x92" "2Ab3", "... in a batch job or flux alloc: the job that holds it");
    clear_env();
}

static void test_submit_choice(void)
{
    const gpurun_rm_plugin_t *m = NULL;
    char why[256];
    gpurun_error_t err = {0};
    clear_env();
    ok(gpurun_rm_for_submit("flux", NULL, &m, why, sizeof why, &err) == 0 && !strcmp(m->name, "flux"),
       "submit: launcher = flux goes to Flux (%s)", why);
    ok(gpurun_rm_for_submit("srun", "flux", &m, why, sizeof why, &err) == 0 && !strcmp(m->name, "slurm"),
       "... launcher = srun to Slurm, whatever the site says (%s)", why);
    ok(gpurun_rm_for_submit("auto", "flux", &m, why, sizeof why, &err) == 0 && !strcmp(m->name, "flux"),
       "... auto: the site's scheduler (%s)", why);
    setenv("FLUX_URI", "local:///x", 1);
    ok(gpurun_rm_for_submit("mpirun", "none", &m, why, sizeof why, &err) == 0 && !strcmp(m->name, "flux"),
       "... else the allocation gpurun is in (%s)", why);
    clear_env();
    ok(gpurun_rm_for_submit("auto", NULL, &m, why, sizeof why, &err) == 0 && !strcmp(m->name, "slurm"),
       "... else Slurm, as before there was a choice (%s)", why);
    ok(gpurun_rm_for_submit("auto", "lsf", &m, why, sizeof why, &err) < 0 && strstr(err.text, "no rm 'lsf'"),
       "... a scheduler with no plugin: refused (%s)", err.text);
}

static void test_ended(void)
{
    const gpurun_rm_plugin_t *s = named("slurm"), *f = named("flux");
    if (!s || !f)
        return;
    /* As srun 22.05 and flux run 0.88 wrote them. */
    is_int(s->ended("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
                    "slurmstepd: error: *** STEP 17.0 ON vm CANCELLED AT 2025-11-30T10:12:01 DUE TO TIME LIMIT ***\n"),
           GPURUN_RM_END_TIME_LIMIT, "Slurm: CANCELLED ... DUE TO TIME LIMIT");
    is_int(s->ended("srun: error: *** STEP 17817005.0 ON h1 CANCELLED AT 2025-11-30T10:12:01 DUE TO NODE FAILURE, "
                    "SEE SLURMCTLD LOG FOR DETAILS ***\n"),
           GPURUN_RM_END_NODE_FAILURE, "Slurm: DUE TO NODE FAILURE");
    is_int(s->ended("srun: error: h1: task 1: Exited with exit code 7\n"), GPURUN_RM_END_NONE,
           "Slurm: a task's own end is not Slurm's");
    is_int(f->ended("3.079s: job.exception \xc6\x92" "2PxDnV5 type=timeout severity=0 resource allocation expired\n"
                    "flux-job: task(s) Alarm clock\n"),
           GPURUN_RM_END_TIME_LIMIT, "Flux: an exception of type timeout");
    is_int(f->ended("12.5s: job.exception \xc6\x92" "3Ab type=node-failure severity=0 lost contact with job shell on "
                    "broker vm (rank 1)\n"),
           GPURUN_RM_END_NODE_FAILURE, "Flux: of type node-failure");
    is_int(f->ended("9.284s: job.exception \xc6\x92" "41CYcX1 type=cancel severity=0 \n"
                    "flux-job: task(s) exited with exit code 3\n"),
           GPURUN_RM_END_NONE, "Flux: a job cancelled (gpurun stopped it) is not a time limit");
    is_int(f->ended("rank 0: type=timeout in the program's own words\n"), GPURUN_RM_END_NONE,
           "Flux: the words outside an exception line are not Flux's");
    /* gpurun_rm_output_says(), which both read through: one line must hold
     * all the words; the last line needs no line break. */
    is_int(s->ended("*** STEP 3.0 ON h1 CANCELLED AT 10:12\nDUE TO TIME LIMIT ***\n"), GPURUN_RM_END_NONE,
           "Slurm: the words split over two lines are not its words");
    is_int(s->ended("x\n*** STEP 3.0 ON h1 CANCELLED AT 10:12 DUE TO NODE FAILURE"), GPURUN_RM_END_NODE_FAILURE,
           "Slurm: a last line without a line break is read");
    is_int(s->ended(""), GPURUN_RM_END_NONE, "Slurm: no output, no end");
    is_int(f->ended("1s: job.exception f1 type=node-failure \n2s: job.exception f1 type=timeout \n"),
           GPURUN_RM_END_NODE_FAILURE, "Flux: the first line that says one decides");
}

static const char *origin(const struct gpurun_rm_site *site, const char *key)
{
    (void)site, (void)key;
    return "s.conf:3";
}

static void test_flux_batch(void)
{
    const gpurun_rm_plugin_t *f = named("flux");
    if (!f)
        return;
    struct gpurun_rm_option opts[] = {{"setattr", "user.note=it's a\\b"}, {"queue", "debug"}};
    struct gpurun_rm_site site = {.name = "uni", .path = "/s/uni.conf", .partition = "pbatch", .account = "proj",
                                  .cores_per_node = 64, .gpus_per_node = 4, .origin = origin};
    struct gpurun_rm_batch b = {.job = "wb", .job_file = "job.conf", .nodes = 2, .ranks_per_node = 4,
                                .gpus_per_rank = 1, .threads_per_rank = -1, .ranks_per_gpu = 1, .timeout_s = 600,
                                .runs = 2, .stop_grace_s = 60, .options = opts, .noptions = 2, .folder = "/r/wb",
                                .site = &site, .comments = "# a comment\n", .body = "set -euo pipefail\nexec g\n"};
    char *s = NULL;
    gpurun_error_t err = {0};
    ok(f->batch_script(&b, &s, &err) == 0 && s, "Flux: a batch script (%s)", err.text);
    if (s) {
        ok(strstr(s, "#flux: --nodes='2'\n#flux: --nslots='8'\n#flux: --cores-per-slot='16'\n"
                     "#flux: --gpus-per-slot='1'\n#flux: --exclusive\n#flux: --time-limit='22m'\n"
                     "#flux: --output='/r/wb/flux-{{id}}.out'\n") != NULL,
           "... whole nodes, a slot per rank with its share of the site's cores, 2 x (600 + 60) s in minutes");
        ok(strstr(s, "#flux: --setattr='user.note=it\\'s a\\\\b'\n") != NULL, "... a quote and a backslash escaped");
        ok(strstr(s, "#flux: --queue='debug'\n") && !strstr(s, "pbatch") && strstr(s, "#flux: --bank='proj'\n"),
           "... the job's queue replaces the site's partition; the site's account is the bank");
        ok(strstr(s, "# a comment\n#flux:") && strstr(s, "'\nset -euo pipefail\nexec g\n"),
           "... gpurun's comments before the directives, its body after them");
        free(s);
    }
    static const struct {
        const char *key, *value, *want;
    } bad[] = {
        {"nodes", "3", "key 'flux.nodes': contradicts the job's layout, which sets --nodes: use 'nodes' instead"},
        {"tasks_per_node", "3", "contradicts the job's layout, which sets --tasks-per-node"},
        {"setattr", "a\nb", "key 'flux.setattr': cannot go on a #flux: line: control character 0x0a (line break)"},
        {"setattr", "a'''b", "a triple quote"},
        {"set attr", "x", "not a flux batch option name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct gpurun_rm_option one = {bad[i].key, bad[i].value};
        b.options = &one;
        b.noptions = 1;
        s = NULL;
        memset(&err, 0, sizeof err);
        int rc = f->batch_script(&b, &s, &err);
        ok(rc < 0 && !s && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, bad[i].want), "refused: flux.%s (%s)",
           bad[i].key, err.text);
        free(s);
    }
    b.noptions = 0;
    b.folder = "/r/{{name}}/wb";
    ok(f->batch_script(&b, &s, &err) < 0 && strstr(err.text, "cannot name flux batch's output file"),
       "a results folder with '{{': refused");
    b.folder = "/r/wb";
    b.gpus_per_rank = 2;
    ok(f->batch_script(&b, &s, &err) < 0 && err.code == GPURUN_EXIT_ENV && strstr(err.text, "need 8 GPUs on a node"),
       "4 ranks x 2 GPUs on the site's 4-GPU nodes: exit 3");
}

int main(void)
{
    test_found();
    test_current();
    test_submit_choice();
    test_ended();
    test_flux_batch();
    return done_testing();
}
