/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun run --dry-run: what one configuration would run, said and not
 * started (run.c's run_dry_run_config() puts together the commands). */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "run_private.h"
#include "say.h"
#include "torchrun.h"

/* Words as a user could paste them into a shell, one line on stdout. */
static void print_quoted(char *const *argv)
{
    struct gpurun_strbuf b = {0};
    for (char *const *a = argv; *a; a++) {
        const char *s = *a;
        bool plain = *s != '\0';
        for (const char *c = s; *c && plain; c++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *c) != NULL;
        gpurun_strbuf_puts(&b, a == argv ? "" : " ");
        if (plain) {
            gpurun_strbuf_puts(&b, s);
            continue;
        }
        gpurun_strbuf_addc(&b, '\'');
        for (const char *c = s; *c; c++)
            if (*c == '\'')
                gpurun_strbuf_puts(&b, "'\\''");
            else
                gpurun_strbuf_addc(&b, *c);
        gpurun_strbuf_addc(&b, '\'');
    }
    gpurun_say(stdout, "%s\n", b.s ? b.s : "");
    free(b.s);
}

/* A dry run's line on GPUs shared by several ranks, and CUDA MPS. */
static void dry_run_mps(const struct run_ctx *c)
{
    char control[PATH_MAX], groups[256] = "";
    size_t gl = 0;
    int shown = 0;
    for (int r = 0; r < c->plan->nranks && c->plan->ranks[r].node == 0 && gl < sizeof groups - 8; r++) {
        const gpurun_rank_plan_t *rk = &c->plan->ranks[r];
        if (rk->gpu_first_rank != rk->local_rank || rk->gpu_nranks < 2)
            continue;
        gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%d-%d", shown ? ", " : "", r,
                               r + rk->gpu_nranks - 1);
        if (++shown == 4 && r + rk->gpu_nranks < c->plan->nranks) {
            snprintf(groups + gl, sizeof groups - gl, ", ...");
            break;
        }
    }
    bool local = !strcmp(c->launcher->name, "local"), found = gpurun_mps_find_control(control, sizeof control);
    const char *other_hosts = local ? "" : "; the first rank step of each other host starts its own";
    bool none = !gpurun_mps_wanted(c->plan) || c->job->mps == GPURUN_MPS_OFF;
    gpurun_say(stdout, "# ranks_per_gpu = %d: ranks %s share a GPU each; mps = %s: %s%s\n",
               c->plan->req.ranks_per_gpu, groups[0] ? groups : "(none)", gpurun_mps_mode_name(c->job->mps),
               none    ? "no CUDA MPS daemon"
               : found ? "one CUDA MPS daemon would start on this host (" GPURUN_MPS_CONTROL " -d)"
                       : GPURUN_MPS_CONTROL " is not on PATH here: no daemon",
               none ? "" : other_hosts);
}

/* A dry run's line on torchrun's rendezvous. */
static void dry_run_rendezvous(const struct run_ctx *c, const struct gpurun_kvlist *env)
{
    const char *mode = gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS);
    if (mode && !strcmp(mode, "file"))
        gpurun_say(stdout,
                   "# rank environment: %s; rendezvous = file: %s (no network port; the script passes $%s to "
                   "init_process_group), bound %s s\n",
                   c->tpl->rank_env, gpurun_kvlist_get(env, GPURUN_ENV_INIT_METHOD), GPURUN_ENV_INIT_METHOD,
                   gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS_TIMEOUT));
    else
        gpurun_say(stdout, "# rank environment: %s; rendezvous = %s at %s:%s (%s), bound %s s\n", c->tpl->rank_env,
                   mode ? mode : "?", gpurun_kvlist_get(env, "MASTER_ADDR"), gpurun_kvlist_get(env, "MASTER_PORT"),
                   mode && !strcmp(mode, "store")
                       ? "gpurun hosts torch's TCPStore on this host, holding its port until the ranks end; every "
                         "rank is its client"
                       : "rank 0 hosts the store on a port chosen at start: free until rank 0 binds it",
                   gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS_TIMEOUT));
}

/* A dry run's lines on the container, up to the program's. */
static void dry_run_container(const struct run_ctx *c)
{
    if (c->ctr) {
        gpurun_say(stdout, "# container: %s; image %s%s%s\n", c->ctr->why, c->ctr->image,
                   c->ctr->digest ? ", digest " : "", c->ctr->digest ? c->ctr->digest : "");
        const gpurun_rm_plugin_t *m = gpurun_rm_of_runtime(c->ctr->runtime); /* pyxis: srun's */
        if (m)
            gpurun_say(stdout,
                       "# %s: %s enters the image before each task, so the rank step itself runs inside it "
                       "and reports the binding from there\n",
                       c->ctr->runtime, m->launcher->name);
        else if (c->ctr->inside)
            gpurun_say(stdout,
                       "# binding reported from inside the container: its entry is %s " GPURUN_INSIDE_ARG " %d\n",
                       c->ctr->inside, GPURUN_INSIDE_FD);
        else
            gpurun_say(stdout, "# binding reported by the rank step, outside the container: %s\n", c->ctr->inside_note);
        gpurun_say(stdout, "# program in the container: ");
    } else {
        gpurun_say(stdout, "# program: ");
    }
}

/* A dry run's table of the ranks' binding, then each rank's environment. */
static void dry_run_ranks(const struct run_ctx *c, const struct gpurun_kvlist *env)
{
    gpurun_say(stdout, "\n%-5s %-4s %-5s %-6s %-20s %-4s %-6s %-20s %s\n", "rank", "node", "local", "GPU", "NIC", "aff",
               "NUMA", "cpus", "threads");
    for (int r = 0; r < c->plan->nranks; r++) {
        const gpurun_rank_plan_t *rk = &c->plan->ranks[r];
        char *cpus = hwloc_bitmap_iszero(rk->cpuset) ? gpurun_xstrdup("(unbound)") : gpurun_cpuset_list(rk->cpuset);
        char *numa = hwloc_bitmap_iszero(rk->nodeset) ? gpurun_xstrdup("-") : gpurun_cpuset_list(rk->nodeset);
        json_t *gp = json_object_get(rk->env, "GPURUN_GPUS"), *np = json_object_get(rk->env, "GPURUN_NICS");
        gpurun_say(stdout, "%-5d %-4d %-5d %-6s %-20s %-4s %-6s %-20s %d\n", rk->rank, rk->node, rk->local_rank,
                   gp ? json_string_value(gp) : "-", np ? json_string_value(np) : "-",
                   rk->nnics ? gpurun_affinity_name(rk->nic_affinity) : "-", numa, cpus, rk->threads);
        free(cpus);
        free(numa);
    }
    gpurun_say(stdout, "\n# environment of each rank\n");
    for (int r = 0; r < c->plan->nranks; r++) {
        const char *k;
        json_t *val;
        gpurun_say(stdout, "rank %d:", r);
        json_object_foreach(c->plan->ranks[r].env, k, val) gpurun_say(stdout, " %s=%s", k, json_string_value(val));
        for (size_t i = 0; i < env->n; i++) {
            /* A job-wide value the rank's own plan holds already, said once. */
            const char *own = json_string_value(json_object_get(c->plan->ranks[r].env, env->items[i].key));
            if (!own || strcmp(own, env->items[i].value))
                gpurun_say(stdout, " %s=%s", env->items[i].key, env->items[i].value);
        }
        gpurun_say(stdout, "\n");
    }
}

void run_dry_run_print(const struct run_ctx *c, char *const *app, const struct gpurun_launch_cmds *cmds,
                       char *const *plan_step, const struct gpurun_kvlist *env)
{
    gpurun_say(stdout, "# gpurun dry run of job %s: nothing is started\n", c->job->name);
    gpurun_say(stdout, "# launcher: %s\n", c->launcher_why);
    if (c->gdr)
        gpurun_say(stdout, "# gpudirect = %s: on for %lld of %d ranks\n",
                   json_string_value(json_object_get(c->gdr, "mode")),
                   json_integer_value(json_object_get(c->gdr, "on_ranks")), c->plan->nranks);
    if (c->alloc_note[0])
        gpurun_say(stdout, "# allocation: %s\n", c->alloc_note);
    if (c->plan->req.ranks_per_gpu > 1 || gpurun_mps_wanted(c->plan))
        dry_run_mps(c);
    for (size_t i = 0; c->tpl && i < c->tpl->nsetup; i++)
        gpurun_say(stdout, "# setup %zu: %s\n", i + 1, c->tpl->setup[i]);
    if (c->hpl.active) {
        char what[160];
        gpurun_hpl_edit_text(&c->hpl, what, sizeof what);
        gpurun_say(stdout, "# then in %s (HPL's input): %s\n", c->tpl->hpl_dat, what);
    }
    if (c->tpl && c->tpl->rank_env)
        dry_run_rendezvous(c, env);
    dry_run_container(c);
    print_quoted(app);
    if (plan_step) {
        gpurun_say(stdout,
                   "# %s on %d nodes: first a step outside the image plans each host gpurun does not (one task per "
                   "node; no CUDA MPS daemon there), then the container step:\n",
                   c->ctr->runtime, c->plan->req.nodes);
        print_quoted(plan_step);
    }
    for (int i = 0; i < cmds->count; i++) {
        for (char **e = cmds->env[i]; e && *e; e++)
            gpurun_say(stdout, "%s ", *e);
        print_quoted(cmds->argv[i]);
    }
    dry_run_ranks(c, env);
    for (size_t w = 0; w < c->plan->nwarnings; w++)
        gpurun_say(stdout, "warning: %s\n", c->plan->warnings[w]);
}
