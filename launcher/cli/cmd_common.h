/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CMD_COMMON_H
#define GPURUN_CMD_COMMON_H

/* What the commands that read a results folder (results, report) share:
 * their options and the loading of the runs. */

#include <stdbool.h>

#include <jansson.h>

#include "error.h"
#include "results.h"

/* One of a command's own long options: one with an argument stores it in
 * *arg; one without (arg NULL) sets *flag. */
struct cmd_option {
    const char *name;
    const char **arg;
    bool *flag;
};

/* Parses CMD's options: --results DIR (*dir keeps its default without it),
 * --job NAME, -h/--help and the command's own `extra` (ended by a NULL
 * name); nothing else.  0 parsed; 1 when --help printed `usage`; -1 with err
 * (GPURUN_EXIT_CONFIG) for an unknown option or an argument. */
int cmd_results_options(const char *cmd, const char *usage, int argc, char **argv, const struct cmd_option *extra,
                        const char **dir, const char **job, gpurun_error_t *err);
/* The same with the selection's options too (select.h: --since, --until,
 * --last, --runs, --where) into `sel` (initialised by the caller); a bad
 * value is -1 with err (exit 2) naming the command and the option. */
struct gpurun_select;
/* Their lines of a command's --help. */
#define CMD_SELECT_HELP \
    "  --since TIME    only runs started at TIME or later: 2025-01-31T12:00:00Z (UTC),\n" \
    "                  2025-01-31T12:00 or 2025-01-31 (local time), or an age: 90s, 30m,\n" \
    "                  2h, 3d, 1h30m ago (m is minutes; at most 366 days)\n" \
    "  --until TIME    only runs started at TIME or earlier (the same forms)\n" \
    "  --last N        the last N runs (by start) of each configuration\n" \
    "  --runs ID,...   only these run ids\n" \
    "  --where KEY=VALUE  only runs whose record has it (repeatable, all must hold): state,\n" \
    "                  job, hosts (any of them), launcher, ranks, nodes, gpu_model, ...,\n" \
    "                  params.NAME, config.NAME, conditions.busy (true/false), tune.session\n"
int cmd_select_options(const char *cmd, const char *usage, int argc, char **argv, const struct cmd_option *extra,
                       const char **dir, const char **job, struct gpurun_select *sel, gpurun_error_t *err);

/* The index of the results folder dir, brought up to date with its records
 * first (rebuilt from every record with `rebuild`); the index's warnings,
 * and what a rebuild did, go to stderr.  The runs are then read one at a
 * time (gpurun_results_each), never all at once.  0, or an exit status
 * with err. */
int cmd_results_open(const char *dir, bool rebuild, gpurun_results_t **rp, gpurun_error_t *err);
/* `--job NAME` that names no job of the folder: exit 2, naming the jobs
 * there are (and the closest); 0 when `job` is NULL or has runs. */
int cmd_results_job_known(gpurun_results_t *r, const char *dir, const char *job, gpurun_error_t *err);

#endif
