/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun diff RUN_A RUN_B: why one run differs from another (rundiff.h). */
#include "config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cmd.h"
#include "rundiff.h"

static const char diff_usage[] =
    "Usage: gpurun diff RUN_A RUN_B [--results DIR] [--json]\n"
    "\n"
    "What differs between two runs, most telling first: the figures of merit (and whether\n"
    "the difference is beyond the noise of their configurations' repeats in the results\n"
    "folder), the conditions they ran in, hosts and hardware (CPU and GPU models, driver),\n"
    "the layout, each rank's binding (cpus, GPUs, NICs, NUMA nodes), job keys and params,\n"
    "the program's path and SHA-256, the inputs' SHA-256, versions (program, MPI, gpurun)\n"
    "and the environment gpurun set.  A RUN is a run folder (RESULTS/JOB/RUN-ID), JOB/RUN-ID\n"
    "or a run id of the results folder (gpurun results lists them).\n"
    "\n"
    "  --results DIR   the results folder run ids are looked up in (default: ./results)\n"
    "  --json          a JSON object: {a, b, differences: [{section, key, a, b, ...}]}\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 compared (whether or not they differ), 2 a run that cannot be found or\n"
    "read (the message names the path), or a bad option.\n";

/* Finds and reads one run: its folder, record and figures' noise. */
static int load(const char *arg, const char *results, char **dir, json_t **rec, json_t **noise, gpurun_error_t *err)
{
    if (gpurun_run_find(arg, results, dir, err) < 0 || gpurun_run_record(*dir, rec, err) < 0)
        return err->code ? err->code : GPURUN_EXIT_CONFIG;
    *noise = gpurun_rundiff_noise(*dir, *rec);
    return 0;
}

int cmd_diff(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_RESULTS = 1000, O_JSON };
    static const struct option opts[] = {
        {"results", required_argument, NULL, O_RESULTS},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *results = "results";
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_RESULTS: results = optarg; break;
        case O_JSON: json = true; break;
        case 'h': fputs(diff_usage, stdout); return 0;
        default: return cmd_bad_option("diff", argv[optind - 1], opts, err);
        }
    }
    if (argc - optind != 2)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "diff: give two runs (see gpurun diff --help)"), GPURUN_EXIT_CONFIG;
    char *dir[2] = {NULL, NULL};
    json_t *rec[2] = {NULL, NULL}, *noise[2] = {NULL, NULL};
    int rc = load(argv[optind], results, &dir[0], &rec[0], &noise[0], err);
    if (rc == 0)
        rc = load(argv[optind + 1], results, &dir[1], &rec[1], &noise[1], err);
    if (rc == 0) {
        json_t *d = gpurun_rundiff(dir[0], rec[0], noise[0], dir[1], rec[1], noise[1]);
        char *out = json ? json_dumps(d, JSON_INDENT(2)) : gpurun_rundiff_text(d);
        if (out)
            fputs(out, stdout);
        if (json)
            fputc('\n', stdout);
        free(out);
        json_decref(d);
    }
    for (int i = 0; i < 2; i++) {
        free(dir[i]);
        json_decref(rec[i]);
        json_decref(noise[i]);
    }
    return rc;
}
