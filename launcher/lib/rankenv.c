/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank's environment put together (rankenv.h says from what and in
 * which order). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rankenv.h"
#ifndef GPURUN_RANK_LEAN
#include "plan.h"
#include "torchrun.h"
#endif

#ifndef GPURUN_RANK_LEAN
int gpurun_rankenv_job(const struct gpurun_torchrun_settings *torchrun, int port, const char *run_dir,
                       const struct gpurun_plan *plan, const struct gpurun_kvlist *job_env, struct gpurun_kvlist *out,
                       gpurun_error_t *err)
{
    if (torchrun &&
        gpurun_torchrun_master_env(torchrun, port ? port : torchrun->port, run_dir, plan, out, err) < 0)
        return -1;
    for (size_t i = 0; job_env && i < job_env->n; i++)
        gpurun_kvlist_set(out, job_env->items[i].key, job_env->items[i].value);
    return 0;
}

void gpurun_rankenv_torchrun_plan(struct gpurun_plan *plan)
{
    /* Ranks per node from the plan itself, not the request: a plan that
     * puts several ranks on a GPU has more. */
    int nodes = 1;
    for (int r = 0; r < plan->nranks; r++)
        if (plan->ranks[r].node + 1 > nodes)
            nodes = plan->ranks[r].node + 1;
    /* Ranks per node counted once: linear in ranks, at 8,000 too. */
    int *per_node = gpurun_xcalloc((size_t)nodes, sizeof *per_node);
    for (int r = 0; r < plan->nranks; r++)
        per_node[plan->ranks[r].node]++;
    for (int r = 0; r < plan->nranks; r++) {
        gpurun_rank_plan_t *rk = &plan->ranks[r];
        int on_node = per_node[rk->node];
        const long sizes[3] = {plan->nranks, on_node, nodes};
        gpurun_rankenv_torchrun_place(rk->env, rk->rank, rk->local_rank, rk->node, sizes);
        /* NCCL's bootstrap and socket transport on the interface of the
         * rank's NIC (its IB HCA is NCCL_IB_HCA already). */
        const char *netdev = rk->nnics ? plan->topo->nics[rk->nics[0]].netdev : NULL;
        if (netdev && *netdev)
            json_object_set_new(rk->env, "NCCL_SOCKET_IFNAME", json_string(netdev));
    }
    free(per_node);
}
#endif

static void set_int(json_t *env, const char *key, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    json_object_set_new(env, key, json_string(buf));
}

void gpurun_rankenv_torchrun_place(json_t *env, long rank, long local, long group, const long *sizes)
{
    /* In torchrun's order (a dry run shows them so). */
    set_int(env, "RANK", rank);
    if (sizes)
        set_int(env, "WORLD_SIZE", sizes[0]);
    set_int(env, "LOCAL_RANK", local);
    if (sizes)
        set_int(env, "LOCAL_WORLD_SIZE", sizes[1]);
    set_int(env, "GROUP_RANK", group);
    if (sizes)
        set_int(env, "GROUP_WORLD_SIZE", sizes[2]);
    set_int(env, "ROLE_RANK", rank);
    if (sizes)
        set_int(env, "ROLE_WORLD_SIZE", sizes[0]);
}

static void copy_strings(json_t *to, const json_t *from)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)from, k, v) if (json_is_string(v)) json_object_set(to, k, v);
}

/* A host that planned its own ranks numbers them from 0: torchrun's place
 * of the rank comes from its place in the job (the launcher's) and the
 * job's ranks per host, which the head put in env.json. */
static void host_planned_place(json_t *env, const json_t *planned, const json_t *jobenv, int rank, int local)
{
    const char *lws = json_string_value(json_object_get(jobenv, "LOCAL_WORLD_SIZE"));
    if (!lws || !json_object_get(jobenv, "WORLD_SIZE") || json_object_get(planned, "RANK"))
        return;
    char *end;
    long per = strtol(lws, &end, 10);
    if (*end || per < 1)
        return;
    gpurun_rankenv_torchrun_place(env, rank, local, (rank - local) / per, NULL);
}

json_t *gpurun_rankenv_rank(const json_t *planned, const json_t *jobenv, int rank, int local)
{
    json_t *env = json_object();
    if (planned)
        copy_strings(env, planned);
    char num[32];
    snprintf(num, sizeof num, "%d", rank);
    json_object_set_new(env, "GPURUN_RANK", json_string(num));
    if (jobenv) {
        host_planned_place(env, planned, jobenv, rank, local);
        copy_strings(env, jobenv);
    }
    return env;
}
