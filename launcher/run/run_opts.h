/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUN_OPTS_H
#define GPURUN_RUN_OPTS_H

/* What `gpurun run` was asked on its command line (run.h's gpurun_run_job
 * takes it; the run's parts read it). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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

#endif
