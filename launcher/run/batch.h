/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_BATCH_H
#define GPURUN_BATCH_H

/* The batch script of `gpurun submit` (SPEC §1), for a resource manager
 * (plugins/rm.h). */

#include <stddef.h>

#include "error.h"
#include "job.h"
#include "rm.h"
#include "site.h"

/* What `gpurun run` checks before it looks at the node, done here so that a
 * mistake costs no time in the queue: the job's template (found on the
 * search path and read) or its command; every ${name} of the command, the
 * template's gpu_args and setup steps, and their words; the site profile
 * (found and read).  A template or site the job names but the search path
 * lacks is reported on the job file's line of the key, or on the --set
 * that gave it: "job.conf:2: key 'template': template
 * 'gromacz' not found (did you mean 'gromacs'?); looked in ...".  Errors
 * carry run's exit status (2).  The template's input files too
 * (gpurun_inputs_check): a missing one is found before the queue wait, and
 * *warnings (NULL: not wanted; free it) gets a line for each that compute
 * nodes usually cannot see.  *sitep: the job's site profile, NULL when it
 * names none; free with gpurun_site_destroy(). */
int gpurun_batch_check(const gpurun_job_t *job, gpurun_site_t **sitep, char **warnings, gpurun_error_t *err);

/* Which configurations of a scan one batch job runs (gpurun submit of a
 * scan: a job per configuration, sized and timed for it, or a job array
 * for configurations that share a size).  The body runs `gpurun run JOB
 * --configuration K`: K the configuration's number, or the array task's
 * index (rm->array_task_var), which is its configuration's number. */
struct gpurun_batch_configs {
    size_t count;          /* configurations in the scan */
    const long *numbers;   /* this job's, 1-based; more than one: an array (rm->array_task_var set) */
    size_t n;
    char *const *texts;    /* what each one varies: "ranks_per_node=2, params.npme=1" */
};

/* A complete `#!/bin/bash` batch script for `job` (with its --set already
 * applied) for resource manager `rm`: the manager's directives for the
 * job's layout (the largest of its scan), time limit, output file, its
 * section of the manager's options (`slurm {}`) and the site profile
 * `site`'s (NULL: none) that the job does not give itself; gpurun's
 * comments; then a body: `set -euo pipefail`, the site's `module load`s,
 * its scratch folder as GPURUN_SCRATCH, and `exec GPURUN_PATH run JOB_PATH
 * --set ASSIGNMENT...` on the compute node.  job_path is made absolute
 * from the current directory; every word of the body is single-quoted, so
 * any byte of a path, module name or assignment stays data.
 *
 * Errors carry GPURUN_EXIT_CONFIG and name the key: a layout the manager
 * needs and the job leaves to the node's topology (ranks_per_node; Slurm:
 * gpus_per_rank), an option that contradicts the layout or that a
 * directive cannot carry, a site scratch folder with a '$' other than
 * ${NAME}.  A layout the site's nodes cannot hold (cores_per_node,
 * gpus_per_node; unless oversubscribe) is GPURUN_EXIT_ENV, as on a node
 * that small.  *scriptp is malloc'ed.  plugins/slurm/sbatch.c says what
 * Slurm's #SBATCH lines hold. */
int gpurun_batch_script_rm(const gpurun_rm_plugin_t *rm, const gpurun_job_t *job, const gpurun_site_t *site,
                           const char *job_path, const char *gpurun_path, char *const *set_args, size_t nset,
                           const struct gpurun_batch_configs *cfgs, char **scriptp, gpurun_error_t *err);
/* The same for the manager `gpurun submit` picks (gpurun_rm_for_submit():
 * the job's launcher's, the site's scheduler, the allocation's, Slurm). */
/* `cfgs`: NULL for the whole job in one script; else `job` is the
 * configuration's (its scan's values set, so its layout and time limit are
 * the configuration's own), and the script runs those configurations. */
int gpurun_batch_script(const gpurun_job_t *job, const gpurun_site_t *site, const char *job_path,
                        const char *gpurun_path, char *const *set_args, size_t nset, char **scriptp,
                        gpurun_error_t *err);

/* The job's results folder, absolute: RESULTS/<job> with RESULTS relative to
 * the job file's folder.  GPURUN_EXIT_ENV when the current directory is
 * unknown.  *pathp is malloc'ed. */
int gpurun_batch_job_folder(const gpurun_job_t *job, char **pathp, gpurun_error_t *err);

/* `path` made absolute from the current directory, without resolving links
 * (the job file's folder is the one the user named).  *absp is malloc'ed. */
int gpurun_batch_abspath(const char *path, char **absp, gpurun_error_t *err);

/* The site profile as a manager plugin sees it (rm.h), pointing into `site`. */
void gpurun_batch_rm_site(const gpurun_site_t *site, struct gpurun_rm_site *out);

#endif
