/* SPDX-License-Identifier: BSD-3-Clause */
/* Resource managers: finding one (built in, or rm_NAME.so through the
 * loader in plugin.c), the one gpurun runs under, what its allocation
 * narrows a plan to, and the helpers manager plugins write scripts and run
 * their tools with. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "energy.h"
#include "manager.h"
#include "plugin_loader.h"
#include "util.h"

/* The built-in managers: plugins/managers.def lists them. */
#define GPURUN_RM_BUILTIN(name) extern const gpurun_rm_plugin_t gpurun_rm_##name;
#include "managers.def"
#undef GPURUN_RM_BUILTIN

#define GPURUN_RM_BUILTIN(name) &gpurun_rm_##name,
const gpurun_rm_plugin_t *const gpurun_rm_builtin[] = {
#include "managers.def"
    NULL,
};
#undef GPURUN_RM_BUILTIN

static const char *rm_name(const void *plugin)
{
    return ((const gpurun_rm_plugin_t *)plugin)->name;
}

static int check_abi(const void *plugin, const char *where, gpurun_error_t *err)
{
    const gpurun_rm_plugin_t *p = plugin;
    if (p->abi != GPURUN_RM_ABI || !p->name || !p->title || !p->allocation)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: resource manager plugin interface version %d, gpurun needs %d",
                          where, p->abi, GPURUN_RM_ABI);
    if ((p->batch_script == NULL) != (p->submit == NULL))
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: a resource manager writes batch scripts and submits them, or neither",
                          where);
    return 0;
}

static char builtin_names[128];

static const struct gpurun_plugin_kind managers = {
    .kind = "rm",
    .builtin_names = builtin_names,
    .builtin = (const void *const *)gpurun_rm_builtin,
    .name = rm_name,
    .check_abi = check_abi,
};

int gpurun_rm_find(const char *name, const gpurun_rm_plugin_t **pp, gpurun_error_t *err)
{
    if (!builtin_names[0]) {
        size_t n = 0, l = 0;
        while (gpurun_rm_builtin[n])
            n++;
        l = (size_t)snprintf(builtin_names, sizeof builtin_names, "built in %s", n == 1 ? "is" : "are");
        for (size_t i = 0; i < n && l < sizeof builtin_names; i++)
            l += (size_t)snprintf(builtin_names + l, sizeof builtin_names - l, "%s %s",
                                  i == 0 ? "" : i + 1 < n ? "," : " and", gpurun_rm_builtin[i]->name);
    }
    const void *p = NULL;
    int rc = gpurun_plugin_find(&managers, name, &p, err);
    *pp = p;
    return rc;
}

const gpurun_rm_plugin_t *const *gpurun_rm_all(void)
{
    static const gpurun_rm_plugin_t **all;
    if (all)
        return all;
    size_t nb = 0;
    while (gpurun_rm_builtin[nb])
        nb++;
    char *files[64];
    size_t nf = gpurun_plugin_files("rm", files, 64), n = 0;
    all = gpurun_xcalloc(nb + nf + 1, sizeof *all);
    for (size_t i = 0; i < nb; i++)
        all[n++] = gpurun_rm_builtin[i];
    for (size_t i = 0; i < nf; i++) {
        const gpurun_rm_plugin_t *m;
        gpurun_error_t e;
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = !strcmp(all[j]->name, files[i]);
        /* one that does not load or has another interface is left out
         * here; naming it says why (gpurun_rm_find) */
        if (!dup && gpurun_rm_find(files[i], &m, &e) == 0)
            all[n++] = m;
        free(files[i]);
    }
    all[n] = NULL;
    return all;
}

const gpurun_rm_plugin_t *gpurun_rm_current(struct gpurun_rm_alloc *alloc)
{
    /* A manager that nests first: it is the inner one when both say so. */
    for (int nests = 1; nests >= 0; nests--)
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++) {
            if ((*m)->nests != (bool)nests)
                continue;
            memset(alloc, 0, sizeof *alloc);
            if ((*m)->allocation(alloc) > 0)
                return *m;
        }
    memset(alloc, 0, sizeof *alloc);
    return NULL;
}

const gpurun_rm_plugin_t *gpurun_rm_of_launcher(const char *launcher)
{
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); launcher && *m; m++)
        if ((*m)->launcher && !strcmp((*m)->launcher->name, launcher))
            return *m;
    return NULL;
}

const gpurun_rm_plugin_t *gpurun_rm_of_runtime(const char *runtime)
{
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); runtime && *m; m++)
        if ((*m)->launcher && (*m)->container && (*m)->container->runtime && (*m)->container->option &&
            (*m)->container->ready && !strcmp((*m)->container->runtime, runtime))
            return *m;
    return NULL;
}

int gpurun_rm_container_manager(const char *runtime, struct gpurun_container_manager *out)
{
    const gpurun_rm_plugin_t *m = gpurun_rm_of_runtime(runtime);
    if (!m)
        return 0;
    const struct gpurun_rm_container *c = m->container;
    *out = (struct gpurun_container_manager){.program = m->launcher->name, .title = m->title,
                                             .option = c->option ? c->option : "",
                                             .install = c->install ? c->install : m->title,
                                             .outside = c->outside ? c->outside : "not inside one",
                                             .ready = c->ready};
    struct gpurun_rm_alloc alloc = {0};
    out->inside = m->allocation(&alloc) == 1;
    snprintf(out->where, sizeof out->where, "%s", out->inside ? alloc.where : "");
    return 1;
}

int gpurun_rm_for_submit(const char *launcher, const char *scheduler, const gpurun_rm_plugin_t **pp, char *why,
                         size_t whylen, gpurun_error_t *err)
{
    struct gpurun_rm_alloc alloc;
    const gpurun_rm_plugin_t *m = gpurun_rm_of_launcher(launcher);
    if (m) {
        snprintf(why, whylen, "%s: the job's launcher is %s", m->name, launcher);
    } else if (scheduler && strcmp(scheduler, "none")) {
        if (gpurun_rm_find(scheduler, &m, err) < 0)
            return -1;
        snprintf(why, whylen, "%s: the site profile's scheduler", m->name);
    } else if ((m = gpurun_rm_current(&alloc))) {
        snprintf(why, whylen, "%s: inside %s", m->name, alloc.where);
    } else {
        m = gpurun_rm_builtin[0]; /* the first built in, as before there were others */
        snprintf(why, whylen, "%s: the default", m->name);
    }
    if (!m->batch_script)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: resource manager %s has no batch scripts", m->name);
    *pp = m;
    return 0;
}

void gpurun_alloc_apply_at(const char *root, const gpurun_topo_t *t, gpurun_request_t *req, char *note, size_t len)
{
    static struct gpurun_rm_alloc alloc; /* the strings req may point into live until the next call */
    const gpurun_rm_plugin_t *m = gpurun_rm_current(&alloc);
    struct gpurun_alloc_given given = {
        .job = alloc.job,
        .cpus_bound = alloc.cpus_bound,
        .gpus = alloc.has_gpus ? alloc.gpus : NULL,
        .gpus_from = alloc.gpus_from,
    };
    gpurun_alloc_narrow_at(root, t, req, m ? &given : NULL, note, len);
}

void gpurun_alloc_apply(const gpurun_topo_t *t, gpurun_request_t *req, char *note, size_t len)
{
    gpurun_alloc_apply_at("", t, req, note, len);
}

size_t gpurun_rm_energy(struct gpurun_energy_accounted *acc, size_t max)
{
    size_t n = 0;
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m && n < max; m++) {
        if (!(*m)->energy)
            continue;
        struct gpurun_rm_alloc alloc;
        memset(&alloc, 0, sizeof alloc);
        acc[n].manager = (*m)->name;
        acc[n].note[0] = '\0';
        /* Asked inside its own allocation only: null, without a note, outside. */
        acc[n].joules = (*m)->allocation(&alloc) > 0 ? (*m)->energy(acc[n].note, sizeof acc[n].note) : -1;
        n++;
    }
    return n;
}

void gpurun_rm_allocated_gpus(void (*add)(void *ctx, const char *name, const char *value), void *ctx)
{
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_builtin; *m; m++)
        if ((*m)->allocated_gpus)
            (*m)->allocated_gpus(add, ctx);
}
