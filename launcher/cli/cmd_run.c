/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun run JOB.conf (also plain `gpurun JOB.conf`). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "job.h"
#include "run.h"

static const char run_usage[] =
    "Usage: gpurun run JOB.conf [--dry-run] [--set KEY=VALUE]... [--results DIR] [--quiet|--verbose]\n"
    "       gpurun JOB.conf [same options]\n"
    "\n"
    "Run a job: merge it with its template, plan the binding of every rank, start the ranks\n"
    "through the launcher (a resource manager's inside its allocation, else mpirun, else local),\n"
    "supervise them and keep everything in RESULTS/JOB/RUN-ID/.\n"
    "\n"
    "  --dry-run          print the launcher command line, the binding and environment of every\n"
    "                     rank, and start nothing\n"
    "  --set KEY=VALUE    override a job key (nodes=2, params.nsteps=500, env.OMP_STACKSIZE=1G)\n"
    "  --results DIR      results folder (default: the job's `results`, next to the job file)\n"
    "  --configuration K  run only configuration K (1, 2, ...) of the job's scan, as the batch\n"
    "                     jobs of gpurun submit do\n"
    "  --quiet            no rank output or status line on the terminal; on success one closing\n"
    "                     line: the figures and the run folder\n"
    "  --verbose          also print the plan's warnings\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 ok; a failed rank's own status (128+N for signal N); 2 bad job file or option;\n"
    "3 cannot run here (program, launcher or resources missing); 124 time limit; 130/143 interrupted.\n"
    "A reader of gpurun's output that goes away (| head, a full disk) changes none of these, nor ends the run.\n";

int cmd_run(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_DRY = 1000, O_SET, O_RESULTS, O_QUIET, O_VERBOSE, O_CONFIG };
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, O_DRY},     {"set", required_argument, NULL, O_SET},
        {"results", required_argument, NULL, O_RESULTS}, {"quiet", no_argument, NULL, O_QUIET},
        {"verbose", no_argument, NULL, O_VERBOSE}, {"help", no_argument, NULL, 'h'},
        {"configuration", required_argument, NULL, O_CONFIG},
        {NULL, 0, NULL, 0},
    };
    struct gpurun_run_opts ro = {0};
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    size_t nsets = 0;
    int c, rc = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_DRY: ro.dry_run = true; break;
        case O_SET: sets[nsets++] = optarg; break;
        case O_RESULTS: ro.results = optarg; break;
        case O_QUIET: ro.quiet = true; break;
        case O_VERBOSE: ro.verbose = true; break;
        case O_CONFIG: {
            char *end;
            ro.configuration = strtol(optarg, &end, 10);
            if (*end || end == optarg || ro.configuration < 1 || ro.configuration > 1000000) {
                gpurun_err(err, GPURUN_EXIT_CONFIG, "run: --configuration %.32s: expected a number from 1", optarg);
                free(sets);
                return GPURUN_EXIT_CONFIG;
            }
            break;
        }
        case 'h': fputs(run_usage, stdout); free(sets); return 0;
        default:
            free(sets);
            return cmd_bad_option("run", argv[optind - 1], opts, err);
        }
    }
    if (argc - optind != 1) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "run: give exactly one job file (see gpurun run --help)");
        free(sets);
        return GPURUN_EXIT_CONFIG;
    }
    gpurun_job_t *job;
    if (gpurun_job_load(argv[optind], &job, err) < 0) {
        free(sets);
        return err->code;
    }
    for (size_t i = 0; i < nsets && rc == 0; i++)
        if (gpurun_job_set(job, sets[i], err) < 0)
            rc = err->code;
    ro.sets = sets;
    ro.nsets = nsets;
    if (rc == 0)
        rc = gpurun_run_job(job, &ro, err);
    gpurun_job_destroy(job);
    free(sets);
    return rc;
}
