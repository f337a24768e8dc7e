/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLAN_H
#define GPURUN_PLAN_H

/* The binding planner (SPEC §5): topology + request in, plan out.  Pure:
 * it never prints, exits or touches the machine. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "job.h"
#include "plan_model.h"
#include "topology.h"

/* Defaults of a job without a job file. */
void gpurun_request_init(gpurun_request_t *req);
void gpurun_request_from_job(gpurun_request_t *req, const gpurun_job_t *job);


/* Errors: GPURUN_EXIT_CONFIG for a malformed request, GPURUN_EXIT_ENV when
 * this topology cannot meet it (with what would work). */
int gpurun_plan_create(const gpurun_topo_t *topo, const gpurun_request_t *req, gpurun_plan_t **planp,
                       gpurun_error_t *err);
void gpurun_plan_destroy(gpurun_plan_t *plan);

/* The request as JSON and back (run folders keep it, so that every host
 * of a job plans its own ranks with it). */
json_t *gpurun_request_json(const gpurun_request_t *req);
void gpurun_request_from_json(gpurun_request_t *req, json_t *j);

/* The version-1 document of SPEC §5. */
json_t *gpurun_plan_json(const gpurun_plan_t *plan);

#endif
