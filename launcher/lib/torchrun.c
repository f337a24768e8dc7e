/* SPDX-License-Identifier: BSD-3-Clause */
/* torchrun's rank environment, given by gpurun instead of torchrun: one
 * process per rank started by the launcher (local, mpirun, srun), each
 * with the variables torch.distributed's env:// rendezvous reads. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "torchrun.h"

static void set_int(json_t *env, const char *key, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    json_object_set_new(env, key, json_string(buf));
}

void gpurun_torchrun_rank_env(gpurun_plan_t *plan)
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
        set_int(rk->env, "RANK", rk->rank);
        set_int(rk->env, "WORLD_SIZE", plan->nranks);
        set_int(rk->env, "LOCAL_RANK", rk->local_rank);
        set_int(rk->env, "LOCAL_WORLD_SIZE", on_node);
        set_int(rk->env, "GROUP_RANK", rk->node);
        set_int(rk->env, "GROUP_WORLD_SIZE", nodes);
        set_int(rk->env, "ROLE_RANK", rk->rank);
        set_int(rk->env, "ROLE_WORLD_SIZE", plan->nranks);
        /* NCCL's bootstrap and socket transport on the interface of the
         * rank's NIC (its IB HCA is NCCL_IB_HCA already). */
        const char *netdev = rk->nnics ? plan->topo->nics[rk->nics[0]].netdev : NULL;
        if (netdev && *netdev)
            json_object_set_new(rk->env, "NCCL_SOCKET_IFNAME", json_string(netdev));
    }
    free(per_node);
}

/* A TCP port nobody listens on now: the kernel's choice for port 0 (as
 * torchrun's standalone mode does; the rendezvous error names it should
 * another process take it before rank 0 binds it). */
static int free_port(gpurun_error_t *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "cannot find a free TCP port for MASTER_PORT on this host: %s; set params { %s = N }",
                          strerror(e), GPURUN_TORCHRUN_PORT_PARAM);
    }
    close(fd);
    return ntohs(sa.sin_port);
}

static long whole_number(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    return s && *s && !*end && !errno && v >= lo && v <= hi ? v : -1;
}

int gpurun_torchrun_master_env(const char *port, const char *origin_port, const char *timeout,
                               const char *origin_timeout, bool choose, const gpurun_plan_t *plan,
                               struct gpurun_kvlist *env, gpurun_error_t *err)
{
    int nodes = plan->req.nodes;
    char buf[32];
    long t = timeout ? whole_number(timeout, 1, 7 * 24 * 3600) : GPURUN_TORCHRUN_TIMEOUT_DEFAULT;
    if (t < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'params.%s': '%s' is not a number of seconds from 1 to 604800 (how long the ranks "
                          "wait for each other at the rendezvous)",
                          origin_timeout, GPURUN_TORCHRUN_TIMEOUT_PARAM, timeout);
    long p = !port || !strcmp(port, "auto") ? 0 : whole_number(port, 1, 65535);
    if (p < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'params.%s': '%s' is not a TCP port (1 to 65535) or \"auto\" (a free port of "
                          "the first host)",
                          origin_port, GPURUN_TORCHRUN_PORT_PARAM, port);
    if (p == 0 && choose && (p = free_port(err)) < 0)
        return -1;

    /* Rank 0 hosts the rendezvous, and starts on this host.  A name that
     * does not resolve is no address for the other ranks; on one node the
     * loopback address serves. */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    bool resolves = host[0] && getaddrinfo(host, NULL, &hints, &ai) == 0;
    if (ai)
        freeaddrinfo(ai);
    if (!resolves && nodes > 1)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "MASTER_ADDR: this host's name '%s' does not resolve, so ranks on other hosts cannot reach "
                          "rank 0; set env { MASTER_ADDR = \"ADDRESS\" } in the job",
                          host);
    gpurun_kvlist_set(env, "MASTER_ADDR", resolves ? host : "127.0.0.1");
    if (p) {
        snprintf(buf, sizeof buf, "%ld", p);
        gpurun_kvlist_set(env, "MASTER_PORT", buf);
    } else {
        gpurun_kvlist_set(env, "MASTER_PORT", "<free-port>");
    }
    snprintf(buf, sizeof buf, "%ld", t);
    gpurun_kvlist_set(env, GPURUN_ENV_RENDEZVOUS_TIMEOUT, buf);
    snprintf(buf, sizeof buf, "%d", plan->nranks);
    gpurun_kvlist_set(env, "WORLD_SIZE", buf);
    gpurun_kvlist_set(env, "ROLE_WORLD_SIZE", buf);
    snprintf(buf, sizeof buf, "%d", nodes);
    gpurun_kvlist_set(env, "GROUP_WORLD_SIZE", buf);
    /* For the rank steps of hosts that plan their own ranks: with this and
     * the rank's place in the job they set RANK, LOCAL_RANK, GROUP_RANK. */
    snprintf(buf, sizeof buf, "%d", nodes > 0 ? plan->nranks / nodes : plan->nranks);
    gpurun_kvlist_set(env, "LOCAL_WORLD_SIZE", buf);
    return 0;
}
