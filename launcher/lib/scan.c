/* SPDX-License-Identifier: BSD-3-Clause */
/* Enumerating a job's scan: see scan.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "scan.h"
#include "util.h"

size_t gpurun_scan_count(const gpurun_job_t *job)
{
    return gpurun_axes_count(job->scan, job->nscan); /* job.c bounds it (SCAN_RUNS_MAX) */
}

bool gpurun_scan_has_params(const gpurun_job_t *job)
{
    for (size_t a = 0; a < job->nscan; a++)
        if (!strncmp(job->scan[a].key, "params.", 7))
            return true;
    return false;
}

void gpurun_scan_config(const gpurun_job_t *job, size_t k, struct gpurun_scan_config *out)
{
    memset(out, 0, sizeof *out);
    out->count = gpurun_scan_count(job);
    out->index = k % out->count;
    out->sets = gpurun_axes_sets(job->scan, job->nscan, out->index, &out->nsets);
    out->text = gpurun_axes_text(job->scan, job->nscan, out->index, ", ");
}

void gpurun_scan_config_free(struct gpurun_scan_config *c)
{
    if (c->sets)
        gpurun_free_words(c->sets);
    free(c->text);
    memset(c, 0, sizeof *c);
}

int gpurun_scan_apply(gpurun_job_t *job, const struct gpurun_scan_config *c, gpurun_error_t *err)
{
    for (size_t i = 0; i < c->nsets; i++) {
        const char *eq = strchr(c->sets[i], '=');
        char *dotted = gpurun_xasprintf("scan.%.*s", eq ? (int)(eq - c->sets[i]) : 0, c->sets[i]);
        char *where = gpurun_xstrdup(gpurun_job_origin(job, dotted));
        free(dotted);
        int rc = gpurun_job_set_scanned(job, c->sets[i], where, err);
        free(where);
        if (rc < 0)
            return -1;
    }
    return 0;
}

char *gpurun_scan_describe(const gpurun_job_t *job)
{
    if (!job->nscan)
        return gpurun_xstrdup("no scan");
    struct gpurun_strbuf b = {0};
    for (size_t a = 0; a < job->nscan; a++) {
        const struct gpurun_axis *ax = &job->scan[a];
        gpurun_strbuf_printf(&b, "%s%s {", a ? " x " : "", ax->key);
        for (size_t v = 0; v < ax->n; v++)
            gpurun_strbuf_printf(&b, "%s%s", v ? ", " : "", ax->texts[v]);
        gpurun_strbuf_printf(&b, "}");
    }
    size_t n = gpurun_scan_count(job);
    gpurun_strbuf_printf(&b, ": %zu configuration%s", n, n == 1 ? "" : "s");
    return b.s;
}
