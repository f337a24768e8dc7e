/* SPDX-License-Identifier: BSD-3-Clause */
/* The options, the integer parsing and the loading of runs that the commands
 * share (gpurun results and gpurun report the loading). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cmd_common.h"
#include "confparse.h"
#include "results.h"
#include "select.h"
#include "util.h"

int cmd_bad_option(const char *cmd, const char *arg, const struct option *opts, gpurun_error_t *err)
{
    /* Only a long option's name ("--dryrun", "--dryrun=x") is compared; an
     * exact name is one whose value is missing, or an ambiguous abbreviation. */
    const char *near = NULL;
    if (opts && !strncmp(arg, "--", 2) && arg[2]) {
        size_t n = 0, len = strcspn(arg + 2, "=");
        while (opts[n].name && n < 256)
            n++;
        const char **names = gpurun_xcalloc(n + 1, sizeof *names);
        bool exact = false;
        for (size_t i = 0; i < n; i++) {
            names[i] = opts[i].name;
            exact |= strlen(names[i]) == len && !strncmp(names[i], arg + 2, len);
        }
        char *word = gpurun_xstrndup(arg + 2, len);
        near = exact ? NULL : gpurun_conf_closest(word, names, n);
        free(word);
        free(names);
    }
    if (near)
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unknown option '%s' (did you mean '--%s'? see gpurun %s --help)", cmd,
                   arg, near, cmd);
    else
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unknown or incomplete option '%s' (see gpurun %s --help)", cmd, arg,
                   cmd);
    return GPURUN_EXIT_CONFIG;
}

int cmd_parse_int(const char *cmd, const char *opt, const char *s, int min, int max, int *out,
                  gpurun_error_t *err)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < min || v > max)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s: expected an integer from %d to %d, got '%s'", cmd, opt,
                          min, max, s);
    *out = (int)v;
    return 0;
}

int cmd_results_options(const char *cmd, const char *usage, int argc, char **argv, const struct cmd_option *extra,
                        const char **dir, const char **job, gpurun_error_t *err)
{
    return cmd_select_options(cmd, usage, argc, argv, extra, dir, job, NULL, err);
}

/* The selection's options (select.h), each taking an argument. */
static const char *const select_names[] = {"since", "until", "last", "runs", "where"};
#define NSELECT (sizeof select_names / sizeof *select_names)

int cmd_select_options(const char *cmd, const char *usage, int argc, char **argv, const struct cmd_option *extra,
                       const char **dir, const char **job, struct gpurun_select *sel, gpurun_error_t *err)
{
    enum { O_RESULTS = 1000, O_JOB, O_SELECT, O_EXTRA = O_SELECT + 16 };
    size_t n = 0, ns = sel ? NSELECT : 0;
    while (extra && extra[n].name)
        n++;
    /* Built per command: getopt_long's abbreviations depend on the whole set. */
    struct option *opts = gpurun_xcalloc(n + ns + 4, sizeof *opts);
    opts[0] = (struct option){"results", required_argument, NULL, O_RESULTS};
    opts[1] = (struct option){"job", required_argument, NULL, O_JOB};
    for (size_t i = 0; i < ns; i++)
        opts[2 + i] = (struct option){select_names[i], required_argument, NULL, O_SELECT + (int)i};
    for (size_t i = 0; i < n; i++)
        opts[2 + ns + i] = (struct option){extra[i].name, extra[i].arg ? required_argument : no_argument, NULL,
                                           O_EXTRA + (int)i};
    opts[2 + ns + n] = (struct option){"help", no_argument, NULL, 'h'};
    int c, rc = 0;
    time_t now = time(NULL);
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == O_RESULTS)
            *dir = optarg;
        else if (c == O_JOB)
            *job = optarg;
        else if (c >= O_SELECT && c < O_SELECT + (int)ns) {
            if (gpurun_select_option(sel, select_names[c - O_SELECT], optarg, now, err) < 0) {
                char *text = gpurun_xstrdup(err->text);
                gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s", cmd, text);
                free(text);
                rc = -1;
            }
        } else if (c >= O_EXTRA && c < O_EXTRA + (int)n) {
            const struct cmd_option *o = &extra[c - O_EXTRA];
            if (o->arg)
                *o->arg = optarg;
            else
                *o->flag = true;
        } else if (c == 'h') {
            fputs(usage, stdout);
            rc = 1;
        } else {
            cmd_bad_option(cmd, argv[optind - 1], opts, err);
            rc = -1;
        }
    }
    free(opts);
    if (rc == 0 && optind < argc)
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unexpected argument '%s' (the folder is --results DIR)", cmd,
                        argv[optind]);
    return rc;
}

int cmd_results_open(const char *dir, bool rebuild, gpurun_results_t **rp, gpurun_error_t *err)
{
    struct gpurun_results_log log = {0};
    gpurun_results_t *r = NULL;
    int rc = 0;
    *rp = NULL;
    if (gpurun_results_open(dir, rebuild, &r, &log, err) < 0 || gpurun_results_sync(r, rebuild, &log, err) < 0)
        rc = err->code ? err->code : GPURUN_EXIT_ENV;
    for (size_t i = 0; i < log.nwarnings; i++)
        fprintf(stderr, "gpurun: warning: %s\n", log.warnings[i]);
    if (rc == 0 && rebuild)
        fprintf(stderr, "gpurun: %s/%s rebuilt: %zu record%s indexed, %zu skipped\n", dir, GPURUN_RESULTS_DB,
                log.indexed, log.indexed == 1 ? "" : "s", log.skipped);
    gpurun_results_log_free(&log);
    if (rc != 0) {
        gpurun_results_close(r);
        return rc;
    }
    *rp = r;
    return 0;
}

int cmd_results_job_known(gpurun_results_t *r, const char *dir, const char *job, gpurun_error_t *err)
{
    json_t *jobs = NULL;
    if (!job)
        return 0;
    if (gpurun_results_jobs(r, &jobs, err) < 0)
        return err->code;
    if (json_object_get(jobs, job)) {
        json_decref(jobs);
        return 0;
    }
    /* The names, a bounded few, and the closest: a typo is the usual cause. */
    enum { SHOWN = 20 };
    const char *names[SHOWN];
    size_t n = 0, total = json_object_size(jobs);
    struct gpurun_strbuf b = {0};
    const char *k;
    json_t *v;
    json_object_foreach(jobs, k, v)
    {
        if (n == SHOWN)
            break;
        names[n] = k;
        char *shown = gpurun_printable(k);
        gpurun_strbuf_printf(&b, "%s%s (%lld run%s)", n ? ", " : "", shown, (long long)json_integer_value(v),
                             json_integer_value(v) == 1 ? "" : "s");
        free(shown);
        n++;
    }
    if (total > n)
        gpurun_strbuf_printf(&b, ", and %zu more", total - n);
    const char *near = gpurun_conf_closest(job, names, n);
    char *j = gpurun_printable(job), *d = gpurun_printable(dir), *nr = gpurun_printable(near);
    if (total)
        gpurun_err(err, GPURUN_EXIT_CONFIG, "no job '%s' in %s%s%s%s; its jobs: %s", j, d, near ? " (did you mean '" : "",
                   near ? nr : "", near ? "'?)" : "", b.s);
    else
        gpurun_err(err, GPURUN_EXIT_CONFIG, "no job '%s' in %s: it has no runs", j, d);
    free(j);
    free(d);
    free(nr);
    free(b.s);
    json_decref(jobs);
    return GPURUN_EXIT_CONFIG;
}
