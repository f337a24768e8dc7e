/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLUGIN_H
#define GPURUN_PLUGIN_H

#include "launcher.h"
#include "plugin_loader.h"
#include "job.h"

/* Find a launcher by name: built-in ones first, else
 * $GPURUN_PLUGIN_PATH/launcher_NAME.so, else the installed plugin folder;
 * every one is checked for GPURUN_LAUNCHER_ABI. */
int gpurun_launcher_find(const char *name, const gpurun_launcher_plugin_t **pp, gpurun_error_t *err);

/* The launcher a job's `launcher` names; "auto": inside a resource
 * manager's allocation its launch command (srun inside a Slurm allocation;
 * the inner one's when nested), else mpirun when found, else local.  `why`
 * says what was chosen and why (for dry runs and records). */
int gpurun_launcher_choose(const char *want, const gpurun_launcher_plugin_t **pp, char *why, size_t whylen,
                           gpurun_error_t *err);

/* Job files and site profiles read from now on check the names of
 * launchers, resource managers and monitors against the plugins present
 * (confparse.h); gpurun's main calls it first. */
void gpurun_plugins_register(void);

#endif
