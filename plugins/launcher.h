/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_LAUNCHER_PLUGIN_H
#define GPURUN_LAUNCHER_PLUGIN_H

/* The launcher plugin interface, version GPURUN_LAUNCHER_ABI.  A plugin is
 * one `gpurun_launcher_plugin_t` named `gpurun_launcher_plugin` in a shared
 * object (or a built-in one of the same type); the loader refuses any whose
 * `abi` differs.  A plugin only says how ranks are started: gpurun's own
 * rank step (`gpurun rank`) binds every rank, and gpurun supervises.
 * The processes a plugin starts must pass the rank steps' standard output
 * on to their own (as mpirun and srun do without --tag-output/--label):
 * that is how each rank reports its binding and its end to gpurun, which
 * reads it from a pipe.  Their standard error goes to launcher.out. */

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

#define GPURUN_LAUNCHER_ABI 1

struct gpurun_launch_request {
    int nodes;
    int ranks_per_node;
    int nranks;
    bool oversubscribe;
    const char *rank_step;      /* absolute path of the gpurun program */
    const char *run_dir;        /* the run folder (plan.json, topology.xml, host plans, HOST.out) */
    char *const *app_argv;      /* the program and its arguments */
    char *const *export_env;    /* NULL-terminated names the ranks must inherit */
    /* Options for the launcher itself, before the rank step (srun: pyxis's
     * --container-image, --container-mounts, --container-workdir); NULL:
     * none.  Added last: plugins built before it never read it. */
    char *const *launcher_args;
    /* Seconds the ranks have between the stop signal and SIGKILL (the
     * template's stop_grace): a launcher that kills ranks itself on a stop
     * (mpirun) is told to wait as long.  Added last, as above. */
    double stop_grace_s;
    int stop_signal; /* what the program gets on a stop (SIGTERM by default) */
};

/* What a plugin starts: argv[i] run with extra environment env[i]
 * ("NAME=VALUE" strings, NULL-terminated); `count` processes. */
struct gpurun_launch_cmds {
    int count;
    char ***argv;
    char ***env;
    /* A signal the launcher passes on to every rank as it is, for a launcher
     * whose own stop gives the ranks too little time (Open MPI's mpirun:
     * SIGCONT, SIGTERM, SIGKILL a second apart): gpurun sends it for a stop
     * instead, the rank steps give the program the stop signal for it
     * ($GPURUN_STOP_RELAY, "FROM:TO"), and the launcher gets SIGTERM only
     * when the grace is over.  0: none (the launcher gets the stop signal).
     * Added last: gpurun zeroes the struct for plugins built before it. */
    int stop_relay;
    /* A signal the launcher passes on to every rank step and not to the
     * program (mpirun: to the rank step's process group, the program has
     * its own; local: the launcher is the rank step): gpurun asks the rank
     * steps where a stalled program is with it ($GPURUN_STALL_SIGNAL).
     * 0: none, a stall is found and said but not sampled.  Added last. */
    int stall_relay;
};

typedef struct gpurun_launcher_plugin {
    int abi;             /* GPURUN_LAUNCHER_ABI */
    const char *name;    /* "mpirun" */
    const char *summary; /* one line for --help and doctor */
    /* 0 when it can run here; else -1 with why (program not found, no allocation). */
    int (*available)(gpurun_error_t *why);
    /* The processes that start the request's ranks, each through the rank step. */
    int (*commands)(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out, gpurun_error_t *err);
} gpurun_launcher_plugin_t;

/* Helpers for plugins (launcher/run/plugin.c). */
char **gpurun_argv_new(void);
void gpurun_argv_add(char ***argv, const char *s);
void gpurun_argv_addf(char ***argv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpurun_argv_free(char **argv);
void gpurun_launch_cmds_free(struct gpurun_launch_cmds *c);
/* The rank step's argv: STEP rank --run-dir DIR -- APP... appended to argv. */
void gpurun_argv_add_rank_step(char ***argv, const struct gpurun_launch_request *req);
/* Absolute path of a program on PATH (a relative or empty entry resolved
 * against the current folder now), or of a path with a '/'; NULL: none. */
char *gpurun_which(const char *prog);
/* 0 when prog is on PATH; else -1 with why: "PROG was not found on PATH",
 * then " (HINT)" when hint is not NULL (where to get it). */
int gpurun_need_program(const char *prog, const char *hint, gpurun_error_t *why);
/* out becomes one process, argv (out owns it now), with no extra environment. */
void gpurun_launch_cmds_one(struct gpurun_launch_cmds *out, char **argv);

#endif
