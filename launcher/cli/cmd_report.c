/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report: per job and configuration, the figures of merit over
 * repeats, scaling and cost (SPEC §7); a text table, or an SVG plot and an
 * HTML page written to files. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_common.h"
#include "report.h"
#include "results.h"
#include "select.h"
#include "util.h"

static const char report_usage[] =
    "Usage: gpurun report [--results DIR] [--job NAME] [--html FILE] [--svg FILE] [--include-busy]\n"
    "                     [--since TIME] [--until TIME] [--last N] [--runs ID,...] [--where KEY=VALUE]...\n"
    "\n"
    "Per job and configuration (nodes, ranks, GPUs per rank, threads per rank, params):\n"
    "the runs, mean / min / max of each figure of merit over the runs of state ok,\n"
    "speedup and parallel efficiency against the smallest configuration, and the cost\n"
    "per unit of work at the price per GPU-hour the records carry (on demand, spot);\n"
    "columns with nothing to show are left out.  Then the history of the main figure for\n"
    "the configuration with the most runs: a row per run by start time (a regression\n"
    "shows as a drop).  A time figure's mean (hour/ns, s) is its harmonic mean, the one\n"
    "its speedup is the ratio of.  Runs whose record says busy (other processes on their\n"
    "cores or GPUs, or throttling) are listed and left out of the means.\n"
    "\n"
    "  --results DIR   the results folder (default: ./results)\n"
    "  --job NAME      only this job\n"
    "  --html FILE     write one self-contained page: the tables and the plots\n"
    "  --svg FILE      write the plots: the main figure against GPUs (or ranks), with\n"
    "                  the ideal scaling from the smallest configuration, and its history\n"
    "  --include-busy  keep busy runs in the means\n"
    CMD_SELECT_HELP
    "  -h, --help      this help\n"
    "\n"
    "Without --html or --svg the tables go to standard output.\n"
    "Exit status: 0 reported, 2 bad option or selection value, no such folder, a --job that names no job\n"
    "of the folder (the jobs there are named) or a file that cannot be written, 3 the\n"
    "index cannot be read or written.\n";

static int add_run(json_t *run, void *rep)
{
    gpurun_report_add(rep, run);
    return 0;
}

int cmd_report(int argc, char **argv, gpurun_error_t *err)
{
    const char *dir = "results", *job = NULL, *html = NULL, *svg = NULL;
    bool include_busy = false;
    const struct cmd_option own[] = {
        {"html", &html, NULL},
        {"svg", &svg, NULL},
        {"include-busy", NULL, &include_busy},
        {NULL, NULL, NULL},
    };
    struct gpurun_select sel;
    gpurun_select_init(&sel);
    int rc = cmd_select_options("report", report_usage, argc, argv, own, &dir, &job, &sel, err);
    if (rc != 0) {
        gpurun_select_free(&sel);
        return rc < 0 ? err->code : 0;
    }

    gpurun_results_t *results = NULL;
    rc = cmd_results_open(dir, false, &results, err);
    if (rc == 0 && (rc = cmd_results_job_known(results, dir, job, err)) != 0)
        gpurun_results_close(results);
    if (rc != 0) {
        gpurun_select_free(&sel);
        return rc;
    }
    /* A run at a time: what the report keeps is per configuration. */
    gpurun_report_t *rep = gpurun_report_new();
    rep->include_busy = include_busy;
    rep->selection = sel.any ? gpurun_select_text(&sel) : NULL;
    rc = gpurun_select_each(results, job, &sel, add_run, rep, err) < 0 ? err->code : 0;
    gpurun_select_free(&sel);
    gpurun_results_close(results);
    gpurun_report_finish(rep);
    if (rc != 0) {
        gpurun_report_destroy(rep);
        return rc;
    }

    char *source = job ? gpurun_xasprintf("%s (job %s)", dir, job) : gpurun_xstrdup(dir);
    if (svg) {
        char *text = gpurun_report_svg(rep);
        if (gpurun_write_text(svg, text, err) < 0)
            rc = err->code;
        else
            printf("gpurun: plot written to %s\n", svg);
        free(text);
    }
    if (html && rc == 0) {
        char *text = gpurun_report_html(rep, source);
        if (gpurun_write_text(html, text, err) < 0)
            rc = err->code;
        else
            printf("gpurun: report written to %s\n", html);
        free(text);
    }
    if (!svg && !html)
        gpurun_report_print(rep, source, stdout);
    gpurun_report_destroy(rep);
    free(source);
    return rc;
}
