/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_STALL_H
#define GPURUN_STALL_H

/* The head's side of a stall (docs/running.md, "Stalls"): a run whose
 * progress has not moved for `stall_after` is stalled; the rank steps are
 * asked where their programs are (stall_rank.h), their answers merged into
 * classes by stack, as STAT does, and the culprits named: a stopped rank,
 * a rank gone, one running its own code or blocked outside MPI while the
 * others wait in MPI; every rank waiting in MPI is a deadlock.  Nothing is
 * sampled while the run progresses. */

#include <stdbool.h>

#include <jansson.h>

#define GPURUN_STALL_AUTO_FLOOR_S 180.0 /* `auto` never says stalled sooner */
#define GPURUN_STALL_AUTO_FACTOR 5.0    /* ... than this times the longest gap between updates */
#define GPURUN_STATE_STALLED_TEXT "stalled"

struct gpurun_stall_opts {
    double after_s;   /* > 0: this long; 0: auto; < 0: off */
    bool kill;        /* on_stall = "kill" */
    bool can_ask;     /* the launcher relays the request to the rank steps */
    int nranks;
    const char *job;
    double t0;        /* monotonic start of the ranks */
};

typedef struct gpurun_stall gpurun_stall_t;

gpurun_stall_t *gpurun_stall_new(const struct gpurun_stall_opts *o);
void gpurun_stall_free(gpurun_stall_t *s);

enum gpurun_stall_action { GPURUN_STALL_NONE, GPURUN_STALL_ASK, GPURUN_STALL_KILL };
/* At monotonic `t`, progress last moved at `moved_t` (the longest gap
 * between two moves so far: `max_gap`, 0 none yet), `statuses` the ranks'
 * end reports (null: running).  What to do now. */
enum gpurun_stall_action gpurun_stall_tick(gpurun_stall_t *s, double t, double moved_t, double max_gap,
                                           json_t *statuses, const char *at_step);
/* When the next tick is due at the latest. */
double gpurun_stall_next(const gpurun_stall_t *s);
/* A rank step's answer (the 'H' report). */
void gpurun_stall_take(gpurun_stall_t *s, int rank, json_t *doc);
/* Stalled now (status.json's state), and its verdict in one line. */
bool gpurun_stall_now(const gpurun_stall_t *s, const char **verdict);
/* The run was ended because it stalled (on_stall = "kill"). */
bool gpurun_stall_ended_run(const gpurun_stall_t *s);
/* The record's `stall` (record.h), or NULL when none was found. */
json_t *gpurun_stall_record(const gpurun_stall_t *s);
/* The duration text of stall_after: "auto", "off" or "5m". */
#endif
