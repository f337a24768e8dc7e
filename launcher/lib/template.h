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
#include "expand.h"
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

/* The text of a template alone: a `base` it names is not read (t->base
 * says it; t->command and t->description may then be NULL). */
int gpurun_template_parse(const char *text, size_t len, const char *label, gpurun_template_t **tp,
                          gpurun_error_t *err);
/* The file alone, as gpurun_template_parse. */
int gpurun_template_parse_file(const char *path, gpurun_template_t **tp, gpurun_error_t *err);
/* Internal (template.c, template_base.c): the keys a base gives whole,
 * each at its offset in gpurun_template_t (a list: `n` is its count's
 * offset, else 0), and the `own` bits of a file read, one per key. */
struct gpurun_template_key {
    const char *name;
    size_t off, n;
};
extern const struct gpurun_template_key gpurun_template_keys[];
extern const size_t gpurun_template_nkeys;
struct gpurun_conf_ctx;
unsigned long long gpurun_template_own_keys(const struct gpurun_conf_ctx *ctx);
void gpurun_template_destroy(gpurun_template_t *t);
/* A new run: its regexes' budget and the failure patterns' time, nothing spent. */
void gpurun_template_regex_reset(gpurun_template_t *t);

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

#endif
