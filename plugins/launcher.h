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
#include "plugin_support.h" /* the launch request, and the helpers plugins build argv with */

#define GPURUN_LAUNCHER_ABI 1

typedef struct gpurun_launcher_plugin {
    int abi;             /* GPURUN_LAUNCHER_ABI */
    const char *name;    /* "mpirun" */
    const char *summary; /* one line for --help and doctor */
    /* 0 when it can run here; else -1 with why (program not found, no allocation). */
    int (*available)(gpurun_error_t *why);
    /* The processes that start the request's ranks, each through the rank step. */
    int (*commands)(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out, gpurun_error_t *err);
} gpurun_launcher_plugin_t;

#endif
