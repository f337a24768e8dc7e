/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TORCHRUN_H
#define GPURUN_TORCHRUN_H

/* torchrun's rank environment (SPEC §5), for a template that asks for it
 * with rank_env = "torchrun": what torch.distributed's rendezvous reads,
 * computed once by the head gpurun. */

#include <stdbool.h>

#include "error.h"
#include "plan.h"
#include "util.h"

/* The params (template defaults) that set the rendezvous. */
#define GPURUN_TORCHRUN_MODE_PARAM "rendezvous"           /* store | file | rank0 */
#define GPURUN_TORCHRUN_PORT_PARAM "master_port"          /* "auto" or 1..65535 */
#define GPURUN_TORCHRUN_TIMEOUT_PARAM "rendezvous_timeout" /* seconds */
#define GPURUN_TORCHRUN_PYTHON_PARAM "python"             /* the store's interpreter too */
#define GPURUN_TORCHRUN_TIMEOUT_DEFAULT 180L
/* What the ranks see: the rendezvous bound, the init_method to give
 * init_process_group (env:// or file://...), and the mode's name. */
#define GPURUN_ENV_RENDEZVOUS_TIMEOUT "GPURUN_RENDEZVOUS_TIMEOUT"
#define GPURUN_ENV_INIT_METHOD "GPURUN_INIT_METHOD"
#define GPURUN_ENV_RENDEZVOUS "GPURUN_RENDEZVOUS"
/* The file:// rendezvous's file, in the run folder. */
#define GPURUN_RUN_RENDEZVOUS_FILE "rendezvous.store"

/* How the ranks meet:
 *   STORE  gpurun hosts torch's TCPStore on this host (the head holds its
 *          port from bind to the end: no window for another user to take
 *          it); every rank is a client, as under torchrun's agent
 *          (TORCHELASTIC_USE_AGENT_STORE).  Any env:// script.
 *   FILE   torch's FileStore in the private run folder, no network port:
 *          one host, or several where the run folder is on a shared file
 *          system.  Scripts pass $GPURUN_INIT_METHOD to init_process_group.
 *   RANK0  rank 0 hosts the store on a port chosen now and free until it
 *          binds it (torchrun's standalone way: another local user can take
 *          the port in between). */
enum gpurun_rendezvous { GPURUN_RDV_STORE, GPURUN_RDV_FILE, GPURUN_RDV_RANK0 };

/* The rendezvous params of a job, and where each was set (for messages). */
struct gpurun_torchrun_params {
    const char *mode, *mode_origin;
    const char *port, *port_origin;
    const char *timeout, *timeout_origin;
};
/* ... checked. */
struct gpurun_torchrun_settings {
    enum gpurun_rendezvous mode;
    int port;     /* 0: auto */
    long timeout; /* seconds */
};

/* Checks the params: 0, or an error naming the key and where it was set
 * (exit 2). */
int gpurun_torchrun_settings(const struct gpurun_torchrun_params *p, struct gpurun_torchrun_settings *s,
                             gpurun_error_t *err);

const char *gpurun_rendezvous_name(enum gpurun_rendezvous mode);

/* The job-wide values into `env` (env.json).  Every mode: WORLD_SIZE,
 * GROUP_WORLD_SIZE, ROLE_WORLD_SIZE and LOCAL_WORLD_SIZE (for the ranks of
 * hosts whose rank steps plan their own ranks: their plan lacks them),
 * GPURUN_RENDEZVOUS_TIMEOUT, GPURUN_RENDEZVOUS and GPURUN_INIT_METHOD.
 * STORE and RANK0: MASTER_ADDR (this host) and MASTER_PORT: `port` (the
 * store's, or RANK0's chosen port); 0 in a dry run, shown as a placeholder.
 * STORE also TORCHELASTIC_USE_AGENT_STORE=True, TORCHELASTIC_RESTART_COUNT=0.
 * FILE: GPURUN_INIT_METHOD=file://RUN_DIR/rendezvous.store and no
 * MASTER_*; exit 3 when the job has several hosts and `run_dir` is not on
 * a shared file system (a folder not made yet, as in a dry run: not checked). */
int gpurun_torchrun_master_env(const struct gpurun_torchrun_settings *s, int port, const char *run_dir,
                               const gpurun_plan_t *plan, struct gpurun_kvlist *env, gpurun_error_t *err);

/* RANK0: a TCP port nobody listens on now (the kernel's choice for port
 * 0, let go at once), or -1 with err (exit 3). */
int gpurun_torchrun_free_port(gpurun_error_t *err);

#endif
