/* SPDX-License-Identifier: BSD-3-Clause */
/* record.json as the results store (record.c, results.c) and `gpurun report`
 * (report.c) read it: the input is RESULTS/j/r/record.json, indexed, read
 * back as the run list and reported as tables, SVG and HTML.  The one
 * record path is replaced each time, so the index holds one run at most. */

#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"
#include "results.h"

static gpurun_results_t *store;
static char record[4200];

static void report_on(const json_t *runs)
{
    gpurun_report_t *rep = gpurun_report_build(runs);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        gpurun_report_print(rep, "fuzz", null);
        fclose(null);
    }
    free(gpurun_report_svg(rep));
    free(gpurun_report_html(rep, "fuzz"));
    gpurun_report_destroy(rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpurun_error_t err;
    if (!store) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/results", fuzz_dir());
        mkdir(dir, 0700);
        snprintf(record, sizeof record, "%s/results/j", fuzz_dir());
        mkdir(record, 0700);
        snprintf(record, sizeof record, "%s/results/j/r", fuzz_dir());
        mkdir(record, 0700);
        snprintf(record, sizeof record, "%s/results/j/r/record.json", fuzz_dir());
        if (gpurun_results_open(dir, false, &store, NULL, &err) < 0) {
            fprintf(stderr, "fuzz_record: %s\n", err.text);
            abort();
        }
    }
    fuzz_file("results/j/r/record.json", data, size);
    if (gpurun_results_index(store, record, &err) == 0) {
        json_t *runs = NULL;
        if (gpurun_results_runs(store, NULL, &runs, &err) == 0) {
            report_on(runs);
            json_decref(runs);
        }
    }
    /* The whole record too, as a list of runs: report reads any field. */
    json_t *rec = json_loadb((const char *)data, size, 0, NULL);
    if (rec) {
        json_t *runs = json_is_array(rec) ? json_incref(rec) : json_pack("[O]", rec);
        report_on(runs);
        json_decref(runs);
        json_decref(rec);
    }
    return 0;
}
