/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TEMPLATE_H
#define GPURUN_TEMPLATE_H

/* Workload templates (SPEC §3) as plain structs: only template.c sees
 * libconfuse.  Also the search path and ${name} expansion they use. */

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "container.h"
#include "error.h"
#include "job.h"
#include "util.h"

struct gpurun_fom {
    char *name;   /* the section title: ns_per_day */
    char *file;   /* where to read it, ${name} unexpanded; NULL: the rank output */
    char *regex;  /* POSIX extended regex, first group is the value; checked
                     when read, unless it holds a ${name}; NULL with header */
    char *units;  /* "ns/day"; "" when not given */
    char *better; /* "higher" (the default) | "lower" */
    char *kind;   /* "throughput" (work per time: scaled), "time" (time per work or to
                     solution: scaled by its inverse), "other" (never scaled); NULL:
                     not said, the report goes by its units */
    char *header; /* instead of regex: the heading of the value's column in a
                     table ("(ns/day)"); read with `row` (fom.h) */
    char *row;    /* with header: a regex the line of values matches */
    char *after;  /* a regex: each line matching it admits one value; NULL:
                     every value counts */
    bool optional; /* may be missing without failing the run (a template
                      whose program prints one of several figures) */
};

typedef struct gpurun_template {
    char *path;        /* the file it was read from */
    char *name;        /* file name without .conf */
    char *description;
    char *command;     /* ${name} unexpanded */
    char *gpu_args;    /* appended when gpus_per_rank > 0; NULL when none */
    char **setup;      /* commands run once before the ranks */
    size_t nsetup;
    char **inputs;     /* `inputs`: files the program reads, ${name} unexpanded; checked before anything
                          starts (inputs.h).  An item that is one ${NAME} makes NAME's value absolute. */
    size_t ninputs;
    int inputs_line;   /* where `inputs` and `defaults` are in `path` (0: not known), for messages */
    int defaults_line;
    struct gpurun_fom *foms;
    size_t nfoms;
    char *sanity;      /* the first of sanity_forms (for messages); NULL when none */
    char **sanity_forms; /* `sanity`: one of them must appear in the output */
    size_t nsanity;
    char **failure;    /* `failure`: POSIX extended regexes of the lines that name why a run failed: the
                          first such line of a failed rank's output is shown first (failure.h), and one
                          in the output of a run that exited well fails it */
    regex_t *failure_re; /* the same, compiled (REG_EXTENDED | REG_NOSUB) */
    struct gpurun_regex_spend *failure_spend; /* the time each took matching in this run */
    size_t nfailure;
    /* The run's budget for matching the template's regexes (util.h: failure,
     * fom, progress, version); gpurun_template_regex_reset() at each run's
     * start.  What it dropped is said in the record's notes. */
    struct gpurun_regex_budget *regex_budget;
    char **restart;    /* `restart`: a line with one of them starts its file over (a
                          continuation appended to a log): the sanity and failure
                          texts before it no longer count */
    size_t nrestart;
    char *version;      /* regex whose first group is the program's version ("GROMACS version: *([^ ]+)"),
                           read once from version_file after the run: the record's "program_version";
                           NULL when none */
    char *version_file; /* relative to the run folder, ${name} unexpanded; NULL: rank 0's output */
    char *progress;    /* regex of the progress lines (progress.h); NULL when none */
    char *progress_groups;      /* what its groups hold: "step clock"; NULL: "step" */
    char *progress_file;        /* where the lines are, relative to the run folder; NULL: rank 0's output */
    char *progress_after;       /* a regex: each line matching it lets one progress line through */
    char *progress_total;       /* N, a whole number once expanded ("${nsteps}") */
    int progress_total_line;    /* where progress_total is in `path`, for messages */
    char *progress_total_file;  /* with progress_total_regex: N is the product of the first groups */
    char *progress_total_regex; /*   of that file's lines that match (HPL's input) */
    char *progress_units;       /* the running figure's units */
    char *progress_name;        /* what a step is called ("HPL test"); NULL: "step" */
    char *progress_scale;       /* a positive number: the figure is a rate (progress.h) */
    char *rank_env;    /* "torchrun": each rank also gets torchrun's variables
                          (torchrun.h); NULL when none */
    struct gpurun_kvlist env;      /* applied when gpudirect is on */
    struct gpurun_kvlist defaults; /* default params */
    struct gpurun_container_spec container; /* container { }: the job's keys win */
    /* gpurun tune (tune.h): the default space, "KEY=V1,V2,...", and the
     * --set assignments that shorten a trial without changing what it
     * measures ("params.nsteps=4000"); NULL-ended, empty when none. */
    char **tune_space, **tune_short;
    size_t ntune_space, ntune_short;
    /* HPL's input (hpldat.h): the run folder's file in HPL.dat's format whose
     * NB and P x Q the params nb and grid set after the setup steps (a plain
     * name); the file it is copied from (${name} unexpanded), checked before
     * anything starts.  NULL when none. */
    char *hpl_dat, *hpl_dat_from;
    /* A clean stop (Ctrl-C, SIGTERM, the timeout, the allocation's end):
     * the signal the ranks get (`stop_signal`, SIGTERM by default) and the
     * seconds they have before SIGKILL (`stop_grace`, GPURUN_STOP_GRACE_S by
     * default): GROMACS finishes its step and writes its checkpoint. */
    int stop_signal;
    long stop_grace_s;
    /* `base`: the template whose keys this one takes unless it sets them
     * (template_base.c); NULL: none.  `own`: which of those keys the file
     * itself sets, a bit each (template_base.c's order). */
    char *base;
    unsigned long long own;
} gpurun_template_t;

#define GPURUN_STOP_GRACE_S 30

/* The signal named "TERM", "SIGTERM", "INT", "USR1", ...: its number, 0
 * for a name that is not a stop signal gpurun sends (SIGKILL, SIGSTOP are
 * not: nothing could stop cleanly). */
int gpurun_stop_signal_number(const char *name);

/* Find NAME.conf on the search path: the job file's folder, each folder of
 * $GPURUN_TEMPLATE_PATH (colon-separated), ~/.config/gpurun/templates, then
 * the installed templates folder.  Errors (exit 2) list where it looked. */
int gpurun_template_find(const char *name, const char *job_dir, char **pathp, gpurun_error_t *err);
/* The same search for `what` ("template", "site") NAME.conf in the folder
 * `sub` ("sites"; NULL: none) of each folder of the path. */
int gpurun_search_path_find(const char *what, const char *sub, const char *name, const char *job_dir,
                            char **pathp, gpurun_error_t *err);
/* An installed `sub`/NAME.conf (gpurun's own folders, 4 and 5 of the path)
 * other than the file `found` (NULL: any): true with *pathp (the caller
 * frees it), else false. */
bool gpurun_search_installed(const char *sub, const char *name, const char *found, char **pathp);
/* The folders of that path, in search order, each once (job_dir first when
 * not NULL); *np of them.  Free with gpurun_search_path_free(). */
char **gpurun_search_path(const char *job_dir, size_t *np);
void gpurun_search_path_free(char **dirs, size_t n);

/* Read a template file, and its base's keys that it does not set (as
 * gpurun_template_inherit); errors name the file, line and key (exit 2). */
int gpurun_template_load(const char *path, gpurun_template_t **tp, gpurun_error_t *err);
/* The text of a template alone: a `base` it names is not read (t->base
 * says it; t->command and t->description may then be NULL). */
int gpurun_template_parse(const char *text, size_t len, const char *label, gpurun_template_t **tp,
                          gpurun_error_t *err);
/* The file alone, as gpurun_template_parse. */
int gpurun_template_parse_file(const char *path, gpurun_template_t **tp, gpurun_error_t *err);
/* The keys of t's base (and its base's, at most 7 deep) that t does not
 * set, the base found on the search path from t's folder (t->path's):
 * strings and lists whole, defaults and env name by name, figures by
 * title, a container block whole.  Nothing when t has no base.  Exit 2:
 * the base not found or not readable, a loop, or no command or
 * description in either. */
int gpurun_template_inherit(gpurun_template_t *t, gpurun_error_t *err);
/* Internal (template.c, template_base.c): the `own` bits of a file read. */
struct gpurun_conf_ctx;
unsigned long long gpurun_template_own_keys(const struct gpurun_conf_ctx *ctx);
void gpurun_template_destroy(gpurun_template_t *t);
/* A new run: its regexes' budget and the failure patterns' time, nothing spent. */
void gpurun_template_regex_reset(gpurun_template_t *t);

/* The job's template, found on the search path and read (NULL for a job
 * that gives a command instead), its params checked as below.  A template
 * not found is reported on the job's line of `template` (or its --set); a
 * job with neither template nor command is an error.  Exit 2 either way. */
int gpurun_template_for_job(const gpurun_job_t *job, gpurun_template_t **tp, gpurun_error_t *err);

/* Every params key of `job` must be used (SPEC §2: an unknown key is an
 * error): a default of the template `t`, or a ${key} in a string gpurun
 * expands from it (command, gpu_args, setup, each fom's file, regex,
 * header, row, after and units) or from the job (its command; the only one
 * when `t` is NULL).  An unused key is an error (exit 2) naming where it was
 * set: "job.conf:12: key 'params.nstep': not used: template 'gromacs' has
 * no '${nstep}' and no default of that name (did you mean 'params.nsteps'?)",
 * or "--set params.nstep=10: key ...". */
int gpurun_template_check_params(const gpurun_template_t *t, const gpurun_job_t *job,
                                 gpurun_error_t *err);

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

/* The table gpurun_expand() reads for a job: its own keys, then the
 * template's defaults (`tpl` may be NULL), then its params, each replacing
 * the one before (params win).  A template's input that is one ${NAME}
 * (inputs = { "${tpr}" }) and whose value is a relative path gets it as
 * the job folder's (v->job_dir), absolute: the program runs in the run
 * folder. */
void gpurun_job_names(struct gpurun_kvlist *names, const struct gpurun_job_values *v,
                      const gpurun_template_t *tpl, const struct gpurun_kvlist *params);

/* Whether a template's input is one ${NAME} and nothing else: NAME into
 * `name`. */
bool gpurun_template_input_name(const char *input, char *name, size_t size);

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
