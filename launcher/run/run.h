/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUN_H
#define GPURUN_RUN_H

/* One `gpurun run`: job + template merged, planned, launched through a
 * launcher plugin, supervised, and recorded in a run folder. */

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "job.h"
#include "run_opts.h"

/* Returns the exit status of SPEC §1 (0 on success); when it is not 0, err
 * holds the sentence to print. */
int gpurun_run_job(gpurun_job_t *job, const struct gpurun_run_opts *opts, gpurun_error_t *err);

#endif
