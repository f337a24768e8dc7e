/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_EXPAND_H
#define GPURUN_EXPAND_H

/* ${name} expansion and the splitting of a command line into words
 * (expand.c): what templates, jobs and the run share, below all of them. */

#include "error.h"

/* ${name} expansion: every ${name} in `in` is replaced by lookup(name).
 * A name lookup does not know is an error naming it and `what` (exit 2):
 * "WHAT: '${nstep}' is not set (did you mean '${nsteps}'?)"; the suggestion
 * needs the names, so it is made when lookup is gpurun_kvlist_lookup.
 * name is [A-Za-z_][A-Za-z0-9_]*; "${" without "}" is an error too.
 * No other character is special. */
typedef const char *(*gpurun_lookup_fn)(const char *name, void *ctx);
int gpurun_expand(const char *in, gpurun_lookup_fn lookup, void *ctx, const char *what, char **outp,
                  gpurun_error_t *err);

/* The job's own ${name}s, as the run (or, before the node is known, the
 * batch script) sees them. */
struct gpurun_job_values {
    const char *job, *template_name, *job_dir, *run_dir;
    long nodes, ranks_per_node, ranks, gpus_per_rank, threads_per_rank, repeat;
};

/* The names of those values, as ${name}s (gpurun.conf(5), EXPANSION);
 * NULL-terminated. */
extern const char *const gpurun_job_value_names[];

/* A gpurun_kvlist (util.h) is the usual table of names for
 * gpurun_expand(): set the weakest first (template defaults, then params,
 * then job keys) and pass gpurun_kvlist_lookup with the list as ctx. */

/* Split a command line into words the way a POSIX shell splits a simple
 * command: blanks separate, '...' and "..." quote, backslash escapes; no
 * expansion of any kind, and no operators (;, |, &, <, >, `, $( are refused
 * with exit 2: gpurun never hands a command to a shell). */
int gpurun_split_words(const char *line, char ***argvp, gpurun_error_t *err);

/* The same, with every ${name} expanded as the line is split: a value stays
 * inside the word it is in, whatever it holds (a job_dir with a blank or a
 * quote is one piece of one word, never parsed again), in quotes or not.
 * One exception: a ${name} that is a whole unquoted word by itself and not
 * one of the job's own values (job, template, job_dir, run_dir and the
 * numbers) gives the words of its value, split as above without expansion,
 * so that a params value may hold several arguments (args = "-n 5"); an
 * empty one gives none.  Errors as gpurun_expand() and gpurun_split_words()
 * give them (exit 2). */
int gpurun_expand_words(const char *line, gpurun_lookup_fn lookup, void *ctx, const char *what, char ***argvp,
                        gpurun_error_t *err);
void gpurun_free_words(char **argv);

#endif
