/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_FLUX_RM_H
#define GPURUN_FLUX_RM_H

/* What the files of plugins/flux share (none includes the registering
 * file's header: no circle).  Flux as a resource manager (plugins/rm.h):
 * flux.c holds the plugin,
 * run.c its launch command (flux run), batch.c its batch scripts (flux
 * batch). */

#include "rm.h"

extern const gpurun_launcher_plugin_t gpurun_launcher_flux;

int flux_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err);

#endif
