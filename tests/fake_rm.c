/* SPDX-License-Identifier: BSD-3-Clause */
/* A resource manager a site adds without rebuilding gpurun: built by
 * tests/cli-plugin.sh outside the tree, against the installed headers
 * (`pkg-config --cflags gpurun-plugin`), as rm_fake.so.  "fake" runs jobs on
 * this node with its launch command "fakerun" (one process per rank, each
 * told its rank in FAKE_TASK_RANK and FAKE_TASK_LOCAL, as a manager's
 * launcher would), says it is inside an allocation when FAKE_JOB is set
 * (its GPUs in FAKE_GPUS), writes batch scripts with #FAKE lines and
 * submits them with the `fakesubmit` program on PATH.  -DFAKE_ABI_DELTA=1
 * builds it for an interface version gpurun lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpurun/rm.h>

#ifndef FAKE_ABI_DELTA
#define FAKE_ABI_DELTA 0
#endif

static int fake_available(gpurun_error_t *why)
{
    (void)why;
    return 0;
}

static int fake_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                         gpurun_error_t *err)
{
    if (req->nodes > 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "fakerun runs on this node only");
    out->count = req->nranks;
    out->argv = calloc((size_t)req->nranks, sizeof(char **));
    out->env = calloc((size_t)req->nranks, sizeof(char **));
    if (!out->argv || !out->env)
        abort();
    for (int r = 0; r < req->nranks; r++) {
        out->argv[r] = gpurun_argv_new();
        gpurun_argv_add_rank_step(&out->argv[r], req);
        out->env[r] = gpurun_argv_new();
        gpurun_argv_addf(&out->env[r], "FAKE_TASK_RANK=%d", r);
        gpurun_argv_addf(&out->env[r], "FAKE_TASK_LOCAL=%d", r);
    }
    return 0;
}

static const gpurun_launcher_plugin_t fakerun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "fakerun",
    .summary = "the fake manager's launch command",
    .available = fake_available,
    .commands = fake_commands,
};

static int fake_allocation(struct gpurun_rm_alloc *a)
{
    const char *job = getenv("FAKE_JOB");
    if (!job)
        return 0;
    snprintf(a->job, sizeof a->job, "Fake job %s", job);
    snprintf(a->where, sizeof a->where, "Fake allocation %s", job);
    const char *gpus = getenv("FAKE_GPUS");
    a->has_gpus = gpus != NULL;
    snprintf(a->gpus, sizeof a->gpus, "%s", gpus ? gpus : "");
    snprintf(a->gpus_from, sizeof a->gpus_from, "Fake GPUs");
    return 1;
}

static enum gpurun_rm_end fake_ended(const char *out)
{
    return strstr(out, "FAKE: TIME LIMIT") ? GPURUN_RM_END_TIME_LIMIT : GPURUN_RM_END_NONE;
}

static int fake_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err)
{
    if (b->gpus_per_rank < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'gpus_per_rank': fake needs it", b->job_file);
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        abort();
    fputs("#!/bin/bash\n# fake batch script for job '", f);
    gpurun_rm_put_comment(f, b->job);
    fprintf(f, "'\n%s#FAKE nodes=%ld tasks=%ld gpus=%ld\n", b->comments, b->nodes < 1 ? 1 : b->nodes,
            b->ranks_per_node, b->gpus_per_rank);
    for (size_t i = 0; i < b->noptions; i++)
        fprintf(f, "#FAKE %s=%s\n", b->options[i].key, b->options[i].value);
    if (b->site && b->site->partition)
        fprintf(f, "#FAKE queue=%s\n", b->site->partition);
    for (size_t i = 0; i < b->narray; i++) /* a job array: its tasks' indexes, FAKE_TASK */
        fprintf(f, "%s%ld%s", i ? "," : "#FAKE array=", b->array[i], i + 1 == b->narray ? "\n" : "");
    fputs(b->body, f);
    fclose(f);
    *scriptp = s;
    return 0;
}

static int fake_submit(int script_fd, const char *script, char *said, size_t saidlen, gpurun_error_t *err)
{
    char *argv[] = {"fakesubmit", NULL};
    char *out = NULL;
    int status, e;
    if (gpurun_rm_tool(argv, script_fd, 256, &out, &status, &e) < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot run fakesubmit (the batch script is at %s)", script);
    if (status != 0) {
        free(out);
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: fakesubmit refused the job (exit status %d)", status);
    }
    snprintf(said, saidlen, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    return 0;
}

static void fake_doctor(const struct gpurun_rm_doctor *d)
{
    d->check(d->ctx, "fake", "Fake", 0, NULL, getenv("FAKE_JOB") ? "inside a fake allocation" : "not inside one");
}

static const char *const fake_task_env[] = {"FAKE_*", NULL};

const gpurun_rm_plugin_t gpurun_rm_plugin = {
    .abi = GPURUN_RM_ABI + FAKE_ABI_DELTA,
    .name = "fake",
    .title = "Fake",
    .summary = "a resource manager for the plugin tests",
    .launcher = &fakerun,
    .rank_var = "FAKE_TASK_RANK",
    .local_rank_var = "FAKE_TASK_LOCAL",
    .task_env = fake_task_env,
    .allocation = fake_allocation,
    .ended = fake_ended,
    .batch_script = fake_batch_script,
    .script_suffix = "fake",
    .submit_command = "fakesubmit",
    .submit = fake_submit,
    .doctor = fake_doctor,
    .array_task_var = "FAKE_TASK",
};
