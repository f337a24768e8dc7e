/* SPDX-License-Identifier: BSD-3-Clause */
/* Compute units per PCI GPU: tests/fixtures/amd-partitioned.xml (two
 * MI300X-like functions, 1002:74a1 class 0x1200, four rsmi devices each, as
 * in CPX mode), the NVIDIA fixture (cuda + nvml per GPU: one unit each), and
 * LLNL Tioga's MI250X GCDs (one rsmi per PCI function) when
 * ../shared/topologies is present. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_partitions.h"
#include "topology.h"
#include "tap.h"

static const char *path_of(const char *dir, const char *name)
{
    static char buf[4096];
    const char *top = getenv("top_srcdir");
    const char *shared = getenv("GPURUN_SHARED_TOPOLOGIES");
    if (!strcmp(dir, "shared") && shared && *shared)
        snprintf(buf, sizeof buf, "%s/%s", shared, name);
    else if (!strcmp(dir, "shared"))
        snprintf(buf, sizeof buf, "%s/../shared/topologies/%s", top ? top : ".", name);
    else
        snprintf(buf, sizeof buf, "%s/tests/fixtures/%s", top ? top : ".", name);
    return buf;
}

static gpurun_gpu_units_t *units_of(const char *xml, gpurun_topo_t **tp)
{
    gpurun_error_t err = {0};
    gpurun_gpu_units_t *u = NULL;
    if (gpurun_topo_load(xml, tp, &err) < 0) {
        diag("%s: %s", xml, err.text);
        return NULL;
    }
    if (gpurun_gpu_units_list(*tp, &u, &err) < 0)
        diag("%s: %s", xml, err.text);
    return u;
}

int main(void)
{
    gpurun_topo_t *t = NULL;
    gpurun_gpu_units_t *u = units_of(path_of("fixtures", "amd-partitioned.xml"), &t);
    /* The same answers whether the topology lists each PCI GPU once (as
     * topology.c did before partitions) or once per partition. */
    if (ok(u != NULL, "amd-partitioned: listed")) {
        ok(t->ngpus >= 2 && !strcmp(t->gpus[0].vendor, "amd") && !strcmp(t->gpus[t->ngpus - 1].pci, "0000:43:00.0"),
           "amd-partitioned: AMD GPUs up to 0000:43:00.0 in the topology");
        is_int(u->npci, 2, "amd-partitioned: two PCI GPUs");
        is_int(u->nunits, 8, "amd-partitioned: 8 compute units");
        is_int(u->npartitioned, 2, "amd-partitioned: both GPUs partitioned");
        int with = 0, sum = 0;
        for (int g = 0; g < u->ngpus; g++) {
            with += u->count[g] > 0;
            sum += u->count[g];
            if (u->count[g] > 0 && u->count[g] != 4)
                diag("entry %d has %d units", g, u->count[g]);
        }
        ok(with == 2 && sum == 8, "amd-partitioned: 4 under each PCI GPU");
        bool ordered = true;
        for (int i = 0; i < u->nunits; i++) {
            char want[16];
            snprintf(want, sizeof want, "rsmi%d", i);
            ordered &= u->units[i].index == i && u->units[i].partition == i % 4 &&
                       !strcmp(t->gpus[u->units[i].gpu].pci, i < 4 ? "0000:03:00.0" : "0000:43:00.0") &&
                       !strcmp(u->units[i].name, want) && !strcmp(u->units[i].backend, "RSMI") && u->units[i].osdev;
        }
        ok(ordered, "amd-partitioned: rsmiN is unit N (ROCR_VISIBLE_DEVICES=N), partition N mod 4 of its GPU");
        json_t *j = gpurun_gpu_units_json(t, u);
        json_t *g1 = json_array_get(j, 1);
        ok(json_array_size(j) == 2 && json_integer_value(json_object_get(g1, "partitions")) == 4 &&
               !strcmp(json_string_value(json_object_get(g1, "pci")), "0000:43:00.0") &&
               json_integer_value(json_object_get(json_array_get(json_object_get(g1, "units"), 0), "index")) == 4,
           "amd-partitioned: JSON, one entry per PCI GPU");
        json_decref(j);
    }
    gpurun_gpu_units_destroy(u);
    gpurun_topo_destroy(t);

    t = NULL;
    u = units_of(path_of("fixtures", "2s-4gpu-2nic.xml"), &t);
    if (ok(u != NULL, "2s-4gpu-2nic: listed")) {
        ok(u->nunits == 4 && u->npartitioned == 0, "2s-4gpu-2nic: 4 whole GPUs (cuda + nvml each: one unit)");
        bool same = true;
        for (int i = 0; i < u->nunits; i++)
            same &= u->units[i].gpu == i && u->units[i].index == t->gpus[i].index && u->count[i] == 1;
        ok(same, "2s-4gpu-2nic: each unit keeps the GPU's index");
        is_str(u->units[0].backend, "NVML", "2s-4gpu-2nic: NVML preferred to CUDA for numbering");
    }
    gpurun_gpu_units_destroy(u);
    gpurun_topo_destroy(t);

    t = NULL;
    u = units_of(path_of("fixtures", "gpu-order-not-numa.xml"), &t);
    if (ok(u != NULL, "gpu-order-not-numa: listed"))
        ok(u->nunits == 4 && !u->units[2].name[0] && !u->units[2].backend && u->units[2].index == 2,
           "PCI-only GPUs: one unit each, with the topology's index");
    gpurun_gpu_units_destroy(u);
    gpurun_topo_destroy(t);

    const char *tioga = path_of("shared", "tioga-ex235a-mi250x.xml");
    if (access(tioga, R_OK) == 0) {
        t = NULL;
        u = units_of(tioga, &t);
        if (ok(u != NULL, "tioga: listed")) {
            ok(u->nunits == 8 && u->npartitioned == 0, "tioga: 8 GCDs, one rsmi per PCI function");
            /* rsmi numbers: c1 -> 0, d1 -> 4 (README of ../shared/topologies). */
            bool right = true;
            for (int i = 0; i < u->nunits; i++) {
                const char *pci = t->gpus[u->units[i].gpu].pci;
                if (!strcmp(pci, "0000:c1:00.0"))
                    right &= u->units[i].index == 0;
                if (!strcmp(pci, "0000:d1:00.0"))
                    right &= u->units[i].index == 4;
            }
            ok(right, "tioga: units carry the rsmi numbers");
        }
        gpurun_gpu_units_destroy(u);
        gpurun_topo_destroy(t);
    } else {
        skip("tioga: ../shared/topologies not present");
    }
    return done_testing();
}
