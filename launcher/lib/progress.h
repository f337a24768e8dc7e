/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PROGRESS_H
#define GPURUN_PROGRESS_H

/* Progress of a running job from the lines its program prints (SPEC §3,
 * §6): the template's `progress` regex finds them, its `progress_groups`
 * say what each group holds, and from the lines seen, with the wall time
 * they came at, come step k of N, the percentage, the ETA and the running
 * figure of merit.  Pure text and arithmetic: what reads the files and
 * prints is the head's (run/watch.c).
 *
 * Groups (progress_groups = "step clock"; default "step"):
 *   step    the step k (a whole number)
 *   total   N, when the line says it ("step 6 of 35"); else progress_total
 *   figure  the running figure, as printed (images/s)
 *   -       a group not used (an optional part around another)
 *   clock   a number whose change per wall-clock second, times
 *           progress_scale, is the running figure (GROMACS's simulated
 *           time in ps: x 86.4 is ns/day)
 * Without a `step` group each matching line is one step done (HPL's tests);
 * "count" alone: no group at all, each matching line one step.
 * With progress_scale and neither figure nor clock, the step's own rate
 * times the scale is the figure (LAMMPS's timesteps/s).
 * A group a line leaves unmatched ("( images_per_s ([0-9.]+))?") gives no
 * value; one that is not a finite number (or, for step and total, not a
 * whole number) makes the line no progress line. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "expand.h"
#include "util.h"

#define GPURUN_PROGRESS_LINE_MAX 4096   /* a longer line is no progress line */
#define GPURUN_PROGRESS_READ_MAX 65536  /* bytes of a file read at one look, at most */
#define GPURUN_PROGRESS_GROUPS_MAX 4

enum gpurun_progress_role {
    GPURUN_PROGRESS_STEP = 1,
    GPURUN_PROGRESS_TOTAL,
    GPURUN_PROGRESS_FIGURE,
    GPURUN_PROGRESS_CLOCK,
};

/* "step clock" (NULL or "": "step"; "count": none) into roles, one per
 * group in order: 0, or -1 with `why` ("'time' is not one of step, total, figure, clock",
 * "'step' twice"). */
int gpurun_progress_groups(const char *s, enum gpurun_progress_role roles[GPURUN_PROGRESS_GROUPS_MAX], int *np,
                           char *why, size_t whylen);

/* What a template says of progress, its ${name}s expanded. */
struct gpurun_progress_def {
    const char *regex;   /* the progress line */
    const char *after;   /* NULL, or: each line matching it lets one progress line through */
    const char *groups;  /* NULL: "step" */
    long long total;     /* N, < 0: not known (a line's total group still counts) */
    const char *units;   /* of the figure; NULL: none */
    const char *name;    /* what a step is, in the text ("HPL test"); NULL: "step" */
    double scale;        /* > 0: the figure is a rate, above */
    double window_s;     /* rates over about this much wall time (0: 30 s) */
    struct gpurun_regex_budget *budget; /* the run's for matching (util.h); NULL: not bounded */
};

typedef struct gpurun_progress gpurun_progress_t;

/* 0, or -1 with err (exit 2) for a regex that does not compile, groups the
 * regex lacks. */
int gpurun_progress_new(const struct gpurun_progress_def *d, gpurun_progress_t **pp, gpurun_error_t *err);
void gpurun_progress_free(gpurun_progress_t *p);

/* Only lines that start with `label` count, without it (rank 0's lines in
 * its host's output file, "0: "); NULL: every line. */
void gpurun_progress_set_label(gpurun_progress_t *p, const char *label);

/* N, when it is known only once the run started (HPL's input file). */
void gpurun_progress_set_total(gpurun_progress_t *p, long long total);

/* Output bytes as they come, at wall time `t` (seconds, any fixed origin):
 * whole lines are read, a partial last line waits for the rest (a line
 * longer than GPURUN_PROGRESS_LINE_MAX is skipped). */
void gpurun_progress_feed(gpurun_progress_t *p, const char *data, size_t len, double t);
/* One whole line, without its newline.  True when it was a progress line. */
bool gpurun_progress_line(gpurun_progress_t *p, const char *line, size_t len, double t);
/* Bytes between the last fed and the next were not read: the partial line
 * and what `after` had let through are dropped. */
void gpurun_progress_gap(gpurun_progress_t *p);

struct gpurun_progress_view {
    bool known;        /* a progress line was seen */
    long long step;    /* k */
    long long total;   /* N; < 0: not known */
    double percent;    /* < 0: not known */
    double eta_s;      /* < 0: not known */
    bool has_figure;
    double figure;
    const char *units; /* NULL: none */
    const char *name;  /* "step" */
    double seen_t;     /* when the last progress line came */
};

/* Where the job stands at wall time `now`. */
void gpurun_progress_view(const gpurun_progress_t *p, double now, struct gpurun_progress_view *v);

/* "step 2500 of 10000 (25%), ETA 3m10s, 45.2 ns/day" (the pieces known,
 * joined by `sep`); "" when nothing is known.  Returns its length. */
size_t gpurun_progress_format(const struct gpurun_progress_view *v, const char *sep, char *buf, size_t size);

/* A duration for people: "45s", "3m10s", "1h02m", "2d03h". */
void gpurun_progress_duration(double s, char *buf, size_t size);

/* N from a text (HPL's input, hpccinf.txt): the product of the first
 * groups (whole numbers) of its lines that match `regex`; -1 when no line
 * does, a group is not a whole number, the product overflows, or the regex
 * does not compile. */
long long gpurun_progress_product(const char *text, size_t len, const char *regex);

#endif
