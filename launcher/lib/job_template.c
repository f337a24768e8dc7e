/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a job meets its template (job_template.h): moved whole from
 * template.c, so that templates know nothing of jobs. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "hpldat.h"
#include "job_template.h"
#include "template_base.h"
#include "util.h"

/* ---- the job's params ------------------------------------------------- */

/* A lookup that knows every name and notes it in the list `ctx`. */
static const char *note_name(const char *name, void *ctx)
{
    gpurun_kvlist_set(ctx, name, "");
    return "";
}

/* Every ${name} of `s` (NULL: none) into `names`; an error only where `s`
 * does not expand (the job's command, checked when it is run). */
static int note_names(const char *s, const char *what, struct gpurun_kvlist *names,
                      gpurun_error_t *err)
{
    char *out = NULL;
    int rc = s ? gpurun_expand(s, note_name, names, what, &out, err) : 0;
    free(out);
    return rc;
}

/* The names the template declares or uses and the job's command uses. */
static int used_names(const gpurun_template_t *t, const gpurun_job_t *job,
                      struct gpurun_kvlist *names, gpurun_error_t *err)
{
    int rc = note_names(job->command, "command", names, err);
    if (!t || rc < 0)
        return rc;
    for (size_t i = 0; i < t->defaults.n; i++)
        gpurun_kvlist_set(names, t->defaults.items[i].key, "");
    rc = note_names(t->command, "key 'command'", names, err);
    if (rc == 0)
        rc = note_names(t->gpu_args, "key 'gpu_args'", names, err);
    for (size_t i = 0; rc == 0 && i < t->nsetup; i++)
        rc = note_names(t->setup[i], "key 'setup'", names, err);
    for (size_t i = 0; rc == 0 && i < t->ninputs; i++)
        rc = note_names(t->inputs[i], "key 'inputs'", names, err);
    const char *const progress[] = {t->progress,       t->progress_groups,     t->progress_file,
                                    t->progress_after, t->progress_total,      t->progress_total_file,
                                    t->progress_units, t->progress_total_regex, t->progress_name};
    for (size_t i = 0; rc == 0 && i < sizeof progress / sizeof *progress; i++)
        rc = note_names(progress[i], "key 'progress'", names, err);
    if (rc == 0)
        rc = note_names(t->version_file, "key 'version_file'", names, err);
    if (rc == 0 && t->hpl_dat) { /* the params that set NB and P x Q in it (hpldat.h) */
        gpurun_kvlist_set(names, GPURUN_HPL_NB_PARAM, "");
        gpurun_kvlist_set(names, GPURUN_HPL_GRID_PARAM, "");
        rc = note_names(t->hpl_dat_from, "key 'hpl_dat_from'", names, err);
    }
    for (size_t i = 0; rc == 0 && i < t->nfoms; i++) {
        const struct gpurun_fom *f = &t->foms[i];
        const char *const fields[] = {f->file, f->regex, f->header, f->row, f->after, f->units};
        struct gpurun_conf_shown a;
        char what[128];
        snprintf(what, sizeof what, "key 'fom.%s'", gpurun_conf_shown(&a, f->name));
        for (size_t k = 0; rc == 0 && k < sizeof fields / sizeof *fields; k++)
            rc = note_names(fields[k], what, names, err);
    }
    return rc;
}

/* "KEY: not used: ..." for the params key `key`, which `used` lacks; `dotted`
 * is the job's key that sets it ("params.npme", "scan.params.npme"). */
static int unused_param(const gpurun_template_t *t, const gpurun_job_t *job, const char *key,
                        const char *dotted, const struct gpurun_kvlist *used, gpurun_error_t *err)
{
    const char **names = gpurun_xcalloc(used->n, sizeof *names);
    for (size_t i = 0; i < used->n; i++)
        names[i] = used->items[i].key;
    const char *near = gpurun_conf_closest(key, names, used->n);
    const char *from = gpurun_job_origin(job, dotted);
    bool scanned = !strncmp(dotted, "scan.", 5);
    struct gpurun_conf_shown a, b, c, d;
    char whom[512], hint[160] = "";
    if (t)
        snprintf(whom, sizeof whom, "template '%s' has no '${%s}' and no default of that name",
                 gpurun_conf_shown(&a, t->name), gpurun_conf_shown(&b, key));
    else
        snprintf(whom, sizeof whom, "the command has no '${%s}'", gpurun_conf_shown(&b, key));
    if (near)
        snprintf(hint, sizeof hint, " (did you mean '%sparams.%s'?)", scanned ? "scan." : "",
                 gpurun_conf_shown(&c, near));
    free(names);
    return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': not used: %s%s", from,
                      gpurun_conf_shown(&d, dotted), whom, hint);
}

int gpurun_template_check_params(const gpurun_template_t *t, const gpurun_job_t *job,
                                 gpurun_error_t *err)
{
    struct gpurun_kvlist used = {0};
    int rc = used_names(t, job, &used, err);
    for (size_t i = 0; rc == 0 && i < job->params.n; i++)
        if (!gpurun_kvlist_get(&used, job->params.items[i].key)) {
            char *dotted = gpurun_xasprintf("params.%s", job->params.items[i].key);
            rc = unused_param(t, job, job->params.items[i].key, dotted, &used, err);
            free(dotted);
        }
    /* A scan over a parameter nothing uses would run the same thing N times. */
    for (size_t i = 0; rc == 0 && i < job->nscan; i++)
        if (!strncmp(job->scan[i].key, "params.", 7) && !gpurun_kvlist_get(&used, job->scan[i].key + 7)) {
            char *dotted = gpurun_xasprintf("scan.%s", job->scan[i].key);
            rc = unused_param(t, job, job->scan[i].key + 7, dotted, &used, err);
            free(dotted);
        }
    gpurun_kvlist_clear(&used);
    return rc;
}

int gpurun_template_for_job(const gpurun_job_t *job, gpurun_template_t **tp, gpurun_error_t *err)
{
    *tp = NULL;
    if (job->template_name) {
        char *path;
        if (job->template_file) /* gpurun rerun: the kept copy, not what the search finds now */
            path = gpurun_xstrdup(job->template_file);
        else if (gpurun_template_find(job->template_name, job->dir, &path, err) < 0)
            return gpurun_job_locate(job, "template", err);
        int rc = gpurun_template_load(path, tp, err);
        free(path);
        if (rc < 0)
            return -1;
    } else if (!job->command) {
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: the job names neither a template nor a command; add `template = \"NAME\"` or "
                          "`command = \"PROGRAM ARGS\"`",
                          job->path ? job->path : job->name);
    }
    if (gpurun_template_check_params(*tp, job, err) < 0) {
        gpurun_template_destroy(*tp);
        *tp = NULL;
        return -1;
    }
    return 0;
}
