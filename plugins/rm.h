/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RM_PLUGIN_H
#define GPURUN_RM_PLUGIN_H

/* The resource-manager plugin interface, version GPURUN_RM_ABI.  A resource
 * manager (Slurm, Flux, ...) is one `gpurun_rm_plugin_t` named
 * `gpurun_rm_plugin` in a shared object rm_NAME.so (or a built-in one of the
 * same type); the loader refuses any whose `abi` differs.  It owns what
 * gpurun needs to know of the manager, and nothing else in gpurun does:
 *  - whether gpurun runs inside one of its allocations, and what that gives
 *    this node (allocation());
 *  - the variables its launch command gives each task (rank_var,
 *    local_rank_var), which gpurun's rank step reads;
 *  - its launch command (launcher: a launcher plugin that turns the
 *    manager's own binding off: gpurun's rank step binds every rank);
 *  - why the manager ended a step, from its launch command's output
 *    (ended());
 *  - batch scripts and their submission (batch_script(), submit()),
 *    job arrays where it has them (array_task_var);
 *  - its lines in `gpurun doctor` (doctor());
 *  - the energy it accounted for a run (energy()), the variables it names
 *    the GPUs it gave the job in (allocated_gpus());
 *  - a container runtime that enters the image through its launch command
 *    (container), its site profiles' keys (site_keys) and its lines in a
 *    new job file (init_lines()).
 * Its name is the one job files and site profiles use: `scheduler = "NAME"`
 * in a site profile, and the job file's section `NAME { key = "value" }`
 * of options for its batch scripts.  A callback a manager has no use for
 * is NULL (a manager without batch scripts: batch_script and submit).
 * docs/resource-managers.md says how to write one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "launcher.h"

/* 2: job arrays (gpurun_rm_batch.array, array_task_var); 3: energy(),
 * allocated_gpus(); the helpers plugins call are the library's
 * (plugin_support.h) */
#define GPURUN_RM_ABI 3

/* What an allocation gives this node, as the manager says it. */
struct gpurun_rm_alloc {
    char job[160];       /* the allocation in notes: "Slurm job 12" ("Slurm job 12: cpus 0-7") */
    char where[200];     /* where gpurun runs, for the launcher's choice: "Slurm allocation 12" */
    bool cpus_bound;     /* this process runs on the allocation's cores only: gpurun plans with those */
    bool has_gpus;       /* the manager lists this node's GPUs in `gpus` */
    char gpus[1024];     /* its list of GPU numbers ("0,2", "1-3"; "" none), as the runtime numbers them */
    char gpus_from[64];  /* the list in notes: "Slurm GPUs" */
    int nodes;           /* nodes of the allocation; 0 unknown */
};

/* How the manager ended a step, as its launch command said it. */
enum gpurun_rm_end {
    GPURUN_RM_END_NONE = 0,      /* it did not (the step ended on its own, or gpurun stopped it) */
    GPURUN_RM_END_TIME_LIMIT,    /* the allocation's time limit */
    GPURUN_RM_END_NODE_FAILURE,  /* a node of the allocation failed */
};

/* One `key = "value"` of a job's or site's options for the manager. */
struct gpurun_rm_option {
    const char *key;
    const char *value;
};

/* A site profile's part of a batch script (SPEC §4). */
struct gpurun_rm_site {
    const char *name;            /* "example-univ" */
    const char *path;            /* its file */
    const char *partition;       /* NULL: none */
    const char *account;         /* NULL: none */
    const char *const *options;  /* its batch options, as the profile writes them ("--qos=normal") */
    size_t noptions;
    int cores_per_node;          /* -1: unknown */
    int gpus_per_node;           /* -1: unknown */
    /* "FILE:LINE" of the profile's key, for messages (the file when unknown) */
    const char *(*origin)(const struct gpurun_rm_site *site, const char *key);
    const void *priv;            /* gpurun's */
};

/* A job as its batch script asks for it (gpurun submit). */
struct gpurun_rm_batch {
    const char *job;             /* its name */
    const char *job_file;        /* the job file as given, for messages ("job.conf: key 'x': ...") */
    /* The layout: for a scan, gpurun submit's job per configuration (or
     * array of configurations of one size) gives that configuration's.
     * -1: not given (the node's topology decides). */
    long nodes, ranks_per_node, gpus_per_rank, threads_per_rank;
    long ranks_per_gpu;          /* ranks that share each GPU (1: none) */
    bool oversubscribe, smt;
    long timeout_s;              /* each run's; 0: none */
    long runs;                   /* runs in the job: repeat x its scan's configurations (one, per configuration) */
    long stop_grace_s;           /* per run after its timeout: gpurun stops the ranks and writes the record */
    /* The job's own options for this manager: its section NAME { } */
    const struct gpurun_rm_option *options;
    size_t noptions;
    const char *folder;          /* RESULTS/JOB, absolute: the manager's own output file goes there */
    const struct gpurun_rm_site *site; /* NULL: the job names none */
    /* What gpurun writes: comment lines ("# ...\n", "" none) that go before
     * the manager's directives, and the commands after them (bash: set -euo
     * pipefail, the site's modules, exec gpurun run JOB.conf ...). */
    const char *comments;
    const char *body;
    /* A job array (gpurun submit of a scan: its configurations that share
     * one size): the configuration numbers, 1-based, its tasks run; each
     * task's index (array_task_var) is its configuration's number, which
     * the body passes on.  NULL and 0: a plain job. */
    const long *array;
    size_t narray;
};

/* A container runtime that enters the image through the manager's launch
 * command only, not a program of its own (Slurm: pyxis, srun's
 * --container-image): the job's launcher must be the manager's. */
struct gpurun_rm_container {
    const char *runtime;         /* its name in container.runtime: "pyxis" */
    const char *option;          /* the launch command's option it adds, for messages: "--container-image" */
    const char *install;         /* where to get it: "pyxis and enroot (URL) in Slurm's plugstack.conf" */
    const char *outside;         /* why gpurun is in no allocation, for messages: "no SLURM_JOB_ID" */
    /* Whether the launch command at `program` takes the runtime here
     * (srun --help lists --container-image); bounded (gpurun_rm_query()).
     * When not, `why` (NULL: not asked) says so, naming `program`. */
    bool (*ready)(const char *program, char *why, size_t len);
    /* The launch command's words that start one process on each of `nodes`
     * hosts, outside the image, onto which gpurun adds its own command: each
     * host is planned there before the ranks start in the image ("srun
     * --mpi=none --nodes=N --ntasks=N --ntasks-per-node=1 ...").  NULL: the
     * ranks' hosts are planned as any launcher's. */
    void (*per_node)(char ***argv, int nodes);
};

/* What a manager's doctor() reports through: struct gpurun_rm_doctor
 * (plugin_support.h). */

typedef struct gpurun_rm_plugin {
    int abi;                     /* GPURUN_RM_ABI */
    const char *name;            /* "slurm": site profiles' scheduler, the job file's section */
    const char *title;           /* "Slurm": in messages */
    const char *summary;         /* one line for doctor and --help */
    /* Its launch command: starts each rank through gpurun's rank step, the
     * manager's own binding off.  Its name is a job's `launcher`. */
    const gpurun_launcher_plugin_t *launcher;
    /* The variables its launch command gives each task: its rank in the
     * step and its rank on its node ("SLURM_PROCID", "SLURM_LOCALID"). */
    const char *rank_var;
    const char *local_rank_var;
    /* Its tasks' variables that a container runtime passing only what it is
     * told must pass ("SLURM_*"), NULL-terminated; NULL: none. */
    const char *const *task_env;
    /* true: it can run inside another manager's allocation (Flux's `flux
     * start` in a Slurm job): when gpurun is inside both, it is the inner
     * one, and auto picks it. */
    bool nests;
    /* 1 when this process runs inside one of its allocations (out filled),
     * 0 when not; from the environment only, cheap. */
    int (*allocation)(struct gpurun_rm_alloc *out);
    /* From the end of its launch command's output (NUL-terminated, 64 KiB
     * at most): whether the manager ended the step.  NULL: never says. */
    enum gpurun_rm_end (*ended)(const char *launcher_output);
    /* Batch scripts: a complete script for `b` in *scriptp (malloc'ed), or
     * -1 with err (GPURUN_EXIT_CONFIG naming the key at fault; GPURUN_EXIT_ENV
     * for a layout the site's nodes cannot hold).  The file suffix of its
     * scripts ("sbatch": submit-TIME.sbatch). */
    int (*batch_script)(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err);
    const char *script_suffix;
    const char *submit_command;  /* "sbatch": in the script's comments and messages */
    /* Submit the script written at `script` and open as `script_fd` (at its
     * start; read it from there: no name is looked up again): the
     * submission in `said` ("12", "12 on cluster c2": after "Submitted batch
     * job "), or -1 with err (GPURUN_EXIT_ENV: nothing was submitted). */
    int (*submit)(int script_fd, const char *script, char *said, size_t saidlen, gpurun_error_t *err);
    /* Its lines in gpurun doctor. */
    void (*doctor)(const struct gpurun_rm_doctor *d);
    /* The variable holding an array task's index in a batch script
     * ("SLURM_ARRAY_TASK_ID"); NULL: gpurun gives the manager no job
     * arrays, and submits one job per scan configuration. */
    const char *array_task_var;
    /* --- interface version 3 --- */
    /* The energy the manager accounted for the run gpurun ran inside one of
     * its allocations (Slurm: sacct's ConsumedEnergyRaw), in joules; -1
     * when there is none.  `note` (always filled) says where it came from
     * or why there is none.  Called once at a run's end; bounded
     * (gpurun_rm_query()), never a failure.  The record keeps it as
     * energy.NAME_consumed_J.  NULL: the manager accounts none. */
    double (*energy)(char *note, size_t len);
    /* The variables the manager names the GPUs it gave the job in, with
     * their values, through add() (Slurm: SLURM_JOB_GPUS, SLURM_STEP_GPUS):
     * they key the cached topology, since what a job may open is what a
     * discovery finds.  NULL: none. */
    void (*allocated_gpus)(void (*add)(void *ctx, const char *name, const char *value), void *ctx);
    /* The container runtime that needs its launch command; NULL: none. */
    const struct gpurun_rm_container *container;
    /* The site profile's list of batch options for its scripts: the key
     * ("sbatch": sbatch = { "--qos=normal" }), and what an item that is no
     * option is told ("is not an sbatch option: ..."); its items reach
     * batch_script() as the site's options.  NULL: none. */
    const char *site_options_key;
    const char *site_options_hint;
    /* Its lines in a new job file (gpurun init), after the env line: `site`
     * is the site profile's part when the profile's
     * scheduler is this manager, else NULL (a commented hint, or nothing).
     * NULL: no lines. */
    void (*init_lines)(FILE *f, const struct gpurun_rm_site *site);
    /* A paragraph for gpurun submit --help: what its batch scripts hold
     * (lines ending '\n'); NULL: none. */
    const char *submit_help;
} gpurun_rm_plugin_t;

/* The helpers manager plugins write scripts and run their tools with:
 * plugin_support.h (launcher/lib/plugin_support.c). */

#endif
