/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report: per job and configuration, the figures of merit over
 * repeats, scaling and cost (SPEC §7); a text table, or an SVG plot and an
 * HTML page written to files. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "report.h"
#include "results.h"
#include "util.h"

static const char report_usage[] =
    "Usage: gpurun report [--results DIR] [--job NAME] [--html FILE] [--svg FILE]\n"
    "\n"
    "Per job and configuration (nodes, ranks, GPUs per rank, threads per rank, params):\n"
    "the runs, mean / min / max of each figure of merit over the runs of state ok,\n"
    "speedup and parallel efficiency against the smallest configuration, and the cost\n"
    "per unit of work at the price per GPU-hour the records carry (on demand, spot).\n"
    "\n"
    "  --results DIR   the results folder (default: ./results)\n"
    "  --job NAME      only this job\n"
    "  --html FILE     write one self-contained page: the tables and the plots\n"
    "  --svg FILE      write the plot: the main figure against GPUs (or ranks), with\n"
    "                  the ideal scaling from the smallest configuration\n"
    "  -h, --help      this help\n"
    "\n"
    "Without --html or --svg the tables go to standard output.\n"
    "Exit status: 0 reported, 2 bad option, no such folder or a file that cannot be\n"
    "written, 3 the index cannot be read or written.\n";

int cmd_report(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_RESULTS = 1000, O_JOB, O_HTML, O_SVG };
    static const struct option opts[] = {
        {"results", required_argument, NULL, O_RESULTS},
        {"job", required_argument, NULL, O_JOB},
        {"html", required_argument, NULL, O_HTML},
        {"svg", required_argument, NULL, O_SVG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = "results", *job = NULL, *html = NULL, *svg = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_RESULTS: dir = optarg; break;
        case O_JOB: job = optarg; break;
        case O_HTML: html = optarg; break;
        case O_SVG: svg = optarg; break;
        case 'h': fputs(report_usage, stdout); return 0;
        default:
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "report: unknown or incomplete option '%s' (see gpurun report --help)",
                       argv[optind - 1]);
            return GPURUN_EXIT_CONFIG;
        }
    }
    if (optind < argc) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "report: unexpected argument '%s' (the folder is --results DIR)", argv[optind]);
        return GPURUN_EXIT_CONFIG;
    }

    struct gpurun_results_log log = {0};
    gpurun_results_t *r = NULL;
    json_t *runs = NULL;
    int rc = 0;
    if (gpurun_results_open(dir, false, &r, &log, err) < 0 ||
        gpurun_results_sync(r, false, &log, err) < 0 || gpurun_results_runs(r, job, &runs, err) < 0)
        rc = err->code ? err->code : GPURUN_EXIT_ENV;
    for (size_t i = 0; i < log.nwarnings; i++)
        fprintf(stderr, "gpurun: warning: %s\n", log.warnings[i]);
    gpurun_results_close(r);
    gpurun_results_log_free(&log);
    if (rc != 0)
        return rc;

    char *source = job ? gpurun_xasprintf("%s (job %s)", dir, job) : gpurun_xstrdup(dir);
    gpurun_report_t *rep = gpurun_report_build(runs);
    json_decref(runs);
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
