/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "util.h"

/* A list of GPU numbers ("0,2", "1-3"), or false: the job's environment
 * may say anything, so an open or huge range is refused before it is read. */
static bool gpu_numbers(const char *list, hwloc_bitmap_t ids)
{
    return list && gpurun_bitmap_list_parse(ids, list, GPURUN_MAX_GPU_INDEX, NULL) == 0 &&
           hwloc_bitmap_weight(ids) > 0;
}

/* The GPUs a runtime's own list (CUDA_VISIBLE_DEVICES) shows, read as CUDA
 * reads it: numbers up to the first item that is not one ("-1" hides every
 * GPU, "" too).  -1: it names GPUs by UUID (GPU-..., MIG-...), which only the
 * driver can place. */
static int runtime_numbers(const char *list, hwloc_bitmap_t ids)
{
    hwloc_bitmap_zero(ids);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 4 || strspn(p, "0123456789") != n) {
            bool uuid = !strncmp(p, "GPU-", 4) || !strncmp(p, "MIG-", 4);
            return uuid && hwloc_bitmap_iszero(ids) ? -1 : hwloc_bitmap_weight(ids);
        }
        hwloc_bitmap_set(ids, (unsigned)atoi(p));
        p += n + (p[n] == ',');
    }
    return hwloc_bitmap_weight(ids);
}

/* The NVIDIA GPU (index into t->gpus) whose UUID starts with the n bytes of
 * `uuid` ("GPU-5bb9e2b3-..."; CUDA takes a prefix too), from hwloc's NVML
 * device or the driver's /proc/driver/nvidia/gpus/PCI/information; -1: none,
 * or more than one. */
static int gpu_by_uuid(const char *root, const gpurun_topo_t *t, const char *uuid, size_t n)
{
    int found = -1;
    for (int i = 0; i < t->ngpus; i++) {
        const gpurun_gpu_t *g = &t->gpus[i];
        if (strcmp(g->vendor, "nvidia"))
            continue;
        char known[128] = "";
        for (hwloc_obj_t c = g->pcidev ? g->pcidev->io_first_child : NULL; c && !known[0]; c = c->next_sibling) {
            const char *u = hwloc_obj_get_info_by_name(c, "NVIDIAUUID");
            if (u)
                snprintf(known, sizeof known, "%s", u);
        }
        char path[PATH_MAX], line[256];
        snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/information", root, g->pci);
        FILE *f = known[0] ? NULL : fopen(path, "re");
        while (f && !known[0] && fgets(line, sizeof line, f))
            if (!strncmp(line, "GPU UUID:", 9)) {
                char *v = line + 9 + strspn(line + 9, " \t");
                v[strcspn(v, " \t\r\n")] = '\0';
                snprintf(known, sizeof known, "%s", v);
            }
        if (f)
            fclose(f);
        if (strlen(known) >= n && !strncasecmp(known, uuid, n)) {
            if (found >= 0)
                return -1;
            found = i;
        }
    }
    return found;
}

/* A runtime list of GPU UUIDs: the GPUs it names, in its order, into req;
 * false when one is not an NVIDIA GPU of this node (or a MIG instance). */
static bool gpu_uuids(const char *root, const gpurun_topo_t *t, const char *list, gpurun_request_t *req)
{
    int n = 0;
    for (const char *p = list; *p && n < GPURUN_MAX_ALLOWED_GPUS;) {
        size_t len = strcspn(p, ",");
        if (strncmp(p, "GPU-", 4))
            break; /* CUDA stops at the first item it cannot read */
        int g = gpu_by_uuid(root, t, p, len);
        if (g < 0)
            return false;
        req->allowed_gpus[n++] = t->gpus[g].index;
        p += len + (p[len] == ',');
    }
    if (n == 0)
        return false;
    req->nallowed_gpus = n;
    return true;
}

/* Add to the allocation note; what does not fit is cut, and what the
 * allocation is never depends on it. */
static void __attribute__((format(printf, 4, 5))) note_add(char *note, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(note + *used, len - *used, fmt, ap);
    va_end(ap);
    *used = n < 0 || (size_t)n >= len - *used ? len : *used + (size_t)n;
}

static size_t items(const char *list)
{
    size_t n = 1;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

/* The runtime's list (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES) beside
 * the manager's, when it names the same number of GPUs: Slurm writes both
 * from one list, the runtime's renumbered from 0 when its cgroup hides the
 * node's other GPUs (ConstrainDevices). */
static const char *beside_manager(const char *var, int ngpus, char *note, size_t len, size_t *used)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return NULL;
    if (strspn(v, ",") == 0 && !strstr(v, ",,") && v[strlen(v) - 1] != ',' && items(v) == (size_t)ngpus)
        return v;
    note_add(note, len, used, "; %s=%s does not name them one by one: ranks get their numbers", var, v);
    return NULL;
}

void gpurun_alloc_narrow_at(const char *root, const gpurun_topo_t *t, gpurun_request_t *req,
                            const struct gpurun_alloc_given *given, char *note, size_t len)
{
    static hwloc_bitmap_t allowed;
    note[0] = '\0';
    if (strcmp(t->source, "local"))
        return;
    size_t used = 0;
    if (!allowed)
        allowed = hwloc_bitmap_alloc();
    /* A manager that confines gpurun to the allocated cores (Slurm's
     * task/affinity or task/cgroup): hwloc already hides what a cgroup
     * forbids. */
    if (given && given->cpus_bound && hwloc_get_cpubind(t->hw, allowed, HWLOC_CPUBIND_PROCESS) == 0 &&
        !hwloc_bitmap_iszero(allowed) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(t->hw), allowed)) {
        req->allowed_cpus = allowed;
        char *s = gpurun_cpuset_list(allowed);
        note_add(note, len, &used, "%s: cpus %s", given->job, s);
        free(s);
    }
    const char *gpus = given ? given->gpus : NULL;
    /* Without the manager's list, the one the GPU runtime was given (a user,
     * PBS, LSF): the same numbers, so ranks are named by their own. */
    const char *from = given && given->gpus_from ? given->gpus_from : "", *cuda = getenv("CUDA_VISIBLE_DEVICES"),
               *rocr = getenv("ROCR_VISIBLE_DEVICES");
    hwloc_bitmap_t ids = hwloc_bitmap_alloc();
    bool managed = gpu_numbers(gpus, ids);
    if (!managed) {
        from = cuda ? "CUDA_VISIBLE_DEVICES" : rocr ? "ROCR_VISIBLE_DEVICES" : NULL;
        gpus = cuda ? cuda : rocr;
        if (gpus && runtime_numbers(gpus, ids) < 0) {
            /* UUIDs name the GPUs themselves: ranks get them as they are */
            if (gpu_uuids(root, t, gpus, req)) {
                note_add(note, len, &used, "%s%s %s", used ? "; " : "", from, gpus);
                if (cuda)
                    req->visible_cuda = gpus;
                else
                    req->visible_rocr = gpus;
                hwloc_bitmap_free(ids);
                return;
            }
            note_add(note, len, &used, "%s%s=%s names no GPU of this node gpurun can place: not applied",
                     used ? "; " : "", from, gpus);
            gpus = NULL;
        }
    }
    /* Slurm writes "0,1,2"; a range ("0-3"), as cpus lists have, is read
     * too, not as its first number. */
    if (gpus) {
        req->nallowed_gpus = 0;
        for (int i = hwloc_bitmap_first(ids); i >= 0 && req->nallowed_gpus < GPURUN_MAX_ALLOWED_GPUS;
             i = hwloc_bitmap_next(ids, i))
            req->allowed_gpus[req->nallowed_gpus++] = i;
        note_add(note, len, &used, "%s%s %s%s", used ? "; " : "", from, *gpus ? gpus : "\"\"",
                 req->nallowed_gpus ? "" : " (no GPU)");
        if (managed) {
            req->visible_cuda = beside_manager("CUDA_VISIBLE_DEVICES", req->nallowed_gpus, note, len, &used);
            req->visible_rocr = beside_manager("ROCR_VISIBLE_DEVICES", req->nallowed_gpus, note, len, &used);
        }
    }
    hwloc_bitmap_free(ids);
}
