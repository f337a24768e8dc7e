/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUN_H
#define GPURUN_RUN_H

/* One `gpurun run`: job + template merged, planned, launched through a
 * launcher plugin, supervised, and recorded in a run folder. */

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "job.h"

struct gpurun_run_opts {
    bool dry_run;
    bool quiet;          /* no rank output, no status line */
    bool verbose;
    const char *results; /* --results DIR, else the job's `results` (relative to the job file) */
    long configuration;  /* --configuration K: only the scan's K-th (1-based; a batch job of gpurun
                            submit); 0: every one */
    json_t *tune;        /* gpurun tune's trial: the record's "tune" object (borrowed); NULL: none */
    const char *const *sets; /* the command line's KEY=VALUE overrides, in order: the record's provenance */
    size_t nsets;
};

/* Returns the exit status of SPEC §1 (0 on success); when it is not 0, err
 * holds the sentence to print. */
int gpurun_run_job(gpurun_job_t *job, const struct gpurun_run_opts *opts, gpurun_error_t *err);

#endif
