/* SPDX-License-Identifier: BSD-3-Clause */
/* Plugins: the loader (launchers, resource managers, monitors), the names
 * of those present (for job files and site profiles), and the helpers
 * launcher plugins build argv with. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confparse.h"
#include "manager.h"
#include "monitor.h"
#include "plugin.h"
#include "rank.h"
#include "safefile.h"
#include "topocache.h"
#include "util.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_local;
extern const gpurun_launcher_plugin_t gpurun_launcher_mpirun;

/* mpirun, each built-in resource manager's launch command (srun), then
 * local: the order job files' messages list them in.  Filled on first use,
 * with the sentence that names them. */
static const void *builtin[16];
static char builtin_names[256];

static void fill_builtin(void)
{
    if (builtin[0])
        return;
    size_t n = 0;
    builtin[n++] = &gpurun_launcher_mpirun;
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_builtin; *m && n < sizeof builtin / sizeof *builtin - 2; m++)
        if ((*m)->launcher)
            builtin[n++] = (*m)->launcher;
    builtin[n++] = &gpurun_launcher_local;
    builtin[n] = NULL;
    size_t l = (size_t)snprintf(builtin_names, sizeof builtin_names, "built in are");
    for (size_t i = 0; i < n && l < sizeof builtin_names; i++)
        l += (size_t)snprintf(builtin_names + l, sizeof builtin_names - l, "%s %s", i == 0 ? "" : i + 1 < n ? "," : " and",
                              ((const gpurun_launcher_plugin_t *)builtin[i])->name);
}

static const char *launcher_name(const void *plugin)
{
    return ((const gpurun_launcher_plugin_t *)plugin)->name;
}

static int check_abi(const void *plugin, const char *where, gpurun_error_t *err)
{
    const gpurun_launcher_plugin_t *p = plugin;
    if (p->abi != GPURUN_LAUNCHER_ABI || !p->name || !p->available || !p->commands)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: launcher plugin interface version %d, gpurun needs %d", where,
                          p->abi, GPURUN_LAUNCHER_ABI);
    return 0;
}

static const struct gpurun_plugin_kind launchers = {
    .kind = "launcher",
    .builtin_names = builtin_names,
    .builtin = builtin,
    .name = launcher_name,
    .check_abi = check_abi,
};

int gpurun_launcher_find(const char *name, const gpurun_launcher_plugin_t **pp, gpurun_error_t *err)
{
    fill_builtin();
    const void *p = NULL;
    int rc = gpurun_plugin_find(&launchers, name, &p, err);
    if (rc < 0 && err && err->code == GPURUN_EXIT_ENV && !strstr(err->text, "interface version")) {
        /* The launch command of a resource manager in a shared object. */
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m && rc < 0; m++)
            if ((*m)->launcher && !strcmp((*m)->launcher->name, name)) {
                p = (*m)->launcher;
                rc = check_abi(p, name, err);
            }
    }
    *pp = p;
    return rc;
}

/* --- the plugins present ---------------------------------------------------- */

/* The managers' keys of site batch options and their hints, pairs into
 * names (at most max entries), each key once: how many entries. */
static size_t site_option_keys(char **names, size_t max)
{
    size_t n = 0;
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m && n + 2 < max; m++) {
        const char *key = (*m)->site_options_key;
        bool seen = !key;
        for (size_t i = 0; i < n && !seen; i += 2)
            seen = !strcmp(names[i], key);
        if (seen)
            continue;
        names[n++] = gpurun_xstrdup(key);
        names[n++] = gpurun_xstrdup((*m)->site_options_hint ? (*m)->site_options_hint : "is not an option");
    }
    return n;
}

/* The names of a kind's plugins present, built-in first, NULL-terminated,
 * kept for the life of the process (confparse.h's list).  "rm-launcher":
 * pairs of a resource manager's name and its launch command's;
 * "rm-site-options": pairs of a site profile's key of batch options and
 * its hint (rm.h), each key once. */
static const char *const *names_of(const char *kind)
{
    static char **lists[5];
    static const char *const kinds[] = {"launcher", "rm", "monitor", "rm-launcher", "rm-site-options"};
    size_t k = 0;
    while (k < 5 && strcmp(kinds[k], kind))
        k++;
    if (k == 5)
        return NULL;
    if (lists[k])
        return (const char *const *)lists[k];
    char **names = gpurun_xcalloc(2 * GPURUN_PLUGINS_MAX + 1, sizeof *names);
    size_t n = 0;
    if (k == 0) { /* launchers: built in, launcher_NAME.so, those of managers in shared objects */
        fill_builtin();
        for (const void *const *b = builtin; *b; b++)
            gpurun_plugin_add_name(names, &n, ((const gpurun_launcher_plugin_t *)*b)->name);
        n += gpurun_plugin_files("launcher", names + n, GPURUN_PLUGINS_MAX - n);
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
            if ((*m)->launcher)
                gpurun_plugin_add_name(names, &n, (*m)->launcher->name);
    } else if (k == 1) { /* by file: one that does not load says why when it is used */
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_builtin; *m; m++)
            gpurun_plugin_add_name(names, &n, (*m)->name);
        char *files[GPURUN_PLUGINS_MAX];
        size_t nf = gpurun_plugin_files("rm", files, GPURUN_PLUGINS_MAX);
        for (size_t i = 0; i < nf; i++) {
            gpurun_plugin_add_name(names, &n, files[i]);
            free(files[i]);
        }
    } else if (k == 2) {
        for (size_t i = 0; gpurun_monitor_builtin_name(i); i++)
            gpurun_plugin_add_name(names, &n, gpurun_monitor_builtin_name(i));
        n += gpurun_plugin_files("monitor", names + n, GPURUN_PLUGINS_MAX - n);
    } else if (k == 4) {
        n = site_option_keys(names, 2 * GPURUN_PLUGINS_MAX);
    } else {
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m && n + 2 < 2 * GPURUN_PLUGINS_MAX; m++)
            if ((*m)->launcher) {
                names[n++] = gpurun_xstrdup((*m)->name);
                names[n++] = gpurun_xstrdup((*m)->launcher->name);
            }
    }
    names[n] = NULL;
    lists[k] = names;
    return (const char *const *)names;
}

void gpurun_plugins_register(void)
{
    gpurun_conf_set_plugin_names(names_of);
    gpurun_launcher_lookup_set(gpurun_launcher_find); /* a launcher built on another (plugin_support.h) */
    gpurun_topocache_key_gpus(gpurun_rm_allocated_gpus); /* the GPUs a manager gave the job key the cache */
    gpurun_container_set_managers(gpurun_rm_container_manager); /* pyxis: a manager's launch command */
}

int gpurun_launcher_choose(const char *want, const gpurun_launcher_plugin_t **pp, char *why, size_t whylen,
                           gpurun_error_t *err)
{
    gpurun_error_t no;
    if (strcmp(want, "auto")) {
        if (gpurun_launcher_find(want, pp, err) < 0)
            return -1;
        if ((*pp)->available(err) < 0)
            return -1;
        snprintf(why, whylen, "launcher = %s (set in the job)", (*pp)->name);
        return 0;
    }
    struct gpurun_rm_alloc alloc;
    const gpurun_rm_plugin_t *m = gpurun_rm_current(&alloc);
    if (m && m->launcher && gpurun_launcher_find(m->launcher->name, pp, err) == 0 && (*pp)->available(&no) == 0) {
        snprintf(why, whylen, "%s: inside %s", (*pp)->name, alloc.where);
        return 0;
    }
    /* "Slurm", "Slurm or Flux": the allocations gpurun is not in */
    char none[128] = "";
    size_t nl = 0;
    for (const gpurun_rm_plugin_t *const *b = gpurun_rm_all(); *b && nl < sizeof none; b++)
        nl += (size_t)snprintf(none + nl, sizeof none - nl, "%s%s", nl ? " or " : "", (*b)->title);
    if (gpurun_launcher_find("mpirun", pp, err) == 0 && (*pp)->available(&no) == 0) {
        snprintf(why, whylen, "mpirun: found on PATH, no %s allocation", none);
        return 0;
    }
    snprintf(why, whylen, "local: no %s allocation and no mpirun on PATH", none);
    return gpurun_launcher_find("local", pp, err);
}
