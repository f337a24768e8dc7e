/* SPDX-License-Identifier: BSD-3-Clause */
/* The binding planner: which GPUs, NICs, cores and memory each rank of a
 * node gets (SPEC §5).  Decisions come from locality in the hwloc tree,
 * never from index arithmetic on device numbers. */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_cores.h"
#include "plan_domains.h"
#include "util.h"

void gpurun_request_init(gpurun_request_t *req)
{
    memset(req, 0, sizeof *req);
    req->nodes = 1;
    req->ranks_per_node = GPURUN_UNSET;
    req->gpus_per_rank = GPURUN_UNSET;
    req->threads_per_rank = GPURUN_UNSET;
    req->ranks_per_gpu = 1;
    req->bind = GPURUN_BIND_CLOSEST;
    req->gpu_visibility = GPURUN_GPUVIS_ISOLATE;
    req->cpu_locality = GPURUN_CPULOC_PACKAGE;
    req->nallowed_gpus = -1;
}

void gpurun_request_from_job(gpurun_request_t *req, const gpurun_job_t *job)
{
    gpurun_request_init(req);
    req->nodes = job->nodes;
    req->ranks_per_node = job->ranks_per_node;
    req->gpus_per_rank = job->gpus_per_rank;
    req->threads_per_rank = job->threads_per_rank;
    req->ranks_per_gpu = job->ranks_per_gpu;
    req->smt = job->smt;
    req->oversubscribe = job->oversubscribe;
    req->bind = job->bind;
    req->gpu_visibility = job->gpu_visibility;
    req->cpu_locality = job->cpu_locality;
}

json_t *gpurun_request_json(const gpurun_request_t *r)
{
    return json_pack("{s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:s, s:s, s:s}", "nodes", r->nodes, "ranks_per_node",
                     r->ranks_per_node, "gpus_per_rank", r->gpus_per_rank, "threads_per_rank", r->threads_per_rank,
                     "ranks_per_gpu", r->ranks_per_gpu,
                     "smt", r->smt, "oversubscribe", r->oversubscribe, "bind",
                     r->bind == GPURUN_BIND_NONE ? "none" : "closest", "gpu_visibility",
                     r->gpu_visibility == GPURUN_GPUVIS_SHARED ? "shared" : "isolate", "cpu_locality",
                     r->cpu_locality == GPURUN_CPULOC_GPU ? "gpu" : "package");
}

void gpurun_request_from_json(gpurun_request_t *r, json_t *j)
{
    gpurun_request_init(r);
    json_t *v;
    if ((v = json_object_get(j, "nodes")))
        r->nodes = (int)json_integer_value(v);
    if ((v = json_object_get(j, "ranks_per_node")))
        r->ranks_per_node = (int)json_integer_value(v);
    if ((v = json_object_get(j, "gpus_per_rank")))
        r->gpus_per_rank = (int)json_integer_value(v);
    if ((v = json_object_get(j, "threads_per_rank")))
        r->threads_per_rank = (int)json_integer_value(v);
    if ((v = json_object_get(j, "ranks_per_gpu")) && json_integer_value(v) >= 1)
        r->ranks_per_gpu = (int)json_integer_value(v);
    r->smt = json_is_true(json_object_get(j, "smt"));
    r->oversubscribe = json_is_true(json_object_get(j, "oversubscribe"));
    const char *b = json_string_value(json_object_get(j, "bind"));
    r->bind = b && !strcmp(b, "none") ? GPURUN_BIND_NONE : GPURUN_BIND_CLOSEST;
    const char *g = json_string_value(json_object_get(j, "gpu_visibility"));
    r->gpu_visibility = g && !strcmp(g, "shared") ? GPURUN_GPUVIS_SHARED : GPURUN_GPUVIS_ISOLATE;
    const char *l = json_string_value(json_object_get(j, "cpu_locality"));
    if (l)
        r->cpu_locality = !strcmp(l, "gpu") ? GPURUN_CPULOC_GPU : GPURUN_CPULOC_PACKAGE;
}


/* --- NICs ------------------------------------------------------------------- */

static int nic_distance(const gpurun_topo_t *t, const gpurun_rank_plan_t *r, int nic, enum gpurun_affinity *cls)
{
    int best = INT_MAX, d;
    enum gpurun_affinity a;
    if (r->ngpus == 0) {
        hwloc_const_cpuset_t cpus =
            hwloc_bitmap_iszero(r->cpuset) ? hwloc_topology_get_topology_cpuset(t->hw) : r->cpuset;
        *cls = gpurun_cpu_affinity(t, cpus, t->nics[nic].pcidev, &best);
        return best;
    }
    for (int g = 0; g < r->ngpus; g++) {
        a = gpurun_pci_affinity(t, t->gpus[r->gpus[g]].pcidev, t->nics[nic].pcidev, &d);
        if (d < best) {
            best = d;
            *cls = a;
        }
    }
    return best;
}

static int kind_rank(const char *kind)
{
    if (!strcmp(kind, "roce"))
        return 1;
    if (!strcmp(kind, "usnic"))
        return 2;
    return 0; /* InfiniBand, Omni-Path, Slingshot, EFA */
}

/* One fabric per node: ranks put on different networks (InfiniBand for MPI,
 * a RoCE NIC for storage) could not reach each other.  The dedicated HPC
 * fabrics come first, then RoCE, then usNIC; among equals, the most NICs. */
static const char *fabric_kind(const gpurun_topo_t *t)
{
    const char *best = NULL;
    int best_count = 0;
    for (int i = 0; i < t->nhsnics; i++) {
        int count = 0;
        for (int j = 0; j < t->nhsnics; j++)
            count += !strcmp(t->nics[j].kind, t->nics[i].kind);
        if (!best || kind_rank(t->nics[i].kind) < kind_rank(best) ||
            (kind_rank(t->nics[i].kind) == kind_rank(best) && count > best_count)) {
            best = t->nics[i].kind;
            best_count = count;
        }
    }
    return best;
}

/* Each rank gets the nearest high-speed NICs of the node's fabric; ranks
 * that are equally near the same NICs split them, and share them only when
 * there are fewer NICs than ranks. */
static void place_nics(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn)
{
    int nn = t->nhsnics;
    if (nn == 0)
        return;
    const char *fabric = fabric_kind(t);
    hwloc_bitmap_t *nearest = gpurun_xcalloc((size_t)rpn, sizeof *nearest);
    enum gpurun_affinity *cls = gpurun_xcalloc((size_t)rpn, sizeof *cls);
    int *load = gpurun_xcalloc((size_t)nn, sizeof *load);
    int *dist = gpurun_xcalloc((size_t)nn, sizeof *dist);
    for (int r = 0; r < rpn; r++) {
        int best = INT_MAX;
        nearest[r] = hwloc_bitmap_alloc();
        for (int n = 0; n < nn; n++) {
            enum gpurun_affinity a = GPURUN_AFF_SYS;
            if (strcmp(t->nics[n].kind, fabric)) {
                dist[n] = INT_MAX;
                continue;
            }
            dist[n] = nic_distance(t, &p->ranks[r], n, &a);
            if (dist[n] < best) {
                best = dist[n];
                cls[r] = a;
            }
        }
        for (int n = 0; n < nn; n++)
            if (dist[n] == best && best != INT_MAX)
                hwloc_bitmap_set(nearest[r], (unsigned)n);
    }
    /* Ranks with the fewest choices pick first, so that ranks with several
     * equally near NICs avoid the ones the others must use. */
    int *order = gpurun_xcalloc((size_t)rpn, sizeof *order);
    for (int r = 0; r < rpn; r++) {
        int j = r;
        while (j > 0 && hwloc_bitmap_weight(nearest[order[j - 1]]) > hwloc_bitmap_weight(nearest[r])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = r;
    }
    for (int o = 0; o < rpn; o++) {
        int r = order[o];
        int peers = 0;
        for (int q = 0; q < rpn; q++)
            peers += hwloc_bitmap_isequal(nearest[q], nearest[r]);
        int want = hwloc_bitmap_weight(nearest[r]) / peers;
        if (want < 1)
            want = 1;
        gpurun_rank_plan_t *rp = &p->ranks[r];
        rp->nics = gpurun_xcalloc((size_t)want, sizeof *rp->nics);
        rp->nic_affinity = cls[r];
        while (rp->nnics < want) {
            int pick = -1, n;
            hwloc_bitmap_foreach_begin(n, nearest[r])
            {
                bool have = false;
                for (int x = 0; x < rp->nnics; x++)
                    have |= rp->nics[x] == n;
                if (!have && (pick < 0 || load[n] < load[pick]))
                    pick = n;
            }
            hwloc_bitmap_foreach_end();
            load[pick]++;
            rp->nics[rp->nnics++] = pick;
        }
        /* Keep the NIC list in PCI order, as users read it. */
        for (int a = 1; a < rp->nnics; a++)
            for (int b = a; b > 0 && rp->nics[b - 1] > rp->nics[b]; b--) {
                int tmp = rp->nics[b];
                rp->nics[b] = rp->nics[b - 1];
                rp->nics[b - 1] = tmp;
            }
    }
    free(order);
    /* One warning for all ranks whose traffic must cross sockets. */
    hwloc_bitmap_t far = hwloc_bitmap_alloc();
    for (int r = 0; r < rpn; r++)
        if (cls[r] == GPURUN_AFF_SYS)
            hwloc_bitmap_set(far, (unsigned)r);
    if (!hwloc_bitmap_iszero(far)) {
        char *list = gpurun_cpuset_list(far);
        gpurun_plan_warn(p, "local rank%s %s reach%s the nearest high-speed NIC only across the CPU interconnect (SYS)",
                  hwloc_bitmap_weight(far) == 1 ? "" : "s", list, hwloc_bitmap_weight(far) == 1 ? "es" : "");
        free(list);
    }
    hwloc_bitmap_free(far);
    for (int r = 0; r < rpn; r++)
        hwloc_bitmap_free(nearest[r]);
    free(nearest);
    free(cls);
    free(load);
    free(dist);
}

/* --- environment ------------------------------------------------------------ */

static void env_set(json_t *env, const char *key, const char *value)
{
    json_object_set_new(env, key, json_string(value));
}

/* What the GPU runtime calls GPU g here: its item in the resource manager's
 * renumbered list (req->visible_*), else its own number. */
static void gpu_runtime_name(const gpurun_request_t *req, const gpurun_gpu_t *g, char *out, size_t len)
{
    const char *list = !strcmp(g->vendor, "nvidia") ? req->visible_cuda
                       : !strcmp(g->vendor, "amd")  ? req->visible_rocr
                                                    : NULL;
    int pos = -1;
    for (int i = 0; list && i < req->nallowed_gpus && pos < 0; i++)
        if (req->allowed_gpus[i] == g->index)
            pos = i;
    for (const char *p = list; p && pos >= 0; pos--) {
        size_t n = strcspn(p, ",");
        if (pos == 0) {
            snprintf(out, len, "%.*s", (int)n, p);
            return;
        }
        p = p[n] ? p + n + 1 : NULL;
    }
    snprintf(out, len, "%d", g->index);
}

/* what: 0 the GPUs' own numbers, 1 the NICs, 2 the NICs' name:port, 3 the
 * GPUs as the runtime names them here. */
static char *join_list(const gpurun_topo_t *t, const gpurun_request_t *req, const gpurun_rank_plan_t *r, int what)
{
    size_t cap = 64, len = 0;
    char *s = gpurun_xcalloc(1, cap);
    int n = what == 0 || what == 3 ? r->ngpus : r->nnics;
    for (int i = 0; i < n; i++) {
        char item[128];
        if (what == 3)
            gpu_runtime_name(req, &t->gpus[r->gpus[i]], item, sizeof item);
        else if (what == 0)
            snprintf(item, sizeof item, "%d", t->gpus[r->gpus[i]].index);
        else if (what == 1)
            snprintf(item, sizeof item, "%s", t->nics[r->nics[i]].name);
        else
            snprintf(item, sizeof item, "%s:%d", t->nics[r->nics[i]].name, t->nics[r->nics[i]].port);
        size_t il = strlen(item);
        if (len + il + 2 > cap) {
            cap = 2 * (len + il + 2);
            s = gpurun_xrealloc(s, cap);
        }
        if (i)
            s[len++] = ',';
        memcpy(s + len, item, il + 1);
        len += il;
    }
    return s;
}

/* OMP_PLACES: "cores" (with smt "threads") where the rank's places ascend,
 * as OpenMP orders them itself; else the places in the plan's order (the
 * cores of its first GPU first), each PU a place ("{16}:16,{0}:16" is PUs
 * 16-31, then 0-15).  Caller frees. */
static char *omp_places(const gpurun_topo_t *t, const gpurun_request_t *req, const gpurun_rank_plan_t *r)
{
    bool ascending = true;
    for (int i = 1; i < r->nplaces; i++)
        ascending &= r->places[i] > r->places[i - 1];
    if (ascending)
        return gpurun_xstrdup(req->smt ? "threads" : "cores");
    int cap = hwloc_bitmap_weight(r->cpuset), n = 0;
    int *pus = gpurun_xcalloc((size_t)(cap > 0 ? cap : 1), sizeof *pus);
    for (int i = 0; i < r->nplaces; i++) {
        hwloc_obj_t pu_obj = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)r->places[i]);
        hwloc_obj_t o = req->smt && pu_obj ? hwloc_get_ancestor_obj_by_type(t->hw, HWLOC_OBJ_CORE, pu_obj) : NULL;
        if (!o) { /* one PU a place; also where the export has no cores */
            if (n < cap)
                pus[n++] = r->places[i];
            continue;
        }
        int pu;
        hwloc_bitmap_foreach_begin(pu, o->cpuset)
        {
            if (n < cap && hwloc_bitmap_isset(r->cpuset, (unsigned)pu))
                pus[n++] = pu;
        }
        hwloc_bitmap_foreach_end();
    }
    struct gpurun_strbuf b = {0};
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && pus[j + 1] == pus[j] + 1)
            j++;
        if (j > i)
            gpurun_strbuf_printf(&b, "%s{%d}:%d", i ? "," : "", pus[i], j - i + 1);
        else
            gpurun_strbuf_printf(&b, "%s{%d}", i ? "," : "", pus[i]);
        i = j + 1;
    }
    free(pus);
    return b.s ? b.s : gpurun_xstrdup(req->smt ? "threads" : "cores");
}

static void rank_env(const gpurun_topo_t *t, const gpurun_request_t *req, gpurun_rank_plan_t *r)
{
    json_t *env = json_object();
    char buf[32];
    if (r->ngpus > 0) {
        const char *vendor = t->gpus[r->gpus[0]].vendor;
        char *ids = join_list(t, req, r, 0), *names = join_list(t, req, r, 3);
        bool isolate = req->gpu_visibility == GPURUN_GPUVIS_ISOLATE;
        if (!strcmp(vendor, "nvidia")) {
            if (isolate)
                env_set(env, "CUDA_VISIBLE_DEVICES", names);
            env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        } else if (!strcmp(vendor, "amd")) {
            if (isolate)
                env_set(env, "ROCR_VISIBLE_DEVICES", names);
        } else if (!strcmp(vendor, "intel")) {
            /* The mask's numbers mean whole GPUs or tiles as the device
             * hierarchy says, and the driver's default differs between
             * releases: name the one the numbers are in, and PCI order. */
            env_set(env, "ZE_FLAT_DEVICE_HIERARCHY", t->ze_flat ? "FLAT" : "COMPOSITE");
            env_set(env, "ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1");
            if (isolate)
                env_set(env, "ZE_AFFINITY_MASK", ids);
        }
        env_set(env, "GPURUN_GPUS", ids);
        free(ids);
        free(names);
    }
    if (r->nnics > 0) {
        const char *kind = t->nics[r->nics[0]].kind;
        /* UCX and NCCL address verbs devices as name:port. */
        if (!strcmp(kind, "infiniband") || !strcmp(kind, "roce")) {
            char *ports = join_list(t, req, r, 2);
            char *exact = gpurun_xasprintf("=%s", ports); /* '=': mlx5_1 must not match mlx5_10 */
            env_set(env, "UCX_NET_DEVICES", ports);
            env_set(env, "NCCL_IB_HCA", exact);
            free(ports);
            free(exact);
        }
        char *nic_names = join_list(t, req, r, 1);
        env_set(env, "GPURUN_NICS", nic_names);
        free(nic_names);
    }
    snprintf(buf, sizeof buf, "%d", r->threads);
    env_set(env, "OMP_NUM_THREADS", buf);
    if (req->bind == GPURUN_BIND_CLOSEST) {
        char *places = omp_places(t, req, r);
        env_set(env, "OMP_PLACES", places);
        free(places);
        env_set(env, "OMP_PROC_BIND", "close");
    }
    snprintf(buf, sizeof buf, "%d", r->rank);
    env_set(env, "GPURUN_RANK", buf);
    snprintf(buf, sizeof buf, "%d", r->local_rank);
    env_set(env, "GPURUN_LOCAL_RANK", buf);
    r->env = env;
}

/* --- the plan ------------------------------------------------------------- */

static int check_request(const gpurun_request_t *r, gpurun_error_t *err)
{
    if (r->nodes < 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "nodes must be at least 1 (got %d)", r->nodes);
    if (r->ranks_per_node != GPURUN_UNSET && r->ranks_per_node < 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "ranks_per_node must be at least 1 (got %d)", r->ranks_per_node);
    if (r->gpus_per_rank != GPURUN_UNSET && r->gpus_per_rank < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "gpus_per_rank must be 0 or more (got %d)", r->gpus_per_rank);
    if (r->threads_per_rank != GPURUN_UNSET && r->threads_per_rank < 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "threads_per_rank must be at least 1 (got %d)",
                          r->threads_per_rank);
    if (r->ranks_per_gpu < 1 || r->ranks_per_gpu > 64)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "ranks_per_gpu must be 1 to 64 (got %d)", r->ranks_per_gpu);
    if (r->ranks_per_gpu > 1 && r->gpus_per_rank > 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "ranks_per_gpu = %d and gpus_per_rank = %d contradict each other: ranks share one GPU each",
                          r->ranks_per_gpu, r->gpus_per_rank);
    if (r->ranks_per_gpu > 1 && r->gpus_per_rank == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "ranks_per_gpu = %d and gpus_per_rank = 0 contradict each other: CPU-only ranks share no GPU",
                          r->ranks_per_gpu);
    if ((long)r->nodes * (r->ranks_per_node > 0 ? r->ranks_per_node : 1) > 1000000)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%d nodes × %d ranks is more than gpurun plans (1000000 ranks)",
                          r->nodes, r->ranks_per_node);
    return 0;
}

static void rank_free(gpurun_rank_plan_t *r)
{
    free(r->gpus);
    free(r->nics);
    hwloc_bitmap_free(r->cpuset);
    hwloc_bitmap_free(r->nodeset);
    for (int g = 0; r->gpu_cpus && g < r->ngpus; g++)
        hwloc_bitmap_free(r->gpu_cpus[g]);
    free(r->gpu_cpus);
    free(r->places);
    json_decref(r->env);
}

void gpurun_plan_destroy(gpurun_plan_t *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nranks; i++)
        rank_free(&p->ranks[i]);
    free(p->ranks);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p);
}

static int vendor_rank(const char *vendor)
{
    return !strcmp(vendor, "nvidia") ? 0 : !strcmp(vendor, "amd") ? 1 : 2;
}

static bool in_allocation(const gpurun_request_t *req, const gpurun_gpu_t *g)
{
    if (req->nallowed_gpus < 0)
        return true;
    for (int i = 0; i < req->nallowed_gpus; i++)
        if (req->allowed_gpus[i] == g->index)
            return true;
    return false;
}

/* One GPU vendor per node: a CUDA program cannot use the Radeon iGPU of the
 * workstation's Ryzen, nor get ROCR_VISIBLE_DEVICES.  The vendor with the
 * most GPUs in the allocation, then the one a GPU runtime reported, then
 * NVIDIA, AMD, Intel. */
static const char *plan_vendor(const gpurun_topo_t *t, const gpurun_request_t *req)
{
    const char *best = NULL;
    int best_n = 0;
    bool best_rt = false;
    for (int i = 0; i < t->ngpus; i++) {
        const char *v = t->gpus[i].vendor;
        int n = 0;
        bool rt = false;
        for (int j = 0; j < t->ngpus; j++)
            if (!strcmp(t->gpus[j].vendor, v) && in_allocation(req, &t->gpus[j])) {
                n++;
                rt |= t->gpus[j].runtime;
            }
        if (!best || n > best_n || (n == best_n && rt > best_rt) ||
            (n == best_n && rt == best_rt && vendor_rank(v) < vendor_rank(best))) {
            best = v;
            best_n = n;
            best_rt = rt;
        }
    }
    return best;
}

/* GPUs per rank: each rank a group of gpr GPUs, ranks spread evenly over the
 * groups (shared by consecutive ranks when there are fewer groups). */
static bool gpu_allowed(const gpurun_plan_t *p, const gpurun_gpu_t *g)
{
    return p->gpu_vendor && !strcmp(g->vendor, p->gpu_vendor) && in_allocation(&p->req, g);
}

static bool same_gpus(const gpurun_rank_plan_t *a, const gpurun_rank_plan_t *b)
{
    return a->ngpus == b->ngpus && a->ngpus > 0 && !memcmp(a->gpus, b->gpus, (size_t)a->ngpus * sizeof *a->gpus);
}

/* Which consecutive local ranks got the same GPUs (ranks_per_gpu, or
 * sharing allowed by oversubscribe). */
static void mark_gpu_sharing(gpurun_plan_t *p, int rpn)
{
    for (int r = 0; r < rpn; r++) {
        gpurun_rank_plan_t *rp = &p->ranks[r];
        int first = r, end = r + 1;
        while (first > 0 && same_gpus(&p->ranks[first - 1], rp))
            first--;
        while (end < rpn && same_gpus(&p->ranks[end], rp))
            end++;
        rp->gpu_first_rank = first;
        rp->gpu_nranks = end - first;
    }
}

static int place_gpus(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn, int gpr, int nvendor, gpurun_error_t *err)
{
    int *order = gpurun_plan_gpus_by_locality(t), ngpus = 0;
    for (int i = 0; i < t->ngpus; i++)
        if (gpu_allowed(p, &t->gpus[order[i]]))
            order[ngpus++] = order[i];
    if (gpr > ngpus) {
        free(order);
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "a rank cannot have %d GPUs: the allocation gives %d of %s's %d GPUs", gpr, ngpus,
                          t->hostname, nvendor);
    }
    int units = ngpus / gpr, share = p->req.ranks_per_gpu;
    if (share > 1 && rpn > units * share && !p->req.oversubscribe) {
        free(order);
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%d ranks at %d per GPU need %d GPUs, but %s has %d%s; use ranks_per_node = %d, more "
                          "ranks_per_gpu, or oversubscribe = true",
                          rpn, share, (rpn + share - 1) / share, t->hostname, ngpus,
                          ngpus < nvendor ? " in this allocation" : "", units * share);
    }
    if (share > 1 && rpn <= units * share) {
        /* Consecutive ranks fill each GPU, share at a time: the GPU's
         * locality is one domain, so its ranks get disjoint cores in it. */
        for (int r = 0; r < rpn; r++) {
            gpurun_rank_plan_t *rp = &p->ranks[r];
            int unit = r / share;
            rp->ngpus = 1;
            rp->gpus = gpurun_xcalloc(1, sizeof *rp->gpus);
            rp->gpus[0] = order[unit];
        }
        if (rpn % share)
            gpurun_plan_warn(p, "ranks_per_node = %d is not a multiple of ranks_per_gpu = %d: the last GPU has %d rank%s, "
                      "the others %d each", rpn, share, rpn % share, gpurun_plan_plural(rpn % share), share);
        free(order);
        mark_gpu_sharing(p, rpn);
        return 0;
    }
    if (rpn > units) {
        if (!p->req.oversubscribe) {
            free(order);
            return gpurun_err(err, GPURUN_EXIT_ENV,
                              "%d rank%s with %d GPU%s each need %d GPUs, but %s has %d%s; use ranks_per_node = %d, "
                              "fewer GPUs per rank, or oversubscribe = true to share GPUs",
                              rpn, gpurun_plan_plural(rpn), gpr, gpurun_plan_plural(gpr), rpn * gpr, t->hostname, ngpus,
                              ngpus < nvendor ? " in this allocation" : "", units);
        }
        gpurun_plan_warn(p, "%d ranks share %d GPU%s (%d per rank): ranks on one GPU compete for it", rpn, units * gpr,
                  gpurun_plan_plural(units * gpr), gpr);
    }
    for (int r = 0; r < rpn; r++) {
        gpurun_rank_plan_t *rp = &p->ranks[r];
        int unit = (int)((long)r * units / rpn);
        rp->ngpus = gpr;
        rp->gpus = gpurun_xcalloc((size_t)gpr, sizeof *rp->gpus);
        for (int g = 0; g < gpr; g++)
            rp->gpus[g] = order[unit * gpr + g];
        /* Report GPUs in runtime-index order. */
        for (int a = 1; a < gpr; a++)
            for (int b = a; b > 0 && rp->gpus[b - 1] > rp->gpus[b]; b--) {
                int tmp = rp->gpus[b];
                rp->gpus[b] = rp->gpus[b - 1];
                rp->gpus[b - 1] = tmp;
            }
    }
    free(order);
    mark_gpu_sharing(p, rpn);
    return 0;
}

static void replicate(gpurun_plan_t *p, int rpn)
{
    for (int node = 1; node < p->req.nodes; node++)
        for (int l = 0; l < rpn; l++) {
            const gpurun_rank_plan_t *src = &p->ranks[l];
            gpurun_rank_plan_t *dst = &p->ranks[node * rpn + l];
            *dst = *src;
            dst->gpus = gpurun_xcalloc((size_t)(src->ngpus ? src->ngpus : 1), sizeof(int));
            if (src->ngpus) /* memcpy from NULL is undefined even for 0 bytes */
                memcpy(dst->gpus, src->gpus, (size_t)src->ngpus * sizeof(int));
            dst->nics = gpurun_xcalloc((size_t)(src->nnics ? src->nnics : 1), sizeof(int));
            if (src->nnics)
                memcpy(dst->nics, src->nics, (size_t)src->nnics * sizeof(int));
            dst->cpuset = hwloc_bitmap_dup(src->cpuset);
            dst->nodeset = hwloc_bitmap_dup(src->nodeset);
            if (src->gpu_cpus) {
                dst->gpu_cpus = gpurun_xcalloc((size_t)src->ngpus, sizeof *dst->gpu_cpus);
                for (int g = 0; g < src->ngpus; g++)
                    dst->gpu_cpus[g] = hwloc_bitmap_dup(src->gpu_cpus[g]);
            }
            if (src->places) {
                dst->places = gpurun_xcalloc((size_t)(src->nplaces ? src->nplaces : 1), sizeof *dst->places);
                if (src->nplaces)
                    memcpy(dst->places, src->places, (size_t)src->nplaces * sizeof *dst->places);
            }
            dst->node = node;
            dst->rank = node * rpn + l;
            dst->env = NULL;
        }
}

/* The GPUs a rank may get: the plan's vendor's; what is left out is said,
 * and a GPU count that cannot be met refused.  Fills *nvendor. */
static int check_gpus(gpurun_plan_t *p, int gpr, int *nvendor, gpurun_error_t *err)
{
    const gpurun_topo_t *t = p->topo;
    const gpurun_request_t *req = &p->req;
    int nv = 0;
    p->gpu_vendor = plan_vendor(t, req);
    for (int i = 0; i < t->ngpus; i++)
        nv += !strcmp(t->gpus[i].vendor, p->gpu_vendor);
    *nvendor = nv;
    if (gpr > 0 && nv < t->ngpus) {
        char *others = NULL;
        for (int i = 0; i < t->ngpus; i++)
            if (strcmp(t->gpus[i].vendor, p->gpu_vendor)) {
                char *s = gpurun_xasprintf("%s%s%s (%s %s)", others ? others : "", others ? ", " : "",
                                           t->gpus[i].pci, t->gpus[i].vendor, t->gpus[i].name);
                free(others);
                others = s;
            }
        gpurun_plan_warn(p, "ranks get the %s GPUs only; not planned: %s", p->gpu_vendor, others);
        free(others);
    }
    if (gpr > 0)
        gpurun_plan_warn_no_locality(p);
    if (t->gpus_without_pci) {
        bool one = !strchr(t->gpus_without_pci, ',');
        gpurun_plan_warn(p, "GPU runtime device%s %s %s under no PCI device in the topology (an SoC GPU such as Jetson's, or "
                  "an export made without PCI discovery): gpurun plans PCI GPUs only, so %s not planned",
                  one ? "" : "s", t->gpus_without_pci, one ? "is" : "are", one ? "it is" : "they are");
    }
    if (gpr == 0 && req->ranks_per_gpu > 1)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "ranks_per_gpu = %d, but %s has no GPUs to share; set ranks_per_gpu = 1 to run on CPUs "
                          "only, or run on (or gpurun submit to) a node with GPUs", req->ranks_per_gpu, t->hostname);
    if (gpr > 0 && t->ngpus == 0)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "gpus_per_rank = %d, but %s has no GPUs; set gpus_per_rank = 0 to run on CPUs only, or run "
                          "on (or gpurun submit to) a node with GPUs", gpr,
                          t->hostname);
    if (gpr > nv && nv < t->ngpus)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "a rank cannot have %d GPUs: %s has %d %s GPU%s (GPUs of two vendors are never mixed); use "
                          "gpus_per_rank = %d or fewer", gpr, t->hostname, nv, p->gpu_vendor, gpurun_plan_plural(nv), nv);
    if (gpr > nv)
        return gpurun_err(err, GPURUN_EXIT_ENV, "a rank cannot have %d GPUs: %s has %d; use gpus_per_rank = %d or fewer",
                          gpr, t->hostname, nv, nv);
    return 0;
}

/* The first node's ranks: GPUs, then cores (or, with bind = none, a
 * thread count that fits the node). */
static int place_node(const gpurun_topo_t *t, gpurun_plan_t *p, int gpr, int nvendor, gpurun_error_t *err)
{
    gpurun_request_t *req = &p->req;
    int nd;
    hwloc_bitmap_t *numa = gpurun_plan_cpu_numa_domains(t, &nd);
    if (req->ranks_per_node == GPURUN_UNSET) {
        int usable = 0;
        for (int i = 0; i < t->ngpus; i++)
            usable += gpu_allowed(p, &t->gpus[i]);
        req->ranks_per_node = gpr > 0 ? (usable / gpr > 0 ? usable / gpr : 1) * req->ranks_per_gpu : nd;
    }
    int rpn = req->ranks_per_node;
    p->nranks = req->nodes * rpn;
    p->ranks = gpurun_xcalloc((size_t)p->nranks, sizeof *p->ranks);
    for (int r = 0; r < rpn; r++) {
        p->ranks[r].rank = r;
        p->ranks[r].local_rank = r;
        p->ranks[r].cpuset = hwloc_bitmap_alloc();
        p->ranks[r].nodeset = hwloc_bitmap_alloc();
    }
    int rc = gpr > 0 ? place_gpus(t, p, rpn, gpr, nvendor, err) : 0;
    if (rc == 0 && req->bind == GPURUN_BIND_CLOSEST) {
        rc = gpurun_plan_place_cores(t, p, numa, nd, rpn, gpr, err);
        if (rc == 0)
            gpurun_plan_warn_unused_cores(t, p, rpn);
    } else if (rc == 0) {
        int share = t->cores / rpn;
        for (int r = 0; r < rpn; r++)
            p->ranks[r].threads = req->threads_per_rank != GPURUN_UNSET ? req->threads_per_rank
                                                                      : (share > 0 ? share : 1);
    }
    for (int d = 0; d < nd; d++)
        hwloc_bitmap_free(numa[d]);
    free(numa);
    return rc;
}

int gpurun_plan_create(const gpurun_topo_t *t, const gpurun_request_t *req_in, gpurun_plan_t **planp,
                       gpurun_error_t *err)
{
    if (check_request(req_in, err) < 0)
        return -1;
    gpurun_plan_t *p = gpurun_xcalloc(1, sizeof *p);
    p->topo = t;
    p->req = *req_in;
    gpurun_request_t *req = &p->req;

    if (req->gpus_per_rank == GPURUN_UNSET) /* none where the allocation hides them all (CUDA_VISIBLE_DEVICES=-1) */
        req->gpus_per_rank = t->ngpus > 0 && req->nallowed_gpus != 0 ? 1 : 0;
    int gpr = req->gpus_per_rank, nvendor;
    if (check_gpus(p, gpr, &nvendor, err) < 0 || place_node(t, p, gpr, nvendor, err) < 0) {
        gpurun_plan_destroy(p);
        return -1;
    }
    int rpn = req->ranks_per_node;
    place_nics(t, p, rpn);
    replicate(p, rpn);
    for (int r = 0; r < p->nranks; r++)
        rank_env(t, req, &p->ranks[r]);
    *planp = p;
    return 0;
}

json_t *gpurun_plan_json(const gpurun_plan_t *p)
{
    const gpurun_topo_t *t = p->topo;
    json_t *ranks = json_array(), *warnings = json_array();
    for (int i = 0; i < p->nranks; i++) {
        const gpurun_rank_plan_t *r = &p->ranks[i];
        json_t *gpus = json_array(), *gpu_pci = json_array(), *nics = json_array(), *nic_pci = json_array();
        for (int g = 0; g < r->ngpus; g++) {
            json_array_append_new(gpus, json_integer(t->gpus[r->gpus[g]].index));
            json_array_append_new(gpu_pci, json_string(t->gpus[r->gpus[g]].pci));
        }
        for (int n = 0; n < r->nnics; n++) {
            json_array_append_new(nics, json_string(t->nics[r->nics[n]].name));
            json_array_append_new(nic_pci, json_string(t->nics[r->nics[n]].pci));
        }
        json_t *cpus = json_null();
        if (!hwloc_bitmap_iszero(r->cpuset)) {
            char *s = gpurun_cpuset_list(r->cpuset);
            cpus = json_string(s);
            free(s);
        }
        json_array_append_new(
            ranks, json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:O}", "rank", r->rank, "node",
                             r->node, "local_rank", r->local_rank, "gpus", gpus, "gpu_pci", gpu_pci, "nics", nics,
                             "nic_pci", nic_pci, "nic_affinity",
                             r->nnics ? json_string(gpurun_affinity_name(r->nic_affinity)) : json_null(), "numa",
                             gpurun_nodeset_json(r->nodeset), "cpus", cpus, "threads", r->threads, "env", r->env));
        if (r->ngpus > 1 && r->gpu_cpus) {
            /* Which of its cores go with which of its GPUs (by GPU index);
             * null for a GPU that got none of its own. */
            json_t *gc = json_object();
            for (int g = 0; g < r->ngpus; g++) {
                char key[16];
                snprintf(key, sizeof key, "%d", t->gpus[r->gpus[g]].index);
                json_t *v = json_null();
                if (!hwloc_bitmap_iszero(r->gpu_cpus[g])) {
                    char *s = gpurun_cpuset_list(r->gpu_cpus[g]);
                    v = json_string(s);
                    free(s);
                }
                json_object_set_new(gc, key, v);
            }
            json_object_set_new(json_array_get(ranks, json_array_size(ranks) - 1), "gpu_cpus", gc);
        }
        if (p->req.ranks_per_gpu > 1) {
            /* Which ranks share this rank's GPU, itself included (global numbers). */
            json_t *with = json_array();
            int base = r->rank - r->local_rank;
            for (int k = 0; k < r->gpu_nranks; k++)
                json_array_append_new(with, json_integer(base + r->gpu_first_rank + k));
            json_object_set_new(json_array_get(ranks, json_array_size(ranks) - 1), "gpu_ranks", with);
        }
    }
    for (size_t i = 0; i < p->nwarnings; i++)
        json_array_append_new(warnings, json_string(p->warnings[i]));
    return json_pack("{s:i, s:o, s:o, s:o}", "gpurun_plan", 1, "topology", gpurun_topo_json(t, false), "ranks",
                     ranks, "warnings", warnings);
}
