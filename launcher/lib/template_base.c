/* SPDX-License-Identifier: BSD-3-Clause */
/* A template's `base` (gpurun.conf(5), TEMPLATES): another template, found
 * on the search path from the template's own folder, whose keys it takes
 * unless it sets them, so that a template that adds a setup step to
 * gromacs's need not copy gromacs's command, figures, checks and tune
 * space.  Plain keys and lists are taken whole; `defaults` and `env` name
 * by name; `fom` sections by title (the base's order, then the template's
 * own); a `container` block whole. */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "template_base.h"
#include "util.h"

/* A base's base, and so on, at most this deep: a loop ends here too. */
#define BASE_DEPTH_MAX 8

static const struct gpurun_template_key *const keys = gpurun_template_keys;

static void swap_ptr(void *a, void *b)
{
    void *t;
    memcpy(&t, a, sizeof t);
    memcpy(a, b, sizeof t);
    memcpy(b, &t, sizeof t);
}

static void swap_size(size_t *a, size_t *b)
{
    size_t t = *a;
    *a = *b;
    *b = t;
}

/* The whole keys `t` did not set, from `b` (swapped: `b` is destroyed
 * after, with what `t` had). */
static void take_keys(gpurun_template_t *t, gpurun_template_t *b)
{
    for (size_t i = 0; i < gpurun_template_nkeys; i++) {
        if (t->own & (1ULL << i))
            continue;
        if (!strcmp(keys[i].name, "container")) {
            struct gpurun_container_spec c = t->container;
            t->container = b->container;
            b->container = c;
            continue;
        }
        if (!strcmp(keys[i].name, "stop_signal") || !strcmp(keys[i].name, "stop_grace")) {
            if (keys[i].name[5] == 's')
                t->stop_signal = b->stop_signal;
            else
                t->stop_grace_s = b->stop_grace_s;
            continue;
        }
        swap_ptr((char *)t + keys[i].off, (char *)b + keys[i].off);
        if (keys[i].n)
            swap_size((size_t *)((char *)t + keys[i].n), (size_t *)((char *)b + keys[i].n));
        /* What goes with a list: the first sanity form, the compiled failures. */
        if (!strcmp(keys[i].name, "sanity"))
            swap_ptr(&t->sanity, &b->sanity);
        if (!strcmp(keys[i].name, "failure")) {
            swap_ptr(&t->failure_re, &b->failure_re);
            swap_ptr(&t->failure_spend, &b->failure_spend); /* one budget entry a pattern */
        }
        /* Their lines are the base file's, not t->path's: not known here. */
        if (!strcmp(keys[i].name, "inputs"))
            t->inputs_line = 0;
        if (!strcmp(keys[i].name, "progress_total"))
            t->progress_total_line = 0;
    }
}

/* defaults and env: the base's names, each the template's value where it
 * sets one, then the template's other names. */
static void take_names(struct gpurun_kvlist *own, struct gpurun_kvlist *base)
{
    for (size_t i = 0; i < own->n; i++)
        gpurun_kvlist_set(base, own->items[i].key, own->items[i].value);
    struct gpurun_kvlist t = *own;
    *own = *base;
    *base = t;
}

/* The figures: the base's in its order, each the template's where it has
 * one of that title, then the template's others. */
static void take_foms(gpurun_template_t *t, gpurun_template_t *b)
{
    struct gpurun_fom *all = gpurun_xcalloc(b->nfoms + t->nfoms + 1, sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < b->nfoms; i++) {
        struct gpurun_fom *f = &b->foms[i];
        for (size_t k = 0; k < t->nfoms; k++)
            if (t->foms[k].name && !strcmp(t->foms[k].name, f->name))
                f = &t->foms[k];
        all[n++] = *f;
        memset(f, 0, sizeof *f);
    }
    for (size_t k = 0; k < t->nfoms; k++)
        if (t->foms[k].name) {
            all[n++] = t->foms[k];
            memset(&t->foms[k], 0, sizeof t->foms[k]);
        }
    /* The moved-from entries are all zero now: destroy frees nothing twice. */
    for (size_t i = 0; i < t->nfoms; i++)
        free(t->foms[i].name);
    free(t->foms);
    t->foms = all;
    t->nfoms = n;
}

/* The keys a template must have, its own or its base's. */
static int check_whole(const gpurun_template_t *t, gpurun_error_t *err)
{
    const char *missing = !t->description ? "description" : !t->command ? "command" : NULL;
    if (!missing)
        return 0;
    return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s' missing: neither the template nor its base '%s' gives one",
                      t->path, missing, t->base ? t->base : "?");
}

static int inherit(gpurun_template_t *t, int depth, gpurun_error_t *err)
{
    if (!t->base)
        return 0;
    if (depth >= BASE_DEPTH_MAX)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'base': templates based on one another %d deep (a loop?): at most %d", t->path,
                          depth, BASE_DEPTH_MAX - 1);
    /* Found as a job's template is, from the template's own folder. */
    char *dir = gpurun_xstrdup(t->path), *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    char *path = NULL;
    gpurun_error_t e = {0};
    int rc = gpurun_template_find(t->base, slash ? dir : ".", &path, &e);
    free(dir);
    if (rc < 0) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'base': %s", t->path, e.text);
        gpurun_error_clear(&e);
        return -1;
    }
    char *self = realpath(t->path, NULL), *other = realpath(path, NULL);
    bool same = self && other && !strcmp(self, other);
    free(self);
    free(other);
    if (same) { /* a user's gromacs.conf based on "gromacs" finds itself first */
        free(path);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'base': '%s' is this template itself", t->path,
                          t->base);
    }
    gpurun_template_t *b = NULL;
    rc = gpurun_template_parse_file(path, &b, err);
    free(path);
    if (rc == 0)
        rc = inherit(b, depth + 1, err);
    if (rc == 0) {
        take_keys(t, b);
        take_names(&t->defaults, &b->defaults);
        take_names(&t->env, &b->env);
        take_foms(t, b);
    }
    gpurun_template_destroy(b);
    return rc < 0 ? -1 : check_whole(t, err);
}

int gpurun_template_inherit(gpurun_template_t *t, gpurun_error_t *err)
{
    return inherit(t, 0, err);
}

int gpurun_template_load(const char *path, gpurun_template_t **tp, gpurun_error_t *err)
{
    if (gpurun_template_parse_file(path, tp, err) < 0)
        return -1;
    if (gpurun_template_inherit(*tp, err) < 0) {
        gpurun_template_destroy(*tp);
        *tp = NULL;
        return -1;
    }
    return 0;
}
