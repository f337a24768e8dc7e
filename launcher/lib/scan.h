/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SCAN_H
#define GPURUN_SCAN_H

/* The configurations of a job's scan { } (SPEC §2): every combination of
 * its axes, the first axis outermost, each one a list of KEY=VALUE
 * overrides applied as --set applies them.  `gpurun run` and `gpurun
 * submit` go through these; `gpurun tune` can apply its own lists. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "job.h"

/* One configuration of a scan. */
struct gpurun_scan_config {
    size_t index;  /* 0-based */
    size_t count;  /* configurations in the scan */
    char **sets;   /* "ranks_per_node=2", "params.npme=1"; NULL-ended */
    size_t nsets;
    char *text;    /* what varies: "ranks_per_node=2, params.npme=1" ("" for a job without a scan) */
};

/* Configurations in the job's scan: the product of its axes' lengths (1
 * without a scan). */
size_t gpurun_scan_count(const gpurun_job_t *job);

/* True when an axis varies a template parameter (params.NAME). */
bool gpurun_scan_has_params(const gpurun_job_t *job);

/* Configuration `k` (0 <= k < count) into *out; free with
 * gpurun_scan_config_free(). */
void gpurun_scan_config(const gpurun_job_t *job, size_t k, struct gpurun_scan_config *out);
void gpurun_scan_config_free(struct gpurun_scan_config *c);

/* Apply `c`'s overrides to the job, checked as --set checks them; the scan
 * itself is kept, and a key set this way names the scan's line as its
 * origin.  -1 with err (exit 2) on a value the job refuses. */
int gpurun_scan_apply(gpurun_job_t *job, const struct gpurun_scan_config *c, gpurun_error_t *err);

/* A short text of what the scan varies (malloc'ed): "ranks_per_node {1, 2}
 * x params.npme {0, 1}: 4 configurations"; "no scan" without one. */
char *gpurun_scan_describe(const gpurun_job_t *job);

#endif
