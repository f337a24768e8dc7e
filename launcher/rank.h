/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_H
#define GPURUN_RANK_H

/* The per-rank step: every rank starts as `gpurun rank --run-dir DIR -- APP`,
 * whatever the launcher.  It finds its rank, applies the plan's binding and
 * environment, records the binding it really got, starts the program with
 * its output in the run folder, and records how the program ended. */

#include <jansson.h>

#include "error.h"

/* Files of a run folder, shared by the rank step and the run. */
#define GPURUN_RUN_PLAN "plan.json"
#define GPURUN_RUN_TOPOLOGY "topology.xml"
#define GPURUN_RUN_ENV "env.json"
#define GPURUN_RUN_REQUEST "request.json"
#define GPURUN_RUN_GPUDIRECT "gpudirect.json" /* {"mode": "auto", "env": {the template's env}} */
/* rank.N.out (stdout and stderr), rank.N.binding.json, rank.N.status.json */
char *gpurun_rank_file(const char *run_dir, int rank, const char *what);

/* Returns the program's exit status (128+N when killed by signal N), or -1
 * with err when the rank could not even be started. */
int gpurun_rank_step(const char *run_dir, char *const *app_argv, gpurun_error_t *err);

/* The plan of one host's ranks (plan.HOST.json), made on first use. */
json_t *gpurun_host_plan(const char *run_dir, const char *host, gpurun_error_t *err);
char *gpurun_host_plan_path(const char *run_dir, const char *host);

/* Write a JSON document completely or not at all (temporary file, rename). */
int gpurun_write_json(const char *path, json_t *doc, gpurun_error_t *err);

#endif
