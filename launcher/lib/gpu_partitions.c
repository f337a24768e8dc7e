/* SPDX-License-Identifier: BSD-3-Clause */
/* Partitioned GPUs: the runtime's OS devices below each PCI GPU. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu_partitions.h"
#include "util.h"

/* The backends whose OS devices are compute devices of their own, best
 * first when a GPU has as many of one as of another.  NVML numbers GPUs in
 * PCI bus order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID (always
 * exported); hwloc's cudaN follow the order CUDA had when hwloc ran. */
static const struct {
    const char *backend;
    const char *prefix; /* OS device name: PREFIX + runtime index */
} backends[] = {
    {"RSMI", "rsmi"},
    {"NVML", "nvml"},
    {"CUDA", "cuda"},
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* Which backend an OS device belongs to (by its name, and by its subtype
 * or Backend info when it has one); -1 if none of ours. */
static int backend_of(hwloc_obj_t os)
{
    if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name)
        return -1;
    const char *b = os->subtype ? os->subtype : hwloc_obj_get_info_by_name(os, "Backend");
    for (size_t i = 0; i < NBACKENDS; i++)
        if (!strncmp(os->name, backends[i].prefix, strlen(backends[i].prefix)) &&
            (!b || !strcasecmp(b, backends[i].backend)))
            return (int)i;
    return -1;
}

/* rsmi12 -> 12; -1 when the name has no number after its prefix. */
static int osdev_number(hwloc_obj_t os, const char *prefix)
{
    const char *s = os->name + strlen(prefix);
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v > 1000000 ? -1 : (int)v;
}

/* The Level Zero device of an Intel GPU that has sub-devices (tiles), and
 * how many: the OS devices hwloc >= 2.10 lists below it (ze0.0, ze0.1), else
 * its LevelZeroSubdevices count; NULL when it has none. */
static hwloc_obj_t ze_with_subdevices(hwloc_obj_t dev, int *count)
{
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name || strncmp(c->name, "ze", 2))
            continue;
        const char *b = c->subtype ? c->subtype : hwloc_obj_get_info_by_name(c, "Backend");
        if (b && strcasecmp(b, "LevelZero"))
            continue;
        int n = 0;
        for (hwloc_obj_t s = c->io_first_child; s; s = s->next_sibling)
            n += s->type == HWLOC_OBJ_OS_DEVICE;
        const char *info = hwloc_obj_get_info_by_name(c, "LevelZeroSubdevices");
        if (n == 0 && info) {
            char *end;
            long v = strtol(info, &end, 10);
            n = !*end && v > 1 && v <= 64 ? (int)v : 0; /* a real GPU has a few */
        }
        if (n > 0) {
            *count = n;
            return c;
        }
    }
    return NULL;
}

static int unit_cmp(const void *a, const void *b)
{
    const gpurun_gpu_unit_t *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu - y->gpu;
    return x->index - y->index;
}

/* The units being listed, growing as GPUs are split. */
struct units_list {
    const gpurun_topo_t *t;
    gpurun_gpu_units_t *u;
    int cap;
};

static gpurun_gpu_unit_t *unit_add(struct units_list *l, int g)
{
    gpurun_gpu_units_t *u = l->u;
    if (u->nunits == l->cap)
        u->units = gpurun_xrealloc(u->units, (size_t)(l->cap *= 2) * sizeof *u->units);
    gpurun_gpu_unit_t *x = &u->units[u->nunits++];
    memset(x, 0, sizeof *x);
    x->gpu = g;
    return x;
}

/* The backend with the most OS devices below a GPU, best first on a tie;
 * -1 when it has none. */
static int best_backend(hwloc_obj_t dev)
{
    int per[NBACKENDS] = {0};
    for (hwloc_obj_t c = dev->io_first_child; c; c = c->next_sibling) {
        int b = backend_of(c);
        if (b >= 0)
            per[b]++;
    }
    int best = -1;
    for (size_t b = 0; b < NBACKENDS; b++)
        if (per[b] > 0 && (best < 0 || per[b] > per[best]))
            best = (int)b;
    return best;
}

/* One unit per tile, in the order Level Zero lists them (ze0.0, ze0.1; so
 * named when the export only counts them). */
static void list_tiles(struct units_list *l, int g, hwloc_obj_t ze, int ntiles)
{
    l->u->ze_flat = true;
    hwloc_obj_t c = ze->io_first_child;
    for (int k = 0; k < ntiles; k++) {
        while (c && c->type != HWLOC_OBJ_OS_DEVICE)
            c = c->next_sibling;
        gpurun_gpu_unit_t *x = unit_add(l, g);
        x->backend = "LevelZero";
        x->osdev = c;
        if (c && c->name)
            snprintf(x->name, sizeof x->name, "%.*s", (int)sizeof x->name - 1, c->name);
        else
            snprintf(x->name, sizeof x->name, "%.20s.%d", ze->name, k);
        if (c)
            c = c->next_sibling;
    }
}

/* One unit per OS device of the backend, by its device number. */
static int list_osdevs(struct units_list *l, int g, int best, gpurun_error_t *err)
{
    const gpurun_topo_t *t = l->t;
    int start = l->u->nunits;
    for (hwloc_obj_t c = t->gpus[g].pcidev->io_first_child; c; c = c->next_sibling) {
        if (backend_of(c) != best)
            continue;
        int num = osdev_number(c, backends[best].prefix);
        if (num < 0)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: GPU %s has an OS device '%s' without a %s device number",
                              t->source, t->gpus[g].pci, c->name, backends[best].backend);
        gpurun_gpu_unit_t *x = unit_add(l, g);
        x->index = num;
        x->backend = backends[best].backend;
        x->osdev = c;
        snprintf(x->name, sizeof x->name, "%.*s", (int)sizeof x->name - 1, c->name);
    }
    qsort(l->u->units + start, (size_t)(l->u->nunits - start), sizeof *l->u->units, unit_cmp);
    return 0;
}

static int list_gpu(struct units_list *l, int g, gpurun_error_t *err)
{
    const gpurun_topo_t *t = l->t;
    gpurun_gpu_units_t *u = l->u;
    hwloc_obj_t dev = t->gpus[g].pcidev;
    /* A topology already split into partitions lists one PCI function
     * several times: its units go under the first entry. */
    for (int e = 0; e < g; e++)
        if (t->gpus[e].pcidev == dev) {
            u->first[g] = u->nunits;
            return 0;
        }
    u->first[g] = u->nunits;
    u->npci++;
    int best = best_backend(dev);
    int start = u->nunits, ntiles = 0;
    hwloc_obj_t ze = !strcmp(t->gpus[g].vendor, "intel") ? ze_with_subdevices(dev, &ntiles) : NULL;
    if (ze)
        list_tiles(l, g, ze, ntiles);
    else if (best < 0) /* PCI only (no runtime OS device in the export): one unit */
        unit_add(l, g)->index = t->gpus[g].index;
    else if (list_osdevs(l, g, best, err) < 0)
        return -1;
    u->count[g] = u->nunits - start;
    /* A whole NVIDIA GPU keeps the topology's index (PCI order); ROCm
     * numbers are the rsmi ones, partitioned or not. */
    if (u->count[g] == 1 && best >= 0 && strcmp(backends[best].backend, "RSMI"))
        u->units[start].index = t->gpus[g].index;
    for (int i = start; i < u->nunits; i++)
        u->units[i].partition = i - start;
    if (u->count[g] > 1)
        u->npartitioned++;
    return 0;
}

int gpurun_gpu_units_list(const gpurun_topo_t *t, gpurun_gpu_units_t **unitsp, gpurun_error_t *err)
{
    int n = t->ngpus > 0 ? t->ngpus : 1;
    struct units_list l = {.t = t, .u = gpurun_xcalloc(1, sizeof *l.u), .cap = n};
    gpurun_gpu_units_t *u = l.u;
    u->ngpus = t->ngpus;
    u->first = gpurun_xcalloc((size_t)n, sizeof *u->first);
    u->count = gpurun_xcalloc((size_t)n, sizeof *u->count);
    u->units = gpurun_xcalloc((size_t)n, sizeof *u->units);
    for (int g = 0; g < t->ngpus; g++)
        if (list_gpu(&l, g, err) < 0) {
            gpurun_gpu_units_destroy(u);
            return -1;
        }
    /* Which number ZE_AFFINITY_MASK gives a device depends on the device
     * hierarchy: COMPOSITE counts whole GPUs, FLAT (the default of current
     * drivers on these GPUs) counts each tile.  Once the tiles are units,
     * Intel units take FLAT numbers, tiles of earlier GPUs counted; the
     * planner sets the hierarchy to match (plan.c). */
    if (u->ze_flat) {
        int flat = 0;
        for (int i = 0; i < u->nunits; i++)
            if (!strcmp(t->gpus[u->units[i].gpu].vendor, "intel"))
                u->units[i].index = flat++;
    }
    *unitsp = u;
    return 0;
}

void gpurun_gpu_units_destroy(gpurun_gpu_units_t *u)
{
    if (!u)
        return;
    free(u->units);
    free(u->first);
    free(u->count);
    free(u);
}

json_t *gpurun_gpu_units_json(const gpurun_topo_t *t, const gpurun_gpu_units_t *u)
{
    json_t *a = json_array();
    for (int g = 0; g < u->ngpus && g < t->ngpus; g++) {
        json_t *units = json_array();
        for (int i = u->first[g]; i < u->first[g] + u->count[g]; i++)
            json_array_append_new(units, json_pack("{s:i, s:o}", "index", u->units[i].index, "name",
                                                   u->units[i].name[0] ? json_string(u->units[i].name)
                                                                       : json_null()));
        if (u->count[g] == 0) { /* listed under an earlier entry of the same PCI function */
            json_decref(units);
            continue;
        }
        json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:o}", "gpu", g, "pci", t->gpus[g].pci, "partitions",
                                           u->count[g], "units", units));
    }
    return a;
}
