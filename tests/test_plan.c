/* SPDX-License-Identifier: BSD-3-Clause */
/* Planner unit tests on the project's own hand-written fixtures
 * (tests/fixtures/README.md gives each one's ground truth). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "manager.h"
#include "plan.h"
#include "plancheck.h"
#include "proc_status.h"
#include "tap.h"
#include "util.h"

static char fixture_path[4096];

static const char *fixture(const char *name)
{
    const char *top = getenv("top_srcdir");
    snprintf(fixture_path, sizeof fixture_path, "%s/tests/fixtures/%s", top ? top : ".", name);
    return fixture_path;
}

static gpurun_request_t req_default(void)
{
    gpurun_request_t r;
    gpurun_request_init(&r);
    return r;
}

/* Plan, check every property, and return the plan (or NULL with err). */
static gpurun_plan_t *plan(const gpurun_topo_t *t, gpurun_request_t r, gpurun_error_t *err, const char *what)
{
    gpurun_plan_t *p = NULL;
    gpurun_error_clear(err);
    if (gpurun_plan_create(t, &r, &p, err) < 0)
        return NULL;
    char why[512] = "";
    int rc = plancheck(p, why, sizeof why);
    ok(rc == 0, "%s: plan has the SPEC properties", what);
    if (rc)
        diag("%s", why);
    return p;
}

static const char *cpus_of(const gpurun_rank_plan_t *r)
{
    static char buf[8][256];
    static int slot;
    char *s = gpurun_cpuset_list(r->cpuset);
    char *out = buf[slot++ % 8];
    snprintf(out, 256, "%s", s);
    free(s);
    return out;
}

static const char *env(const gpurun_rank_plan_t *r, const char *key)
{
    json_t *v = json_object_get(r->env, key);
    return v ? json_string_value(v) : NULL;
}

static void two_socket(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 4, "2s: four GPUs");
    is_int(t->nhsnics, 2, "2s: two high-speed NICs (eth0 apart)");
    is_int(t->nnics, 3, "2s: eth0 is listed apart");
    is_str(t->nics[2].kind, "ethernet", "2s: eth0 is plain Ethernet");
    is_str(t->gpus[0].name, "NVIDIA A100-SXM4-40GB", "2s: GPU model from the runtime's OS device");
    is_int(gpurun_pci_affinity(t, t->gpus[0].pcidev, t->nics[0].pcidev, NULL), GPURUN_AFF_PIX,
           "2s: GPU0 and mlx5_0 share a switch (PIX)");
    is_int(gpurun_pci_affinity(t, t->gpus[0].pcidev, t->nics[1].pcidev, NULL), GPURUN_AFF_SYS,
           "2s: GPU0 and mlx5_1 are across sockets (SYS)");

    gpurun_plan_t *p = plan(t, req_default(), &err, "2s default");
    if (ok(p != NULL, "2s: default plan") && p->nranks == 4) {
        const char *cpus[] = {"0-3", "4-7", "8-11", "12-15"};
        const char *nic[] = {"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"};
        for (int i = 0; i < 4; i++) {
            const gpurun_rank_plan_t *r = &p->ranks[i];
            is_int(t->gpus[r->gpus[0]].index, i, "2s: rank %d gets GPU %d", i, i);
            is_str(cpus_of(r), cpus[i], "2s: rank %d cpus", i);
            ok(r->nnics == 1 && !strcmp(t->nics[r->nics[0]].name, nic[i]), "2s: rank %d NIC %s", i, nic[i]);
            is_int(r->nic_affinity, GPURUN_AFF_PIX, "2s: rank %d NIC is PIX", i);
            is_int(r->threads, 4, "2s: rank %d has 4 threads", i);
        }
        is_str(env(&p->ranks[2], "UCX_NET_DEVICES"), "mlx5_1:1", "2s: UCX_NET_DEVICES of rank 2");
        is_str(env(&p->ranks[2], "NCCL_IB_HCA"), "=mlx5_1:1", "2s: NCCL_IB_HCA exact match");
        is_str(env(&p->ranks[3], "CUDA_VISIBLE_DEVICES"), "3", "2s: CUDA_VISIBLE_DEVICES of rank 3");
        is_str(env(&p->ranks[3], "OMP_PLACES"), "cores", "2s: OMP_PLACES");
        is_int(p->nwarnings, 0, "2s: no warnings");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.ranks_per_node = 2;
    p = plan(t, r, &err, "2s 2 ranks");
    if (ok(p != NULL, "2s: 2 ranks x 1 GPU")) {
        is_int(t->gpus[p->ranks[0].gpus[0]].index, 0, "2s: 2 ranks spread: rank 0 on GPU 0");
        is_int(t->gpus[p->ranks[1].gpus[0]].index, 2, "2s: 2 ranks spread: rank 1 on GPU 2 (other socket)");
        is_str(cpus_of(&p->ranks[1]), "8-15", "2s: a lone rank gets its whole NUMA node");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.gpus_per_rank = 2;
    p = plan(t, r, &err, "2s 2 GPUs per rank");
    if (ok(p != NULL && p->nranks == 2, "2s: 2 GPUs per rank gives 2 ranks")) {
        is_str(env(&p->ranks[0], "CUDA_VISIBLE_DEVICES"), "0,1", "2s: rank 0 gets the GPU pair on its switch");
        is_str(env(&p->ranks[1], "CUDA_VISIBLE_DEVICES"), "2,3", "2s: rank 1 gets the other pair");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.smt = true;
    r.threads_per_rank = 4;
    p = plan(t, r, &err, "2s smt");
    if (ok(p != NULL, "2s: smt")) {
        is_str(cpus_of(&p->ranks[0]), "0-1,16-17", "2s: smt rank 0 gets both PUs of two cores");
        is_str(env(&p->ranks[0], "OMP_PLACES"), "threads", "2s: smt places are threads");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.threads_per_rank = 2;
    p = plan(t, r, &err, "2s 2 threads");
    if (ok(p != NULL, "2s: 2 threads per rank"))
        is_str(cpus_of(&p->ranks[1]), "4-5", "2s: ranks start a fair share apart");
    gpurun_plan_destroy(p);

    r = req_default();
    r.ranks_per_node = 8;
    p = plan(t, r, &err, "2s 8 ranks");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV, "2s: 8 ranks on 4 GPUs refused with exit 3");
    is_str(err.text,
           "8 ranks with 1 GPU each need 8 GPUs, but fix-2s4g has 4; use ranks_per_node = 4, fewer GPUs per rank, "
           "or oversubscribe = true to share GPUs",
           "2s: the refusal says why and what would work");
    gpurun_plan_destroy(p);

    r.oversubscribe = true;
    p = plan(t, r, &err, "2s 8 ranks shared");
    if (ok(p != NULL, "2s: oversubscribe shares GPUs")) {
        ok(p->nwarnings >= 1 && strstr(p->warnings[0], "8 ranks share 4 GPUs"), "2s: sharing is warned");
        is_int(t->gpus[p->ranks[1].gpus[0]].index, 0, "2s: consecutive ranks share a GPU (rank 1 on GPU 0)");
        is_int(t->gpus[p->ranks[7].gpus[0]].index, 3, "2s: rank 7 on GPU 3");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.threads_per_rank = 8;
    p = plan(t, r, &err, "2s 8 threads");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV, "2s: 2 ranks x 8 threads on 8 cores refused");
    is_str(err.text,
           "2 ranks with 8 threads each need 16 cores in NUMA node 0 (cpus 0-7,16-23), which has 8 free; "
           "use threads_per_rank = 4, fewer ranks per node, or oversubscribe = true to share cores",
           "2s: the refusal names the NUMA node and a thread count that fits");
    gpurun_plan_destroy(p);

    r = req_default();
    r.gpus_per_rank = 5;
    p = plan(t, r, &err, "2s 5 GPUs");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV && strstr(err.text, "cannot have 5 GPUs"),
       "2s: 5 GPUs per rank refused");

    r = req_default();
    r.bind = GPURUN_BIND_NONE;
    p = plan(t, r, &err, "2s bind none");
    if (ok(p != NULL, "2s: bind = none")) {
        ok(hwloc_bitmap_iszero(p->ranks[0].cpuset), "2s: bind = none leaves cpus unset");
        ok(env(&p->ranks[0], "OMP_PROC_BIND") == NULL, "2s: bind = none sets no OMP binding");
        ok(env(&p->ranks[0], "CUDA_VISIBLE_DEVICES") != NULL, "2s: bind = none still picks GPUs");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.gpu_visibility = GPURUN_GPUVIS_SHARED;
    p = plan(t, r, &err, "2s shared visibility");
    if (ok(p != NULL, "2s: gpu_visibility = shared")) {
        ok(env(&p->ranks[1], "CUDA_VISIBLE_DEVICES") == NULL, "2s: shared visibility leaves every GPU visible");
        is_str(env(&p->ranks[1], "GPURUN_GPUS"), "1", "2s: shared visibility names the rank's GPU");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.nodes = 3;
    p = plan(t, r, &err, "2s 3 nodes");
    if (ok(p != NULL && p->nranks == 12, "2s: 3 nodes give 12 ranks")) {
        is_int(p->ranks[9].node, 2, "2s: rank 9 is on node 2");
        is_int(p->ranks[9].local_rank, 1, "2s: rank 9 is local rank 1");
        is_str(env(&p->ranks[9], "GPURUN_RANK"), "9", "2s: GPURUN_RANK of rank 9");
        is_str(env(&p->ranks[9], "GPURUN_LOCAL_RANK"), "1", "2s: GPURUN_LOCAL_RANK of rank 9");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

static void gpu_order(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("gpu-order-not-numa.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 4, "order: four PCI-only GPUs found by vendor and class");
    is_str(t->gpus[0].pci, "0000:05:00.0", "order: GPU index 0 is the lowest PCI address");
    gpurun_plan_t *p = plan(t, req_default(), &err, "order default");
    if (ok(p != NULL, "order: default plan")) {
        const char *pci[] = {"0000:c5:00.0", "0000:85:00.0", "0000:45:00.0", "0000:05:00.0"};
        const int numa[] = {0, 1, 2, 3};
        for (int i = 0; i < 4; i++) {
            const gpurun_rank_plan_t *r = &p->ranks[i];
            is_str(t->gpus[r->gpus[0]].pci, pci[i], "order: rank %d gets the GPU on NUMA %d", i, numa[i]);
            ok(hwloc_bitmap_isset(r->nodeset, (unsigned)numa[i]) && hwloc_bitmap_weight(r->nodeset) == 1,
               "order: rank %d memory on NUMA %d", i, numa[i]);
        }
        is_str(cpus_of(&p->ranks[1]), "4-6,23", "order: a core with an offline sibling gives its online PU");
        is_int(p->ranks[3].threads, 3, "order: NUMA 3 has only 3 online cores");
        is_str(t->nics[p->ranks[3].nics[0]].name, "mlx5_0", "order: the GPU at 05:00.0 gets its switch's mlx5_0");
        is_int(p->ranks[3].nic_affinity, GPURUN_AFF_PIX, "order: ... at PIX");
        is_str(t->nics[p->ranks[1].nics[0]].name, "mlx5_1", "order: the GPU at 85:00.0 gets mlx5_1");
        is_int(p->ranks[1].nic_affinity, GPURUN_AFF_PHB, "order: ... through its host bridge (PHB)");
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "0,2"), "order: ranks 0 and 2 are warned of SYS NICs");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.smt = true;
    p = plan(t, r, &err, "order smt");
    if (ok(p != NULL, "order: smt plan")) {
        hwloc_bitmap_t offline = hwloc_bitmap_alloc();
        hwloc_bitmap_set(offline, 7);
        hwloc_bitmap_set(offline, 15);
        hwloc_bitmap_set(offline, 31);
        bool clean = true;
        for (int i = 0; i < p->nranks; i++)
            clean &= !hwloc_bitmap_intersects(p->ranks[i].cpuset, offline);
        ok(clean, "order: offline PUs 7, 15, 31 are never planned");
        hwloc_bitmap_free(offline);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

static void cpu_only(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("cpu-only-2numa.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 0, "cpu: no GPUs");
    ok(t->nhsnics == 1 && !strcmp(t->nics[0].kind, "omnipath"), "cpu: the HFI is Omni-Path");
    gpurun_plan_t *p = plan(t, req_default(), &err, "cpu default");
    if (ok(p != NULL && p->nranks == 2, "cpu: default is one rank per NUMA node")) {
        is_str(cpus_of(&p->ranks[0]), "0-5", "cpu: rank 0 on NUMA 0");
        is_str(cpus_of(&p->ranks[1]), "6-11", "cpu: rank 1 on NUMA 1");
        is_int(p->ranks[1].nic_affinity, GPURUN_AFF_NODE, "cpu: rank 1's HFI is on its NUMA node");
        ok(env(&p->ranks[0], "CUDA_VISIBLE_DEVICES") == NULL, "cpu: no GPU variables");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.ranks_per_node = 4;
    p = plan(t, r, &err, "cpu 4 ranks");
    if (ok(p != NULL, "cpu: 4 ranks")) {
        is_str(cpus_of(&p->ranks[1]), "3-5", "cpu: 4 ranks: two per NUMA node");
        is_str(cpus_of(&p->ranks[2]), "6-8", "cpu: 4 ranks: rank 2 starts NUMA 1");
    }
    gpurun_plan_destroy(p);

    r.ranks_per_node = 2;
    r.nodes = 2;
    p = plan(t, r, &err, "cpu 2 nodes");
    ok(p != NULL && p->nranks == 4 && p->ranks[3].node == 1 && p->ranks[3].ngpus == 0,
       "cpu: 2 nodes replicate CPU-only ranks");
    gpurun_plan_destroy(p);
    r.nodes = 1;

    r.ranks_per_node = 1;
    p = plan(t, r, &err, "cpu 1 rank");
    if (ok(p != NULL, "cpu: 1 rank"))
        is_str(cpus_of(&p->ranks[0]), "0-11", "cpu: a single rank spans both NUMA nodes");
    gpurun_plan_destroy(p);

    r.ranks_per_node = 24;
    p = plan(t, r, &err, "cpu 24 ranks");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV && strstr(err.text, "only 6 free cores"),
       "cpu: 24 ranks on 12 cores refused");
    r.oversubscribe = true;
    p = plan(t, r, &err, "cpu 24 ranks shared");
    ok(p != NULL && p->nwarnings > 0, "cpu: 24 ranks shared with a warning when allowed");
    gpurun_plan_destroy(p);

    r = req_default();
    r.gpus_per_rank = 1;
    p = plan(t, r, &err, "cpu with GPU");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV && strstr(err.text, "has no GPUs; set gpus_per_rank = 0"),
       "cpu: asking for a GPU on a CPU-only node is refused");
    gpurun_topo_destroy(t);
}

static void workstation(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("single-gpu-ws.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 1, "ws: the BMC's VGA is not a GPU");
    is_str(t->gpus[0].pci, "0000:01:00.0", "ws: the GPU is the NVIDIA one");
    gpurun_plan_t *p = plan(t, req_default(), &err, "ws default");
    gpurun_request_t r;
    if (ok(p != NULL && p->nranks == 1, "ws: one rank")) {
        is_int(p->ranks[0].nnics, 0, "ws: no high-speed NIC");
        is_int(p->ranks[0].threads, 4, "ws: the rank gets all four cores");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    /* A Ryzen's Radeon iGPU beside an NVIDIA GPU: ranks get one vendor. */
    t = plancheck_load(fixture("apu-dgpu-ws.xml"));
    is_int(t->ngpus, 2, "apu: the Radeon iGPU and the GeForce are both listed");
    p = plan(t, req_default(), &err, "apu default");
    if (ok(p != NULL && p->nranks == 1, "apu: one rank, for the one NVIDIA GPU")) {
        is_str(t->gpus[p->ranks[0].gpus[0]].pci, "0000:01:00.0", "apu: the rank gets the GeForce, not the iGPU");
        ok(env(&p->ranks[0], "CUDA_VISIBLE_DEVICES") && !env(&p->ranks[0], "ROCR_VISIBLE_DEVICES"),
           "apu: CUDA_VISIBLE_DEVICES, no ROCR_VISIBLE_DEVICES");
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "0000:0e:00.0"), "apu: the iGPU left out is named");
    }
    gpurun_plan_destroy(p);
    r = req_default();
    r.gpus_per_rank = 2;
    p = plan(t, r, &err, "apu 2 GPUs per rank");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV && strstr(err.text, "1 nvidia GPU"),
       "apu: 2 GPUs per rank refused: an NVIDIA and an AMD GPU are not a pair");
    gpurun_topo_destroy(t);

    /* A laptop's NPU (Intel, processing-accelerator class) is no GPU. */
    t = plancheck_load(fixture("npu-laptop.xml"));
    is_int(t->ngpus, 1, "npu: one GPU, the NVIDIA one; neither the Intel iGPU nor the NPU");
    p = plan(t, req_default(), &err, "npu default");
    if (ok(p != NULL && p->nranks == 1, "npu: one rank"))
        ok(env(&p->ranks[0], "CUDA_VISIBLE_DEVICES") && !env(&p->ranks[0], "ZE_AFFINITY_MASK"),
           "npu: the rank gets the NVIDIA GPU, and no ZE_AFFINITY_MASK");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Memory-only NUMA nodes: hwloc gives them the cpuset of what they hang from. */
static void cpuless_numa(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("cpuless-numa.xml"));
    gpurun_error_t err;
    json_t *j = gpurun_topo_json(t, false);
    json_t *g = json_array_get(json_object_get(j, "gpus"), 0), *n = json_array_get(json_object_get(j, "nics"), 0);
    ok(json_array_size(json_object_get(g, "numa")) == 1 && json_integer_value(json_array_get(json_object_get(g, "numa"), 0)) == 1,
       "cpuless: the GPU's NUMA node is 1 alone, not also the machine's CXL node 3");
    ok(json_array_size(json_object_get(n, "numa")) == 1 && json_integer_value(json_array_get(json_object_get(n, "numa"), 0)) == 0,
       "cpuless: the HCA's NUMA node is 0 only");
    is_int(json_array_size(json_object_get(j, "numa_nodes")), 4, "cpuless: every NUMA node is still listed");
    json_decref(j);
    is_int(gpurun_pci_affinity(t, t->gpus[0].pcidev, t->nics[0].pcidev, NULL), GPURUN_AFF_SYS,
           "cpuless: a GPU and an HCA on different sockets are SYS, though both see the CXL node");

    gpurun_plan_t *p = plan(t, req_default(), &err, "cpuless default");
    if (ok(p != NULL && p->nranks == 1, "cpuless: one rank for the GPU")) {
        is_str(cpus_of(&p->ranks[0]), "4-7", "cpuless: the rank runs on the GPU's socket");
        char *s = gpurun_cpuset_list(p->ranks[0].nodeset);
        is_str(s, "1", "cpuless: its memory is bound to DRAM node 1 only");
        free(s);
        is_int(p->ranks[0].nic_affinity, GPURUN_AFF_SYS, "cpuless: its HCA is across the sockets (SYS)");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.gpus_per_rank = 0;
    p = plan(t, r, &err, "cpuless CPU-only");
    if (ok(p != NULL && p->nranks == 2, "cpuless: CPU-only, one rank per socket (the CXL node is no CPU domain)")) {
        char *s = gpurun_cpuset_list(p->ranks[0].nodeset);
        is_str(s, "0", "cpuless: rank 0's memory is on DRAM node 0, not on HBM node 2 nor CXL node 3");
        free(s);
        is_str(cpus_of(&p->ranks[0]), "0-3", "cpuless: rank 0 gets socket 0's cores");
        is_str(cpus_of(&p->ranks[1]), "4-7", "cpuless: rank 1 gets socket 1's cores");
    } else {
        diag("%s", err.text);
    }
    gpurun_plan_destroy(p);

    r.ranks_per_node = 1;
    p = plan(t, r, &err, "cpuless one CPU-only rank");
    if (ok(p != NULL, "cpuless: one CPU-only rank")) {
        char *s = gpurun_cpuset_list(p->ranks[0].nodeset);
        is_str(s, "0-1", "cpuless: a rank on both sockets binds to both DRAM nodes only");
        free(s);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* A NUMA node with CPUs and no memory: binding to it alone would fail. */
static void memoryless_numa(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("memoryless-numa.xml"));
    gpurun_error_t err;
    gpurun_plan_t *p = plan(t, req_default(), &err, "memless default");
    if (ok(p != NULL && p->nranks == 1, "memless: one rank for the GPU")) {
        is_str(cpus_of(&p->ranks[0]), "4-7", "memless: the rank runs on the GPU's socket");
        char *s = gpurun_cpuset_list(p->ranks[0].nodeset);
        is_str(s, "0", "memless: its memory goes to node 0, the nearest with memory");
        free(s);
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "NUMA node 1 has no memory"), "memless: and it is warned");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.gpus_per_rank = 0;
    p = plan(t, r, &err, "memless CPU-only");
    if (ok(p != NULL && p->nranks == 2, "memless: CPU-only, one rank per socket")) {
        is_str(cpus_of(&p->ranks[1]), "4-7", "memless: rank 1 still runs on socket 1's cores");
        char *s = gpurun_cpuset_list(p->ranks[1].nodeset);
        is_str(s, "0", "memless: rank 1's memory is on node 0");
        free(s);
        s = gpurun_cpuset_list(p->ranks[0].nodeset);
        is_str(s, "0", "memless: rank 0's memory is on its own node 0");
        free(s);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* An hwloc 1.x export of a Threadripper 2990WX, whose two dies without DIMMs
 * are NUMA nodes with an empty nodeset: hwloc 2 imports them as Groups, so
 * their cores are under no NUMA node at all. */
static void memoryless_die_v1(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("memoryless-die-hwloc1.xml"));
    gpurun_error_t err;
    ok(t->numa_nodes == 2 && t->cores == 8, "memless v1: 2 NUMA nodes with memory, 8 cores");
    gpurun_plan_t *p = plan(t, req_default(), &err, "memless v1 CPU-only");
    if (ok(p != NULL && p->nranks == 4, "memless v1: CPU-only, one rank per die, the dies without memory too")) {
        is_str(cpus_of(&p->ranks[1]), "2-3", "memless v1: rank 1 on node 2's die");
        is_str(cpus_of(&p->ranks[2]), "4-5", "memless v1: rank 2 on the first die without memory");
        is_str(cpus_of(&p->ranks[3]), "6-7", "memless v1: rank 3 on the second");
        char *s = gpurun_cpuset_list(p->ranks[3].nodeset);
        is_str(s, "0,2", "memless v1: rank 3's memory on the nodes that have some");
        free(s);
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "cpus 4-7 are in no NUMA node") &&
               strstr(p->warnings[0], "local ranks 2-3"),
           "memless v1: and it is warned: %s", p->nwarnings ? p->warnings[0] : "(none)");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.ranks_per_node = 8;
    p = plan(t, r, &err, "memless v1 8 ranks");
    if (ok(p != NULL, "memless v1: 8 ranks, one per core"))
        is_str(cpus_of(&p->ranks[7]), "7", "memless v1: the last rank on the last core");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

static const char *nic_names(const gpurun_topo_t *t, const gpurun_rank_plan_t *r)
{
    static char buf[4][256];
    static int slot;
    char *out = buf[slot++ % 4];
    size_t l = 0;
    out[0] = '\0';
    for (int i = 0; i < r->nnics && l < 200; i++)
        l += (size_t)snprintf(out + l, 256 - l, "%s%s", i ? "," : "", t->nics[r->nics[i]].name);
    return out;
}

/* SR-IOV on a bare-metal host: the VFs are slices of the PF's port, one VF has
 * no driver (vfio), and an Ethernet ConnectX serves storage. */
static void sriov_host(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("sriov-host.xml"));
    gpurun_error_t err;
    is_int(t->nhsnics, 2, "sriov: two high-speed NICs, the IB PF and the storage RoCE NIC (not the VFs)");
    ok(t->nhsnics >= 1 && !strcmp(t->nics[0].name, "mlx5_0"), "sriov: the PF mlx5_0 is the first");
    gpurun_plan_t *p = plan(t, req_default(), &err, "sriov default");
    if (ok(p != NULL && p->nranks == 2, "sriov: two GPU ranks")) {
        for (int i = 0; i < 2; i++) {
            is_str(nic_names(t, &p->ranks[i]), "mlx5_0", "sriov: rank %d uses the PF, not a VF of it", i);
            is_str(env(&p->ranks[i], "UCX_NET_DEVICES"), "mlx5_0:1", "sriov: rank %d UCX_NET_DEVICES", i);
        }
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.gpus_per_rank = 0;
    r.ranks_per_node = 1;
    p = plan(t, r, &err, "sriov CPU-only");
    if (ok(p != NULL, "sriov: one CPU-only rank"))
        is_str(nic_names(t, &p->ranks[0]), "mlx5_0",
               "sriov: it uses the InfiniBand fabric only, not also the equally near RoCE storage NIC");
    gpurun_plan_destroy(p);

    json_t *j = gpurun_topo_json(t, true), *e = json_object_get(j, "ethernet");
    bool noted = false;
    size_t i;
    json_t *v;
    json_array_foreach(e, i, v) if (!strcmp(json_string_value(json_object_get(v, "name")), "mlx5_1"))
        noted = json_object_get(v, "note") != NULL;
    ok(noted, "sriov: topo --json says why the VF mlx5_1 is not planned");
    json_decref(j);
    gpurun_topo_destroy(t);
}

/* VFs past the PF's bus (many VFs spill onto the next bus numbers): still
 * slices of the PF, never a NIC of their own. */
static void sriov_vf_next_bus(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("sriov-vf-next-bus.xml"));
    gpurun_error_t err;
    is_int(t->nhsnics, 2, "sriov next bus: the IB PF and the storage NIC, not the VF on bus 06");
    gpurun_request_t r = req_default();
    r.ranks_per_gpu = 2;
    gpurun_plan_t *p = plan(t, r, &err, "sriov next bus, 2 per GPU");
    if (ok(p != NULL && p->nranks == 4, "sriov next bus: four ranks"))
        for (int i = 0; i < 4; i++)
            is_str(nic_names(t, &p->ranks[i]), "mlx5_0", "sriov next bus: rank %d uses the PF, not the VF mlx5_2", i);
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Slingshot 400: Cassini 2 carries HPE's vendor id and an Ethernet class. */
static void slingshot400(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("slingshot400-2s-4gpu.xml"));
    gpurun_error_t err;
    if (is_int(t->nhsnics, 2, "cassini 2: two high-speed NICs"))
        for (int i = 0; i < 2; i++)
            is_str(t->nics[i].kind, "slingshot", "cassini 2: %s is Slingshot, not plain Ethernet", t->nics[i].name);
    gpurun_plan_t *p = plan(t, req_default(), &err, "cassini 2 default");
    if (ok(p != NULL && p->nranks == 4, "cassini 2: four GPU ranks"))
        for (int i = 0; i < 4; i++) {
            is_str(nic_names(t, &p->ranks[i]), i < 2 ? "hsn0" : "hsn1", "cassini 2: rank %d on the NIC of its switch", i);
            ok(!env(&p->ranks[i], "UCX_NET_DEVICES"), "cassini 2: rank %d names no verbs device", i);
        }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Inside a VM the VFs are the NICs: they stay high-speed. */
static void sriov_vm(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("sriov-vm.xml"));
    gpurun_error_t err;
    is_int(t->nhsnics, 2, "vm: both ConnectX-6 VFs are high-speed NICs (no PF in the VM)");
    gpurun_plan_t *p = plan(t, req_default(), &err, "vm default");
    if (ok(p != NULL && p->nranks == 2, "vm: two GPU ranks")) {
        is_str(nic_names(t, &p->ranks[0]), "mlx5_0", "vm: rank 0 on mlx5_0");
        is_str(nic_names(t, &p->ranks[1]), "mlx5_1", "vm: rank 1 on mlx5_1: equally near VFs are spread");
        is_str(env(&p->ranks[1], "NCCL_IB_HCA"), "=mlx5_1:1", "vm: NCCL_IB_HCA of rank 1");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* One PCI function, two ports of two link layers (ConnectX-3 VPI). */
static void vpi(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("vpi-mlx4.xml"));
    gpurun_error_t err;
    ok(t->nhsnics == 1 && !strcmp(t->nics[0].kind, "infiniband"),
       "vpi: mlx4_0 is InfiniBand (its ib0), not RoCE (its eth2)");
    gpurun_plan_t *p = plan(t, req_default(), &err, "vpi default");
    if (ok(p != NULL, "vpi: CPU-only plan")) {
        is_str(env(&p->ranks[0], "UCX_NET_DEVICES"), "mlx4_0:2", "vpi: UCX uses port 2, the InfiniBand port");
        is_str(env(&p->ranks[0], "NCCL_IB_HCA"), "=mlx4_0:2", "vpi: so does NCCL");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Cisco usNIC is not RoCE: UCX and NCCL cannot use it. */
static void usnic(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("cisco-usnic.xml"));
    gpurun_error_t err;
    ok(t->nhsnics == 1 && !strcmp(t->nics[0].kind, "usnic"), "ucs: the VIC's usnic_0 is a usnic NIC, not RoCE");
    gpurun_plan_t *p = plan(t, req_default(), &err, "ucs default");
    if (ok(p != NULL && p->nranks == 1, "ucs: one rank")) {
        is_str(nic_names(t, &p->ranks[0]), "usnic_0", "ucs: the rank's NIC is usnic_0");
        ok(env(&p->ranks[0], "UCX_NET_DEVICES") == NULL && env(&p->ranks[0], "NCCL_IB_HCA") == NULL,
           "ucs: no UCX_NET_DEVICES or NCCL_IB_HCA naming a device they cannot open");
        is_str(env(&p->ranks[0], "GPURUN_NICS"), "usnic_0", "ucs: GPURUN_NICS names it");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Hybrid CPU (hwloc cpukinds): performance cores first, kinds not mixed. */
static void hybrid(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("hybrid-pe-cores.xml"));
    gpurun_error_t err;
    gpurun_plan_t *p = plan(t, req_default(), &err, "hybrid default");
    if (ok(p != NULL && p->nranks == 1, "hybrid: one GPU rank")) {
        is_str(cpus_of(&p->ranks[0]), "0,2,4,6", "hybrid: the rank gets the 4 P-cores, not the E-cores too");
        is_int(p->ranks[0].threads, 4, "hybrid: 4 threads");
        is_int(p->nwarnings, 0, "hybrid: no warning");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.gpus_per_rank = 0;
    r.ranks_per_node = 2;
    p = plan(t, r, &err, "hybrid 2 CPU-only ranks");
    if (ok(p != NULL, "hybrid: 2 CPU-only ranks")) {
        is_str(cpus_of(&p->ranks[0]), "0,2", "hybrid: rank 0 on two P-cores");
        is_str(cpus_of(&p->ranks[1]), "4,6", "hybrid: rank 1 on the other two, not on the E-cores");
    }
    gpurun_plan_destroy(p);

    r.threads_per_rank = 3;
    p = plan(t, r, &err, "hybrid 2 ranks x 3 threads");
    if (ok(p != NULL, "hybrid: 2 ranks x 3 threads (more than the P-cores)")) {
        is_str(cpus_of(&p->ranks[0]), "0,2,4", "hybrid: rank 0 on three P-cores");
        is_str(cpus_of(&p->ranks[1]), "8-10", "hybrid: rank 1 on three E-cores, not one P-core and two E-cores");
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "local rank 1 runs on its slower cores"),
           "hybrid: the rank on the slower cores is warned");
    }
    gpurun_plan_destroy(p);

    r.threads_per_rank = GPURUN_UNSET;
    r.ranks_per_node = 6;
    p = plan(t, r, &err, "hybrid 6 ranks");
    if (ok(p != NULL, "hybrid: 6 ranks, more than the P-cores")) {
        is_str(cpus_of(&p->ranks[3]), "6", "hybrid: ranks 0-3 on the P-cores");
        is_str(cpus_of(&p->ranks[4]), "8", "hybrid: ranks 4-5 on E-cores");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* CPU kinds that are one kind of core: hwloc 2.4 on a 72-core Arm server
 * gave five kinds 1 % apart in max frequency.  They are no hybrid CPU. */
static void arm_kinds(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("arm-5kinds.xml"));
    gpurun_error_t err;
    ok(hwloc_cpukinds_get_nr(t->hw, 0) == 5, "arm: hwloc reports five CPU kinds");
    gpurun_plan_t *p = plan(t, req_default(), &err, "arm default");
    if (ok(p != NULL && p->nranks == 1, "arm: one CPU-only rank")) {
        is_str(cpus_of(&p->ranks[0]), "0-71", "arm: the rank gets all 72 cores, not the 10 of the top kind");
        is_int(p->ranks[0].threads, 72, "arm: 72 threads");
        is_int(p->nwarnings, 0, "arm: no warning");
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.ranks_per_node = 4;
    p = plan(t, r, &err, "arm 4 ranks");
    if (ok(p != NULL, "arm: 4 ranks")) {
        is_str(cpus_of(&p->ranks[0]), "0-17", "arm: rank 0 on the first 18 cores, whatever their kind");
        is_str(cpus_of(&p->ranks[3]), "54-71", "arm: rank 3 on the last 18");
        is_int(p->nwarnings, 0, "arm: no hybrid-CPU warning");
    }
    gpurun_plan_destroy(p);

    /* A plan that leaves most cores idle says so. */
    r.ranks_per_node = 2;
    r.threads_per_rank = 8;
    p = plan(t, r, &err, "arm 2 ranks x 8 threads");
    if (ok(p != NULL, "arm: 2 ranks x 8 threads")) {
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "use 16 of the 72 cores of the node, leaving most idle"),
           "arm: 16 of 72 cores used is warned");
        if (p->nwarnings)
            diag("%s", p->warnings[0]);
    }
    gpurun_plan_destroy(p);
    r.ranks_per_node = 4;
    r.threads_per_rank = 9;
    p = plan(t, r, &err, "arm 4 ranks x 9 threads");
    if (ok(p != NULL, "arm: 4 ranks x 9 threads"))
        is_int(p->nwarnings, 0, "arm: half the cores used is not warned");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* An export from a newer hwloc says so, rather than "could not load". */
static void newer_xml(void)
{
    char path[] = "/tmp/gpurun-test-v4-XXXXXX";
    int fd = mkstemp(path);
    const char xml[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                       "<topology version=\"4.0\">\n  <object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" "
                       "complete_cpuset=\"0x1\" allowed_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
                       "allowed_nodeset=\"0x1\" gp_index=\"1\"/>\n</topology>\n";
    if (!ok(fd >= 0 && write(fd, xml, sizeof xml - 1) == (ssize_t)(sizeof xml - 1), "v4: temporary export written")) {
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    gpurun_topo_t *t = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_topo_load(path, &t, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "v4: refused with exit 2");
    ok(strstr(err.text, "hwloc XML version 4") && strstr(err.text, "lstopo"),
       "v4: the message names the XML version and how to export again");
    diag("%s", err.text);
    gpurun_topo_destroy(t);
    unlink(path);
}

/* An hwloc 3 export (XML version 3, which the hwloc 2 library refuses) is
 * read as hwloc 3 writes it: OS device types as flags, topology infos after
 * the root object, id attributes. */
static void hwloc3_export(void)
{
    gpurun_topo_t *t = NULL;
    gpurun_error_t err = {0};
    if (!ok(gpurun_topo_load(fixture("hwloc3-2gpu-ib.xml"), &t, &err) == 0, "hwloc 3: the export loads: %s",
            err.text))
        return;
    is_str(t->hostname, "fix-hwloc3", "hwloc 3: the host name from the topology's infos");
    if (ok(t->ngpus == 2, "hwloc 3: 2 GPUs"))
        ok(t->gpus[0].runtime && t->gpus[1].runtime, "hwloc 3: both with their CUDA/NVML devices (types 8 and 4)");
    if (ok(t->nhsnics == 1, "hwloc 3: 1 high-speed NIC"))
        ok(!strcmp(t->nics[0].name, "mlx5_0") && t->nics[0].netdev && !strcmp(t->nics[0].netdev, "ib0") &&
               !strcmp(t->nics[0].kind, "infiniband"),
           "hwloc 3: the HCA by its verbs device (type 32) and IPoIB device (type 16): %s %s %s", t->nics[0].name,
           t->nics[0].netdev ? t->nics[0].netdev : "-", t->nics[0].kind);
    gpurun_plan_t *p = plan(t, req_default(), &err, "hwloc 3 default");
    if (ok(p != NULL && p->nranks == 2, "hwloc 3: a rank per GPU")) {
        is_str(cpus_of(&p->ranks[1]), "4,6", "hwloc 3: rank 1 on its GPU's package");
        ok(p->ranks[1].nnics == 1 && p->ranks[1].nics[0] == 0, "hwloc 3: rank 1 gets mlx5_0");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* The plan of an allocation of GPUs 1 and 3 named by UUID: the rank on GPU 1
 * gets uuid1, the one on GPU 3 uuid3. */
static void uuid_ranks(const gpurun_topo_t *t, gpurun_request_t req, const char *note, const char *uuid1,
                       const char *uuid3)
{
    gpurun_error_t err = {0};
    gpurun_plan_t *p = plan(t, req, &err, note);
    int right = 0;
    for (int r = 0; p && p->nranks == 2 && r < 2; r++) {
        const char *gpus = json_string_value(json_object_get(p->ranks[r].env, "GPURUN_GPUS"));
        const char *cvd = json_string_value(json_object_get(p->ranks[r].env, "CUDA_VISIBLE_DEVICES"));
        const char *want = gpus && !strcmp(gpus, "1") ? uuid1 : gpus && !strcmp(gpus, "3") ? uuid3 : NULL;
        if (want && cvd && !strcmp(cvd, want))
            right++;
        else
            diag("rank %d: GPU %s, CUDA_VISIBLE_DEVICES=%s", r, gpus ? gpus : "-", cvd ? cvd : "-");
    }
    ok(right == 2, "%s (a prefix too): GPUs 1 and 3, each rank its GPU's UUID", note);
    gpurun_plan_destroy(p);
}

/* VmHWM from now on (the kernel resets the peak to what is resident): that. */
static long hwm_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "we");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
    return status_kb("VmRSS");
}

static void add_range(unsigned lo, unsigned hi, void *arg)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%s%u-%u", n ? "," : "", lo, hi);
}

/* util.c's id lists: what hwloc's list syntax has, less open ranges,
 * numbers past a limit and empty items; add() is never called for a list
 * that is refused. */
static void id_lists(void)
{
    const struct {
        const char *list, *got, *why;
    } lists[] = {
        {"0", "0-0", NULL},
        {"0-3,8,10-11", "0-3,8-8,10-11", NULL},
        {"007,4095", "7-7,4095-4095", NULL},
        {"0-4095", "0-4095", NULL},
        {"", NULL, "empty"},
        {",", NULL, "empty item"},
        {"1,,2", NULL, "empty item"},
        {"1,", NULL, "empty item"},
        {"0-", NULL, "open range"},
        {"0-,1", NULL, "open range"},
        {"-1", NULL, "open range or a negative number"},
        {"1--3", NULL, "open range or a negative number"},
        {"1-2-3", NULL, "range of ranges"},
        {"3-1", NULL, "backwards"},
        {"4096", NULL, "too large"},
        {"0-2147483646", NULL, "too large"},
        {"99999999999999999999999999", NULL, "too large"},
        {"00000000000000000000000001", "1-1", NULL},
        {" 1", NULL, "character other"},
        {"1 ", NULL, "character other"},
        {"0x1", NULL, "character other"},
        {"1,GPU-5bb9", NULL, "character other"},
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        char got[256] = "";
        const char *why = NULL;
        int rc = gpurun_id_list_parse(lists[i].list, 4096, add_range, got, &why);
        if (lists[i].got)
            ok(rc == 0 && !strcmp(got, lists[i].got), "id list '%s' is %s (got %s)", lists[i].list, lists[i].got, got);
        else
            ok(rc == -1 && !got[0] && why && strstr(why, lists[i].why), "id list '%s' refused: %s", lists[i].list,
               why ? why : "(no reason)");
    }
    char out[16];
    gpurun_short_text(out, sizeof out, "0\nslurmstepd: forged");
    is_str(out, "0\\x0aslurmst...", "a job's text for a log line: escaped, cut to its buffer");
    gpurun_short_text(out, sizeof out, "0-3");
    is_str(out, "0-3", "... and kept as it is when it is plain and fits");
}

/* Inside a Slurm allocation the ranks get the GPUs Slurm gave the job:
 * SLURM_JOB_GPUS is "0,1,2"; a range ("1-2") means both, not GPU 1 alone. */
static void slurm_gpus(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    free(t->source); /* what the live node's topology says: only it is Slurm's */
    t->source = strdup("local");
    const char *lists[] = {"0,3", "1-2", "0-1,3"};
    const int want[][4] = {{0, 3, -1}, {1, 2, -1}, {0, 1, 3, -1}};
    setenv("SLURM_JOB_ID", "4242", 1);
    unsetenv("SLURM_STEP_GPUS");
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        setenv("SLURM_JOB_GPUS", lists[i], 1);
        gpurun_request_t req = req_default();
        char note[256];
        gpurun_alloc_apply(t, &req, note, sizeof note);
        int n = 0;
        while (want[i][n] >= 0)
            n++;
        bool same = req.nallowed_gpus == n;
        for (int k = 0; same && k < n; k++)
            same = req.allowed_gpus[k] == want[i][k];
        ok(same, "SLURM_JOB_GPUS=%s: %d GPUs allowed (got %d)", lists[i], n, req.nallowed_gpus);
        gpurun_error_t err = {0};
        gpurun_plan_t *p = plan(t, req, &err, lists[i]);
        ok(p && p->nranks == n, "SLURM_JOB_GPUS=%s: a rank per allowed GPU", lists[i]);
        gpurun_plan_destroy(p);
    }
    /* A job's own SLURM_JOB_GPUS (srun passes its environment on): an open
     * or huge range is no list of Slurm's, read before anything is sized
     * by it; the ranks then get every GPU, as without Slurm's list. */
    const char *hostile[] = {"0-", "0-2147483646", "1,,2", "-1"};
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        setenv("SLURM_JOB_GPUS", hostile[i], 1);
        unsetenv("CUDA_VISIBLE_DEVICES");
        unsetenv("ROCR_VISIBLE_DEVICES");
        gpurun_request_t req = req_default();
        char note[256];
        long rss = hwm_reset();
        gpurun_alloc_apply(t, &req, note, sizeof note);
        long grown = status_kb("VmHWM") - rss;
        ok(req.nallowed_gpus < 0 && !strstr(note, "Slurm GPUs") && grown < 16 * 1024,
           "SLURM_JOB_GPUS=%s is not applied (note '%s'), resident memory +%ld KiB", hostile[i], note, grown);
    }
    /* Slurm's cgroup (ConstrainDevices) hides the node's other GPUs: the
     * runtime numbers the job's from 0, and CUDA_VISIBLE_DEVICES says so. */
    const struct {
        const char *job, *cuda, *want0, *want1, *note;
    } renumbered[] = {
        {"1,3", "0,1", "0", "1", NULL},
        {"1,3", "1,3", "1", "3", NULL},
        {"1,3", "0", "1", "3", "CUDA_VISIBLE_DEVICES=0 does not name them one by one"},
        {NULL, "2,3", "2", "3", "CUDA_VISIBLE_DEVICES 2,3"},
        {NULL, "3,2,-1,0", "2", "3", NULL},
    };
    for (size_t i = 0; i < sizeof renumbered / sizeof *renumbered; i++) {
        if (renumbered[i].job)
            setenv("SLURM_JOB_GPUS", renumbered[i].job, 1);
        else
            unsetenv("SLURM_JOB_ID");
        setenv("CUDA_VISIBLE_DEVICES", renumbered[i].cuda, 1);
        gpurun_request_t req = req_default();
        char note[256];
        gpurun_alloc_apply(t, &req, note, sizeof note);
        gpurun_error_t err = {0};
        gpurun_plan_t *p = plan(t, req, &err, renumbered[i].cuda);
        const char *c0 = p && p->nranks == 2 ? json_string_value(json_object_get(p->ranks[0].env, "CUDA_VISIBLE_DEVICES")) : NULL;
        const char *c1 = p && p->nranks == 2 ? json_string_value(json_object_get(p->ranks[1].env, "CUDA_VISIBLE_DEVICES")) : NULL;
        const char *g1 = p && p->nranks == 2 ? json_string_value(json_object_get(p->ranks[1].env, "GPURUN_GPUS")) : NULL;
        ok(c0 && c1 && g1 && !strcmp(c0, renumbered[i].want0) && !strcmp(c1, renumbered[i].want1) && !strcmp(g1, "3"),
           "%s%s, CUDA_VISIBLE_DEVICES=%s: ranks get CUDA_VISIBLE_DEVICES %s and %s (got %s, %s), GPURUN_GPUS 3 for rank 1",
           renumbered[i].job ? "SLURM_JOB_GPUS=" : "no Slurm", renumbered[i].job ? renumbered[i].job : "",
           renumbered[i].cuda, renumbered[i].want0, renumbered[i].want1, c0 ? c0 : "-", c1 ? c1 : "-");
        if (renumbered[i].note)
            ok(strstr(note, renumbered[i].note) != NULL, "... the allocation note says '%s': %s", renumbered[i].note, note);
        gpurun_plan_destroy(p);
    }
    /* What the allocation is never depends on room in its note. */
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_JOB_GPUS", "1,3", 1);
    setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
    {
        gpurun_request_t req = req_default();
        char small[8];
        gpurun_alloc_apply(t, &req, small, sizeof small);
        ok(req.nallowed_gpus == 2 && req.visible_cuda && !strcmp(req.visible_cuda, "0,1") && strlen(small) < sizeof small,
           "an 8-byte note: GPUs 1,3 still allowed, named 0,1 (note '%s')", small);
    }
    unsetenv("SLURM_JOB_GPUS");
    unsetenv("SLURM_JOB_ID");
    /* "-1" or "" hides every GPU from CUDA: CPU ranks. */
    const char *none[] = {"-1", ""};
    for (size_t i = 0; i < 2; i++) {
        setenv("CUDA_VISIBLE_DEVICES", none[i], 1);
        gpurun_request_t req = req_default();
        char note[256];
        gpurun_alloc_apply(t, &req, note, sizeof note);
        gpurun_error_t err = {0};
        gpurun_plan_t *p = plan(t, req, &err, none[i]);
        ok(req.nallowed_gpus == 0 && p && p->nranks > 0 && p->ranks[0].ngpus == 0 && strstr(note, "(no GPU)"),
           "CUDA_VISIBLE_DEVICES='%s': no GPU planned, %d CPU ranks (%s)", none[i], p ? p->nranks : -1, note);
        if (!p)
            diag("%s", err.text);
        gpurun_plan_destroy(p);
    }
    /* UUIDs (PBS, containers): hwloc's NVML devices or the driver's /proc
     * files say which GPUs they are; the ranks get them as they are, whatever
     * the numbering.  This export has hwloc's UUIDs. */
    setenv("CUDA_VISIBLE_DEVICES", "GPU-00000003-a100-4000-8000-000000000085,GPU-00000001", 1);
    gpurun_request_t req = req_default();
    char note[256];
    gpurun_alloc_apply_at("/nonexistent", t, &req, note, sizeof note);
    uuid_ranks(t, req, note, "GPU-00000001", "GPU-00000003-a100-4000-8000-000000000085");
    gpurun_topo_t *bare = plancheck_load(fixture("gpu-order-not-numa.xml")); /* no UUID in it */
    char root[] = "/tmp/gpurun-test-uuid.XXXXXX";
    if (bare && mkdtemp(root)) {
        free(bare->source);
        bare->source = strdup("local");
        for (int g = 0; g < bare->ngpus; g++) {
            char path[512];
            snprintf(path, sizeof path, "mkdir -p %s/proc/driver/nvidia/gpus/%s", root, bare->gpus[g].pci);
            if (system(path) != 0)
                diag("%s failed", path);
            snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/information", root, bare->gpus[g].pci);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "Model: \t\t Tesla V100\nIRQ:   \t\t 95\nGPU UUID: \t GPU-%d%d%d%d-8b5a-4d9c\n"
                           "Bus Location: \t %s\n", g, g, g, g, bare->gpus[g].pci);
                fclose(f);
            }
        }
        setenv("CUDA_VISIBLE_DEVICES", "GPU-3333-8b5a-4d9c,GPU-1111", 1);
        req = req_default();
        gpurun_alloc_apply_at(root, bare, &req, note, sizeof note);
        uuid_ranks(bare, req, note, "GPU-1111", "GPU-3333-8b5a-4d9c");
        const char *unknown[] = {"GPU-5bb9e2b3", "MIG-5bb9e2b3-8b5a", "GPU-1111,GPU-9999"};
        for (size_t i = 0; i < 3; i++) {
            setenv("CUDA_VISIBLE_DEVICES", unknown[i], 1);
            req = req_default();
            gpurun_alloc_apply_at(root, bare, &req, note, sizeof note);
            ok(req.nallowed_gpus < 0 && strstr(note, "names no GPU of this node gpurun can place: not applied"),
               "CUDA_VISIBLE_DEVICES=%s is not applied, and said so: %s", unknown[i], note);
        }
        snprintf(note, sizeof note, "rm -rf %s", root);
        if (system(note) != 0)
            diag("%s failed", note);
    }
    gpurun_topo_destroy(bare);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("SLURM_JOB_GPUS");
    unsetenv("SLURM_JOB_ID");
    gpurun_topo_destroy(t);
}

/* An object with these keys and no others. */
static bool has_exactly(json_t *o, const char *const *keys)
{
    size_t n = 0;
    for (; keys[n]; n++)
        if (!json_object_get(o, keys[n]))
            return false;
    return json_object_size(o) == n;
}

static void json_document(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    gpurun_error_t err;
    gpurun_request_t r = req_default();
    gpurun_plan_t *p;
    if (gpurun_plan_create(t, &r, &p, &err) < 0) {
        ok(0, "json: plan");
        gpurun_topo_destroy(t);
        return;
    }
    json_t *doc = gpurun_plan_json(p);
    is_int(json_integer_value(json_object_get(doc, "gpurun_plan")), 1, "json: version 1");
    json_t *topo = json_object_get(doc, "topology");
    is_int(json_integer_value(json_object_get(topo, "cores")), 16, "json: cores");
    is_int(json_integer_value(json_object_get(topo, "pus")), 32, "json: pus");
    is_int(json_array_size(json_object_get(topo, "gpus")), 4, "json: four GPUs");
    is_int(json_array_size(json_object_get(topo, "nics")), 2, "json: two NICs (no Ethernet)");
    json_t *r0 = json_array_get(json_object_get(doc, "ranks"), 0);
    is_str(json_string_value(json_object_get(r0, "cpus")), "0-3", "json: rank 0 cpus");
    is_str(json_string_value(json_object_get(r0, "nic_affinity")), "PIX", "json: rank 0 nic_affinity");
    is_str(json_string_value(json_array_get(json_object_get(r0, "gpu_pci"), 0)), "0000:13:00.0", "json: gpu_pci");
    is_str(json_string_value(json_array_get(json_object_get(r0, "nic_pci"), 0)), "0000:14:00.0", "json: nic_pci");
    const char *rkeys[] = {"rank", "node", "local_rank", "gpus", "gpu_pci", "nics", "nic_pci", "nic_affinity",
                           "numa", "cpus", "threads", "env", NULL};
    ok(has_exactly(r0, rkeys), "json: a rank has exactly the keys of SPEC §5");
    const char *tkeys[] = {"source", "hostname", "packages", "numa_nodes", "cores", "pus", "gpus", "nics", NULL};
    ok(has_exactly(topo, tkeys), "json: the topology has exactly the keys of SPEC §5");
    const char *nkeys[] = {"name", "pci", "kind", "numa", "cpus", NULL};
    ok(has_exactly(json_array_get(json_object_get(topo, "nics"), 0), nkeys), "json: a NIC has exactly the keys of SPEC §5");
    const char *gkeys[] = {"index", "pci", "vendor", "name", "numa", "cpus", NULL};
    ok(has_exactly(json_array_get(json_object_get(topo, "gpus"), 0), gkeys), "json: a GPU has exactly the keys of SPEC §5");
    json_decref(doc);
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* ranks_per_gpu: consecutive ranks on each GPU, own cores in its
 * locality, one device seen by all of them, and the plan naming them. */
static void ranks_per_gpu(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    gpurun_error_t err = {0};
    gpurun_request_t r = req_default();
    r.ranks_per_gpu = 2;
    gpurun_plan_t *p = plan(t, r, &err, "2s-4gpu, 2 ranks per GPU");
    char why[512] = "";
    if (ok(p && p->nranks == 8, "2s-4gpu, 2 ranks per GPU: 8 ranks by default")) {
        int rc = plancheck_ranks_per_gpu(p, 2, why, sizeof why);
        ok(rc == 0, "2s-4gpu: 2 ranks on each GPU, same device, disjoint cores, gpu_ranks");
        if (rc)
            diag("%s", why);
        is_str(cpus_of(&p->ranks[0]), "0-1", "rank 0: cpus 0-1");
        is_str(cpus_of(&p->ranks[1]), "2-3", "rank 1: cpus 2-3, beside rank 0 near GPU 0");
        is_str(env(&p->ranks[1], "CUDA_VISIBLE_DEVICES"), "0", "rank 1 sees GPU 0 as rank 0 does");
        is_str(env(&p->ranks[7], "CUDA_VISIBLE_DEVICES"), "3", "rank 7 sees GPU 3");
        json_t *doc = gpurun_plan_json(p);
        char *s = json_dumps(json_object_get(json_array_get(json_object_get(doc, "ranks"), 5), "gpu_ranks"), 0);
        is_str(s, "[4, 5]", "plan JSON: rank 5 shares its GPU with ranks 4 and 5");
        free(s);
        json_decref(doc);
    }
    gpurun_plan_destroy(p);

    r.nodes = 2;
    p = plan(t, r, &err, "2s-4gpu, 2 nodes, 2 ranks per GPU");
    if (ok(p && p->nranks == 16, "2 nodes: 16 ranks")) {
        ok(plancheck_ranks_per_gpu(p, 2, why, sizeof why) == 0, "2 nodes: the sharers of rank 9 are 8 and 9");
        json_t *doc = gpurun_plan_json(p);
        char *s = json_dumps(json_object_get(json_array_get(json_object_get(doc, "ranks"), 9), "gpu_ranks"), 0);
        is_str(s, "[8, 9]", "plan JSON: global rank numbers on the second node");
        free(s);
        json_decref(doc);
    }
    gpurun_plan_destroy(p);

    r.nodes = 1;
    r.ranks_per_node = 3;
    p = plan(t, r, &err, "2s-4gpu, 3 ranks at 2 per GPU");
    if (ok(p && p->nranks == 3, "3 ranks at 2 per GPU")) {
        ok(plancheck_ranks_per_gpu(p, 2, why, sizeof why) == 0, "3 ranks: two on GPU 0, one on GPU 1");
        bool said = false;
        for (size_t w = 0; w < p->nwarnings; w++)
            said |= strstr(p->warnings[w], "not a multiple of ranks_per_gpu") != NULL;
        ok(said, "... with a warning");
    }
    gpurun_plan_destroy(p);

    r.ranks_per_node = 9;
    ok(gpurun_plan_create(t, &r, &p, &err) < 0 && err.code == GPURUN_EXIT_ENV && strstr(err.text, "ranks_per_node = 8"),
       "9 ranks at 2 per GPU on 4 GPUs: exit 3, proposing 8");
    r.ranks_per_node = GPURUN_UNSET;
    r.gpus_per_rank = 2;
    ok(gpurun_plan_create(t, &r, &p, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "with gpus_per_rank = 2: exit 2");

    /* ranks_per_gpu = 1 is the plan of old: no gpu_ranks (golden plans unchanged). */
    r = req_default();
    p = plan(t, r, &err, "2s-4gpu default");
    if (p) {
        json_t *doc = gpurun_plan_json(p);
        ok(!json_object_get(json_array_get(json_object_get(doc, "ranks"), 0), "gpu_ranks"),
           "ranks_per_gpu = 1: no gpu_ranks in the plan");
        json_decref(doc);
    }
    gpurun_plan_destroy(p);

    /* The request travels to other hosts with ranks_per_gpu. */
    r.ranks_per_gpu = 4;
    json_t *rj = gpurun_request_json(&r);
    gpurun_request_t back;
    gpurun_request_from_json(&back, rj);
    is_int(back.ranks_per_gpu, 4, "request JSON keeps ranks_per_gpu");
    json_decref(rj);
    gpurun_topo_destroy(t);

    t = plancheck_load(fixture("cpu-only-2numa.xml"));
    r = req_default();
    r.ranks_per_gpu = 2;
    ok(gpurun_plan_create(t, &r, &p, &err) < 0 && err.code == GPURUN_EXIT_ENV && strstr(err.text, "no GPUs"),
       "ranks_per_gpu = 2 on a node without GPUs: exit 3");
    gpurun_topo_destroy(t);

    /* Every fixture with GPUs: 2 per GPU, or a refusal that says why. */
    static const char *const gpu_fixtures[] = {"2s-4gpu-2nic.xml", "amd-partitioned.xml", "apu-dgpu-ws.xml",
                                               "cisco-usnic.xml", "cpuless-numa.xml", "gpu-order-not-numa.xml",
                                               "hybrid-pe-cores.xml", "memoryless-numa.xml", "npu-laptop.xml",
                                               "pvc-tiles.xml", "single-gpu-ws.xml", "sriov-host.xml", "sriov-vf-next-bus.xml",
                                               "sriov-vm.xml", "slingshot400-2s-4gpu.xml", "snc2-3gpu.xml",
                                               "vm-no-locality.xml"};
    for (size_t i = 0; i < sizeof gpu_fixtures / sizeof *gpu_fixtures; i++) {
        t = plancheck_load(fixture(gpu_fixtures[i]));
        gpurun_error_clear(&err);
        if (gpurun_plan_create(t, &r, &p, &err) < 0) {
            ok(err.code == GPURUN_EXIT_ENV && strstr(err.text, "free core"), "%s: 2 per GPU refused: %s",
               gpu_fixtures[i], err.text);
        } else {
            int rc = plancheck_ranks_per_gpu(p, 2, why, sizeof why);
            if (rc == 0)
                rc = plancheck(p, why, sizeof why);
            ok(rc == 0 && p->nranks >= 2, "%s: %d ranks, 2 per GPU, their own cores", gpu_fixtures[i], p->nranks);
            if (rc)
                diag("%s", why);
            gpurun_plan_destroy(p);
        }
        gpurun_topo_destroy(t);
    }
}

/* Intel Data Center GPU Max (Aurora-like): hwloc >= 2.10 lists each Level
 * Zero tile (ze0.0, ze0.1) below its GPU's ze0.  Drivers now default to the
 * FLAT hierarchy, where ZE_AFFINITY_MASK=1 is GPU 0's second tile, not GPU 1. */
static void pvc_tiles(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("pvc-tiles.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 8, "pvc: 4 GPUs of 2 tiles are 8 units");
    gpurun_plan_t *p = plan(t, req_default(), &err, "pvc default");
    if (ok(p != NULL && p->nranks == 8, "pvc: one rank per tile")) {
        static const char *const mask[] = {"0", "1", "2", "3", "4", "5", "6", "7"};
        static const char *const pci[] = {"0000:19:00.0", "0000:19:00.0", "0000:2a:00.0", "0000:2a:00.0",
                                          "0000:99:00.0", "0000:99:00.0", "0000:aa:00.0", "0000:aa:00.0"};
        for (int i = 0; i < 8; i++) {
            const gpurun_rank_plan_t *rk = &p->ranks[i];
            is_str(env(rk, "ZE_AFFINITY_MASK"), mask[i], "pvc: rank %d's mask is its tile's FLAT number", i);
            is_str(t->gpus[rk->gpus[0]].pci, pci[i], "pvc: rank %d is on the tile of GPU %s", i, pci[i]);
            is_str(env(rk, "ZE_FLAT_DEVICE_HIERARCHY"), "FLAT", "pvc: rank %d: the hierarchy is named FLAT", i);
            char *s = gpurun_cpuset_list(rk->nodeset);
            is_str(s, i < 4 ? "0" : "1", "pvc: rank %d's memory is its socket's DRAM, not HBM", i);
            free(s);
            is_str(rk->nnics == 1 ? t->nics[rk->nics[0]].name : "-", i < 4 ? "hsn0" : "hsn1",
                   "pvc: rank %d uses its socket's NIC", i);
        }
    }
    gpurun_plan_destroy(p);

    gpurun_request_t r = req_default();
    r.gpus_per_rank = 2;
    p = plan(t, r, &err, "pvc 2 tiles per rank");
    if (ok(p != NULL && p->nranks == 4, "pvc: 2 tiles per rank, 4 ranks")) {
        is_str(env(&p->ranks[1], "ZE_AFFINITY_MASK"), "2,3", "pvc: rank 1 gets both tiles of the second GPU");
        ok(p->ranks[1].ngpus == 2 && t->gpus[p->ranks[1].gpus[0]].pcidev == t->gpus[p->ranks[1].gpus[1]].pcidev,
           "pvc: a rank's two tiles are one GPU's");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* A VM whose PCI devices report no NUMA node: hwloc hangs them from the
 * whole machine, and on two sockets which cores go with which GPU is a
 * guess, which the plan must say. */
static void vm_no_locality(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("vm-no-locality.xml"));
    gpurun_error_t err;
    gpurun_plan_t *p = plan(t, req_default(), &err, "vm-no-locality default");
    if (ok(p != NULL && p->nranks == 2, "vm-no-locality: one rank per GPU")) {
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "no NUMA locality") &&
               strstr(p->warnings[0], "0001:00:00.0, 0002:00:00.0"),
           "vm-no-locality: the plan warns that both GPUs have no locality");
        char *a = gpurun_cpuset_list(p->ranks[0].nodeset), *b = gpurun_cpuset_list(p->ranks[1].nodeset);
        ok(!strcmp(a, "0") && !strcmp(b, "1"), "vm-no-locality: the ranks are spread over both sockets (%s, %s)", a, b);
        free(a);
        free(b);
    }
    gpurun_plan_destroy(p);
    gpurun_request_t r = req_default();
    r.gpus_per_rank = 0;
    p = plan(t, r, &err, "vm-no-locality CPU-only");
    ok(p != NULL && p->nwarnings == 0, "vm-no-locality: CPU-only ranks, no GPU locality warning");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    /* One NUMA node: nothing to guess, no warning (devices in domains of their own). */
    t = plancheck_load(fixture("sriov-vm.xml"));
    p = plan(t, req_default(), &err, "sriov-vm default");
    ok(p != NULL && p->nwarnings == 0, "sriov-vm: one NUMA node, no locality warning");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* A GPU that the runtime reports but hwloc ties to no PCI bus (Jetson's
 * SoC GPU): not planned, but named, never a silent CPU-only node. */
static void gpu_without_pci(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("jetson-soc-gpu.xml"));
    gpurun_error_t err;
    is_int(t->ngpus, 0, "jetson: no PCI GPU");
    is_str(t->gpus_without_pci, "cuda0", "jetson: cuda0 is named as a GPU under no PCI device");
    gpurun_plan_t *p = plan(t, req_default(), &err, "jetson default");
    if (ok(p != NULL && p->nranks == 1, "jetson: one CPU-only rank"))
        ok(p->nwarnings == 1 && strstr(p->warnings[0], "cuda0 is under no PCI device"),
           "jetson: the plan warns that cuda0 is not planned");
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    /* AWS p4d's OpenCL devices hang from a host bridge: their GPUs are listed. */
    t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    ok(t->gpus_without_pci == NULL, "2s-4gpu-2nic: every runtime device is under its GPU");
    gpurun_topo_destroy(t);
}

/* The plan document's "gpu_cpus" of rank i, as compact JSON ("" when none). */
static char *gpu_cpus_json(const gpurun_plan_t *p, int i)
{
    json_t *doc = gpurun_plan_json(p);
    json_t *gc = json_object_get(json_array_get(json_object_get(doc, "ranks"), (size_t)i), "gpu_cpus");
    char *s = gc ? json_dumps(gc, JSON_COMPACT | JSON_SORT_KEYS) : strdup("");
    json_decref(doc);
    return s;
}

static bool warned_with(const gpurun_plan_t *p, const char *needle)
{
    for (size_t i = 0; p && i < p->nwarnings; i++)
        if (strstr(p->warnings[i], needle))
            return true;
    return false;
}

/* Issue 28, 1: a rank with GPUs in several localities gets cores near each,
 * in proportion to its GPUs there, its places through them in GPU order,
 * its memory on their NUMA nodes, and the plan says which go with which. */
static void multi_gpu_rank(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    gpurun_error_t err;
    gpurun_request_t r = req_default();
    r.ranks_per_node = 1;
    r.gpus_per_rank = 4;
    r.threads_per_rank = 4;
    gpurun_plan_t *p = plan(t, r, &err, "2s 1 rank x 4 GPUs x 4 threads");
    if (ok(p != NULL, "2s: 1 rank x 4 GPUs x 4 threads")) {
        is_str(cpus_of(&p->ranks[0]), "0-1,8-9", "2s: two cores on each socket, near its two GPUs there");
        char *n = gpurun_cpuset_list(p->ranks[0].nodeset), *gc = gpu_cpus_json(p, 0);
        is_str(n, "0-1", "2s: memory on both NUMA nodes");
        is_str(gc, "{\"0\":\"0\",\"1\":\"1\",\"2\":\"8\",\"3\":\"9\"}", "2s: gpu_cpus: one core per GPU");
        is_str(env(&p->ranks[0], "OMP_PLACES"), "cores", "2s: ascending places stay OMP_PLACES=cores");
        free(n);
        free(gc);
    }
    gpurun_plan_destroy(p);

    r.threads_per_rank = GPURUN_UNSET;
    p = plan(t, r, &err, "2s 1 rank x 4 GPUs");
    if (ok(p != NULL, "2s: 1 rank x 4 GPUs, default threads")) {
        char *gc = gpu_cpus_json(p, 0);
        is_str(cpus_of(&p->ranks[0]), "0-15", "2s: the whole node");
        is_str(gc, "{\"0\":\"0-3\",\"1\":\"4-7\",\"2\":\"8-11\",\"3\":\"12-15\"}", "2s: 4 cores with each GPU");
        is_int(p->ranks[0].threads, 16, "2s: 16 threads");
        free(gc);
    }
    gpurun_plan_destroy(p);

    r.threads_per_rank = 1;
    p = plan(t, r, &err, "2s 1 rank x 4 GPUs x 1 thread");
    if (ok(p != NULL, "2s: 1 rank x 4 GPUs x 1 thread")) {
        char *gc = gpu_cpus_json(p, 0);
        is_str(gc, "{\"0\":\"0\",\"1\":\"0\",\"2\":null,\"3\":null}",
               "2s: one thread: its core goes with the first GPUs, the others get null");
        free(gc);
    }
    gpurun_plan_destroy(p);

    r = req_default();
    p = plan(t, r, &err, "2s default");
    if (p) {
        char *gc = gpu_cpus_json(p, 0);
        is_str(gc, "", "2s: a rank of one GPU has no gpu_cpus");
        free(gc);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    /* GPU order against NUMA order: places follow the GPUs, not the cpus. */
    t = plancheck_load(fixture("gpu-order-not-numa.xml"));
    r = req_default();
    r.ranks_per_node = 1;
    r.gpus_per_rank = 4;
    r.threads_per_rank = 4;
    p = plan(t, r, &err, "order 1 rank x 4 GPUs x 4 threads");
    if (ok(p != NULL, "order: 1 rank x 4 GPUs x 4 threads")) {
        char *n = gpurun_cpuset_list(p->ranks[0].nodeset), *gc = gpu_cpus_json(p, 0);
        is_str(cpus_of(&p->ranks[0]), "0,4,8,12", "order: one core on each NUMA node");
        is_str(gc, "{\"0\":\"12\",\"1\":\"8\",\"2\":\"4\",\"3\":\"0\"}", "order: GPU 0 (NUMA 3) gets cpu 12");
        is_str(env(&p->ranks[0], "OMP_PLACES"), "{12},{8},{4},{0}",
               "order: OMP_PLACES lists the places in GPU order, thread 0 near GPU 0");
        is_str(n, "0-3", "order: memory on the four NUMA nodes");
        free(n);
        free(gc);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    t = plancheck_load(fixture("snc2-3gpu.xml"));
    r = req_default();
    r.ranks_per_node = 1;
    r.gpus_per_rank = 3;
    r.threads_per_rank = 3;
    p = plan(t, r, &err, "snc2 1 rank x 3 GPUs x 3 threads");
    if (ok(p != NULL, "snc2: 1 rank x 3 GPUs x 3 threads")) {
        char *gc = gpu_cpus_json(p, 0);
        is_str(cpus_of(&p->ranks[0]), "4-5,8", "snc2: 2 cores near GPUs 0-1, 1 near GPU 2");
        is_str(gc, "{\"0\":\"4\",\"1\":\"5\",\"2\":\"8\"}", "snc2: gpu_cpus");
        free(gc);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Issue 28, 2: oversubscribed ranks take SMT siblings before two of them
 * share a PU, and a warning says how many share each. */
static void smt_before_stacking(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("2s-4gpu-2nic.xml"));
    gpurun_error_t err;
    gpurun_request_t r = req_default();
    r.ranks_per_node = 32;
    r.oversubscribe = true;
    gpurun_plan_t *p = plan(t, r, &err, "2s 32 ranks shared");
    if (ok(p != NULL, "2s: 32 ranks on 16 cores, 32 PUs")) {
        hwloc_bitmap_t all = hwloc_bitmap_alloc();
        bool distinct = true;
        for (int i = 0; i < p->nranks; i++) {
            distinct &= hwloc_bitmap_weight(p->ranks[i].cpuset) == 1 &&
                        !hwloc_bitmap_intersects(all, p->ranks[i].cpuset);
            hwloc_bitmap_or(all, all, p->ranks[i].cpuset);
        }
        ok(distinct && hwloc_bitmap_weight(all) == 32, "2s: each rank on a PU of its own, SMT siblings included");
        hwloc_bitmap_free(all);
        is_str(cpus_of(&p->ranks[8]), "16", "2s: rank 8 on the sibling of rank 0's cpu 0");
        ok(warned_with(p, "16 ranks share the 8 cores of NUMA node 0 (cpus 0-7,16-23), one rank per hardware thread "
                          "(16 PUs, SMT siblings included): ranks will compete for cores"),
           "2s: the warning says one rank per PU");
    }
    gpurun_plan_destroy(p);

    r.ranks_per_node = 48;
    p = plan(t, r, &err, "2s 48 ranks shared");
    if (ok(p != NULL, "2s: 48 ranks on 32 PUs")) {
        int load[32] = {0}, most = 0, idle = 0;
        for (int i = 0; i < p->nranks; i++) {
            int pu = hwloc_bitmap_first(p->ranks[i].cpuset);
            if (pu >= 0 && pu < 32 && ++load[pu] > most)
                most = load[pu];
        }
        for (int i = 0; i < 32; i++)
            idle += load[i] == 0;
        ok(idle == 0 && most == 2, "2s: every PU has a rank, none more than 2 (%d idle, %d the most)", idle, most);
        ok(warned_with(p, "24 ranks share the 8 cores (16 PUs) of NUMA node 0 (cpus 0-7,16-23): every PU has a rank "
                          "and 8 PUs have 2 ranks; ranks will compete for cores"),
           "2s: the warning says how many ranks share each PU");
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);

    t = plancheck_load(fixture("cpu-only-2numa.xml"));
    r = req_default();
    r.ranks_per_node = 24;
    r.oversubscribe = true;
    p = plan(t, r, &err, "cpu 24 ranks shared");
    if (ok(p != NULL, "cpu: 24 CPU-only ranks on 12 cores, 24 PUs")) {
        hwloc_bitmap_t all = hwloc_bitmap_alloc();
        for (int i = 0; i < p->nranks; i++)
            hwloc_bitmap_or(all, all, p->ranks[i].cpuset);
        is_int(hwloc_bitmap_weight(all), 24, "cpu: the 24 ranks use all 24 PUs");
        hwloc_bitmap_free(all);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
}

/* Issue 28, 3: by default a package's NUMA nodes without GPUs are shared
 * out among its GPU ranks (never another package's), memory first on the
 * GPU's node; cpu_locality = gpu keeps the cores near the GPUs only. */
static void package_cores(void)
{
    gpurun_topo_t *t = plancheck_load(fixture("snc2-3gpu.xml"));
    gpurun_error_t err;
    gpurun_request_t r = req_default();
    gpurun_plan_t *p = plan(t, r, &err, "snc2 default");
    if (ok(p != NULL && p->nranks == 3, "snc2: one rank per GPU")) {
        const char *cpus[] = {"0-1,4-5", "2-3,6-7", "8-15"}, *numa[] = {"0-1", "0-1", "2-3"};
        const char *places[] = {"{4}:2,{0}:2", "{6}:2,{2}:2", "cores"};
        for (int i = 0; i < 3; i++) {
            char *n = gpurun_cpuset_list(p->ranks[i].nodeset);
            is_str(cpus_of(&p->ranks[i]), cpus[i], "snc2: rank %d: its GPU's cores and a share of its package's "
                   "NUMA node without GPUs", i);
            is_str(n, numa[i], "snc2: rank %d: memory on both", i);
            is_str(env(&p->ranks[i], "OMP_PLACES"), places[i], "snc2: rank %d: its GPU's cores are its first places",
                   i);
            free(n);
        }
        is_int(p->ranks[0].threads, 4, "snc2: rank 0 has 4 threads");
        is_int((int)p->nwarnings, 0, "snc2: no warnings");
    }
    gpurun_plan_destroy(p);

    r.cpu_locality = GPURUN_CPULOC_GPU;
    p = plan(t, r, &err, "snc2 cpu_locality gpu");
    if (ok(p != NULL, "snc2: cpu_locality = gpu")) {
        is_str(cpus_of(&p->ranks[0]), "4-5", "snc2 gpu: rank 0 near its GPU only");
        is_str(cpus_of(&p->ranks[1]), "6-7", "snc2 gpu: rank 1");
        is_str(cpus_of(&p->ranks[2]), "8-11", "snc2 gpu: rank 2");
    }
    gpurun_plan_destroy(p);

    r = req_default();
    r.ranks_per_node = 1;
    p = plan(t, r, &err, "snc2 one rank");
    if (ok(p != NULL, "snc2: one rank"))
        is_str(cpus_of(&p->ranks[0]), "0-7", "snc2: one rank on GPU 0 gets package 0's cores, never package 1's");
    gpurun_plan_destroy(p);

    /* threads_per_rank bounds the cores: its GPU's first, the rest from the
     * package's NUMA node without GPUs (not a refusal, as near the GPU only). */
    r = req_default();
    r.threads_per_rank = 3;
    p = plan(t, r, &err, "snc2 3 threads");
    if (ok(p != NULL, "snc2: 3 threads per rank, 2 ranks on a NUMA node of 4 cores")) {
        is_str(cpus_of(&p->ranks[0]), "0,4-5", "snc2: rank 0: 2 cores near GPU 0, 1 of NUMA 0");
        is_str(cpus_of(&p->ranks[1]), "2,6-7", "snc2: rank 1: 2 near GPU 1, 1 of NUMA 0");
        is_str(cpus_of(&p->ranks[2]), "8-10", "snc2: rank 2: 3 near GPU 2, no more");
    }
    gpurun_plan_destroy(p);
    r.cpu_locality = GPURUN_CPULOC_GPU;
    p = plan(t, r, &err, "snc2 3 threads, gpu");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV && strstr(err.text, "need 6 cores in NUMA node 1"),
       "snc2: the same near the GPUs only is refused: %s", err.text);
    gpurun_plan_destroy(p);

    r = req_default();
    r.threads_per_rank = 5;
    p = plan(t, r, &err, "snc2 5 threads");
    is_str(p ? "planned" : err.text,
           "2 ranks with 5 threads each need 10 cores in package 0 (cpus 0-7,16-23), near their GPUs or on its NUMA "
           "nodes without GPUs, which has 8 free; use threads_per_rank = 4, fewer ranks per node, or oversubscribe = "
           "true to share cores",
           "snc2: more than the package has is refused, naming the package and what fits");
    gpurun_plan_destroy(p);

    /* More ranks than cores near a GPU: the package's other node first, no sharing. */
    r = req_default();
    r.ranks_per_gpu = 4;
    p = plan(t, r, &err, "snc2 4 ranks per GPU");
    if (ok(p != NULL && p->nranks == 12, "snc2: 4 ranks per GPU, 12 ranks, without oversubscribe")) {
        hwloc_bitmap_t pkg0 = hwloc_bitmap_alloc();
        bool one = true;
        for (int i = 0; i < 8; i++) {
            one &= hwloc_bitmap_weight(p->ranks[i].cpuset) == 1 && !hwloc_bitmap_intersects(pkg0, p->ranks[i].cpuset);
            hwloc_bitmap_or(pkg0, pkg0, p->ranks[i].cpuset);
        }
        char *s = gpurun_cpuset_list(pkg0);
        ok(one && !strcmp(s, "0-7"), "snc2: GPUs 0-1's 8 ranks one core each on package 0 (%s)", s);
        free(s);
        hwloc_bitmap_free(pkg0);
        is_str(cpus_of(&p->ranks[8]), "8,12", "snc2: GPU 2's ranks: a core near it and one of NUMA 3");
    }
    gpurun_plan_destroy(p);
    r.cpu_locality = GPURUN_CPULOC_GPU;
    p = plan(t, r, &err, "snc2 4 ranks per GPU, gpu");
    ok(p == NULL && err.code == GPURUN_EXIT_ENV, "snc2: the same near the GPUs only is refused");
    gpurun_plan_destroy(p);

    /* The request keeps cpu_locality for the other hosts. */
    r = req_default();
    r.cpu_locality = GPURUN_CPULOC_GPU;
    json_t *rj = gpurun_request_json(&r);
    gpurun_request_t back;
    gpurun_request_from_json(&back, rj);
    is_int(back.cpu_locality, GPURUN_CPULOC_GPU, "request JSON keeps cpu_locality");
    is_str(json_string_value(json_object_get(rj, "cpu_locality")), "gpu", "... as \"gpu\"");
    json_decref(rj);
    gpurun_topo_destroy(t);
}

int main(void)
{
    ranks_per_gpu();
    two_socket();
    gpu_order();
    cpu_only();
    workstation();
    cpuless_numa();
    memoryless_numa();
    memoryless_die_v1();
    sriov_host();
    sriov_vf_next_bus();
    slingshot400();
    sriov_vm();
    usnic();
    vpi();
    hybrid();
    arm_kinds();
    newer_xml();
    hwloc3_export();
    pvc_tiles();
    vm_no_locality();
    gpu_without_pci();
    id_lists();
    slurm_gpus();
    json_document();
    multi_gpu_rank();
    smt_before_stacking();
    package_cores();
    return done_testing();
}
