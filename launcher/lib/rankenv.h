/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANKENV_H
#define GPURUN_RANKENV_H

/* A rank's environment: the one place it is put together.
 *
 * Each module that owns a concept computes its own variables:
 *   plan.c       the binding: CUDA_VISIBLE_DEVICES (CUDA_DEVICE_ORDER) or
 *                ROCR_VISIBLE_DEVICES, UCX_NET_DEVICES, NCCL_IB_HCA,
 *                OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND, GPURUN_LOCAL_RANK
 *   gpudirect.c  UCX_IB_GPU_DIRECT_RDMA, NCCL_NET_GDR_LEVEL, the template's env
 *   mps.c        CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY
 *   torchrun.c   the job's rendezvous (MASTER_ADDR, MASTER_PORT, ...) and sizes;
 *                a rank's place (RANK, LOCAL_RANK, GROUP_RANK, ROLE_RANK) is
 *                this file's, torchrun's names for it
 *   the job      its env { }
 * The first three go into the planned rank's "env" (plan.json, a host's
 * plan); the job-wide part into env.json; here they are combined, in this
 * order, later ones winning:
 *   1. the planned rank's env
 *   2. GPURUN_RANK, the rank's place in the job
 *   3. torchrun's place of a rank that its host planned (numbered from 0
 *      there, so the plan cannot know it)
 *   4. env.json: torchrun's job-wide values, then the job's env { }, which
 *      wins over everything: the user asked for it. */

#include <jansson.h>

#include "error.h"
#include "util.h"

/* gpurun-rank, the lean rank step, links only the rank half of rankenv.c. */
struct gpurun_plan;
struct gpurun_torchrun_settings;

/* env.json: what every rank of the job gets.  `torchrun`: the template's
 * rendezvous settings, NULL when the template asks for no torchrun
 * environment; `port`: the rendezvous port when known (0: the settings' or
 * a placeholder, as in a dry run).  0, or -1 with `err` set. */
int gpurun_rankenv_job(const struct gpurun_torchrun_settings *torchrun, int port, const char *run_dir,
                       const struct gpurun_plan *plan, const struct gpurun_kvlist *job_env, struct gpurun_kvlist *out,
                       gpurun_error_t *err);

/* Each rank's own values into its env in `plan` (so that every host plan
 * and the dry run's table hold them): RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK (the node's index), GROUP_WORLD_SIZE,
 * ROLE_RANK, ROLE_WORLD_SIZE, and NCCL_SOCKET_IFNAME, the network
 * interface of the rank's first NIC where it has one. */
void gpurun_rankenv_torchrun_plan(struct gpurun_plan *plan);

/* A rank's place in the job, as torchrun gives it: RANK and ROLE_RANK,
 * LOCAL_RANK, GROUP_RANK (its host's number), into `env`; with `sizes`
 * ({world, ranks on its host, hosts}) also WORLD_SIZE, LOCAL_WORLD_SIZE,
 * GROUP_WORLD_SIZE and ROLE_WORLD_SIZE. */
void gpurun_rankenv_torchrun_place(json_t *env, long rank, long local, long group, const long *sizes);

/* The variables rank `rank` (`local` on its host) gets, as a new JSON
 * object of strings: `planned` is its entry's "env" in the plan (may be
 * NULL), `jobenv` the job's env.json (may be NULL). */
json_t *gpurun_rankenv_rank(const json_t *planned, const json_t *jobenv, int rank, int local);

#endif
