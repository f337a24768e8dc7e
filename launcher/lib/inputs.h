/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_INPUTS_H
#define GPURUN_INPUTS_H

/* A template's input files (SPEC §3 `inputs`): checked by run, its dry
 * run and submit before anything starts or is queued, so that a missing
 * .tpr is found before the queue wait, not after. */

#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "job.h"
#include "template.h"
#include "util.h"

/* Each of t's inputs, expanded with `names` (gpurun_job_names(): an input
 * that is one ${NAME} is already absolute there; any other relative one is
 * `job_dir`'s), must be a regular file you can read; a .tpr must be a
 * whole GROMACS run input (gpurun_tpr_check).  An input that expands to ""
 * is not asked for.  Errors (exit 2) name where its value was set (the
 * job's line of params.NAME or its --set, else the template's line), the
 * key and the path.  `warnings` (NULL: none wanted): for submit, a line
 * for each input on a file system that other hosts usually cannot see
 * (/tmp, /dev/shm, a disk of this host's own), appended; free it. */
int gpurun_inputs_check(const gpurun_template_t *t, const gpurun_job_t *job, const char *job_dir,
                        struct gpurun_kvlist *names, char **warnings, gpurun_error_t *err);

/* Input `i` of t expanded with `names`, a relative one made `job_dir`'s:
 * malloc'ed ("" for one that expands to nothing), or NULL with err; the
 * expansion as it was into *expandedp (NULL: not wanted). */
char *gpurun_input_path(const gpurun_template_t *t, size_t i, const char *job_dir, struct gpurun_kvlist *names,
                        char **expandedp, gpurun_error_t *err);

/* Whether the first `n` bytes `b` of a file of `size` bytes are the header
 * of a GROMACS run input (.tpr) whose body is all there (GROMACS 2020 and
 * later write its size; earlier ones are checked up to their header):
 * 0, or -1 with why ("is cut short: ...") in `why`. */
int gpurun_tpr_check(const unsigned char *b, size_t n, off_t size, char *why, size_t wsize);

#endif
