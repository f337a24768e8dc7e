/* SPDX-License-Identifier: BSD-3-Clause */
/* torchrun's rank environment, given by gpurun instead of torchrun: one
 * process per rank started by the launcher (local, mpirun, srun), each
 * with the variables torch.distributed's rendezvous reads. */
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

/* A TCP port nobody listens on now: the kernel's choice for port 0 (as
 * torchrun's standalone mode does).  RANK0 only: the port is free again
 * until rank 0 binds it. */
int gpurun_torchrun_free_port(gpurun_error_t *err)
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

static const char *const mode_names[] = {"store", "file", "rank0"};

const char *gpurun_rendezvous_name(enum gpurun_rendezvous mode)
{
    return (unsigned)mode < sizeof mode_names / sizeof mode_names[0] ? mode_names[mode] : "?";
}

int gpurun_torchrun_settings(const struct gpurun_torchrun_params *p, struct gpurun_torchrun_settings *s,
                             gpurun_error_t *err)
{
    s->mode = GPURUN_RDV_STORE;
    if (p->mode && *p->mode) {
        size_t i = 0;
        while (i < 3 && strcmp(p->mode, mode_names[i]) != 0)
            i++;
        if (i == 3)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: key 'params.%s': '%s' is not one of store (gpurun hosts the rendezvous on a port "
                              "it holds), file (a file in the run folder, no port) or rank0 (rank 0 hosts it)",
                              p->mode_origin, GPURUN_TORCHRUN_MODE_PARAM, p->mode);
        s->mode = (enum gpurun_rendezvous)i;
    }
    s->timeout = p->timeout ? whole_number(p->timeout, 1, 7 * 24 * 3600) : GPURUN_TORCHRUN_TIMEOUT_DEFAULT;
    if (s->timeout < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'params.%s': '%s' is not a number of seconds from 1 to 604800 (how long the ranks "
                          "wait for each other at the rendezvous)",
                          p->timeout_origin, GPURUN_TORCHRUN_TIMEOUT_PARAM, p->timeout);
    long port = !p->port || !strcmp(p->port, "auto") ? 0 : whole_number(p->port, 1, 65535);
    if (port < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'params.%s': '%s' is not a TCP port (1 to 65535) or \"auto\" (a free port of "
                          "the first host)",
                          p->port_origin, GPURUN_TORCHRUN_PORT_PARAM, p->port);
    s->port = (int)port;
    return 0;
}

int gpurun_torchrun_master_env(const struct gpurun_torchrun_settings *s, int port, const char *run_dir,
                               const gpurun_plan_t *plan, struct gpurun_kvlist *env, gpurun_error_t *err)
{
    int nodes = plan->req.nodes;
    char buf[64];
    gpurun_kvlist_set(env, GPURUN_ENV_RENDEZVOUS, gpurun_rendezvous_name(s->mode));
    if (s->mode == GPURUN_RDV_FILE) {
        char fs[64];
        if (run_dir && nodes > 1 && gpurun_shared_fs(run_dir, fs, sizeof fs) == 0)
            return gpurun_err(err, GPURUN_EXIT_ENV,
                              "params.%s = \"file\": the run folder %s is on %s, a file system of this host only, so "
                              "ranks on the other %d host%s cannot meet there; use a results folder on a shared file "
                              "system, or params { %s = \"store\" }",
                              GPURUN_TORCHRUN_MODE_PARAM, run_dir, fs, nodes - 1, nodes == 2 ? "" : "s",
                              GPURUN_TORCHRUN_MODE_PARAM);
        char *url = gpurun_xasprintf("file://%s/" GPURUN_RUN_RENDEZVOUS_FILE, run_dir ? run_dir : "RUN_DIR");
        gpurun_kvlist_set(env, GPURUN_ENV_INIT_METHOD, url);
        free(url);
    } else {
        /* The store (gpurun's, or rank 0's) is on this host.  A name that
         * does not resolve is no address for the other ranks; on one node
         * the loopback address serves. */
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
        bool resolves = host[0] && getaddrinfo(host, NULL, &hints, &ai) == 0;
        if (ai)
            freeaddrinfo(ai);
        if (!resolves && nodes > 1)
            return gpurun_err(err, GPURUN_EXIT_ENV,
                              "MASTER_ADDR: this host's name '%s' does not resolve, so ranks on other hosts cannot "
                              "reach the rendezvous; set env { MASTER_ADDR = \"ADDRESS\" } in the job",
                              host);
        gpurun_kvlist_set(env, "MASTER_ADDR", resolves ? host : "127.0.0.1");
        if (port > 0)
            snprintf(buf, sizeof buf, "%d", port);
        else
            snprintf(buf, sizeof buf, "%s", s->mode == GPURUN_RDV_STORE ? "<store-port>" : "<free-port>");
        gpurun_kvlist_set(env, "MASTER_PORT", buf);
        gpurun_kvlist_set(env, GPURUN_ENV_INIT_METHOD, "env://");
        if (s->mode == GPURUN_RDV_STORE) {
            /* Every rank a client of gpurun's store, as of torchrun's agent. */
            gpurun_kvlist_set(env, "TORCHELASTIC_USE_AGENT_STORE", "True");
            gpurun_kvlist_set(env, "TORCHELASTIC_RESTART_COUNT", "0");
        }
    }
    snprintf(buf, sizeof buf, "%ld", s->timeout);
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
