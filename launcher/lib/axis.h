/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_AXIS_H
#define GPURUN_AXIS_H

/* A space of configurations as its axes: a job's scan { } (SPEC §2), its
 * tune { } and a template's tune_space (SPEC §7) are each a list of axes,
 * and a configuration is one value of each, numbered with the first axis
 * outermost.  scan.h and tune.h enumerate through these alone. */

#include <stddef.h>

/* One axis: a layout key (nodes, ranks_per_node, gpus_per_rank,
 * threads_per_rank, ranks_per_gpu) or "params.NAME", and its values. */
struct gpurun_axis {
    char *key;    /* "ranks_per_node", "params.npme" */
    char **texts; /* every value as the file wrote it ("2", "md.tpr"); NULL-ended */
    long *values; /* a scanned layout key's values as integers; NULL otherwise */
    size_t n;
    int line; /* where the job file sets it; 0: not from a job file (a template's) */
};

void gpurun_axis_free(struct gpurun_axis *ax);
/* A deep copy of `src` into *dst. */
void gpurun_axis_copy(struct gpurun_axis *dst, const struct gpurun_axis *src);

/* Configurations of the axes: the product of their lengths (1 for none;
 * an axis without values counts as one). */
size_t gpurun_axes_count(const struct gpurun_axis *axes, size_t naxes);
/* Which value of axis `a` configuration `k` has. */
size_t gpurun_axes_pick(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t a);
/* The configuration that is `k` with axis `a` at its value number `v`. */
size_t gpurun_axes_neighbor(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t a, size_t v);
/* Configuration `k` as "KEY=VALUE" assignments (as --set takes them), one
 * per axis with values, in axis order; NULL-ended, malloc'ed, *n their
 * number (n may be NULL). */
char **gpurun_axes_sets(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t *n);
/* The same as one text, the assignments joined by `sep` (malloc'ed; ""
 * for no axes). */
char *gpurun_axes_text(const struct gpurun_axis *axes, size_t naxes, size_t k, const char *sep);

#endif
