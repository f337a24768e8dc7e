/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SELECT_H
#define GPURUN_SELECT_H

/* Which runs of a results folder a command reads (issue 39): `gpurun
 * report`, `gpurun results` and tune's reuse of earlier trials take the
 * same options, parsed and applied here and nowhere else.
 *
 *   --since TIME, --until TIME   the run's start in [since, until]
 *   --last N                     the last N runs (by start) of each configuration
 *   --runs ID,...                only these run ids
 *   --where KEY=VALUE            repeatable, all must hold
 *   --include-busy               (report) busy runs count in the means
 *
 * TIME: "2025-01-01T12:00:00Z" (UTC; a fraction and an offset "+02:00"
 * allowed), "2025-01-01T12:00[:00]" or "2025-01-01 12:00[:00]" (local
 * time), "2025-01-01" (local midnight), or an age: "90s", "30m", "2h",
 * "3d", "1h30m" ago (m is minutes; at most 366 days). */

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "error.h"
#include "results.h"

#define GPURUN_SELECT_WHERE_MAX 32
#define GPURUN_SELECT_RUNS_MAX 4096
#define GPURUN_SELECT_LAST_MAX 1000000

struct gpurun_select_where {
    char *key;   /* "state", "params.nsteps", "hosts", "conditions.busy" */
    char *value; /* compared as the record's value is written */
};

struct gpurun_select {
    double since, until; /* seconds since the epoch; NAN: no bound */
    long last;           /* 0: every run */
    char **runs;         /* NULL: every run id */
    size_t nruns;
    struct gpurun_select_where where[GPURUN_SELECT_WHERE_MAX];
    size_t nwhere;
    bool include_busy;
    bool any; /* an option was given: the commands say what was selected */
};

/* No selection: every run. */
void gpurun_select_init(struct gpurun_select *s);
void gpurun_select_free(struct gpurun_select *s);

/* Whether `name` ("since", "until", "last", "runs", "where") is one of the
 * selection's options with an argument. */
bool gpurun_select_is_option(const char *name);
/* Take option `name` with `value`; `now` is the time ages count back from.
 * A bad value: -1 with err (exit 2) that names the option and says what
 * it accepts. */
int gpurun_select_option(struct gpurun_select *s, const char *name, const char *value, time_t now,
                         gpurun_error_t *err);

/* Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM)", the
 * records' times; false for anything else. */
bool gpurun_parse_utc(const char *s, double *t);
/* A TIME as the options take it (above); false when it is none. */
bool gpurun_select_parse_time(const char *s, time_t now, double *t);

/* Whether the run's record says it ran busy: "conditions": {"busy": true}.
 * Records from before conditions were measured are not busy. */
bool gpurun_run_busy(const json_t *run);

/* The run's configuration as one string: job, nodes, ranks, GPUs per rank,
 * threads per rank and params (malloc'ed): what --last counts per. */
char *gpurun_select_config_key(const json_t *run);

/* Whether the run passes --since, --until, --runs and --where (not --last,
 * which needs the other runs: gpurun_select_each applies it). */
bool gpurun_select_match(const struct gpurun_select *s, const json_t *run);

/* gpurun_results_each over the selected runs (of `job`, or of every job
 * when NULL), by job then start time.  With --last, a first pass counts
 * each configuration's matching runs (a counter per configuration, not a
 * run), and the second hands on the last N of each. */
int gpurun_select_each(gpurun_results_t *r, const char *job, const struct gpurun_select *s, gpurun_results_fn fn,
                       void *ctx, gpurun_error_t *err);

/* The selection in words for a report's heading ("since 2025-01-01T00:00:00Z,
 * the last 3 runs per configuration, where state=ok"); "" when none.
 * Malloc'ed. */
char *gpurun_select_text(const struct gpurun_select *s);

#endif
