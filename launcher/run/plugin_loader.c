/* SPDX-License-Identifier: BSD-3-Clause */
/* The one loader of plugins (plugin_loader.h), moved whole from plugin.c. */
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

#include "plugin_loader.h"
#include "safefile.h"
#include "util.h"

/* --- the loader -------------------------------------------------------------------- */

/* A plugin is code that runs as the user.  Its folders are walked from / and
 * checked once (gpurun_open_trusted_folder: nothing another user could
 * change on the way), then held open; a library is opened in its folder
 * without following a symlink, checked through that descriptor, and loaded
 * through the same descriptor (/proc/self/fd/N), so what is loaded is what
 * was checked whatever is renamed meanwhile.  The descriptor stays open for
 * the life of the process: its number names that library alone, and the
 * code is in use. */
#define FOLDERS_MAX 32
#define LOADED_MAX 64
#define SAID_MAX 64

static struct plugin_folder {
    char *path;
    int fd;    /* O_PATH; -1: missing or refused */
    char *why; /* refused: which folder and why; NULL: not refused */
} folders[FOLDERS_MAX + 1];
static size_t nfolders;
static bool folders_read;
static char *folders_env; /* the $GPURUN_PLUGIN_PATH they were read for */

static struct loaded {
    dev_t dev;
    ino_t ino;
    void *handle;
} loaded[LOADED_MAX];
static size_t nloaded;

static void (*warn_fn)(const char *text);
static char *said[SAID_MAX];
static size_t nsaid;

void gpurun_plugins_on_warning(void (*fn)(const char *text))
{
    warn_fn = fn;
}

/* A refusal, said once through the warning hook (never a silent skip). */
static void say_refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_refused(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < nsaid; i++)
        if (!strcmp(said[i], text)) {
            free(text);
            return;
        }
    if (warn_fn)
        warn_fn(text);
    if (nsaid < SAID_MAX)
        said[nsaid++] = text;
    else
        free(text);
}

static void add_folder(const char *path, bool from_env)
{
    if (nfolders >= FOLDERS_MAX) {
        say_refused("GPURUN_PLUGIN_PATH: more than %d folders; %s and those after it are not searched", FOLDERS_MAX,
                    path);
        return;
    }
    char why[PATH_MAX + 160];
    int fd = gpurun_open_trusted_folder(path, why, sizeof why);
    folders[nfolders].why = NULL;
    if (fd < 0 && !*path) {
        say_refused("GPURUN_PLUGIN_PATH: an empty element (a leading, trailing or double ':') is not searched: it "
                    "would mean the current folder");
    } else if (fd < 0 && errno != ENOENT) {
        say_refused("%splugin folder refused: %s; nothing in it is loaded", from_env ? "GPURUN_PLUGIN_PATH: " : "",
                    why);
        folders[nfolders].why = gpurun_xasprintf("plugin folder %s", why);
    }
    folders[nfolders].path = gpurun_xstrdup(path);
    folders[nfolders++].fd = fd;
}

/* Read again when $GPURUN_PLUGIN_PATH changed (a library's caller may set
 * it between finds); libraries loaded stay loaded. */
static bool folders_current(const char *env)
{
    if (folders_read && (env ? folders_env && !strcmp(env, folders_env) : !folders_env))
        return true;
    for (size_t i = 0; i < nfolders; i++) {
        if (folders[i].fd >= 0)
            close(folders[i].fd);
        free(folders[i].path);
        free(folders[i].why);
    }
    nfolders = 0;
    free(folders_env);
    folders_env = env ? gpurun_xstrdup(env) : NULL;
    return false;
}

/* $GPURUN_PLUGIN_PATH's folders in order (an empty element too, to be
 * refused: it would mean the current folder), then the installed one. */
static void read_folders(void)
{
    const char *env = getenv("GPURUN_PLUGIN_PATH");
    if (folders_current(env))
        return;
    folders_read = true;
    if (env && *env) {
        for (const char *p = env;; p++) {
            size_t l = strcspn(p, ":");
            char *d = gpurun_xstrndup(p, l);
            add_folder(d, true);
            free(d);
            p += l;
            if (!*p || nfolders >= FOLDERS_MAX)
                break;
        }
    }
    add_folder(GPURUN_PKGLIBDIR, false);
}

static void *loaded_handle(const struct stat *st)
{
    for (size_t i = 0; i < nloaded; i++)
        if (loaded[i].dev == st->st_dev && loaded[i].ino == st->st_ino)
            return loaded[i].handle;
    return NULL;
}

/* dlopen() the library open as fd (checked); kept open on success. */
static void *load_fd(int fd, const struct stat *st, const char *shown, char *refused, size_t len)
{
    void *h = loaded_handle(st);
    if (h) { /* the same file under another name or folder: loaded once */
        close(fd);
        return h;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (nloaded < LOADED_MAX)
        h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = nloaded < LOADED_MAX ? dlerror() : "too many plugins";
        snprintf(refused, len, "%s: %s", shown, e ? e : "cannot be loaded");
        say_refused("plugin refused: %s", refused);
        close(fd);
        return NULL;
    }
    loaded[nloaded++] = (struct loaded){st->st_dev, st->st_ino, h};
    return h;
}

/* KIND_NAME.so in the folder f: its gpurun_KIND_plugin, or NULL (with
 * why in `refused` when one is there but is not loaded). */
static const void *load_so(const struct plugin_folder *f, const char *kind, const char *name, char *refused,
                           size_t len)
{
    if (f->fd < 0) {
        if (f->why && !refused[0])
            snprintf(refused, len, "%s", f->why);
        return NULL;
    }
    char *file = gpurun_xasprintf("%s_%s.so", kind, name);
    char *shown = gpurun_xasprintf("%s/%s", f->path, file);
    char why[256];
    struct stat st;
    int fd = gpurun_open_trusted_file_at(f->fd, file, &st, why, sizeof why);
    void *h = NULL;
    if (fd < 0 && why[0]) {
        snprintf(refused, len, "%s: %s", shown, why);
        say_refused("plugin refused: %s; not loaded", refused);
    } else if (fd >= 0) {
        h = load_fd(fd, &st, shown, refused, len);
    }
    const void *p = NULL;
    if (h) {
        char *symbol = gpurun_xasprintf("gpurun_%s_plugin", kind);
        p = dlsym(h, symbol);
        if (!p)
            snprintf(refused, len, "%s exports no %s", shown, symbol);
        free(symbol);
    }
    free(file);
    free(shown);
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
    read_folders();
    const void *p = NULL;
    char refused[PATH_MAX + 256] = "", last[PATH_MAX + 256] = "";
    for (size_t i = 0; i < nfolders && !p; i++) {
        p = load_so(&folders[i], k->kind, name, last, sizeof last);
        if (last[0] && !refused[0]) /* the first refusal is the one to fix */
            memcpy(refused, last, sizeof refused);
    }
    if (!p && refused[0])
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s plugin refused: %s; nothing of it is loaded", k->kind, refused);
    if (!p)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "no %s '%s': %s; plugins are looked for as %s_%s.so in $GPURUN_PLUGIN_PATH and %s", k->kind,
                          name, k->builtin_names, k->kind, name, GPURUN_PKGLIBDIR);
    *pp = p;
    return k->check_abi(p, name, err);
}

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

void gpurun_plugin_add_name(char **names, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(names[i], name))
            return;
    if (*n < GPURUN_PLUGINS_MAX)
        names[(*n)++] = gpurun_xstrdup(name);
}

size_t gpurun_plugin_files(const char *kind, char **names, size_t max)
{
    char *found[GPURUN_PLUGINS_MAX];
    size_t n = 0;
    read_folders();
    for (size_t i = 0; i < nfolders; i++) {
        /* the folder checked, read through its own descriptor */
        int rfd = folders[i].fd < 0 ? -1 : openat(folders[i].fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dh = rfd < 0 ? NULL : fdopendir(rfd);
        if (!dh && rfd >= 0)
            close(rfd);
        struct dirent *e;
        char name[80];
        /* bounded: a folder of thousands of files is read, not kept */
        for (size_t seen = 0; dh && seen < 4096 && (e = readdir(dh)); seen++)
            if (plugin_file_name(e->d_name, kind, name, sizeof name))
                gpurun_plugin_add_name(found, &n, name);
        if (dh)
            closedir(dh);
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept < max)
            names[kept++] = found[i];
        else
            free(found[i]);
    }
    return kept;
}
