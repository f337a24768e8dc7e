/* SPDX-License-Identifier: BSD-3-Clause */
/* Plugins: the loader (launchers and monitors), and the helpers launcher
 * plugins build argv with. */
#include "config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manager.h"
#include "plugin.h"
#include "rank.h"
#include "util.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_local;
extern const gpurun_launcher_plugin_t gpurun_launcher_mpirun;

/* local and mpirun, then each built-in resource manager's launch command
 * (srun), filled on first use. */
static const void *builtin[16];

static void fill_builtin(void)
{
    if (builtin[0])
        return;
    size_t n = 0;
    builtin[n++] = &gpurun_launcher_local;
    builtin[n++] = &gpurun_launcher_mpirun;
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_builtin; *m && n < sizeof builtin / sizeof *builtin - 1; m++)
        if ((*m)->launcher)
            builtin[n++] = (*m)->launcher;
    builtin[n] = NULL;
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
    .builtin_names = "built in are local, mpirun and srun",
    .builtin = builtin,
    .name = launcher_name,
    .check_abi = check_abi,
};

/* KIND_NAME.so in DIR: its gpurun_KIND_plugin, or NULL. */
static const void *load_so(const char *dir, const char *kind, const char *name)
{
    char *path = gpurun_xasprintf("%s/%s_%s.so", dir, kind, name);
    void *h = access(path, R_OK) == 0 ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    free(path);
    if (!h)
        return NULL;
    /* Kept open for the life of the process: the plugin's code is in use. */
    char *symbol = gpurun_xasprintf("gpurun_%s_plugin", kind);
    const void *p = dlsym(h, symbol);
    free(symbol);
    return p;
}

int gpurun_plugin_find(const struct gpurun_plugin_kind *k, const char *name, const void **pp, gpurun_error_t *err)
{
    for (const void *const *b = k->builtin; *b; b++)
        if (!strcmp(k->name(*b), name)) {
            *pp = *b;
            return k->check_abi(*pp, name, err);
        }
    if (strchr(name, '/') || !*name)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "'%s' is not a %s name", name, k->kind);
    const char *path = getenv("GPURUN_PLUGIN_PATH");
    char *dirs = gpurun_xstrdup(path ? path : "");
    const void *p = NULL;
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !p; d = strtok_r(NULL, ":", &save))
        p = load_so(d, k->kind, name);
    free(dirs);
    if (!p)
        p = load_so(GPURUN_PKGLIBDIR, k->kind, name);
    if (!p)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "no %s '%s': %s; plugins are looked for as %s_%s.so in $GPURUN_PLUGIN_PATH and %s", k->kind,
                          name, k->builtin_names, k->kind, name, GPURUN_PKGLIBDIR);
    *pp = p;
    return k->check_abi(p, name, err);
}

int gpurun_launcher_find(const char *name, const gpurun_launcher_plugin_t **pp, gpurun_error_t *err)
{
    fill_builtin();
    const void *p = NULL;
    int rc = gpurun_plugin_find(&launchers, name, &p, err);
    *pp = p;
    return rc;
}

int gpurun_launcher_choose(enum gpurun_launcher want, const gpurun_launcher_plugin_t **pp, char *why,
                           size_t whylen, gpurun_error_t *err)
{
    gpurun_error_t no;
    if (want != GPURUN_LAUNCHER_AUTO) {
        if (gpurun_launcher_find(gpurun_launcher_name(want), pp, err) < 0)
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
    for (const gpurun_rm_plugin_t *const *b = gpurun_rm_builtin; *b && nl < sizeof none; b++)
        nl += (size_t)snprintf(none + nl, sizeof none - nl, "%s%s", nl ? " or " : "", (*b)->title);
    if (gpurun_launcher_find("mpirun", pp, err) == 0 && (*pp)->available(&no) == 0) {
        snprintf(why, whylen, "mpirun: found on PATH, no %s allocation", none);
        return 0;
    }
    snprintf(why, whylen, "local: no %s allocation and no mpirun on PATH", none);
    return gpurun_launcher_find("local", pp, err);
}

char **gpurun_argv_new(void)
{
    return gpurun_xcalloc(1, sizeof(char *));
}

void gpurun_argv_add(char ***argv, const char *s)
{
    size_t n = 0;
    while ((*argv)[n])
        n++;
    *argv = gpurun_xrealloc(*argv, (n + 2) * sizeof(char *));
    (*argv)[n] = gpurun_xstrdup(s);
    (*argv)[n + 1] = NULL;
}

void gpurun_argv_addf(char ***argv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    gpurun_argv_add(argv, s);
    free(s);
}

void gpurun_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

void gpurun_launch_cmds_free(struct gpurun_launch_cmds *c)
{
    for (int i = 0; i < c->count; i++) {
        gpurun_argv_free(c->argv[i]);
        gpurun_argv_free(c->env[i]);
    }
    free(c->argv);
    free(c->env);
    c->argv = c->env = NULL;
    c->count = 0;
}

void gpurun_launch_cmds_one(struct gpurun_launch_cmds *out, char **argv)
{
    out->count = 1;
    out->argv = gpurun_xcalloc(1, sizeof(char **));
    out->env = gpurun_xcalloc(1, sizeof(char **));
    out->argv[0] = argv;
    out->env[0] = gpurun_argv_new();
}

const char *gpurun_rank_program(const char *gpurun_path)
{
    static char *found, *found_for;
    if (found_for && !strcmp(found_for, gpurun_path))
        return found;
    free(found);
    free(found_for);
    found = NULL;
    found_for = gpurun_xstrdup(gpurun_path);
    const char *full = getenv("GPURUN_FULL_RANK_STEP"); /* "1": `gpurun rank` (to compare) */
    if (full && !strcmp(full, "1"))
        return NULL;
    const char *slash = strrchr(gpurun_path, '/');
    int dl = slash ? (int)(slash - gpurun_path) : 1;
    const char *dir = slash ? gpurun_path : ".";
    char *cand[] = {gpurun_xasprintf("%.*s/gpurun-rank", dl, dir),
                    gpurun_xasprintf("%.*s/../libexec/gpurun/gpurun-rank", dl, dir),
#ifdef GPURUN_PKGLIBEXECDIR /* (not in the fuzz harnesses' builds) */
                    gpurun_xstrdup(GPURUN_PKGLIBEXECDIR "/gpurun-rank"),
#endif
                    NULL};
    for (size_t i = 0; cand[i]; i++) {
        if (!found && gpurun_executable_file(cand[i]))
            found = realpath(cand[i], NULL);
        free(cand[i]);
    }
    return found;
}

void gpurun_argv_add_rank_step(char ***argv, const struct gpurun_launch_request *req)
{
    /* The lean rank step when there is one: it runs `gpurun rank` itself
     * when it must (a host to plan; another version of it). */
    const char *lean = gpurun_rank_program(req->rank_step);
    if (lean) {
        gpurun_argv_add(argv, lean);
        gpurun_argv_add(argv, "--gpurun");
        gpurun_argv_add(argv, req->rank_step);
        gpurun_argv_add(argv, "--version");
        gpurun_argv_add(argv, PACKAGE_VERSION);
        gpurun_argv_add(argv, "--run-dir");
        gpurun_argv_add(argv, req->run_dir);
        gpurun_argv_add(argv, "--");
        for (char *const *a = req->app_argv; *a; a++)
            gpurun_argv_add(argv, *a);
        return;
    }
    gpurun_argv_add(argv, req->rank_step);
    gpurun_argv_add(argv, "rank");
    gpurun_argv_add(argv, "--run-dir");
    gpurun_argv_add(argv, req->run_dir);
    gpurun_argv_add(argv, "--");
    for (char *const *a = req->app_argv; *a; a++)
        gpurun_argv_add(argv, *a);
}

int gpurun_need_program(const char *prog, const char *hint, gpurun_error_t *why)
{
    char *p = gpurun_which(prog);
    if (!p)
        return gpurun_err(why, GPURUN_EXIT_ENV, "%s was not found on PATH%s%s%s", prog, hint ? " (" : "",
                          hint ? hint : "", hint ? ")" : "");
    free(p);
    return 0;
}
