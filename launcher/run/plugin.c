/* SPDX-License-Identifier: BSD-3-Clause */
/* Plugins: the loader (launchers, resource managers, monitors), the names
 * of those present (for job files and site profiles), and the helpers
 * launcher plugins build argv with. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
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
#include "plugin.h"
#include "rank.h"
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

/* KIND_NAME.so in DIR: its gpurun_KIND_plugin, or NULL.  A plugin is code
 * that runs as the user: one that another user could have put there or
 * changed (not ours nor root's, writable by others, in a folder that is
 * another's or others may write without the sticky bit) is refused, with
 * why in `refused`.  Then nobody else can put another file under its name
 * before dlopen() opens it again (by name: glibc takes two loads of one
 * /proc/self/fd/N for the same library). */
static const void *load_so(const char *dir, const char *kind, const char *name, char *refused, size_t len)
{
    char *path = gpurun_xasprintf("%s/%s_%s.so", dir, kind, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    struct stat st, dst;
    const char *why = NULL;
    uid_t me = geteuid();
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != me && st.st_uid != 0)
        why = "owned by another user";
    else if (st.st_mode & 022)
        why = "others can write it";
    else if (stat(dir, &dst) < 0 || (dst.st_uid != me && dst.st_uid != 0))
        why = "its folder is another user's";
    else if ((dst.st_mode & 022) && !(dst.st_mode & S_ISVTX))
        why = "others can write in its folder (no sticky bit)";
    void *h = NULL;
    if (why) {
        if (!refused[0])
            snprintf(refused, len, "%s: %s", path, why);
    } else {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h && !refused[0]) {
            const char *e = dlerror();
            snprintf(refused, len, "%s: %s", path, e ? e : "cannot be loaded");
        }
    }
    close(fd);
    free(path);
    if (!h)
        return NULL;
    /* Kept open for the life of the process: the plugin's code is in use. */
    char *symbol = gpurun_xasprintf("gpurun_%s_plugin", kind);
    const void *p = dlsym(h, symbol);
    free(symbol);
    if (!p && !refused[0])
        snprintf(refused, len, "%s/%s_%s.so exports no gpurun_%s_plugin", dir, kind, name, kind);
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
    char refused[PATH_MAX + 128] = "";
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !p; d = strtok_r(NULL, ":", &save))
        p = load_so(d, k->kind, name, refused, sizeof refused);
    free(dirs);
    if (!p)
        p = load_so(GPURUN_PKGLIBDIR, k->kind, name, refused, sizeof refused);
    if (!p && refused[0])
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s plugin refused: %s; nothing of it is loaded", k->kind, refused);
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

#define PLUGINS_MAX 64

/* Plugins are files KIND_NAME.so: a name is letters, digits, '_', '-'. */
static bool plugin_file_name(const char *file, const char *kind, char *name, size_t len)
{
    size_t kl = strlen(kind), fl = strlen(file);
    if (fl <= kl + 4 || strncmp(file, kind, kl) || file[kl] != '_' || strcmp(file + fl - 3, ".so"))
        return false;
    size_t nl = fl - kl - 4;
    if (nl >= len || nl > 64)
        return false;
    memcpy(name, file + kl + 1, nl);
    name[nl] = '\0';
    return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == nl;
}

static void add_name(char **names, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(names[i], name))
            return;
    if (*n < PLUGINS_MAX)
        names[(*n)++] = gpurun_xstrdup(name);
}

size_t gpurun_plugin_files(const char *kind, char **names, size_t max)
{
    char *found[PLUGINS_MAX];
    size_t n = 0;
    const char *path = getenv("GPURUN_PLUGIN_PATH");
    char *dirs = gpurun_xasprintf("%s:%s", path ? path : "", GPURUN_PKGLIBDIR);
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        DIR *dh = opendir(d);
        struct dirent *e;
        char name[80];
        /* bounded: a folder of thousands of files is read, not kept */
        for (size_t seen = 0; dh && seen < 4096 && (e = readdir(dh)); seen++)
            if (plugin_file_name(e->d_name, kind, name, sizeof name))
                add_name(found, &n, name);
        if (dh)
            closedir(dh);
    }
    free(dirs);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept < max)
            names[kept++] = found[i];
        else
            free(found[i]);
    }
    return kept;
}

/* The names of a kind's plugins present, built-in first, NULL-terminated,
 * kept for the life of the process (confparse.h's list).  "rm-launcher":
 * pairs of a resource manager's name and its launch command's. */
static const char *const *names_of(const char *kind)
{
    static char **lists[4];
    static const char *const kinds[] = {"launcher", "rm", "monitor", "rm-launcher"};
    size_t k = 0;
    while (k < 4 && strcmp(kinds[k], kind))
        k++;
    if (k == 4)
        return NULL;
    if (lists[k])
        return (const char *const *)lists[k];
    char **names = gpurun_xcalloc(2 * PLUGINS_MAX + 1, sizeof *names);
    size_t n = 0;
    if (k == 0) { /* launchers: built in, launcher_NAME.so, those of managers in shared objects */
        fill_builtin();
        for (const void *const *b = builtin; *b; b++)
            add_name(names, &n, ((const gpurun_launcher_plugin_t *)*b)->name);
        n += gpurun_plugin_files("launcher", names + n, PLUGINS_MAX - n);
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
            if ((*m)->launcher)
                add_name(names, &n, (*m)->launcher->name);
    } else if (k == 1) { /* by file: one that does not load says why when it is used */
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_builtin; *m; m++)
            add_name(names, &n, (*m)->name);
        char *files[PLUGINS_MAX];
        size_t nf = gpurun_plugin_files("rm", files, PLUGINS_MAX);
        for (size_t i = 0; i < nf; i++) {
            add_name(names, &n, files[i]);
            free(files[i]);
        }
    } else if (k == 2) {
        add_name(names, &n, "nvml");
        n += gpurun_plugin_files("monitor", names + n, PLUGINS_MAX - n);
    } else {
        for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m && n + 2 < 2 * PLUGINS_MAX; m++)
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
