/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TORCHRUN_H
#define GPURUN_TORCHRUN_H

/* torchrun's rank environment (SPEC §5), for a template that asks for it
 * with rank_env = "torchrun": what torch.distributed's env:// rendezvous
 * reads, computed once by the head gpurun. */

#include <stdbool.h>

#include "error.h"
#include "plan.h"
#include "util.h"

/* The params (template defaults) that set the rendezvous. */
#define GPURUN_TORCHRUN_PORT_PARAM "master_port"          /* "auto" or 1..65535 */
#define GPURUN_TORCHRUN_TIMEOUT_PARAM "rendezvous_timeout" /* seconds */
#define GPURUN_TORCHRUN_TIMEOUT_DEFAULT 180L
/* The rendezvous bound, as the ranks see it. */
#define GPURUN_ENV_RENDEZVOUS_TIMEOUT "GPURUN_RENDEZVOUS_TIMEOUT"

/* Each rank's own values into its env in `plan` (so that every host plan
 * and the dry run's table hold them): RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK (the node's index), GROUP_WORLD_SIZE,
 * ROLE_RANK, ROLE_WORLD_SIZE, and NCCL_SOCKET_IFNAME, the network
 * interface of the rank's first NIC where it has one. */
void gpurun_torchrun_rank_env(gpurun_plan_t *plan);

/* The job-wide values into `env` (env.json): MASTER_ADDR (this host, where
 * rank 0 starts), MASTER_PORT (`port`: a number, or "auto": a port free on
 * this host now, or, when !choose (a dry run), "<free-port>"), and
 * GPURUN_RENDEZVOUS_TIMEOUT (`timeout`: whole seconds); and the job-wide
 * sizes WORLD_SIZE, GROUP_WORLD_SIZE, ROLE_WORLD_SIZE again, for the ranks
 * of hosts whose rank steps plan their own ranks (their plan lacks them).  `origin_port` and
 * `origin_timeout` say where each was set, for an error (exit 2); exit 3
 * when no free port can be had. */
int gpurun_torchrun_master_env(const char *port, const char *origin_port, const char *timeout,
                               const char *origin_timeout, bool choose, const gpurun_plan_t *plan,
                               struct gpurun_kvlist *env, gpurun_error_t *err);

#endif
