/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_JOB_TEMPLATE_H
#define GPURUN_JOB_TEMPLATE_H

/* Where a job meets its template (job_template.c): the template it names,
 * and the params it sets that the template must use.  Above both job.h and
 * template.h, so that neither needs the other. */

#include "error.h"
#include "job.h"
#include "template.h"

/* The job's template, found on the search path and read (NULL for a job
 * that gives a command instead), its params checked as below.  A template
 * not found is reported on the job's line of `template` (or its --set); a
 * job with neither template nor command is an error.  Exit 2 either way. */
int gpurun_template_for_job(const gpurun_job_t *job, gpurun_template_t **tp, gpurun_error_t *err);

/* Every params key of `job` must be used (SPEC §2: an unknown key is an
 * error): a default of the template `t`, or a ${key} in a string gpurun
 * expands from it (command, gpu_args, setup, each fom's file, regex,
 * header, row, after and units) or from the job (its command; the only one
 * when `t` is NULL).  An unused key is an error (exit 2) naming where it was
 * set: "job.conf:12: key 'params.nstep': not used: template 'gromacs' has
 * no '${nstep}' and no default of that name (did you mean 'params.nsteps'?)",
 * or "--set params.nstep=10: key ...". */
int gpurun_template_check_params(const gpurun_template_t *t, const gpurun_job_t *job,
                                 gpurun_error_t *err);

#endif
