/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TUNE_H
#define GPURUN_TUNE_H

/* `gpurun tune` (SPEC §1, §7): the search space, its candidates, the
 * statistics of their trials and the decisions of successive halving, as
 * pure functions the command (launcher/cli/cmd_tune.c) drives and the unit
 * tests call.  Running a trial is an ordinary run: nothing here starts one.
 *
 * The space is the job's `tune { }` block, or else the template's
 * `tune_space` (strings "KEY=V1,V2,..."); each axis is a layout key
 * (nodes, ranks_per_node, gpus_per_rank, threads_per_rank, ranks_per_gpu)
 * or params.NAME.  A candidate is one value of each axis; it is applied to
 * the job as `--set KEY=VALUE` assignments, with the template's
 * `tune_short` assignments (a shorter run that measures the same thing). */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "job.h"
#include "template.h"

#define GPURUN_TUNE_AXES_MAX 16
#define GPURUN_TUNE_VALUES_MAX 64
#define GPURUN_TUNE_CANDIDATES_MAX 4096
#define GPURUN_TUNE_SHORT_MAX 16
/* More runnable candidates than this: an axis search finds the finalists
 * first (cmd_tune.c), instead of a run of each. */
#define GPURUN_TUNE_FULL_MAX 48
/* Relative noise assumed for a single run before any repeat measured it. */
#define GPURUN_TUNE_DEFAULT_CV 0.03
/* z of the tie test: differences under z standard errors are noise. */
#define GPURUN_TUNE_Z 2.0

struct gpurun_tune_space {
    struct gpurun_axis *axes; /* key, texts, n; line 0 when from the template */
    size_t naxes;
    char **short_sets; /* "params.nsteps=2000": applied to every trial */
    size_t nshort;
    char *from; /* "job.conf" or "template 'gromacs'": where the space was given */
};

/* The space of `job` (its tune block) or else of `tpl` (may be NULL).  A
 * template's item written "gpu:KEY=..." counts only on a node with GPUs
 * (`gpus`), "cpu:KEY=..." only on one without.  Errors (exit 2): no space
 * at all, a template's malformed tune_space or tune_short string, too many
 * axes or candidates. */
int gpurun_tune_space_make(const gpurun_job_t *job, const gpurun_template_t *tpl, bool gpus,
                           struct gpurun_tune_space *sp, gpurun_error_t *err);
void gpurun_tune_space_free(struct gpurun_tune_space *sp);
size_t gpurun_tune_count(const struct gpurun_tune_space *sp);
/* The value of axis `a` in candidate `k` (first axis outermost). */
const char *gpurun_tune_value(const struct gpurun_tune_space *sp, size_t k, size_t a);
/* The candidate that is k with axis `a` at its value number v. */
size_t gpurun_tune_neighbor(const struct gpurun_tune_space *sp, size_t k, size_t a, size_t v);
/* The candidate as "key=value key=value" (malloc'ed): its name in records. */
char *gpurun_tune_label(const struct gpurun_tune_space *sp, size_t k);
/* A session id: 16 hex digits from the job's name and the space, so that
 * the same tune again finds its trials (buf: at least 17 bytes). */
void gpurun_tune_session(const char *job_name, const struct gpurun_tune_space *sp, char *buf, size_t size);

/* "90", "45s", "30m", "1h30m", "2d": seconds; -1 when malformed. */
long gpurun_tune_parse_duration(const char *s);

/* ---- statistics and decisions (pure) -------------------------------- */

/* One candidate as the search sees it.  `values` are its trials' figures
 * of the objective; `lower_better` for a cost, energy or time.  Resources
 * decide ties: fewer GPUs, then ranks, then threads. */
struct gpurun_tune_cand {
    double *values;
    size_t n;
    long gpus, ranks, threads;
    bool runnable; /* planned; false: pruned, never run */
    bool alive;    /* still in the search */
};

struct gpurun_tune_stats {
    size_t n;
    double mean, sd, min, max; /* sd 0 for n < 2 */
};
void gpurun_tune_stats(const double *v, size_t n, struct gpurun_tune_stats *st);

/* The pooled coefficient of variation of the candidates with two runs or
 * more; GPURUN_TUNE_DEFAULT_CV when none has. */
double gpurun_tune_pooled_cv(const struct gpurun_tune_cand *c, size_t n);

/* Whether a and b differ by less than the noise: |mean a - mean b| under
 * GPURUN_TUNE_Z standard errors of the difference, each run's standard
 * deviation at least cv of its mean. */
bool gpurun_tune_tied(const struct gpurun_tune_cand *a, const struct gpurun_tune_cand *b, double cv);

/* Negative when a uses fewer resources than b (GPUs, then ranks, then
 * threads), positive when more, 0 when the same. */
int gpurun_tune_fewer(const struct gpurun_tune_cand *a, const struct gpurun_tune_cand *b);

/* The best alive candidate with runs: the best mean, and among those tied
 * with it the one using the fewest resources (then the better mean).
 * Resources are an objective: no alive candidate has both a mean as good
 * and resources as few (one strictly), so the pick is always in the
 * Pareto set of gpurun_tune_pareto().  SIZE_MAX when none has runs. */
size_t gpurun_tune_best(const struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv);

/* The Pareto set: in[k] true for each alive candidate k with a value of
 * every objective (means[k * nobj + o], NAN: none) that no other alive one
 * beats, at least as good on every objective and on resources (GPUs, then
 * ranks, then threads, as ties go) and better on one. */
void gpurun_tune_pareto(const struct gpurun_tune_cand *c, size_t n, size_t nobj, const double *means,
                        const bool *lower, bool *in);

/* One round of successive halving: of the alive candidates with runs, the
 * better half (rounded up) stays, with every candidate tied with the
 * worst kept one or with the best; the rest are no longer alive.  Returns
 * how many stay alive. */
size_t gpurun_tune_halve(struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv);

/* One decision of the search: gpurun_tune_halve(), then, with two left
 * that were measured twice or more each and are apart beyond the noise,
 * the worse one dropped.  Returns how many stay alive. */
size_t gpurun_tune_round(struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv);

/* The confidence that `best` beats `other` (the probability, under a
 * normal model of the two means, that the difference has best's sign),
 * from 0.5 to 1. */
double gpurun_tune_confidence(const struct gpurun_tune_cand *best, const struct gpurun_tune_cand *other,
                              bool lower_better, double cv);

/* The cost of a unit of work: price per GPU-hour x GPUs / work per hour,
 * the figure `fom` being a rate in `units` ("ns/day", "GFLOP/s",
 * "images/s", "timesteps/h"); NAN when the price is not finite, there are
 * no GPUs, the figure is not positive or its units name no time. */
double gpurun_tune_cost(double price_per_gpu_hour, long gpus, double fom, const char *units);

/* ---- the tuned job file --------------------------------------------- */

/* `text` (a job file) with `sets` ("key=value", layout keys or
 * params.NAME) written into it: a key the file sets gets the new value in
 * place, others are added (a params key into its params block, or a new
 * one), and a scan block is dropped (the tuned job runs one layout).  The
 * tune block is kept.  `header` (comment lines) goes first.  Malloc'ed;
 * NULL (err: exit 2) when the text cannot be followed. */
char *gpurun_tune_rewrite(const char *text, size_t len, char *const *sets, size_t nsets, const char *header,
                          gpurun_error_t *err);

/* The tuned text `out` (gpurun_tune_rewrite() of the job file `text`),
 * read back as the job file `label` before it is written: 0 when it reads
 * as a job file and every key it sets is a key of `text` or of `sets`;
 * else -1 (err: exit 2, naming the first other key).  What the rewrite
 * writes from elsewhere (a path in the header) can then never add a key,
 * even if its escaping failed. */
int gpurun_tune_check_tuned(const char *text, size_t len, const char *out, char *const *sets, size_t nsets,
                            const char *label, gpurun_error_t *err);

#endif
