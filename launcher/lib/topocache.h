/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TOPOCACHE_H
#define GPURUN_TOPOCACHE_H

/* This node's discovered topology, kept between gpurun runs (topocache.c).
 * A live discovery reads every PCI device's config space, which costs a VM
 * trap per device (2-10 ms each on a cloud VM): once per host and boot is
 * enough.  Kept as hwloc XML in a folder of the user's own on node-local
 * memory ($XDG_RUNTIME_DIR, else /dev/shm: gpurun-UID); where another user
 * made that folder first, in the user's own cache folder
 * ($XDG_CACHE_HOME/gpurun, else ~/.cache/gpurun), with one warning per
 * process (gpurun_topocache_on_warning); named by a hash of all that the
 * discovery depends on; used only by a process whose cpuset cgroup holds
 * the whole node (a cgroup changes what hwloc finds; an affinity mask, such
 * as Slurm's task/affinity gives each task, does not), and never when
 * GPURUN_TOPOLOGY_CACHE=0 or any HWLOC_ variable is set. */

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

/* The gpurun program turns the cache on; libgpurun's callers never get it. */
void gpurun_topocache_enable(bool on);
bool gpurun_topocache_enabled(void);

/* Variables that name the GPUs a job may open, with their values, added to
 * the cache's key through add(): a resource manager's (rm.h's
 * allocated_gpus()), which the program sets with the cache; NULL: none. */
typedef void (*gpurun_topocache_key_fn)(void (*add)(void *ctx, const char *name, const char *value), void *ctx);
void gpurun_topocache_key_gpus(gpurun_topocache_key_fn fn);

/* Who says, once per process, that the cache is not where it should be
 * (another user's folder in its place) or is off; NULL: nobody (a rank
 * step: its gpurun command has said it on its own host). */
void gpurun_topocache_on_warning(void (*fn)(const char *text));

/* The cache's file name for this process now ("topology-HASH.xml"), or NULL
 * when the cache must not be used.  The caller frees it. */
char *gpurun_topocache_name(void);

/* The cached export `name`: 0 with *buf (NUL-terminated, the caller frees)
 * and *len; -1 when there is none of ours. */
int gpurun_topocache_read(const char *name, char **buf, size_t *len);

/* Keep `topo`'s export as `name` (best effort: nothing is said when it
 * cannot be written). */
void gpurun_topocache_write(const char *name, hwloc_topology_t topo);

#endif
