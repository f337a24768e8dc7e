/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLUGIN_LOADER_H
#define GPURUN_PLUGIN_LOADER_H

/* The one loader of plugins of every kind (plugin_loader.c): below the
 * launchers (plugin.h), the resource managers (manager.h) and the
 * monitors, which each name their kind to it. */

#include <stddef.h>

#include "error.h"

/* At most this many plugins of one kind are listed. */
#define GPURUN_PLUGINS_MAX 64

/* A kind of plugin, for the one loader: a plugin is found by name among the
 * built-in ones first, else as KIND_NAME.so exporting gpurun_KIND_plugin in
 * $GPURUN_PLUGIN_PATH, else in the installed plugin folder. */
struct gpurun_plugin_kind {
    const char *kind;                /* "launcher": file names, symbol, messages */
    const char *builtin_names;       /* "built in is nvml", for the message when none is found */
    const void *const *builtin;      /* the built-in plugins, NULL-terminated */
    const char *(*name)(const void *plugin);
    /* 0 when the plugin has the interface gpurun was built for; else -1 with err. */
    int (*check_abi)(const void *plugin, const char *where, gpurun_error_t *err);
};

/* The plugin of kind k named `name` in *pp, checked with k->check_abi;
 * -1 with err when none is found or it does not pass. */
int gpurun_plugin_find(const struct gpurun_plugin_kind *k, const char *name, const void **pp, gpurun_error_t *err);

/* The names of kind's plugins found as KIND_NAME.so in $GPURUN_PLUGIN_PATH's
 * folders and the installed plugin folder, each once, at most `max`, into
 * names (malloc'ed each); how many. */
size_t gpurun_plugin_files(const char *kind, char **names, size_t max);

/* `name` added to names (*n of them, at most GPURUN_PLUGINS_MAX), once. */
void gpurun_plugin_add_name(char **names, size_t *n, const char *name);

/* Plugin folders and files refused (another user's, writable by others, a
 * symlink, ...) are said once each through `fn` (gpurun's main prints them
 * as warnings); without it they are said only when a refused plugin is
 * named. */
void gpurun_plugins_on_warning(void (*fn)(const char *text));

#endif
