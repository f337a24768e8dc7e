/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_MANAGER_H
#define GPURUN_MANAGER_H

/* Resource managers (plugins/rm.h) as gpurun uses them: found by name
 * through the one plugin loader, the one whose allocation gpurun runs in,
 * the one that owns a launcher, the one `gpurun submit` hands a job to, and
 * what an allocation narrows a plan to. */

#include <stddef.h>

#include "alloc.h"
#include "container.h"
#include "energy.h"
#include "error.h"
#include "plan.h"
#include "rm.h"
#include "topology.h"

/* The built-in managers, NULL-terminated, in the order doctor shows them. */
extern const gpurun_rm_plugin_t *const gpurun_rm_builtin[];

/* Every manager present: the built-in ones, then those of rm_NAME.so files
 * in $GPURUN_PLUGIN_PATH's folders and the installed plugin folder that
 * load; NULL-terminated, kept for the life of the process. */
const gpurun_rm_plugin_t *const *gpurun_rm_all(void);

/* A manager by name: built-in first, else rm_NAME.so in $GPURUN_PLUGIN_PATH,
 * else in the installed plugin folder; checked for GPURUN_RM_ABI. */
int gpurun_rm_find(const char *name, const gpurun_rm_plugin_t **pp, gpurun_error_t *err);

/* The manager whose allocation this process runs in, with what it gives
 * (*alloc); NULL outside any.  Inside two (Flux started in a Slurm job), the
 * one that nests: the inner. */
const gpurun_rm_plugin_t *gpurun_rm_current(struct gpurun_rm_alloc *alloc);

/* The manager whose launch command the launcher named `launcher` is
 * (srun: Slurm); NULL for one of none (local, mpirun). */
const gpurun_rm_plugin_t *gpurun_rm_of_launcher(const char *launcher);

/* The manager whose launch command runs the container runtime `runtime`
 * (rm.h's container: pyxis); NULL for none. */
const gpurun_rm_plugin_t *gpurun_rm_of_runtime(const char *runtime);
/* The same as the library asks it (container.h's gpurun_container_manager_fn). */
int gpurun_rm_container_manager(const char *runtime, struct gpurun_container_manager *out);

/* The manager `gpurun submit` writes for and submits to: the one of the
 * job's launcher (srun: Slurm), else the site profile's scheduler (not
 * "none"), else the one whose allocation gpurun runs in, else the first
 * built-in one.  `why` says which rule chose it.  -1 with err when a named one is not present. */
int gpurun_rm_for_submit(const char *launcher, const char *scheduler, const gpurun_rm_plugin_t **pp, char *why,
                         size_t whylen, gpurun_error_t *err);

/* Narrows req to the allocation gpurun runs in (gpurun_rm_current()), as
 * gpurun_alloc_narrow_at(); `note` says what was applied ("" if nothing). */
void gpurun_alloc_apply(const gpurun_topo_t *topo, gpurun_request_t *req, char *note, size_t len);
/* The same, reading the NVIDIA driver's /proc files under `root` ("": /). */
void gpurun_alloc_apply_at(const char *root, const gpurun_topo_t *topo, gpurun_request_t *req, char *note,
                           size_t len);

/* Each manager present that accounts energy (rm.h's energy()): its figure of
 * the run, asked inside its own allocation only (-1 without a note
 * outside), at most `max` of them into acc; how many. */
#define GPURUN_RM_ENERGY_MAX 8
size_t gpurun_rm_energy(struct gpurun_energy_accounted *acc, size_t max);

/* The variables the built-in managers name their GPUs in, with their
 * values, through add() (rm.h's allocated_gpus()): the cached topology's
 * key (topocache.h). */
void gpurun_rm_allocated_gpus(void (*add)(void *ctx, const char *name, const char *value), void *ctx);

#endif
