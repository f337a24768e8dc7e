/* SPDX-License-Identifier: BSD-3-Clause */
/* The job file reader (job.c, confparse.c): any bytes as a job file; what
 * parses has its `references` bands read as `gpurun run` reads them. */

#include "fuzz.h"

#include <stdlib.h>

#include "fom.h"
#include "job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpurun_job_t *job = NULL;
    gpurun_error_t err;
    if (gpurun_job_parse((const char *)data, size, "fuzz.conf", &job, &err) == 0) {
        for (size_t i = 0; i < job->references.n; i++) {
            struct gpurun_band band;
            char why[256];
            gpurun_reference_parse(job->references.items[i].value, &band, &err);
            gpurun_reference_check(job->references.items[i].value, 42.0, why, sizeof why, &err);
        }
        gpurun_job_destroy(job);
    }
    return 0;
}
