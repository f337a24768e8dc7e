/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PROGRESS_TEMPLATE_H
#define GPURUN_PROGRESS_TEMPLATE_H

/* A template's progress keys made a progress definition
 * (progress_template.c): above progress.h and template.h, so that a
 * template may check its progress_groups with progress.h. */

#include "error.h"
#include "expand.h"
#include "progress.h"
#include "template.h"

/* The template's progress keys with the run's ${name}s (lookup/ctx). */
struct gpurun_progress_conf {
    struct gpurun_progress_def def;
    char *file;        /* the file the lines are in, relative to the run folder; NULL: rank 0's output */
    char *total_file;  /* with total_regex: N is gpurun_progress_product() of this file; NULL: none */
    char *total_regex;
    char *owned[9];    /* the strings above point into these */
};

/* 1 when the template has progress (*c filled), 0 when it has none, -1
 * with err (exit 2, naming the template's file, line and key) for a value
 * that is not what the key takes once expanded (progress_total: "'abc'
 * (from '${nsteps}') is not a whole number").  Free with
 * gpurun_progress_conf_free. */
int gpurun_progress_from_template(const gpurun_template_t *t, gpurun_lookup_fn lookup, void *ctx,
                                  struct gpurun_progress_conf *c, gpurun_error_t *err);
void gpurun_progress_conf_free(struct gpurun_progress_conf *c);

#endif
