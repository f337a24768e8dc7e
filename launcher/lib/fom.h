/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_FOM_H
#define GPURUN_FOM_H

/* Figures of merit: what a template's `fom` sections read from a run's
 * output files, the template's sanity check, and `references` bands.
 *
 * A fom is read one of two ways (templates/README.md has the keys):
 *  - `regex`: every match of a POSIX extended regex, in file order; its
 *    first group is the number;
 *  - `header` + `row`: a table whose column is named by its heading
 *    ("(ns/day)"): on each line below a header line holding that heading
 *    that matches `row` (blank and ----- lines between are allowed; any
 *    other line ends the table), the number printed under the heading.  The column is found by
 *    where it is printed, so "(Mnbf/s) (GFlops) (ns/day) (hour/ns)" and
 *    "(ns/day) (hour/ns)" read alike, and a heading of several words
 *    ("Wall t (s)") works; where no number sits under the heading, the
 *    column is counted from the right.
 * With `after` (a regex), a value counts only when a line matching it came
 * before it and after the previous value: each such line admits one value,
 * so that what a program prints before its real summary is not read.
 *
 * Only finite numbers are values: "nan", "inf", an overflow, "1.2.3", a hex
 * number or a cell with text are skipped and said in `note`; the last line
 * of a file without its newline (a log cut short) is not read, nor what a
 * line holds past its first 64 KiB.  A figure that is not found has n = 0:
 * never a made-up value. */

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "template.h"

struct gpurun_fom_values {
    char *name;     /* the fom section's title: ns_per_day */
    char *units;    /* "ns/day" ("" when none), ${name} expanded */
    char *better;   /* "higher" | "lower" */
    char *kind;     /* "throughput" | "time" | "other"; NULL: the template does not say */
    char *file;     /* the file it was read from */
    double *values; /* every occurrence, in file order (several runs in one log) */
    size_t n;       /* 0: the figure was not found */
    bool optional;  /* the template allows it to be missing (fom key `optional`) */
    char *note;     /* what was skipped and why ("line 12: 'nan' is not a finite
                       number"); NULL when nothing was */
};

typedef struct gpurun_foms {
    struct gpurun_fom_values *f;
    size_t n;
} gpurun_foms_t;

/* Read every fom of `t`.  A fom's `file` is ${name}-expanded with lookup/ctx
 * and taken relative to `dir`; a fom without `file` reads the rank output
 * (`dir`/rank.0.out).  With `files` (NULL-terminated; `gpurun collect`),
 * every fom is read from each of those files instead, file by file: out
 * holds nfiles x nfoms entries, the foms of the first file first.  Regexes,
 * headers and units are ${name}-expanded too; lookup NULL expands them with
 * the template's defaults.  A missing figure is n = 0, never a made-up
 * value; -1 only for errors: a file that cannot be read (missing, not a
 * regular file) or a regex that does not compile once expanded (exit 2). */
int gpurun_fom_read(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                    char *const *files, gpurun_foms_t *out, gpurun_error_t *err);
void gpurun_foms_free(gpurun_foms_t *f);

/* The program's version as the template's `version` regex reads it (its
 * first group, on the first line that matches) from `version_file`
 * (${name}-expanded, relative to `dir`) or rank 0's output; at most
 * GPURUN_VERSION_MAX bytes, control characters dropped.  NULL (and no
 * error) when the template has no `version`, the file is missing or no
 * line matches: a version is information, never a reason to fail a run.
 * Only the first GPURUN_VERSION_LINES lines are read: programs print it
 * at start. */
#define GPURUN_VERSION_MAX 128
#define GPURUN_VERSION_LINES 2000
char *gpurun_version_read(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx);

/* {"ns_per_day": {"value": LAST, "values": [...], "units": "ns/day", "better": "higher",
 *                 "kind": "throughput", "file": "..."}}  ("kind" only where the template says it)
 * A figure not found has "value": null and "values": []; a note is
 * "note": "...", an optional figure "optional": true. */
json_t *gpurun_foms_json(const gpurun_foms_t *f);

/* The template's sanity check: one of its `sanity` forms appears within a
 * line of the fom files or the rank output, and none of its `failure`
 * texts does (true when the template has neither); `where` says what was
 * searched, `why` (may be NULL) the sentence for a check that failed:
 * "any of 'Total wall time:', 'Loop time of' does not appear in x.log,
 * rank.0.out" or "'...... FAILED' appears in hpccoutf.txt, line 432".
 * The texts are plain (not regexes). */
bool gpurun_sanity_check(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                         char *where, size_t wherelen, char *why, size_t whylen);
bool gpurun_sanity_ok(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                      char *where, size_t wherelen);

/* The same check on one file (`gpurun collect`): 1 it passes (or the
 * template has neither key), 0 it does not (why says so), -1 the file
 * cannot be read. */
int gpurun_sanity_file_check(const gpurun_template_t *t, const char *path, char *why, size_t whylen);
int gpurun_sanity_in_file(const gpurun_template_t *t, const char *path);

/* A `references` band:
 *   "90 +-10%"   within 10% of 90 (81..99)
 *   "90 +- 5"    within 5 of 90 (85..95)
 *   ">= 80", "> 80", "<= 2.5", "< 2.5"
 *   "80..100"    from 80 to 100, both included
 * A bare number is refused: a measured figure never equals one exactly.
 * Parse errors are exit 2 and quote the text.  check returns 1 inside, 0
 * outside (with why: "62.03 is outside 90 +-10% (81 .. 99)"), -1 on a parse
 * error. */
struct gpurun_band {
    double lo, hi;        /* the values inside: lo <= v <= hi (bounds may be +-HUGE_VAL) */
    bool lo_open, hi_open; /* "> 80": 80 itself is outside */
};
int gpurun_reference_parse(const char *spec, struct gpurun_band *band, gpurun_error_t *err);
int gpurun_reference_check(const char *spec, double value, char *why, size_t whylen, gpurun_error_t *err);

#endif
