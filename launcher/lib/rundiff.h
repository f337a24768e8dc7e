/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUNDIFF_H
#define GPURUN_RUNDIFF_H

/* gpurun diff: what differs between two runs' records, most telling first
 * (figures, conditions, hosts and hardware, layout, each rank's binding,
 * job keys, program, inputs, versions, the environment gpurun set), and
 * whether a figure's difference is beyond the noise of its configuration's
 * repeats in the results store.  Also the finding of a run by folder or id,
 * which gpurun rerun shares. */

#include <jansson.h>

#include "error.h"

/* At most this many differences of one section, and ranks compared: a
 * 8,000-rank run's diff stays readable and bounded. */
#define GPURUN_RUNDIFF_SECTION_MAX 200
#define GPURUN_RUNDIFF_RANKS_MAX 8192

/* The run folder `arg` names: a folder with a record.json, RESULTS/`arg`
 * (JOB/RUN-ID), or a run id of the results folder `results_dir` (found
 * through its index, as gpurun results lists them).  *dirp malloc'ed.  0,
 * or -1 with err (exit 2) naming what was looked for. */
int gpurun_run_find(const char *arg, const char *results_dir, char **dirp, gpurun_error_t *err);

/* The results folder that holds run folder `run_dir` (RESULTS/JOB/RUN-ID,
 * its real path), malloc'ed; NULL when it has no two folders above it. */
char *gpurun_run_results_dir(const char *run_dir);

/* RUN_DIR/record.json, read as the results store reads records (no symlink
 * followed, a regular file, bounded): 0, or -1 with err (exit 2) naming
 * the path. */
int gpurun_run_record(const char *run_dir, json_t **recp, gpurun_error_t *err);

/* The spread of each figure over the runs of `rec`'s configuration (same
 * job, layout, params and scan values; ok, and not busy where the record
 * says) in the results folder that holds `run_dir`: {"NAME": {"n", "mean",
 * "sd"}}; sd is null for fewer than 2 runs.  An empty object when there is
 * no results store there. */
json_t *gpurun_rundiff_noise(const char *run_dir, const json_t *rec);

/* The differences of the records a and b: {"a": {...}, "b": {...},
 * "differences": [{"section", "key", "a", "b"} ...]}; a figure's entry also
 * has "units", "change" (b/a - 1) and "noise" ("beyond the noise", "within
 * the noise" or "noise unknown") with the spreads.  noise_a, noise_b: from
 * gpurun_rundiff_noise (may be NULL). */
json_t *gpurun_rundiff(const char *dir_a, const json_t *a, const json_t *noise_a, const char *dir_b, const json_t *b,
                       const json_t *noise_b);

/* The differences as text for a terminal, one line each under its section
 * ("no differences" when none).  Malloc'ed. */
char *gpurun_rundiff_text(const json_t *diff);

#endif
