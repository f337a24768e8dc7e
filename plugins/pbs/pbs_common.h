/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PBS_RM_H
#define GPURUN_PBS_RM_H

/* What the files of plugins/pbs share (each includes this, none includes
 * another's header, so pbs.c, the registering file, is no circle's).
 * PBS (OpenPBS, PBS Professional) as a resource manager (plugins/rm.h):
 * pbs.c holds the plugin, job.c what a PBS job says of itself (its node
 * file, its select statement, its standard error), run.c its launch command
 * (Open MPI's mpirun with the node file, or Cray PALS's mpiexec), batch.c its
 * batch scripts (qsub). */

#include <stdbool.h>
#include <stddef.h>

#include "rm.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_pbs;

int pbs_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err);

/* The hosts of a node file ($PBS_NODEFILE: a host name per line, once per
 * MPI process of its chunks). */
struct pbs_nodes {
    int hosts;      /* distinct host names */
    long slots;     /* lines */
    long first_slots; /* lines of the first host */
    char first[256];  /* the first host */
};
#define PBS_NODEFILE_MAX (16L << 20) /* 1,000 nodes x 128 slots of 64-byte names fit */
#define PBS_HOSTS_MAX 100000

/* Read the node file at `path`: a regular file of root or this user that
 * nobody else can write, at most PBS_NODEFILE_MAX bytes.  0, or -1 with why. */
int pbs_nodefile_read(const char *path, struct pbs_nodes *out, char *why, size_t whylen);

/* One chunk of a select statement: "2:ncpus=8:ngpus=2:mpiprocs=8". */
struct pbs_chunk {
    long count, ncpus, ngpus, mpiprocs; /* -1: not said */
};
#define PBS_CHUNKS_MAX 64
/* Parse a select statement ("2:ncpus=8:mpiprocs=8+1:ncpus=2") into at most
 * PBS_CHUNKS_MAX chunks.  0, or -1 with why. */
int pbs_select_parse(const char *select, struct pbs_chunk *chunks, size_t max, size_t *n, char *why, size_t whylen);

/* Whether the job's standard error (or output, when joined) holds PBS's
 * word that it killed the job for its walltime ("=>> PBS: job killed:
 * walltime 65 exceeded limit 60"): mom writes it there, not to the
 * launcher's output, just before it signals the job. */
bool pbs_walltime_killed(void);

/* Whether `mpiexec` on PATH is Cray PALS's (its --version names PALS or
 * HPE), not Open MPI's or Hydra's. */
bool pbs_mpiexec_is_pals(void);

#endif
