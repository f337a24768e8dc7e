/* SPDX-License-Identifier: BSD-3-Clause */
/* A template's progress keys made a progress definition
 * (progress_template.h), moved whole from progress.c. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress_template.h"
#include "util.h"

/* ---- the template's keys ---------------------------------------------- */

static int expand_key(const gpurun_template_t *t, const char *key, int line, const char *value,
                      gpurun_lookup_fn lookup, void *ctx, struct gpurun_progress_conf *c, char **out,
                      gpurun_error_t *err)
{
    *out = NULL;
    if (!value)
        return 0;
    char what[512];
    if (line)
        snprintf(what, sizeof what, "%s:%d: key '%s'", t->path, line, key);
    else
        snprintf(what, sizeof what, "%s: key '%s'", t->path, key);
    if (gpurun_expand(value, lookup, ctx, what, out, err) < 0) {
        err->code = GPURUN_EXIT_CONFIG;
        return -1;
    }
    for (size_t i = 0; i < sizeof c->owned / sizeof c->owned[0]; i++)
        if (!c->owned[i]) {
            c->owned[i] = *out;
            return 0;
        }
    free(*out); /* not reached: one slot per key */
    *out = NULL;
    return 0;
}

void gpurun_progress_conf_free(struct gpurun_progress_conf *c)
{
    for (size_t i = 0; i < sizeof c->owned / sizeof c->owned[0]; i++)
        free(c->owned[i]);
    memset(c, 0, sizeof *c);
}

int gpurun_progress_from_template(const gpurun_template_t *t, gpurun_lookup_fn lookup, void *ctx,
                                  struct gpurun_progress_conf *c, gpurun_error_t *err)
{
    memset(c, 0, sizeof *c);
    struct gpurun_progress_def *d = &c->def;
    d->total = -1;
    if (!t || !t->progress)
        return 0;
    char *regex, *after, *groups, *total, *units, *name;
    const char *const lt = "progress_total";
    if (expand_key(t, "progress", 0, t->progress, lookup, ctx, c, &regex, err) < 0 ||
        expand_key(t, "progress_after", 0, t->progress_after, lookup, ctx, c, &after, err) < 0 ||
        expand_key(t, "progress_groups", 0, t->progress_groups, lookup, ctx, c, &groups, err) < 0 ||
        expand_key(t, lt, t->progress_total_line, t->progress_total, lookup, ctx, c, &total, err) < 0 ||
        expand_key(t, "progress_units", 0, t->progress_units, lookup, ctx, c, &units, err) < 0 ||
        expand_key(t, "progress_name", 0, t->progress_name, lookup, ctx, c, &name, err) < 0 ||
        expand_key(t, "progress_file", 0, t->progress_file, lookup, ctx, c, &c->file, err) < 0 ||
        expand_key(t, "progress_total_file", 0, t->progress_total_file, lookup, ctx, c, &c->total_file, err) < 0 ||
        expand_key(t, "progress_total_regex", 0, t->progress_total_regex, lookup, ctx, c, &c->total_regex, err) <
            0) {
        gpurun_progress_conf_free(c);
        return -1;
    }
    d->regex = regex;
    d->after = after && *after ? after : NULL;
    d->groups = groups;
    d->units = units && *units ? units : NULL;
    d->name = name && *name ? name : NULL;
    d->scale = t->progress_scale ? strtod(t->progress_scale, NULL) : 0;
    d->budget = t->regex_budget;
    if (total && *total) {
        /* A number once expanded; a negative one (mdrun -nsteps -1) has no end. */
        char *end;
        errno = 0;
        long long v = strtoll(total, &end, 10);
        if (errno || *end || end == total) {
            char shown[64];
            gpurun_short_text(shown, sizeof shown, total);
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:%d: key '%s': '%s' (from '%s') is not a whole number", t->path,
                       t->progress_total_line, lt, shown, t->progress_total);
            gpurun_progress_conf_free(c);
            return -1;
        }
        d->total = v >= 0 ? v : -1;
    }
    if (c->file && !*c->file)
        c->file = NULL;
    if (c->total_file && !*c->total_file)
        c->total_file = NULL;
    return 1;
}
