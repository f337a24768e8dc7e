/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank's environment (launcher/lib/rankenv.c): what each owner gives,
 * put together in one order, the job's env { } last. */
#include "config.h"

#include <string.h>

#include "rankenv.h"
#include "tap.h"
#include "util.h"

static const char *get(const json_t *env, const char *key)
{
    return json_string_value(json_object_get(env, key));
}

int main(void)
{
    /* A rank the head planned: its plan entry holds torchrun's place. */
    json_t *planned = json_pack("{s:s, s:s, s:s, s:s, s:s}", "CUDA_VISIBLE_DEVICES", "1", "OMP_NUM_THREADS", "8",
                                "RANK", "5", "LOCAL_RANK", "1", "GROUP_RANK", "2");
    json_t *jobenv = json_pack("{s:s, s:s, s:s, s:s}", "WORLD_SIZE", "8", "LOCAL_WORLD_SIZE", "2", "OMP_NUM_THREADS",
                               "2", "MASTER_PORT", "29500");
    json_t *env = gpurun_rankenv_rank(planned, jobenv, 5, 1);
    is_str(get(env, "CUDA_VISIBLE_DEVICES"), "1", "the binding's variables come from the plan");
    is_str(get(env, "GPURUN_RANK"), "5", "GPURUN_RANK is the rank's place in the job");
    is_str(get(env, "OMP_NUM_THREADS"), "2", "the job's env { } wins over the plan's");
    is_str(get(env, "RANK"), "5", "a planned RANK is kept");
    is_str(get(env, "GROUP_RANK"), "2", "a planned GROUP_RANK is kept");
    is_str(get(env, "MASTER_PORT"), "29500", "the job-wide rendezvous from env.json");
    json_decref(env);
    json_decref(planned);

    /* A rank that its host planned (numbered from 0 there): its place comes
     * from the launcher's rank and the job's ranks per host. */
    planned = json_pack("{s:s}", "CUDA_VISIBLE_DEVICES", "0");
    env = gpurun_rankenv_rank(planned, jobenv, 6, 0);
    is_str(get(env, "RANK"), "6", "host-planned: RANK from the job's place");
    is_str(get(env, "ROLE_RANK"), "6", "host-planned: ROLE_RANK = RANK");
    is_str(get(env, "LOCAL_RANK"), "0", "host-planned: LOCAL_RANK from the host");
    is_str(get(env, "GROUP_RANK"), "3", "host-planned: GROUP_RANK = (rank - local) / ranks per host");
    json_decref(env);

    /* No torchrun job: no torchrun place. */
    json_t *plain = json_pack("{s:s}", "GMX_MAXBACKUP", "-1");
    env = gpurun_rankenv_rank(planned, plain, 3, 1);
    ok(!json_object_get(env, "RANK") && !json_object_get(env, "GROUP_RANK"), "no torchrun sizes: no RANK set");
    is_str(get(env, "GMX_MAXBACKUP"), "-1", "the job's env { } is there");
    json_decref(env);
    /* A malformed size from a hostile env.json: nothing made up. */
    json_t *bad = json_pack("{s:s, s:s}", "WORLD_SIZE", "8", "LOCAL_WORLD_SIZE", "0x");
    env = gpurun_rankenv_rank(planned, bad, 3, 1);
    ok(!json_object_get(env, "RANK"), "a LOCAL_WORLD_SIZE that is no number: no place computed");
    json_decref(env);
    env = gpurun_rankenv_rank(NULL, NULL, 0, 0);
    ok(json_object_size(env) == 1 && get(env, "GPURUN_RANK"), "no plan entry and no env.json: GPURUN_RANK alone");
    json_decref(env);
    json_decref(bad);
    json_decref(plain);
    json_decref(planned);
    json_decref(jobenv);

    /* env.json: the job's env { } after torchrun's values. */
    struct gpurun_kvlist job = {0}, out = {0};
    gpurun_kvlist_set(&job, "NCCL_DEBUG", "INFO");
    gpurun_error_t err = {0};
    ok(gpurun_rankenv_job(NULL, 0, "/nonexistent", NULL, &job, &out, &err) == 0 && out.n == 1 &&
           !strcmp(gpurun_kvlist_get(&out, "NCCL_DEBUG"), "INFO"),
       "env.json without torchrun: the job's env { } alone");
    gpurun_kvlist_clear(&job);
    gpurun_kvlist_clear(&out);
    return done_testing();
}
