/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SITE_H
#define GPURUN_SITE_H

/* Site profiles (SPEC §4): templates/sites/NAME.conf, found on the template
 * search path under sites/. */

#include <stddef.h>

#include "container.h"
#include "error.h"
#include "job.h"

typedef struct gpurun_site {
    char *path;
    char *name;
    char *description;
    char *scheduler;          /* a resource manager present ("slurm"), or "none" */
    char *launcher;           /* "auto", or a launcher present ("srun", "mpirun", "local") */
    char *partition;          /* NULL when none */
    char *account;
    char **modules;           /* module load lines */
    size_t nmodules;
    /* The batch options for the manager's scripts ("--qos=normal"), from the
     * list key a resource-manager plugin declares (rm.h site_options_key) */
    char **batch_options;
    size_t nbatch_options;
    int gpus_per_node;        /* -1 unknown */
    int cores_per_node;       /* physical cores of a compute node; -1 unknown */
    char *scratch;
    double price_per_gpu_hour;      /* on demand; < 0 unknown */
    double spot_price_per_gpu_hour; /* < 0 unknown */
    char *currency;                 /* "USD" */
    double price_per_kwh;           /* energy price, in currency; < 0 unknown */
    double grams_co2_per_kwh;       /* the grid's carbon intensity; < 0 unknown */
    struct gpurun_kvlist from;      /* key -> "FILE:LINE", for messages */
    struct gpurun_container_spec container; /* container { runtime mounts allowed_mounts } */
} gpurun_site_t;

/* "FILE:LINE" of the profile's `key`, or the file name when unknown. */
const char *gpurun_site_origin(const gpurun_site_t *s, const char *key);

/* Find sites/NAME.conf on the template search path and read it; errors name
 * the file, line and key (exit 2).  One that shadows an installed profile of
 * the same name keeps that profile's container.allowed_mounts too
 * (container.admin_allowed): SPEC §4, it cannot relax them. */
int gpurun_site_load(const char *name, const char *job_dir, gpurun_site_t **sp, gpurun_error_t *err);
/* The site profile the job names (NULL when none); one the search path
 * lacks is reported on the job's line of `site` (or its --set). */
int gpurun_site_for_job(const gpurun_job_t *job, gpurun_site_t **sp, gpurun_error_t *err);
int gpurun_site_parse(const char *text, size_t len, const char *label, gpurun_site_t **sp, gpurun_error_t *err);
void gpurun_site_destroy(gpurun_site_t *s);

#endif
