/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun rerun RUN: the run again as it was recorded, from the job file and
 * template text kept in its run folder, with its overrides (provenance.h). */
#include "config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "job.h"
#include "provenance.h"
#include "record.h"
#include "run.h"
#include "scan.h"
#include "rundiff.h"
#include "util.h"

static const char rerun_usage[] =
    "Usage: gpurun rerun RUN [--dry-run] [--set KEY=VALUE]... [--results DIR] [--quiet|--verbose]\n"
    "\n"
    "Run a run again as it was recorded: the job file and template text kept in its run folder\n"
    "(job.conf, templates/NAME.conf), not the files as they are now, with the same overrides\n"
    "and, for a run of a scan, its scan values; once, whatever the job's `repeat`.  First a\n"
    "warning names what changed since: the program's or an input's SHA-256, the job file or\n"
    "template where they were, gpurun's version, the hosts.  The new run goes to the same\n"
    "results folder.  A RUN is a run folder, JOB/RUN-ID or a run id (gpurun results lists them).\n"
    "\n"
    "  --dry-run          print what would run (as gpurun run --dry-run), start nothing\n"
    "  --set KEY=VALUE    one more override, after the recorded ones\n"
    "  --results DIR      the results folder run ids are looked up in (default: ./results)\n"
    "  --quiet, --verbose as gpurun run's\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: as gpurun run's; 2 also for a run that cannot be found or read, or that\n"
    "kept no copy of its job file.\n";

/* "KEY=VALUE" of a scan value as the record's config holds it; NULL: none. */
static char *config_set(const json_t *config, const char *key)
{
    json_t *v = json_object_get(config, key);
    if (json_is_integer(v))
        return gpurun_xasprintf("%s=%lld", key, (long long)json_integer_value(v));
    return json_is_string(v) ? gpurun_xasprintf("%s=%s", key, json_string_value(v)) : NULL;
}

/* The 1-based configuration of the job's scan whose values are the
 * record's config, as gpurun run --configuration takes it; 0: none (no
 * scan, or the kept scan no longer yields it). */
static long scan_index(const gpurun_job_t *job, const json_t *config)
{
    size_t count = gpurun_scan_count(job);
    if (!job->nscan || json_object_size(config) != job->nscan)
        return 0;
    for (size_t k = 0; k < count; k++) {
        struct gpurun_scan_config sc;
        gpurun_scan_config(job, k, &sc);
        bool same = sc.nsets == job->nscan;
        for (size_t i = 0; same && i < sc.nsets; i++) {
            char *want = config_set(config, job->scan[i].key);
            same = want && !strcmp(want, sc.sets[i]);
            free(want);
        }
        gpurun_scan_config_free(&sc);
        if (same)
            return (long)k + 1;
    }
    return 0;
}

/* The assignments the rerun applies, in order: the recorded overrides, the
 * run's scan values (where its configuration of the kept scan is not
 * found), repeat=1 where the job repeats, then the extra ones. */
static char **rerun_sets(const json_t *rec, const gpurun_job_t *job, bool by_index, char **extra, size_t nextra,
                         size_t *np)
{
    json_t *ov = json_object_get(json_object_get(rec, GPURUN_REC_PROVENANCE), GPURUN_REC_PROV_OVERRIDES);
    json_t *config = by_index ? NULL : json_object_get(rec, GPURUN_REC_CONFIG);
    char **sets = gpurun_xcalloc(json_array_size(ov) + json_object_size(config) + nextra + 2, sizeof *sets);
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(ov, i, v) if (json_is_string(v)) sets[n++] = gpurun_xstrdup(json_string_value(v));
    const char *key;
    json_object_foreach(config, key, v)
    {
        if (json_is_integer(v))
            sets[n++] = gpurun_xasprintf("%s=%lld", key, (long long)json_integer_value(v));
        else if (json_is_string(v))
            sets[n++] = gpurun_xasprintf("%s=%s", key, json_string_value(v));
    }
    if (job->repeat != 1)
        sets[n++] = gpurun_xstrdup("repeat=1");
    for (i = 0; i < nextra; i++)
        sets[n++] = gpurun_xstrdup(extra[i]);
    *np = n;
    return sets;
}

/* The job as recorded: the kept text parsed as the job file it was, its
 * template the kept copy. */
static int recorded_job(const json_t *rec, const char *dir, gpurun_job_t **jobp, gpurun_error_t *err)
{
    char *jpath = NULL, *tpath = NULL, *text = NULL;
    size_t len = 0;
    *jobp = NULL;
    if (gpurun_provenance_copies(rec, dir, &jpath, &tpath, err) < 0)
        return -1;
    const char *as = gpurun_record_str(json_object_get(json_object_get(rec, GPURUN_REC_PROVENANCE), "job"), "path");
    int rc = gpurun_read_file(jpath, "kept job file", GPURUN_PROV_TEXT_MAX, &text, &len, err);
    if (rc == 0)
        rc = gpurun_job_parse(text, len, as ? as : jpath, jobp, err);
    if (rc == 0) {
        (*jobp)->text_file = jpath;
        (*jobp)->template_file = tpath;
    } else {
        free(jpath);
        free(tpath);
    }
    free(text);
    return rc;
}

static void warn_changes(const json_t *rec, const char *dir)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *changes = gpurun_provenance_changes(rec, host[0] ? host : NULL);
    if (!changes)
        return;
    char *where = gpurun_terminal_text(dir);
    fprintf(stderr, "gpurun: warning: since the run %s, what it ran from changed:\n", where);
    for (char *line = strtok(changes, "\n"); line; line = strtok(NULL, "\n")) {
        char *shown = gpurun_terminal_text(line);
        fprintf(stderr, "gpurun:   %s\n", shown);
        free(shown);
    }
    free(where);
    free(changes);
}

/* The recorded sets applied to `job`, then the run. */
static int rerun(gpurun_job_t *job, const json_t *rec, const char *dir, struct gpurun_run_opts *ro, char **extra,
                 size_t nextra, gpurun_error_t *err)
{
    size_t nsets = 0;
    ro->configuration = scan_index(job, json_object_get(rec, GPURUN_REC_CONFIG)); /* its record's config too */
    char **sets = rerun_sets(rec, job, ro->configuration > 0, extra, nextra, &nsets);
    int rc = 0;
    for (size_t i = 0; i < nsets && rc == 0; i++)
        if (gpurun_job_set(job, sets[i], err) < 0)
            rc = err->code;
    const char *tname = gpurun_record_str(rec, GPURUN_REC_TEMPLATE);
    if (!job->template_name || !tname || strcmp(job->template_name, tname) != 0) {
        free(job->template_file); /* another template named: found as gpurun run finds it */
        job->template_file = NULL;
    }
    char *results = gpurun_run_results_dir(dir);
    ro->results = results; /* beside the run it repeats: diff finds both configurations' noise */
    ro->sets = (const char *const *)sets;
    ro->nsets = nsets;
    if (rc == 0) {
        warn_changes(rec, dir);
        rc = gpurun_run_job(job, ro, err);
    }
    for (size_t i = 0; i < nsets; i++)
        free(sets[i]);
    free(sets);
    free(results);
    return rc;
}

int cmd_rerun(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_DRY = 1000, O_SET, O_RESULTS, O_QUIET, O_VERBOSE };
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, O_DRY},
        {"set", required_argument, NULL, O_SET},
        {"results", required_argument, NULL, O_RESULTS},
        {"quiet", no_argument, NULL, O_QUIET},
        {"verbose", no_argument, NULL, O_VERBOSE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct gpurun_run_opts ro = {0};
    char **extra = gpurun_xcalloc((size_t)argc + 1, sizeof *extra);
    size_t nextra = 0;
    const char *results = "results";
    int c, rc;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_DRY: ro.dry_run = true; break;
        case O_SET: extra[nextra++] = optarg; break;
        case O_RESULTS: results = optarg; break;
        case O_QUIET: ro.quiet = true; break;
        case O_VERBOSE: ro.verbose = true; break;
        case 'h':
            fputs(rerun_usage, stdout);
            free(extra);
            return 0;
        default: free(extra); return cmd_bad_option("rerun", argv[optind - 1], opts, err);
        }
    }
    if (argc - optind != 1) {
        free(extra);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "rerun: give exactly one run (see gpurun rerun --help)"),
               GPURUN_EXIT_CONFIG;
    }
    char *dir = NULL;
    json_t *rec = NULL;
    gpurun_job_t *job = NULL;
    if (gpurun_run_find(argv[optind], results, &dir, err) < 0 || gpurun_run_record(dir, &rec, err) < 0 ||
        recorded_job(rec, dir, &job, err) < 0)
        rc = err->code ? err->code : GPURUN_EXIT_CONFIG;
    else
        rc = rerun(job, rec, dir, &ro, extra, nextra, err);
    gpurun_job_destroy(job);
    json_decref(rec);
    free(dir);
    free(extra);
    return rc;
}
