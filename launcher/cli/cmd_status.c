/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun status: the running jobs of a results folder, from the status.json
 * their heads keep (runstatus.h): from another shell or a login node, and
 * whether or not their gpurun is still alive. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cmd_common.h"
#include "progress.h"
#include "results.h"
#include "runstatus.h"
#include "util.h"

static const char status_usage[] =
    "Usage: gpurun status [--results DIR] [--job NAME] [--json]\n"
    "\n"
    "The running jobs of a results folder: job, run folder, state, hosts, step k of N,\n"
    "ETA, running figure of merit, start and last update, from the status.json each\n"
    "run's gpurun keeps in its run folder (rewritten every progress_interval). A run\n"
    "whose gpurun is gone (killed: its pid is not alive on this host) or has not\n"
    "written for longer than it should is shown as stale. With --job, that job's\n"
    "newest run is shown when none runs (its final state). RESULTS/JOB/latest names\n"
    "each job's newest run folder.\n"
    "\n"
    "  --results DIR   the results folder (default: ./results)\n"
    "  --job NAME      only this job\n"
    "  --json          a JSON array: each run's status.json, with run_dir, shown\n"
    "                  (running, stale or the final state) and note\n"
    "  -h, --help      this help\n"
    "\n"
    "Only job and run folders of yours are read (a results folder may be shared),\n"
    "the newest 32 run folders of each job, never through a symlink.\n"
    "\n"
    "Exit status: 0 listed (none running included), 2 bad option or no such folder.\n";

enum { C_JOB, C_RUN, C_STATE, C_HOSTS, C_STEP, C_ETA, C_FIGURE, C_STARTED, C_UPDATED, NCOLS };

static char *cell_hosts(json_t *doc)
{
    json_t *hosts = json_object_get(doc, "hosts");
    size_t n = json_array_size(hosts);
    if (!n)
        return gpurun_xstrdup("-");
    char *out = gpurun_xstrdup("");
    for (size_t i = 0; i < n && i < 3; i++) {
        char *next = gpurun_xasprintf("%s%s%s", out, i ? "," : "", json_string_value(json_array_get(hosts, i)));
        free(out);
        out = next;
    }
    if (n > 3) {
        char *next = gpurun_xasprintf("%s,+%zu", out, n - 3);
        free(out);
        out = next;
    }
    char *shown = gpurun_printable(out);
    free(out);
    return shown;
}

static char *cell_step(json_t *doc)
{
    json_t *step = json_object_get(doc, "step"), *total = json_object_get(doc, "total");
    if (!json_is_integer(step))
        return gpurun_xstrdup("-");
    double pct = json_number_value(json_object_get(doc, "percent"));
    if (json_is_integer(total) && json_is_number(json_object_get(doc, "percent")))
        /* as the progress lines round it (progress.c): a tenth under 10 % */
        return gpurun_xasprintf(pct < 10 && pct > 0 ? "%lld/%lld (%.1f%%)" : "%lld/%lld (%.0f%%)",
                                (long long)json_integer_value(step), (long long)json_integer_value(total), pct);
    return gpurun_xasprintf("%lld", (long long)json_integer_value(step));
}

static char *cell_eta(json_t *doc, const char *shown)
{
    json_t *eta = json_object_get(doc, "eta_s");
    if (strcmp(shown, "running") || !json_is_number(eta))
        return gpurun_xstrdup("-");
    /* As of the last update: what has passed since counts too. */
    double left = json_number_value(eta) -
                  ((double)time(NULL) - (double)json_integer_value(json_object_get(doc, "updated_s")));
    char d[32];
    gpurun_progress_duration(left > 0 ? left : 0, d, sizeof d);
    return gpurun_xstrdup(d);
}

static char *cell_figure(json_t *doc)
{
    json_t *f = json_object_get(doc, "figure");
    const char *units = json_string_value(json_object_get(doc, "units"));
    if (!json_is_number(f))
        return gpurun_xstrdup("-");
    double v = json_number_value(f);
    char *text = gpurun_xasprintf(fabs(v) >= 100 ? "%.0f%s%s" : fabs(v) >= 10 ? "%.1f%s%s" : "%.2f%s%s", v,
                                  units ? " " : "", units ? units : "");
    char *shown = gpurun_printable(text);
    free(text);
    return shown;
}

static char *cell_ago(json_t *doc)
{
    json_int_t at = json_integer_value(json_object_get(doc, "updated_s"));
    if (at <= 0)
        return gpurun_xstrdup("-");
    char d[32];
    gpurun_progress_duration((double)time(NULL) - (double)at, d, sizeof d);
    return gpurun_xasprintf("%s ago", d);
}

static char *str_cell(json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));
    return gpurun_printable(s ? s : "-");
}

static void print_table(json_t *runs)
{
    static const char *const head[NCOLS] = {"job",      "run id", "state",   "hosts",  "step",
                                            "ETA",      "figure", "started", "updated"};
    size_t n = json_array_size(runs);
    char **cells = gpurun_xcalloc((n + 1) * NCOLS, sizeof *cells);
    for (size_t c = 0; c < NCOLS; c++)
        cells[c] = gpurun_xstrdup(head[c]);
    for (size_t r = 0; r < n; r++) {
        json_t *doc = json_array_get(runs, r);
        char **row = &cells[(r + 1) * NCOLS];
        const char *shown = json_string_value(json_object_get(doc, "shown"));
        row[C_JOB] = str_cell(doc, "job");
        row[C_RUN] = str_cell(doc, "run_id");
        row[C_STATE] = str_cell(doc, "shown");
        row[C_HOSTS] = cell_hosts(doc);
        row[C_STEP] = cell_step(doc);
        row[C_ETA] = cell_eta(doc, shown ? shown : "");
        row[C_FIGURE] = cell_figure(doc);
        row[C_STARTED] = str_cell(doc, "started");
        row[C_UPDATED] = cell_ago(doc);
    }
    size_t w[NCOLS] = {0};
    for (size_t i = 0; i < (n + 1) * NCOLS; i++)
        if (strlen(cells[i]) > w[i % NCOLS])
            w[i % NCOLS] = strlen(cells[i]);
    for (size_t r = 0; r <= n; r++)
        for (size_t c = 0; c < NCOLS; c++)
            printf("%-*s%s", c + 1 < NCOLS ? (int)w[c] : 0, cells[r * NCOLS + c], c + 1 < NCOLS ? "  " : "\n");
    for (size_t i = 0; i < (n + 1) * NCOLS; i++)
        free(cells[i]);
    free(cells);
    /* Where each shown run is, and why one is stale. */
    for (size_t r = 0; r < n; r++) {
        json_t *doc = json_array_get(runs, r);
        char *dir = str_cell(doc, "run_dir");
        const char *note = json_string_value(json_object_get(doc, "note"));
        char *why = note && *note ? gpurun_printable(note) : NULL;
        printf("  %s%s%s\n", dir, why ? ": " : "", why ? why : "");
        free(dir);
        free(why);
    }
}

int cmd_status(int argc, char **argv, gpurun_error_t *err)
{
    const char *dir = "results", *job = NULL;
    bool json = false;
    const struct cmd_option own[] = {
        {"json", NULL, &json},
        {NULL, NULL, NULL},
    };
    int rc = cmd_results_options("status", status_usage, argc, argv, own, &dir, &job, err);
    if (rc != 0)
        return rc < 0 ? err->code : 0;
    json_t *runs = NULL;
    size_t skipped = 0;
    if (gpurun_status_scan(dir, job, &runs, &skipped, err) < 0)
        return err->code;
    if (json) {
        char *text = json_dumps(runs, JSON_INDENT(2));
        if (text)
            puts(text);
        free(text);
    } else if (json_array_size(runs) == 0) {
        char *shown = gpurun_printable(dir), *jshown = job ? gpurun_printable(job) : NULL;
        printf("no running job%s%s in %s\n", job ? " and no run of job " : "", job ? jshown : "", shown);
        free(shown);
        free(jshown);
    } else {
        print_table(runs);
    }
    if (skipped)
        fprintf(stderr, "gpurun: status: %zu job or run folder%s of another user (or not safe to read) skipped\n",
                skipped, skipped == 1 ? "" : "s");
    json_decref(runs);
    return 0;
}
