/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_BATCH_H
#define GPURUN_BATCH_H

/* The Slurm batch script of `gpurun submit` (SPEC §1). */

#include <stddef.h>

#include "error.h"
#include "job.h"

/* A complete `#!/bin/bash` batch script for `job` (with its --set already
 * applied): #SBATCH lines for the job's layout (the largest of its scan),
 * time limit, output file and `slurm {}` section, then a body that runs
 * `GPURUN_PATH run JOB_PATH --set ASSIGNMENT...` again on the compute node.
 * job_path is made absolute from the current directory; every word of the
 * body is single-quoted, so any byte of a path or assignment stays data.
 *
 * Errors carry GPURUN_EXIT_CONFIG and name the key: a layout Slurm needs
 * and the job leaves to the node's topology (ranks_per_node, gpus_per_rank),
 * a slurm{} key that contradicts the layout (slurm.nodes), a value that an
 * #SBATCH line cannot carry (control character, 'hetjob').  *scriptp is
 * malloc'ed. */
int gpurun_batch_script(const gpurun_job_t *job, const char *job_path, const char *gpurun_path,
                        char *const *set_args, size_t nset, char **scriptp, gpurun_error_t *err);

/* The job's results folder, absolute: RESULTS/<job> with RESULTS relative to
 * the job file's folder.  GPURUN_EXIT_ENV when the current directory is
 * unknown.  *pathp is malloc'ed. */
int gpurun_batch_job_folder(const gpurun_job_t *job, char **pathp, gpurun_error_t *err);

/* `path` made absolute from the current directory, without resolving links
 * (the job file's folder is the one the user named).  *absp is malloc'ed. */
int gpurun_batch_abspath(const char *path, char **absp, gpurun_error_t *err);

#endif
