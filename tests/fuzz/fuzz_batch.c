/* SPDX-License-Identifier: BSD-3-Clause */
/* The batch script of `gpurun submit` (batch.c): a job file, a "%%" line
 * and a site profile; the site's #SBATCH options (its sbatch list,
 * partition, account) and the job's slurm {} section are split into
 * option names and values and merged, as submit writes the #SBATCH lines. */

#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "job.h"
#include "site.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy;
    const char *first, *rest;
    fuzz_split(data, size, &copy, &first, &rest);
    gpurun_job_t *job = NULL;
    gpurun_site_t *site = NULL;
    gpurun_error_t err;
    if (gpurun_job_parse(first, strlen(first), "job.conf", &job, &err) == 0 &&
        (!rest || gpurun_site_parse(rest, strlen(rest), "site.conf", &site, &err) == 0)) {
        char *script = NULL;
        char *sets[] = {"nodes=2", "params.n=5"};
        if (gpurun_batch_script(job, site, "/fuzz/job.conf", "/usr/bin/gpurun", sets, 2, &script, &err) == 0)
            free(script);
    }
    gpurun_site_destroy(site);
    gpurun_job_destroy(job);
    free(copy);
    return 0;
}
