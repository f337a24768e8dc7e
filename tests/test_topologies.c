/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans for the real machine exports in ../shared/topologies/ (when that
 * folder exists): every property of SPEC §5 for many requests on every file,
 * and the known ground truth of the files described in its README. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plancheck.h"
#include "tap.h"

static char dir[4096];

static int find_dir(void)
{
    const char *env = getenv("GPURUN_SHARED_TOPOLOGIES");
    const char *top = getenv("top_srcdir");
    if (env)
        snprintf(dir, sizeof dir, "%s", env);
    else
        snprintf(dir, sizeof dir, "%s/../shared/topologies", top ? top : ".");
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    closedir(d);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Requests every machine is planned for; a refusal must be exit 3 and say why. */
static void properties(const char *name, const gpurun_topo_t *t)
{
    int ngpu = t->ngpus, nnuma = hwloc_bitmap_weight(t->home_nodes); /* CPU domains, not HBM/CXL nodes */
    struct {
        const char *what;
        int rpn, gpr, tpr;
        bool smt, over, gpu_only;
    } reqs[] = {
        {"default", GPURUN_UNSET, GPURUN_UNSET, GPURUN_UNSET, false, false, false},
        {"smt", GPURUN_UNSET, GPURUN_UNSET, GPURUN_UNSET, true, false, false},
        {"half the GPUs", ngpu > 1 ? ngpu / 2 : 1, GPURUN_UNSET, GPURUN_UNSET, false, false, false},
        {"2 GPUs per rank", GPURUN_UNSET, ngpu >= 2 ? 2 : GPURUN_UNSET, GPURUN_UNSET, false, false, false},
        {"2 threads", GPURUN_UNSET, GPURUN_UNSET, 2, false, false, false},
        {"CPU-only per NUMA", nnuma, 0, GPURUN_UNSET, false, false, false},
        {"CPU-only 2 per NUMA", 2 * nnuma, 0, GPURUN_UNSET, false, false, false},
        {"CPU-only 1 rank", 1, 0, GPURUN_UNSET, false, false, false},
        {"twice the GPUs, shared", ngpu ? 2 * ngpu : 2 * nnuma, GPURUN_UNSET, GPURUN_UNSET, false, true, false},
        {"one rank per core", t->cores, 0, 1, false, false, false},
        /* issue 28 */
        {"default, cpu_locality = gpu", GPURUN_UNSET, GPURUN_UNSET, GPURUN_UNSET, false, false, true},
        {"one rank, every GPU, a thread each", ngpu ? 1 : GPURUN_UNSET, ngpu ? ngpu : GPURUN_UNSET,
         ngpu ? ngpu : GPURUN_UNSET, false, false, false},
        {"one rank, every GPU", ngpu ? 1 : GPURUN_UNSET, ngpu ? ngpu : GPURUN_UNSET, GPURUN_UNSET, false, false, false},
        {"ranks = cores, shared", t->cores, GPURUN_UNSET, GPURUN_UNSET, false, true, false},
        {"ranks = cores, shared, cpu_locality = gpu", t->cores, GPURUN_UNSET, GPURUN_UNSET, false, true, true},
        {"ranks = PUs + cores, shared", t->pus + t->cores, GPURUN_UNSET, GPURUN_UNSET, false, true, false},
        {"ranks = cores, shared, smt", t->cores, GPURUN_UNSET, GPURUN_UNSET, true, true, false},
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        gpurun_request_t r;
        gpurun_request_init(&r);
        r.ranks_per_node = reqs[i].rpn;
        r.gpus_per_rank = reqs[i].gpr;
        r.threads_per_rank = reqs[i].tpr;
        r.smt = reqs[i].smt;
        r.oversubscribe = reqs[i].over;
        r.cpu_locality = reqs[i].gpu_only ? GPURUN_CPULOC_GPU : GPURUN_CPULOC_PACKAGE;
        gpurun_plan_t *p = NULL;
        gpurun_error_t err = {0};
        if (gpurun_plan_create(t, &r, &p, &err) < 0) {
            ok(err.code == GPURUN_EXIT_ENV && strlen(err.text) > 20, "%s, %s: refused with exit 3 and a reason",
               name, reqs[i].what);
            diag("%s", err.text);
            continue;
        }
        char why[512] = "";
        int rc = plancheck(p, why, sizeof why);
        ok(rc == 0, "%s, %s: %d ranks with the SPEC properties", name, reqs[i].what, p->nranks);
        if (rc)
            diag("%s", why);
        gpurun_plan_destroy(p);
    }
}

/* ranks_per_gpu = 2 on every machine with GPUs: 2 ranks per GPU, disjoint
 * cores in each GPU's locality.  Where the default plan itself needs
 * oversubscribe (fewer cores than GPUs), so does this one. */
static void two_per_gpu(const char *name, const gpurun_topo_t *t)
{
    if (t->ngpus == 0)
        return;
    for (int over = 0; over < 2; over++) {
        gpurun_request_t r;
        gpurun_request_init(&r);
        r.ranks_per_gpu = 2;
        r.oversubscribe = over;
        gpurun_plan_t *p = NULL, *one = NULL;
        gpurun_error_t err = {0};
        if (gpurun_plan_create(t, &r, &p, &err) < 0) {
            r.ranks_per_gpu = 1;
            bool one_refused = gpurun_plan_create(t, &r, &one, &err) < 0;
            gpurun_plan_destroy(one);
            if (!over && one_refused)
                continue; /* try again with oversubscribe */
            ok(0, "%s: ranks_per_gpu = 2%s planned: %s", name, over ? " (oversubscribe)" : "", err.text);
            break;
        }
        char why[512] = "";
        int rc = plancheck_ranks_per_gpu(p, 2, why, sizeof why);
        if (rc == 0)
            rc = plancheck(p, why, sizeof why);
        int used = 0;
        for (int g = 0; g < t->ngpus; g++)
            for (int k = 0; k < p->nranks; k++)
                if (p->ranks[k].gpus[0] == g) {
                    used++;
                    break;
                }
        ok(rc == 0 && p->nranks == 2 * used, "%s: ranks_per_gpu = 2%s: %d ranks, 2 on each of %d GPUs, their own cores",
           name, over ? " (oversubscribe, fewer cores than ranks)" : "", p->nranks, used);
        if (rc)
            diag("%s", why);
        gpurun_plan_destroy(p);
        break;
    }
}

static gpurun_plan_t *default_plan(const gpurun_topo_t *t)
{
    gpurun_request_t r;
    gpurun_request_init(&r);
    gpurun_plan_t *p = NULL;
    gpurun_error_t err;
    if (gpurun_plan_create(t, &r, &p, &err) < 0) {
        diag("default plan refused: %s", err.text);
        return NULL;
    }
    return p;
}

static const char *nic_of(const gpurun_plan_t *p, int rank)
{
    const gpurun_rank_plan_t *r = &p->ranks[rank];
    return r->nnics ? p->topo->nics[r->nics[0]].name : "-";
}

static const char *gpu_pci_of(const gpurun_plan_t *p, int rank)
{
    return p->topo->gpus[p->ranks[rank].gpus[0]].pci;
}

static gpurun_plan_t *plan_of(const gpurun_topo_t *t, int rpn, int gpr, int tpr, bool over, bool gpu_only)
{
    gpurun_request_t r;
    gpurun_request_init(&r);
    r.ranks_per_node = rpn;
    r.gpus_per_rank = gpr;
    r.threads_per_rank = tpr;
    r.oversubscribe = over;
    r.cpu_locality = gpu_only ? GPURUN_CPULOC_GPU : GPURUN_CPULOC_PACKAGE;
    gpurun_plan_t *p = NULL;
    gpurun_error_t err;
    if (gpurun_plan_create(t, &r, &p, &err) < 0) {
        diag("refused: %s", err.text);
        return NULL;
    }
    return p;
}

static char *gpu_cpus_of(const gpurun_plan_t *p, int rank)
{
    json_t *doc = gpurun_plan_json(p);
    json_t *gc = json_object_get(json_array_get(json_object_get(doc, "ranks"), (size_t)rank), "gpu_cpus");
    char *s = gc ? json_dumps(gc, JSON_COMPACT | JSON_SORT_KEYS) : strdup("(none)");
    json_decref(doc);
    return s;
}

static const char *cpus_str(const gpurun_rank_plan_t *r)
{
    static char buf[4][512];
    static int slot;
    char *s = gpurun_cpuset_list(r->cpuset), *out = buf[slot++ % 4];
    snprintf(out, 512, "%s", s);
    free(s);
    return out;
}

/* How many ranks the busiest PU has. */
static int most_per_pu(const gpurun_plan_t *p)
{
    int most = 0;
    hwloc_bitmap_t seen = hwloc_bitmap_alloc(), twice = hwloc_bitmap_alloc();
    for (int i = 0; i < p->nranks; i++) {
        hwloc_bitmap_t both = hwloc_bitmap_alloc();
        hwloc_bitmap_and(both, seen, p->ranks[i].cpuset);
        hwloc_bitmap_or(twice, twice, both);
        hwloc_bitmap_or(seen, seen, p->ranks[i].cpuset);
        hwloc_bitmap_free(both);
    }
    most = hwloc_bitmap_iszero(twice) ? 1 : 2;
    hwloc_bitmap_free(seen);
    hwloc_bitmap_free(twice);
    return most;
}

/* Issue 28 on the machines it names. */
static void issue28(const char *name, const gpurun_topo_t *t)
{
    gpurun_plan_t *p = NULL;
    if (!strcmp(name, "aws-p5en-8xh200.xml")) {
        p = plan_of(t, 1, 8, 8, false, false);
        if (ok(p != NULL, "p5en: 1 rank x 8 GPUs x 8 threads")) {
            char *gc = gpu_cpus_of(p, 0), *n = gpurun_cpuset_list(p->ranks[0].nodeset);
            is_str(cpus_str(&p->ranks[0]), "0-3,48-51", "p5en: 4 cores on each package (was 0-7, all on package 0)");
            is_str(gc, "{\"0\":\"0\",\"1\":\"1\",\"2\":\"2\",\"3\":\"3\",\"4\":\"48\",\"5\":\"49\",\"6\":\"50\",\"7\":\"51\"}",
                   "p5en: gpu_cpus: each GPU a core on its package");
            is_str(n, "0-1", "p5en: memory on both NUMA nodes");
            is_str(json_string_value(json_object_get(p->ranks[0].env, "OMP_PLACES")), "cores",
                   "p5en: OMP_PLACES=cores puts threads 0-3 near GPUs 0-3, 4-7 near GPUs 4-7");
            free(gc);
            free(n);
        }
    } else if (!strcmp(name, "lassen-power9-4xv100.xml")) {
        p = plan_of(t, 1, 4, 4, false, false);
        if (ok(p != NULL, "lassen: 1 rank x 4 GPUs x 4 threads")) {
            char *gc = gpu_cpus_of(p, 0), *n = gpurun_cpuset_list(p->ranks[0].nodeset);
            is_str(cpus_str(&p->ranks[0]), "8,12,96,100", "lassen: 2 cores per socket (was 8,12,16,20, socket 0)");
            is_str(gc, "{\"0\":\"8\",\"1\":\"12\",\"2\":\"96\",\"3\":\"100\"}", "lassen: gpu_cpus");
            is_str(n, "0,8", "lassen: memory on NUMA 0 and 8");
            free(gc);
            free(n);
        }
    } else if (!strcmp(name, "jureca-dc-gpu-jrc0323.xml")) {
        p = plan_of(t, GPURUN_UNSET, GPURUN_UNSET, GPURUN_UNSET, false, false);
        if (ok(p != NULL, "jureca: default plan")) {
            const char *cpus[] = {"0-31", "32-63", "64-95", "96-127"};
            const char *places[] = {"{16}:16,{0}:16", "{48}:16,{32}:16", "{80}:16,{64}:16", "{112}:16,{96}:16"};
            for (int i = 0; i < 4; i++) {
                is_str(cpus_str(&p->ranks[i]), cpus[i], "jureca: rank %d: its GPU's NUMA node and the one beside it "
                       "without a GPU (was 16 of the 128 cores each)", i);
                is_str(json_string_value(json_object_get(p->ranks[i].env, "OMP_PLACES")), places[i],
                       "jureca: rank %d: the GPU's NUMA node first in OMP_PLACES", i);
            }
        }
        gpurun_plan_destroy(p);
        p = plan_of(t, GPURUN_UNSET, GPURUN_UNSET, GPURUN_UNSET, false, true);
        if (ok(p != NULL, "jureca: cpu_locality = gpu"))
            is_str(cpus_str(&p->ranks[0]), "16-31", "jureca: cpu_locality = gpu keeps rank 0 on NUMA 1");
        gpurun_plan_destroy(p);
        p = plan_of(t, 128, GPURUN_UNSET, GPURUN_UNSET, true, true);
        if (ok(p != NULL, "jureca: 128 ranks, oversubscribe, cpu_locality = gpu")) {
            is_int(most_per_pu(p), 1, "jureca: 128 ranks on the GPUs' 64 cores take their 128 PUs, one each "
                   "(were 2 each on 64 PUs, the siblings idle)");
            bool said = false;
            for (size_t w = 0; w < p->nwarnings; w++)
                said |= strstr(p->warnings[w], "one rank per hardware thread") != NULL;
            ok(said, "jureca: ... and the warning says so");
        }
        gpurun_plan_destroy(p);
        p = plan_of(t, 128, GPURUN_UNSET, GPURUN_UNSET, true, false);
        if (ok(p != NULL, "jureca: 128 ranks, oversubscribe, cpu_locality = package")) {
            hwloc_bitmap_t all = hwloc_bitmap_alloc();
            for (int i = 0; i < p->nranks; i++)
                hwloc_bitmap_or(all, all, p->ranks[i].cpuset);
            ok(most_per_pu(p) == 1 && hwloc_bitmap_weight(all) == 128 && hwloc_bitmap_last(all) == 127,
               "jureca: 128 ranks on 128 cores of their GPUs' packages, one each, no sibling shared");
            hwloc_bitmap_free(all);
        }
    }
    gpurun_plan_destroy(p);
}

/* The ground truth the README of ../shared/topologies states. */
static void ground_truth(const char *name, const gpurun_topo_t *t)
{
    gpurun_plan_t *p = NULL;
    if (!strcmp(name, "jureca-dc-gpu-jrc0323.xml")) {
        is_int(t->ngpus, 4, "jureca: 4 PCI-only A100s");
        p = default_plan(t);
        if (ok(p && p->nranks == 4, "jureca: 4 ranks")) {
            /* Each GPU shares a PCIe switch with one HCA. */
            const char *gpu[] = {"0000:44:00.0", "0000:03:00.0", "0000:c4:00.0", "0000:84:00.0"};
            const char *hca[] = {"mlx5_1", "mlx5_0", "mlx5_3", "mlx5_2"};
            const int numa[] = {1, 3, 5, 7};
            for (int i = 0; i < 4; i++) {
                is_str(gpu_pci_of(p, i), gpu[i], "jureca: rank %d on GPU %s (NUMA %d)", i, gpu[i], numa[i]);
                is_str(nic_of(p, i), hca[i], "jureca: rank %d uses %s", i, hca[i]);
                is_int(p->ranks[i].nic_affinity, GPURUN_AFF_PIX, "jureca: rank %d NIC at PIX", i);
                ok(hwloc_bitmap_isset(p->ranks[i].nodeset, (unsigned)numa[i]), "jureca: rank %d memory on NUMA %d",
                   i, numa[i]);
            }
        }
    } else if (!strcmp(name, "lassen-power9-4xv100.xml")) {
        json_t *j = gpurun_topo_json(t, false);
        json_t *numa = json_object_get(j, "numa_nodes");
        ok(json_array_size(numa) == 2 && json_integer_value(json_array_get(numa, 1)) == 8,
           "lassen: NUMA nodes keep their OS indexes 0 and 8");
        json_decref(j);
        is_int(t->pus, 160, "lassen: 160 online PUs");
        p = default_plan(t);
        if (ok(p != NULL, "lassen: default plan")) {
            hwloc_bitmap_t off = hwloc_bitmap_alloc();
            hwloc_bitmap_set_range(off, 0, 7);
            hwloc_bitmap_set_range(off, 88, 95);
            bool clean = true;
            for (int i = 0; i < p->nranks; i++)
                clean &= !hwloc_bitmap_intersects(p->ranks[i].cpuset, off);
            ok(clean, "lassen: offline PUs 0-7 and 88-95 are never planned");
            hwloc_bitmap_free(off);
            is_str(nic_of(p, 0), "mlx5_0", "lassen: rank 0 (socket 0) on mlx5_0");
            is_str(nic_of(p, 1), "mlx5_1", "lassen: rank 1 (socket 0) on mlx5_1: the two ports are spread");
            is_str(nic_of(p, 2), "mlx5_2", "lassen: rank 2 (socket 1) on mlx5_2");
            is_int(p->ranks[0].nic_affinity, GPURUN_AFF_NODE, "lassen: NICs on another PCI domain are NODE");
            ok(hwloc_bitmap_isset(p->ranks[3].nodeset, 8), "lassen: rank 3 memory on NUMA 8");
        }
    } else if (!strcmp(name, "aws-g4dn-metal-8xt4.xml")) {
        is_int(t->ngpus, 8, "g4dn: 8 T4");
        ok(t->nhsnics == 1 && !strcmp(t->nics[0].kind, "efa"), "g4dn: one EFA; ENA is not high-speed");
        p = default_plan(t);
        if (ok(p != NULL, "g4dn: default plan")) {
            is_int(p->ranks[0].nic_affinity, GPURUN_AFF_SYS, "g4dn: GPUs 0-3 reach the EFA across sockets");
            is_int(p->ranks[4].nic_affinity, GPURUN_AFF_NODE, "g4dn: GPUs 4-7 reach it on their NUMA node");
            ok(p->nwarnings == 1 && strstr(p->warnings[0], "0-3"), "g4dn: ranks 0-3 are warned");
        }
    } else if (!strcmp(name, "tioga-ex235a-mi250x.xml")) {
        p = default_plan(t);
        if (ok(p != NULL, "tioga: default plan")) {
            is_str(gpu_pci_of(p, 0), "0000:d1:00.0", "tioga: rank 0 on rsmi4, the GCD of L3 #0");
            char *cpus = gpurun_cpuset_list(p->ranks[0].cpuset);
            is_str(cpus, "0-7", "tioga: rank 0 on the 8 cores of its L3");
            free(cpus);
            is_str(json_string_value(json_object_get(p->ranks[0].env, "ROCR_VISIBLE_DEVICES")), "4",
                   "tioga: ROCR_VISIBLE_DEVICES=4 for rank 0");
            is_str(nic_of(p, 1), "hsi2", "tioga: rsmi5 (d6) gets hsi2, on its host bridge");
            is_int(p->ranks[1].nic_affinity, GPURUN_AFF_PHB, "tioga: ... at PHB");
            is_str(t->nics[0].kind, "slingshot", "tioga: Cassini NICs are Slingshot");
        }
    } else if (!strcmp(name, "aws-p5en-8xh200.xml")) {
        is_int(t->nhsnics, 16, "p5en: 16 EFA");
        p = default_plan(t);
        if (ok(p != NULL, "p5en: default plan")) {
            bool two = true;
            for (int i = 0; i < p->nranks; i++)
                two &= p->ranks[i].nnics == 2 && p->ranks[i].nic_affinity == GPURUN_AFF_PIX;
            ok(two, "p5en: each GPU's rank gets 2 of the 4 EFAs on its switch");
            ok(p->ranks[0].nics[0] != p->ranks[1].nics[0] && p->ranks[0].nics[1] != p->ranks[1].nics[1],
               "p5en: the two GPUs of a switch split its EFAs");
        }
    } else if (!strcmp(name, "aws-p4d-8xa100.xml")) {
        p = default_plan(t);
        if (ok(p != NULL, "p4d: default plan")) {
            is_int(p->ranks[0].nic_affinity, GPURUN_AFF_PHB, "p4d: no switches: nearest EFA is on the host bridge");
            is_str(nic_of(p, 0), "rdmap16s27", "p4d: GPU 10:1c uses rdmap16s27");
            is_str(nic_of(p, 7), "rdmap160s27", "p4d: GPU a0:1d uses rdmap160s27");
        }
    } else if (!strcmp(name, "nvidia-dgx2h-16xv100-trimmed.xml")) {
        is_int(t->ngpus, 16, "dgx2: 16 V100, NVSwitches are not GPUs");
        gpurun_request_t r;
        gpurun_request_init(&r);
        gpurun_error_t err;
        ok(gpurun_plan_create(t, &r, &p, &err) < 0 && err.code == GPURUN_EXIT_ENV,
           "dgx2: 16 ranks on 4 PUs are refused");
        p = NULL;
        r.oversubscribe = true;
        if (ok(gpurun_plan_create(t, &r, &p, &err) == 0, "dgx2: shared when allowed"))
            ok(p->nwarnings > 0, "dgx2: with a warning");
    } else if (!strcmp(name, "quartz-broadwell-omnipath.xml")) {
        is_int(t->pus, 36, "quartz: SMT off, 36 PUs");
        p = default_plan(t);
        if (ok(p != NULL && p->nranks == 2, "quartz: 2 CPU-only ranks"))
            is_int(p->ranks[1].nic_affinity, GPURUN_AFF_NODE, "quartz: rank 1's HFI is on NUMA 1");
    } else if (!strcmp(name, "sgi-uv2000-192c-24numa.xml")) {
        is_int(t->numa_nodes, 24, "uv2000: 24 NUMA nodes");
        p = default_plan(t);
        ok(p && p->nranks == 24, "uv2000: one rank per NUMA node by default");
    } else if (!strcmp(name, "juwels-cluster-gpu-jwc09n003-hwloc1.xml")) {
        p = default_plan(t);
        if (ok(p != NULL, "juwels (hwloc 1.x export): default plan")) {
            is_str(nic_of(p, 1), "mlx5_0", "juwels: GPU 5e shares mlx5_0 with 5d");
            is_str(nic_of(p, 2), "mlx5_1", "juwels: GPU 88 uses mlx5_1");
        }
    }
    gpurun_plan_destroy(p);
}

int main(void)
{
    if (find_dir() < 0) {
        skip_all("no shared topologies at %s (set GPURUN_SHARED_TOPOLOGIES)", dir);
        return 0;
    }
    DIR *d = opendir(dir);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".xml"))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, name_cmp);
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        gpurun_topo_t *t = plancheck_load(path);
        properties(names[i], t);
        two_per_gpu(names[i], t);
        ground_truth(names[i], t);
        issue28(names[i], t);
        gpurun_topo_destroy(t);
        free(names[i]);
    }
    return done_testing();
}
