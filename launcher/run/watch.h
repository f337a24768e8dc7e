/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_WATCH_H
#define GPURUN_WATCH_H

/* The head's view of a running job (SPEC §6): progress from the lines the
 * template's `progress` finds (progress.h), in rank 0's output as gpurun
 * relays it to a terminal, or in a file read at most once per look and
 * only its new bytes (at most GPURUN_PROGRESS_READ_MAX of them: a log of
 * gigabytes is never read again); one progress line on stderr every
 * `progress_interval` off a terminal (and one at the start); the text of
 * the terminal's status line; and RUN_FOLDER/status.json, rewritten at the
 * start, at each report and at the end, for `gpurun status`.  Best effort:
 * nothing here stops or slows the ranks. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "template.h"

typedef struct gpurun_watch gpurun_watch_t;

struct gpurun_watch_opts {
    int dir_fd;             /* the run folder */
    const char *run_dir;
    mode_t file_mode;       /* of status.json */
    const char *job;
    int nranks;
    double interval_s;      /* progress_interval; 0: no progress lines */
    bool tty;               /* a status line on a terminal, rank output relayed (no progress lines) */
    bool quiet;             /* no progress lines either */
    const gpurun_template_t *tpl; /* NULL: a job's own command, no progress */
    gpurun_lookup_fn lookup;      /* the run's ${name}s */
    void *ctx;
    double timeout_s;       /* the job's timeout; 0: none.  Once the ETA says the run will not end by
                             * then, one warning says so and what to change */
};

/* Starts watching: status.json written, the first progress line printed
 * (off a terminal).  Never NULL. */
gpurun_watch_t *gpurun_watch_begin(const struct gpurun_watch_opts *o);

/* A line of rank 0's output, relayed through gpurun's pipe, at monotonic
 * time `t` (launch.c's clock). */
void gpurun_watch_line(gpurun_watch_t *w, const char *line, size_t len, double t);

/* When the watch next wants a tick (monotonic seconds; a large number when
 * never). */
double gpurun_watch_next(const gpurun_watch_t *w);

/* Its look at the files and its report, when due: `bindings` are the ranks'
 * reports so far (rank 0's names its output file; the hosts), `alive` the
 * ranks that started and did not end. */
void gpurun_watch_tick(gpurun_watch_t *w, double t, json_t *bindings, int alive);

/* The progress for the terminal's status line ("step 2500 of 10000 (25%)
 * ETA 3m10s  45.2 ns/day"); "" when none is known.  Its length. */
size_t gpurun_watch_status(gpurun_watch_t *w, double t, char *buf, size_t size);

/* The last progress known, for the record of any end: {step, total,
 * figure, units, at_s (seconds after the start when it was seen)}; NULL
 * when none was seen.  The caller owns it. */
json_t *gpurun_watch_progress_json(gpurun_watch_t *w);

/* A host's conditions, a 'C' report's payload (rank_conditions.h): kept
 * for status.json and the record; the first that makes a host busy is
 * said on stderr at once ("gpurun: warning: run R is running busy on
 * HOST: ...; figures are likely low").  The threshold is
 * $GPURUN_BUSY_SHARE's (conditions.h). */
void gpurun_watch_conditions(gpurun_watch_t *w, const char *payload, size_t len);
/* The record's `conditions`, or NULL when no host reported; the caller's. */
json_t *gpurun_watch_conditions_json(gpurun_watch_t *w);
/* At the end: one warning line per busy host ("run R ran busy on HOST:
 * ...; figures are likely low"); nothing for a quiet run. */
void gpurun_watch_conditions_say(gpurun_watch_t *w);

/* The run ended with `state` (the record's; NULL: "failed") and exit status
 * `rc`: status.json says so.  Frees the watch (NULL: nothing). */
void gpurun_watch_end(gpurun_watch_t *w, const char *state, int rc);

/* Any rank's relayed output line at `t`: the move, for a template without
 * progress lines (stall.h). */
void gpurun_watch_output(gpurun_watch_t *w, double t);
/* When progress last moved (monotonic; the start when it never did), the
 * longest gap between two moves into *max_gap (0: none yet), and where it
 * stands ("step 3 of 10") into `at`. */
double gpurun_watch_moved(const gpurun_watch_t *w, double *max_gap, char *at, size_t atlen);
/* The run is stalled (status.json's state "stalled", its "stall" the
 * verdict), or not any more (NULL). */
void gpurun_watch_stalled(gpurun_watch_t *w, const char *verdict);
#endif
