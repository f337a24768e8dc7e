/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLUGIN_H
#define GPURUN_PLUGIN_H

#include "../plugins/launcher.h"
#include "job.h"

/* Find a launcher by name: built-in ones first, else
 * $GPURUN_PLUGIN_PATH/launcher_NAME.so, else the installed plugin folder;
 * every one is checked for GPURUN_LAUNCHER_ABI. */
int gpurun_launcher_find(const char *name, const gpurun_launcher_plugin_t **pp, gpurun_error_t *err);

/* launcher = auto: srun inside a Slurm allocation, else mpirun when found,
 * else local.  `why` says what was chosen and why (for dry runs and records). */
int gpurun_launcher_choose(enum gpurun_launcher want, const gpurun_launcher_plugin_t **pp, char *why,
                           size_t whylen, gpurun_error_t *err);

#endif
