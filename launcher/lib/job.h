/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_JOB_H
#define GPURUN_JOB_H

/* The job file (SPEC §2) as a plain struct: only job.c sees libconfuse. */

#include <stdbool.h>
#include <stddef.h>

#include "axis.h"
#include "container.h"
#include "error.h"
#include "util.h"

enum gpurun_bind { GPURUN_BIND_CLOSEST, GPURUN_BIND_NONE };
enum gpurun_gpu_visibility { GPURUN_GPUVIS_ISOLATE, GPURUN_GPUVIS_SHARED };
/* Which cores a GPU rank may get: its GPUs' locality and a share of the
 * GPU-less NUMA nodes of their package (package), or its GPUs' locality
 * only (gpu). */
enum gpurun_cpu_locality { GPURUN_CPULOC_PACKAGE, GPURUN_CPULOC_GPU };
enum gpurun_gpudirect { GPURUN_GPUDIRECT_AUTO, GPURUN_GPUDIRECT_ON, GPURUN_GPUDIRECT_OFF };
/* CUDA MPS for ranks that share a GPU: where possible, always, never. */
enum gpurun_mps_mode { GPURUN_MPS_AUTO, GPURUN_MPS_ON, GPURUN_MPS_OFF };
/* Who may read a run folder: its owner only (0700), or its group too (0750). */
enum gpurun_run_folder_mode { GPURUN_RUN_FOLDER_PRIVATE, GPURUN_RUN_FOLDER_GROUP };
/* Rank output: one file per host, lines labelled "RANK: ", or one per rank. */
enum gpurun_output { GPURUN_OUTPUT_PER_HOST, GPURUN_OUTPUT_PER_RANK };
enum gpurun_on_stall { GPURUN_ON_STALL_REPORT, GPURUN_ON_STALL_KILL };
#define GPURUN_STALL_AFTER_AUTO 0L /* stall_after = "auto" */
#define GPURUN_STALL_AFTER_OFF (-1L)

/* One resource manager's section of the job: NAME { key = "value" }, the
 * options of its batch scripts (slurm { partition = "gpu" }). */
struct gpurun_job_manager {
    char *name;                   /* the manager's: "slurm" */
    struct gpurun_kvlist options;
};

/* Integers left at GPURUN_UNSET were not given: the planner picks them. */
#define GPURUN_UNSET (-1)

typedef struct gpurun_job {
    char *path;          /* the file as given */
    char *dir;           /* its folder: relative paths are relative to it */
    char *name;          /* `job`, default: file name without .conf */
    char *template_name; /* NULL when not given */
    char *command;       /* NULL when not given; ${name} left unexpanded */
    char *site;          /* NULL when not given */
    /* gpurun rerun (provenance.h): the kept copies the job's text and its
     * template were read from, in place of `path` and the template search;
     * NULL: none (an ordinary run). */
    char *text_file;
    char *template_file;

    int nodes;            /* default 1 */
    int ranks_per_node;   /* GPURUN_UNSET: one per GPU (or per NUMA domain) */
    int gpus_per_rank;    /* GPURUN_UNSET: 1 where the node has GPUs, else 0 */
    int threads_per_rank; /* GPURUN_UNSET: the rank's share of cores */
    bool smt;             /* all PUs of a core, not one */
    bool oversubscribe;   /* allow sharing GPUs/cores, with a warning */
    int ranks_per_gpu;    /* default 1: ranks sharing each GPU, with disjoint cores */
    enum gpurun_mps_mode mps; /* default auto */

    char *launcher;       /* "auto" or a launcher plugin's name ("mpirun", "srun") */
    char *monitor;        /* "auto" (nvml), "none", or a monitor plugin's name */
    enum gpurun_bind bind;
    enum gpurun_gpu_visibility gpu_visibility;
    enum gpurun_cpu_locality cpu_locality; /* default package */
    enum gpurun_gpudirect gpudirect;
    long timeout_s;       /* 0: no limit */
    long progress_interval_s; /* off a terminal, a progress line this often; 0: none (default 600) */
    long stall_after_s;   /* no progress this long is a stall; GPURUN_STALL_AFTER_AUTO, _OFF */
    enum gpurun_on_stall on_stall; /* default report */
    int repeat;           /* default 1 */
    char *results;        /* default "results" */
    enum gpurun_run_folder_mode run_folder_mode; /* default private */
    enum gpurun_output output;                   /* default per-host */

    struct gpurun_kvlist params;
    /* dotted key ("template", "params.nsteps") -> where it was set, for
     * messages: "FILE:LINE", or the "--set KEY=VALUE" that last set it */
    struct gpurun_kvlist from;
    struct gpurun_kvlist env;
    struct gpurun_kvlist references;
    /* One for each resource manager present (confparse.h: the plugins the
     * program found; Slurm's alone when it found none), empty when the
     * file has no such section. */
    struct gpurun_job_manager *managers;
    size_t nmanagers;
    /* scan { key = {v1, v2} }: its axes in file order (a layout key's
     * `values` too); scan.h enumerates the configurations. */
    struct gpurun_axis *scan;
    size_t nscan;
    struct gpurun_container_spec container; /* container { }: image NULL when none */
    struct gpurun_axis *tune; /* tune { }: in file order (texts only); NULL/0 when none */
    size_t ntune;
} gpurun_job_t;

/* Where the job's dotted `key` was set: "FILE:LINE", the "--set ..." that
 * last set it, or the job file's name when neither is known. */
const char *gpurun_job_origin(const gpurun_job_t *job, const char *key);

/* Where the dotted `key` ("container.image") was set, else where another
 * key of its section was (a missing key reported on its block's line), else
 * the job file's name. */
const char *gpurun_job_section_origin(const gpurun_job_t *job, const char *key);

/* err's message put on the place that set the job's `key`:
 * "job.conf:2: key 'template': WHAT" (or "--set template=x: key ...").
 * Returns -1. */
int gpurun_job_locate(const gpurun_job_t *job, const char *key, gpurun_error_t *err);

/* Read a job file.  Errors name the file, the line and the key
 * ("job.conf:3: unknown key 'rank_per_node' (did you mean 'ranks_per_node'?)")
 * and carry GPURUN_EXIT_CONFIG. */
int gpurun_job_load(const char *path, gpurun_job_t **jobp, gpurun_error_t *err);

/* Parse a job from memory; `label` stands for the file name in messages and
 * gives the default job name. */
int gpurun_job_parse(const char *text, size_t len, const char *label, gpurun_job_t **jobp,
                     gpurun_error_t *err);

/* Apply one `--set KEY=VALUE`: KEY is a top-level key of the job file or
 * SECTION.NAME of a free-form section (params.nsteps, env.OMP_STACKSIZE,
 * slurm.partition, references.ns_per_day; a resource manager's section).  The value is checked exactly as
 * the file's would be; errors (exit 2) read
 * "--set nodes=two: key 'nodes': expected an integer, got 'two'". */
int gpurun_job_set(gpurun_job_t *job, const char *assignment, gpurun_error_t *err);

/* gpurun_job_set() for a scan's configuration (scan.h): a scan axis over
 * KEY is kept, and errors and the key's origin read `origin` ("job.conf:7"),
 * the line that scans it. */
int gpurun_job_set_scanned(gpurun_job_t *job, const char *assignment, const char *origin,
                           gpurun_error_t *err);

void gpurun_job_destroy(gpurun_job_t *job);

/* A free-form section of the job by name: params, env, references, or a
 * resource manager's ("slurm"); NULL for none of them. */
struct gpurun_kvlist *gpurun_job_section(gpurun_job_t *job, const char *section);
/* The job's options for resource manager `manager`: its section, an empty
 * list when it has none. */
const struct gpurun_kvlist *gpurun_job_manager_options(const gpurun_job_t *job, const char *manager);
const char *gpurun_mps_mode_name(enum gpurun_mps_mode m);

#endif
