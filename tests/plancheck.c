/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan_cores.h"
#include "plancheck.h"
#include "util.h"

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

gpurun_topo_t *plancheck_load(const char *path)
{
    gpurun_topo_t *t;
    gpurun_error_t err = {0};
    if (gpurun_topo_load(path, &t, &err) < 0) {
        printf("Bail out! cannot load %s: %s\n", path, err.text);
        exit(1);
    }
    return t;
}

static bool warned(const gpurun_plan_t *p, const char *needle)
{
    for (size_t i = 0; i < p->nwarnings; i++)
        if (strstr(p->warnings[i], needle))
            return true;
    return false;
}

static const char *env_get(const gpurun_rank_plan_t *r, const char *key)
{
    json_t *v = json_object_get(r->env, key);
    return v ? json_string_value(v) : NULL;
}

/* The high-speed NICs nearest to a rank (its GPUs, else its cores), among
 * those of the kind the rank uses. */
static enum gpurun_affinity nearest_nics(const gpurun_topo_t *t, const gpurun_rank_plan_t *r, hwloc_bitmap_t near)
{
    int best = INT_MAX;
    enum gpurun_affinity best_cls = GPURUN_AFF_SYS;
    const char *kind = r->nnics ? t->nics[r->nics[0]].kind : NULL;
    hwloc_bitmap_zero(near);
    for (int n = 0; n < t->nhsnics; n++) {
        enum gpurun_affinity cls = GPURUN_AFF_SYS;
        if (kind && strcmp(t->nics[n].kind, kind))
            continue;
        int d = INT_MAX;
        if (r->ngpus == 0) {
            cls = gpurun_cpu_affinity(t, hwloc_bitmap_iszero(r->cpuset) ? hwloc_topology_get_topology_cpuset(t->hw)
                                                                         : r->cpuset,
                                      t->nics[n].pcidev, &d);
        }
        for (int g = 0; g < r->ngpus; g++) {
            int dg;
            enum gpurun_affinity c = gpurun_pci_affinity(t, t->gpus[r->gpus[g]].pcidev, t->nics[n].pcidev, &dg);
            if (dg < d) {
                d = dg;
                cls = c;
            }
        }
        if (d < best) {
            best = d;
            best_cls = cls;
            hwloc_bitmap_zero(near);
        }
        if (d == best)
            hwloc_bitmap_set(near, (unsigned)n);
    }
    return best_cls;
}

/* The cpus a rank may have near its GPUs: their localities and, with
 * cpu_locality = package, the rest of their packages but for the NUMA
 * domains near any GPU of the plan (every rank's GPUs on the node). */
static void gpu_region(const gpurun_plan_t *p, const gpurun_rank_plan_t *r, hwloc_bitmap_t out)
{
    const gpurun_topo_t *t = p->topo;
    hwloc_bitmap_zero(out);
    for (int g = 0; g < r->ngpus; g++)
        hwloc_bitmap_or(out, out, t->gpus[r->gpus[g]].cpuset);
    if (p->req.cpu_locality != GPURUN_CPULOC_PACKAGE || r->ngpus == 0)
        return;
    hwloc_bitmap_t near = hwloc_bitmap_alloc(), taken = hwloc_bitmap_alloc(), pkgs = hwloc_bitmap_alloc();
    const gpurun_rank_plan_t *rk = &p->ranks[r->node * p->req.ranks_per_node];
    for (int a = 0; a < p->req.ranks_per_node; a++)
        for (int g = 0; g < rk[a].ngpus; g++)
            hwloc_bitmap_or(near, near, t->gpus[rk[a].gpus[g]].cpuset);
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));)
        if (hwloc_bitmap_intersects(n->cpuset, near))
            hwloc_bitmap_or(taken, taken, n->cpuset);
    hwloc_bitmap_or(taken, taken, near);
    int npkg = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
    for (int g = 0; g < r->ngpus; g++) {
        hwloc_const_cpuset_t gc = t->gpus[r->gpus[g]].cpuset;
        for (int k = 0; k < npkg; k++) {
            hwloc_obj_t pk = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, (unsigned)k);
            if (!hwloc_bitmap_iszero(gc) && hwloc_bitmap_isincluded(gc, pk->cpuset))
                hwloc_bitmap_or(pkgs, pkgs, pk->cpuset);
        }
        if (npkg == 0)
            hwloc_bitmap_copy(pkgs, hwloc_topology_get_topology_cpuset(t->hw));
    }
    hwloc_bitmap_andnot(pkgs, pkgs, taken);
    hwloc_bitmap_or(out, out, pkgs);
    hwloc_bitmap_free(near);
    hwloc_bitmap_free(taken);
    hwloc_bitmap_free(pkgs);
}

/* OMP_PLACES as a list of PUs, in order: "{16}:16,{0}" is 16..31, 0.
 * 0 with the list, 1 for "cores"/"threads", -1 when malformed. */
static int places_list(const char *v, int *pus, int cap, int *n)
{
    *n = 0;
    if (!strcmp(v, "cores") || !strcmp(v, "threads"))
        return 1;
    while (*v) {
        int first, len = 1, used = 0;
        if (sscanf(v, "{%d}%n", &first, &used) != 1 || used == 0)
            return -1;
        v += used;
        if (*v == ':') {
            used = 0;
            if (sscanf(v, ":%d%n", &len, &used) != 1 || used == 0 || len < 1)
                return -1;
            v += used;
        }
        for (int i = 0; i < len; i++) {
            if (*n >= cap)
                return -1;
            pus[(*n)++] = first + i;
        }
        if (*v == ',')
            v++;
        else if (*v)
            return -1;
    }
    return 0;
}

static bool plain(hwloc_obj_t n)
{
    return !n->subtype || !strcasecmp(n->subtype, "DRAM");
}

/* A NUMA node the rank's memory is bound to although it is not the own
 * memory of its cores: another node of the rank's cores has a cpuset inside
 * its own (it is memory of a wider object, such as a CXL node hanging from
 * the machine), or it shares its cpuset with a bound node or with a plain
 * DRAM node while it is HBM/NVM itself.  -1 when there is none. */
static int memory_not_own(const gpurun_topo_t *t, const gpurun_rank_plan_t *r)
{
    int i;
    hwloc_bitmap_foreach_begin(i, r->nodeset)
    {
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)i);
        for (hwloc_obj_t m = NULL; n && (m = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, m));) {
            if (m == n || hwloc_bitmap_iszero(m->cpuset) || !hwloc_bitmap_intersects(m->cpuset, r->cpuset))
                continue;
            bool inside = hwloc_bitmap_isincluded(m->cpuset, n->cpuset);
            bool same = hwloc_bitmap_isequal(m->cpuset, n->cpuset);
            bool twice = same && hwloc_bitmap_isset(r->nodeset, m->os_index) && m->os_index < n->os_index;
            if ((inside && !same) || twice || (same && plain(m) && !plain(n)))
                return i;
        }
    }
    hwloc_bitmap_foreach_end();
    return -1;
}

/* Whether a node of the rank's cores that no other node of them is nearer
 * than (no smaller cpuset inside its own) has memory. */
static bool own_memory(const gpurun_topo_t *t, const gpurun_rank_plan_t *r)
{
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));) {
        if (!hwloc_bitmap_intersects(n->cpuset, r->cpuset) || n->attr->numanode.local_memory == 0)
            continue;
        bool nearest = true;
        for (hwloc_obj_t m = NULL; nearest && (m = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, m));)
            if (m != n && hwloc_bitmap_intersects(m->cpuset, r->cpuset) && hwloc_bitmap_isincluded(m->cpuset, n->cpuset) &&
                !hwloc_bitmap_isequal(m->cpuset, n->cpuset))
                nearest = false;
        if (nearest)
            return true;
    }
    return false;
}

/* How many CPU domains (distinct NUMA cpusets with no other node's inside),
 * and in *used how many of them hold some of `cpus`. */
static int cpu_domains(const gpurun_topo_t *t, hwloc_const_cpuset_t cpus, int *used)
{
    int count = 0;
    *used = 0;
    for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));) {
        bool counted = hwloc_bitmap_iszero(n->cpuset);
        for (hwloc_obj_t m = NULL; !counted && (m = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, m));)
            if (m != n && !hwloc_bitmap_iszero(m->cpuset) && hwloc_bitmap_isincluded(m->cpuset, n->cpuset) &&
                (!hwloc_bitmap_isequal(m->cpuset, n->cpuset) || m->logical_index < n->logical_index))
                counted = true; /* wider than another node, or its cpuset was counted already */
        count += !counted;
        *used += !counted && hwloc_bitmap_intersects(n->cpuset, cpus);
    }
    return count;
}

/* Memory on the NUMA nodes of its cores, and only on their own, unless
 * those have no memory at all (then on nodes that have some, with a warning). */
static int check_memory(const gpurun_plan_t *p, const gpurun_rank_plan_t *r, char *why, size_t len)
{
    const gpurun_topo_t *t = p->topo;
    if (!own_memory(t, r) && hwloc_get_root_obj(t->hw)->total_memory > 0) {
        if (!warned(p, "no memory"))
            return fail(why, len, "rank %d's own NUMA nodes have no memory, and no warning says so", r->rank);
        int i;
        hwloc_bitmap_foreach_begin(i, r->nodeset)
        {
            if (hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)i)->attr->numanode.local_memory == 0)
                return fail(why, len, "rank %d's memory is bound to NUMA node %d, which has none", r->rank, i);
        }
        hwloc_bitmap_foreach_end();
        return 0;
    }
    hwloc_bitmap_t local = hwloc_bitmap_alloc();
    hwloc_cpuset_to_nodeset(t->hw, r->cpuset, local);
    int ok = !hwloc_bitmap_iszero(r->nodeset) && hwloc_bitmap_isincluded(r->nodeset, local);
    hwloc_bitmap_free(local);
    if (!ok)
        return fail(why, len, "rank %d's memory is not on its cores' NUMA nodes", r->rank);
    int node = memory_not_own(t, r);
    if (node >= 0)
        return fail(why, len, "rank %d's memory is on NUMA node %d, which is not its cores' own memory", r->rank, node);
    return 0;
}

static int check_rank(const gpurun_plan_t *p, const gpurun_rank_plan_t *r, char *why, size_t len)
{
    const gpurun_topo_t *t = p->topo;
    const gpurun_request_t *q = &p->req;
    if (r->ngpus != q->gpus_per_rank)
        return fail(why, len, "rank %d has %d GPUs, asked %d", r->rank, r->ngpus, q->gpus_per_rank);
    if (r->threads < 1)
        return fail(why, len, "rank %d has %d threads", r->rank, r->threads);
    char buf[32];
    snprintf(buf, sizeof buf, "%d", r->threads);
    if (!env_get(r, "OMP_NUM_THREADS") || strcmp(env_get(r, "OMP_NUM_THREADS"), buf))
        return fail(why, len, "rank %d: OMP_NUM_THREADS differs from its %d threads", r->rank, r->threads);
    snprintf(buf, sizeof buf, "%d", r->rank);
    if (!env_get(r, "GPURUN_RANK") || strcmp(env_get(r, "GPURUN_RANK"), buf))
        return fail(why, len, "rank %d: GPURUN_RANK is wrong", r->rank);

    /* GPUs: distinct within the rank, and the visibility variable lists them. */
    for (int a = 0; a < r->ngpus; a++)
        for (int b = a + 1; b < r->ngpus; b++)
            if (r->gpus[a] == r->gpus[b])
                return fail(why, len, "rank %d has GPU %d twice", r->rank, r->gpus[a]);
    if (r->ngpus && !strcmp(t->gpus[r->gpus[0]].vendor, "nvidia") && q->gpu_visibility == GPURUN_GPUVIS_ISOLATE) {
        char want[256] = "";
        size_t l = 0;
        for (int g = 0; g < r->ngpus && l < sizeof want; g++) {
            /* the allocation's renumbered name: the item of visible_cuda at
             * the GPU's place in allowed_gpus */
            int index = t->gpus[r->gpus[g]].index, place = -1;
            for (int a = 0; q->visible_cuda && a < q->nallowed_gpus; a++)
                if (q->allowed_gpus[a] == index)
                    place = a;
            const char *item = q->visible_cuda;
            for (int k = 0; item && k < place; k++)
                item = strchr(item, ',') ? strchr(item, ',') + 1 : NULL;
            if (place >= 0 && item)
                l += (size_t)snprintf(want + l, sizeof want - l, "%s%.*s", g ? "," : "", (int)strcspn(item, ","), item);
            else
                l += (size_t)snprintf(want + l, sizeof want - l, "%s%d", g ? "," : "", index);
        }
        const char *cvd = env_get(r, "CUDA_VISIBLE_DEVICES");
        if (!cvd || strcmp(cvd, want))
            return fail(why, len, "rank %d: CUDA_VISIBLE_DEVICES=%s, GPUs %s", r->rank, cvd ? cvd : "(unset)", want);
        if (!env_get(r, "CUDA_DEVICE_ORDER") || strcmp(env_get(r, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID"))
            return fail(why, len, "rank %d: CUDA_DEVICE_ORDER is not PCI_BUS_ID", r->rank);
    }

    if (q->bind == GPURUN_BIND_NONE) {
        if (!hwloc_bitmap_iszero(r->cpuset) || env_get(r, "OMP_PROC_BIND"))
            return fail(why, len, "rank %d is bound although bind = none", r->rank);
    } else {
        if (hwloc_bitmap_iszero(r->cpuset))
            return fail(why, len, "rank %d has no cpus", r->rank);
        /* No offline or disallowed PU. */
        if (!hwloc_bitmap_isincluded(r->cpuset, hwloc_topology_get_topology_cpuset(t->hw)) ||
            !hwloc_bitmap_isincluded(r->cpuset, hwloc_topology_get_allowed_cpuset(t->hw)))
            return fail(why, len, "rank %d has an offline or disallowed PU", r->rank);
        /* Inside its GPUs' locality, or with cpu_locality = package on
         * their packages' NUMA nodes without GPUs (unless the planner said
         * it had to widen). */
        if (r->ngpus && !warned(p, "no usable cores")) {
            hwloc_bitmap_t loc = hwloc_bitmap_alloc();
            gpu_region(p, r, loc);
            int inside = hwloc_bitmap_isincluded(r->cpuset, loc);
            hwloc_bitmap_free(loc);
            if (!inside)
                return fail(why, len, "rank %d's cpus leave its GPUs' locality%s", r->rank,
                            q->cpu_locality == GPURUN_CPULOC_PACKAGE ? " and their packages' NUMA nodes without GPUs"
                                                                     : "");
        }
        /* Every GPU of the rank has cores near it, as many as its share of
         * threads_per_rank, when the rank has cores for all of them. */
        if (r->ngpus > 1 && !warned(p, "no usable cores") && !warned(p, "share")) {
            int ndom = 0, bad = -1, ncores = 0;
            for (int g = 0; g < r->ngpus; g++) {
                bool dup = false;
                for (int h = 0; h < g; h++)
                    dup |= hwloc_bitmap_isequal(t->gpus[r->gpus[h]].cpuset, t->gpus[r->gpus[g]].cpuset);
                ndom += !dup;
            }
            for (hwloc_obj_t c = NULL;
                 (c = hwloc_get_next_obj_covering_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_CORE, c));)
                ncores++;
            if (ncores == 0)
                ncores = hwloc_bitmap_weight(r->cpuset);
            for (int g = 0; g < r->ngpus && ncores >= ndom && bad < 0; g++)
                if (!hwloc_bitmap_intersects(r->cpuset, t->gpus[r->gpus[g]].cpuset))
                    bad = g;
            if (bad >= 0)
                return fail(why, len, "rank %d has %d cores for %d GPU localities, none near GPU %d", r->rank, ncores,
                            ndom, t->gpus[r->gpus[bad]].index);
            if (q->threads_per_rank != GPURUN_UNSET && !q->smt) {
                for (int g = 0; g < r->ngpus; g++) {
                    int same = 0;
                    for (int h = 0; h < r->ngpus; h++)
                        same += hwloc_bitmap_isequal(t->gpus[r->gpus[h]].cpuset, t->gpus[r->gpus[g]].cpuset);
                    hwloc_bitmap_t in = hwloc_bitmap_alloc();
                    hwloc_bitmap_and(in, r->cpuset, t->gpus[r->gpus[g]].cpuset);
                    double want = (double)q->threads_per_rank * same / r->ngpus;
                    int got = hwloc_bitmap_weight(in);
                    hwloc_bitmap_free(in);
                    if (got < want - 1 || got > want + 1)
                        return fail(why, len, "rank %d has %d cpus near GPU %d, its share of %d threads is %.1f",
                                    r->rank, got, t->gpus[r->gpus[g]].index, q->threads_per_rank, want);
                }
            }
        }
        /* Which cores go with which GPU: every GPU listed, each its rank's
         * cores only, all of them together its cores (the plan document
         * says so for a rank of several GPUs). */
        if (r->ngpus > 1) {
            if (!r->gpu_cpus)
                return fail(why, len, "rank %d has %d GPUs and no gpu_cpus", r->rank, r->ngpus);
            hwloc_bitmap_t all = hwloc_bitmap_alloc();
            int bad = -1;
            for (int g = 0; g < r->ngpus; g++) {
                if (!hwloc_bitmap_isincluded(r->gpu_cpus[g], r->cpuset))
                    bad = g;
                hwloc_bitmap_or(all, all, r->gpu_cpus[g]);
            }
            int whole = hwloc_bitmap_isequal(all, r->cpuset);
            hwloc_bitmap_free(all);
            if (bad >= 0 || !whole)
                return fail(why, len, "rank %d: its gpu_cpus are not its cpus, shared out (GPU %d)", r->rank,
                            bad >= 0 ? t->gpus[r->gpus[bad]].index : -1);
            json_t *doc = gpurun_plan_json(p);
            json_t *gc = json_object_get(json_array_get(json_object_get(doc, "ranks"), (size_t)r->rank), "gpu_cpus");
            bool listed = json_is_object(gc) && json_object_size(gc) == (size_t)r->ngpus;
            for (int g = 0; g < r->ngpus && listed; g++) {
                char key[16];
                snprintf(key, sizeof key, "%d", t->gpus[r->gpus[g]].index);
                json_t *v = json_object_get(gc, key);
                char *want = hwloc_bitmap_iszero(r->gpu_cpus[g]) ? NULL : gpurun_cpuset_list(r->gpu_cpus[g]);
                listed = want ? json_is_string(v) && !strcmp(json_string_value(v), want) : json_is_null(v);
                free(want);
            }
            json_decref(doc);
            if (!listed)
                return fail(why, len, "rank %d: the plan document's gpu_cpus do not list its GPUs' cpus", r->rank);
        }
        /* OpenMP places: every PU of the rank once, the first near its
         * first GPU (so the thread that drives it, and its memory, are). */
        const char *pl = env_get(r, "OMP_PLACES");
        int cap = hwloc_bitmap_weight(r->cpuset) + 1, npl = 0;
        int *pus = gpurun_xcalloc((size_t)cap, sizeof *pus);
        int form = pl ? places_list(pl, pus, cap, &npl) : -1;
        int first = form == 0 && npl ? pus[0] : hwloc_bitmap_first(r->cpuset);
        bool each_once = form == 1;
        if (form == 0) {
            hwloc_bitmap_t got = hwloc_bitmap_alloc();
            each_once = npl == hwloc_bitmap_weight(r->cpuset);
            for (int i = 0; i < npl; i++) {
                each_once &= !hwloc_bitmap_isset(got, (unsigned)pus[i]);
                hwloc_bitmap_set(got, (unsigned)pus[i]);
            }
            each_once &= hwloc_bitmap_isequal(got, r->cpuset);
            hwloc_bitmap_free(got);
        }
        free(pus);
        if (!each_once)
            return fail(why, len, "rank %d: OMP_PLACES=%s does not list its cpus once each", r->rank, pl ? pl : "(unset)");
        if (r->ngpus && hwloc_bitmap_intersects(r->cpuset, t->gpus[r->gpus[0]].cpuset) &&
            !hwloc_bitmap_isset(t->gpus[r->gpus[0]].cpuset, (unsigned)first))
            return fail(why, len, "rank %d: its first OpenMP place (PU %d, OMP_PLACES=%s) is not near its first GPU",
                        r->rank, first, pl);
        /* One PU per core unless smt. */
        hwloc_obj_t core = NULL;
        while ((core = hwloc_get_next_obj_covering_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_CORE, core))) {
            hwloc_bitmap_t in = hwloc_bitmap_alloc();
            hwloc_bitmap_and(in, core->cpuset, r->cpuset);
            int w = hwloc_bitmap_weight(in), full = hwloc_bitmap_isequal(in, core->cpuset);
            hwloc_bitmap_free(in);
            if (!q->smt && w != 1)
                return fail(why, len, "rank %d has %d PUs of one core without smt", r->rank, w);
            if (q->smt && !full)
                return fail(why, len, "rank %d has part of a core with smt", r->rank);
        }
        if (check_memory(p, r, why, len) < 0)
            return -1;
        /* On a hybrid CPU a rank's cores (the kind of their first PU) are of
         * one class of kinds, unless warned. */
        if (hwloc_cpukinds_get_nr(t->hw, 0) > 1) {
            int kind = -2;
            bool mixed = false;
            hwloc_obj_t c = NULL;
            while ((c = hwloc_get_next_obj_covering_cpuset_by_type(t->hw, r->cpuset, HWLOC_OBJ_CORE, c))) {
                int k = gpurun_core_class(t, c);
                mixed |= kind != -2 && k != kind;
                kind = k;
            }
            if (mixed && !warned(p, "mix"))
                return fail(why, len, "rank %d mixes CPU kinds without a warning", r->rank);
        }
        if (r->threads > hwloc_bitmap_weight(r->cpuset) && !p->req.oversubscribe &&
            q->threads_per_rank == GPURUN_UNSET)
            return fail(why, len, "rank %d has more default threads than PUs", r->rank);
    }

    /* Nearest NICs: nothing nearer exists, and the class is the right one. */
    if (t->nhsnics > 0 && r->nnics == 0)
        return fail(why, len, "rank %d got no NIC although the node has %d", r->rank, t->nhsnics);
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    enum gpurun_affinity best_cls = nearest_nics(t, r, near);
    for (int i = 0; i < r->nnics; i++) {
        if (r->nics[i] < 0 || r->nics[i] >= t->nhsnics || !hwloc_bitmap_isset(near, (unsigned)r->nics[i])) {
            hwloc_bitmap_free(near);
            return fail(why, len, "rank %d got %s, but a nearer high-speed NIC exists", r->rank,
                        t->nics[r->nics[i]].name);
        }
    }
    hwloc_bitmap_free(near);
    if (r->nnics && r->nic_affinity != best_cls)
        return fail(why, len, "rank %d: nic_affinity %s, nearest is %s", r->rank, gpurun_affinity_name(r->nic_affinity),
                    gpurun_affinity_name(best_cls));
    return 0;
}

int plancheck(const gpurun_plan_t *p, char *why, size_t len)
{
    const gpurun_topo_t *t = p->topo;
    int rpn = p->req.ranks_per_node;
    if (p->nranks != p->req.nodes * rpn)
        return fail(why, len, "%d ranks for %d nodes x %d", p->nranks, p->req.nodes, rpn);
    for (int i = 0; i < p->nranks; i++) {
        const gpurun_rank_plan_t *r = &p->ranks[i];
        if (r->rank != i || r->node != i / rpn || r->local_rank != i % rpn)
            return fail(why, len, "rank %d is numbered %d/%d/%d", i, r->rank, r->node, r->local_rank);
        if (check_rank(p, r, why, len) < 0)
            return -1;
    }
    bool shared = p->req.oversubscribe && p->nwarnings > 0;
    int rpg = p->req.ranks_per_gpu;
    for (int node = 0; node < p->req.nodes; node++) {
        const gpurun_rank_plan_t *rk = &p->ranks[node * rpn];
        /* ranks_per_gpu = N: local ranks kN..kN+N-1 share one GPU, and
         * each rank's record of its sharers says so. */
        for (int a = 0; rpg > 1 && !p->req.oversubscribe && a < rpn; a++) {
            int first = a / rpg * rpg, n = rpn - first < rpg ? rpn - first : rpg;
            if (rk[a].ngpus != 1 || rk[first].ngpus != 1 || rk[a].gpus[0] != rk[first].gpus[0])
                return fail(why, len, "rank %d is not on the GPU of rank %d (ranks_per_gpu = %d)", rk[a].rank,
                            rk[first].rank, rpg);
            if (rk[a].gpu_first_rank != first || rk[a].gpu_nranks != n)
                return fail(why, len, "rank %d: sharers %d+%d, want %d+%d", rk[a].rank, rk[a].gpu_first_rank,
                            rk[a].gpu_nranks, first, n);
        }
        for (int a = 0; a < rpn; a++)
            for (int b = a + 1; b < rpn; b++) {
                bool rpg_pair = rpg > 1 && !p->req.oversubscribe && a / rpg == b / rpg;
                /* GPUs and cores are never shared unless sharing was allowed and announced. */
                for (int x = 0; x < rk[a].ngpus; x++)
                    for (int y = 0; y < rk[b].ngpus; y++)
                        if (rk[a].gpus[x] == rk[b].gpus[y] && !rpg_pair && !(shared && warned(p, "share")))
                            return fail(why, len, "ranks %d and %d share GPU %d", rk[a].rank, rk[b].rank,
                                        t->gpus[rk[a].gpus[x]].index);
                hwloc_obj_t core = NULL;
                while ((core = hwloc_get_next_obj_covering_cpuset_by_type(t->hw, rk[a].cpuset, HWLOC_OBJ_CORE,
                                                                          core)))
                    if (hwloc_bitmap_intersects(core->cpuset, rk[b].cpuset) && !(shared && warned(p, "share")))
                        return fail(why, len, "ranks %d and %d share a core", rk[a].rank, rk[b].rank);
                if (hwloc_bitmap_intersects(rk[a].cpuset, rk[b].cpuset) && !(shared && warned(p, "share")))
                    return fail(why, len, "ranks %d and %d share cpus", rk[a].rank, rk[b].rank);
            }
        /* One GPU vendor: a program is built for one runtime. */
        for (int a = 0; a < rpn; a++)
            for (int x = 0; x < rk[a].ngpus; x++)
                if (strcmp(t->gpus[rk[a].gpus[x]].vendor, t->gpus[rk[0].gpus[0]].vendor))
                    return fail(why, len, "ranks %d and %d get GPUs of two vendors", rk[0].rank, rk[a].rank);
        /* One fabric: every rank's NICs of one kind (ranks on different
         * networks could not reach each other). */
        for (int a = 0; a < rpn; a++)
            for (int x = 0; x < rk[a].nnics; x++)
                if (strcmp(t->nics[rk[a].nics[x]].kind, t->nics[rk[0].nics[0]].kind))
                    return fail(why, len, "rank %d uses %s (%s), rank %d %s (%s): two fabrics", rk[a].rank,
                                t->nics[rk[a].nics[x]].name, t->nics[rk[a].nics[x]].kind, rk[0].rank,
                                t->nics[rk[0].nics[0]].name, t->nics[rk[0].nics[0]].kind);
        /* Equally near NICs are spread. */
        if (t->nhsnics > 0) {
            hwloc_bitmap_t *near = gpurun_xcalloc((size_t)rpn, sizeof *near);
            int *load = gpurun_xcalloc((size_t)t->nhsnics, sizeof *load);
            for (int a = 0; a < rpn; a++) {
                near[a] = hwloc_bitmap_alloc();
                nearest_nics(t, &rk[a], near[a]);
            }
            int rc = 0;
            for (int a = 0; a < rpn; a++)
                for (int x = 0; x < rk[a].nnics; x++)
                    load[rk[a].nics[x]]++;
            /* No rank sits on a NIC two ranks busier than an equally near one. */
            for (int a = 0; a < rpn && rc == 0; a++)
                for (int x = 0; x < rk[a].nnics && rc == 0; x++) {
                    int n, chosen = rk[a].nics[x];
                    hwloc_bitmap_foreach_begin(n, near[a])
                    {
                        if (rc == 0 && load[chosen] > load[n] + 1)
                            rc = fail(why, len, "rank %d uses %s (%d ranks) while equally near %s has %d (node %d)",
                                      rk[a].rank, t->nics[chosen].name, load[chosen], t->nics[n].name, load[n],
                                      node);
                    }
                    hwloc_bitmap_foreach_end();
                }
            for (int a = 0; a < rpn; a++)
                hwloc_bitmap_free(near[a]);
            free(near);
            free(load);
            if (rc < 0)
                return -1;
        }
    }
    /* Ranks share a PU only once every PU they could have has a rank
     * (SMT siblings first), and a warning says how many share each. */
    if (p->req.bind == GPURUN_BIND_CLOSEST) {
        const gpurun_rank_plan_t *rk = &p->ranks[0];
        int last = hwloc_bitmap_last(hwloc_topology_get_topology_cpuset(t->hw)), most = 0;
        int *load = gpurun_xcalloc((size_t)(last + 2), sizeof *load);
        for (int a = 0; a < rpn; a++) {
            int pu;
            hwloc_bitmap_foreach_begin(pu, rk[a].cpuset)
            {
                if (pu <= last && ++load[pu] > most)
                    most = load[pu];
            }
            hwloc_bitmap_foreach_end();
        }
        int rc = 0;
        char count[64];
        snprintf(count, sizeof count, "have %d ranks", most);
        if (most > 1 && (!warned(p, "compete for cores") || !warned(p, count)))
            rc = fail(why, len, "%d ranks on one PU, and no warning says the PUs %s", most, count);
        hwloc_bitmap_t region = hwloc_bitmap_alloc();
        for (int a = 0; a < rpn && most > 1 && rc == 0 && !p->req.smt; a++) {
            bool stacked = false;
            int pu;
            hwloc_bitmap_foreach_begin(pu, rk[a].cpuset)
            {
                stacked |= pu <= last && load[pu] > 1;
            }
            hwloc_bitmap_foreach_end();
            if (!stacked)
                continue;
            if (rk[a].ngpus)
                gpu_region(p, &rk[a], region);
            else
                for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, n));)
                    if (hwloc_bitmap_intersects(n->cpuset, rk[a].cpuset))
                        hwloc_bitmap_or(region, region, n->cpuset);
            hwloc_obj_type_t ct = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
            for (hwloc_obj_t c = NULL; rc == 0 && (c = hwloc_get_next_obj_by_type(t->hw, ct, c));) {
                if (hwloc_bitmap_iszero(c->cpuset) || !hwloc_bitmap_isincluded(c->cpuset, region) ||
                    (p->req.allowed_cpus && !hwloc_bitmap_isincluded(c->cpuset, p->req.allowed_cpus)))
                    continue;
                hwloc_bitmap_foreach_begin(pu, c->cpuset)
                {
                    if (rc == 0 && pu <= last && load[pu] == 0)
                        rc = fail(why, len, "rank %d shares a PU with another rank while PU %d near it has none",
                                  rk[a].rank, pu);
                }
                hwloc_bitmap_foreach_end();
            }
        }
        /* cpu_locality = package, no threads_per_rank: a package's NUMA
         * nodes without GPUs are shared out among its GPU ranks (fewer idle
         * cores there than the ranks' GPUs in the package). */
        if (rc == 0 && p->req.cpu_locality == GPURUN_CPULOC_PACKAGE && p->req.threads_per_rank == GPURUN_UNSET &&
            p->req.gpus_per_rank > 0 && most <= 1) {
            int npkg = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
            hwloc_bitmap_t used = hwloc_bitmap_alloc();
            for (int a = 0; a < rpn; a++)
                hwloc_bitmap_or(used, used, rk[a].cpuset);
            for (int k = 0; k < npkg && rc == 0; k++) {
                hwloc_obj_t pk = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, (unsigned)k);
                int gpus = 0, idle = 0;
                hwloc_bitmap_zero(region);
                for (int a = 0; a < rpn; a++)
                    for (int g = 0; g < rk[a].ngpus; g++)
                        if (hwloc_bitmap_isincluded(t->gpus[rk[a].gpus[g]].cpuset, pk->cpuset) &&
                            !hwloc_bitmap_iszero(t->gpus[rk[a].gpus[g]].cpuset)) {
                            gpus++;
                            hwloc_bitmap_t one = hwloc_bitmap_alloc();
                            gpu_region(p, &rk[a], one); /* its package's part without GPUs */
                            for (int h = 0; h < rk[a].ngpus; h++)
                                hwloc_bitmap_andnot(one, one, t->gpus[rk[a].gpus[h]].cpuset);
                            hwloc_bitmap_and(one, one, pk->cpuset);
                            hwloc_bitmap_or(region, region, one);
                            hwloc_bitmap_free(one);
                        }
                if (gpus == 0)
                    continue;
                for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_CORE, c));)
                    if (!hwloc_bitmap_iszero(c->cpuset) && hwloc_bitmap_isincluded(c->cpuset, region) &&
                        (!p->req.allowed_cpus || hwloc_bitmap_isincluded(c->cpuset, p->req.allowed_cpus)))
                        idle += !hwloc_bitmap_intersects(c->cpuset, used);
                if (idle >= gpus)
                    rc = fail(why, len, "package %u: %d cores of its NUMA nodes without GPUs are idle, with %d GPU%s "
                              "in its ranks", pk->os_index, idle, gpus, gpus == 1 ? "" : "s");
            }
            hwloc_bitmap_free(used);
        }
        hwloc_bitmap_free(region);
        free(load);
        if (rc < 0)
            return -1;
    }
    /* CPU-only ranks use every NUMA domain they can. */
    if (p->req.gpus_per_rank == 0 && p->req.bind == GPURUN_BIND_CLOSEST) {
        hwloc_bitmap_t used = hwloc_bitmap_alloc();
        for (int a = 0; a < rpn; a++)
            hwloc_bitmap_or(used, used, p->ranks[a].cpuset);
        int got = 0, domains = cpu_domains(t, used, &got);
        int want = domains < rpn ? domains : rpn;
        hwloc_bitmap_free(used);
        if (got < want)
            return fail(why, len, "%d CPU-only ranks use the cores of %d NUMA domains, %d available", rpn, got, want);
    }
    return 0;
}

static const char *visible(const gpurun_rank_plan_t *r)
{
    const char *v = env_get(r, "CUDA_VISIBLE_DEVICES");
    if (!v)
        v = env_get(r, "ROCR_VISIBLE_DEVICES");
    if (!v)
        v = env_get(r, "ZE_AFFINITY_MASK");
    return v;
}

int plancheck_ranks_per_gpu(const gpurun_plan_t *p, int n, char *why, size_t len)
{
    const gpurun_topo_t *t = p->topo;
    int rpn = p->req.ranks_per_node;
    bool cores_shared = p->req.oversubscribe && warned(p, "compete for cores");
    json_t *doc = gpurun_plan_json(p);
    json_t *jranks = json_object_get(doc, "ranks");
    int rc = 0;
    for (int i = 0; i < p->nranks && rc == 0; i++) {
        const gpurun_rank_plan_t *r = &p->ranks[i];
        if (r->ngpus != 1) {
            rc = fail(why, len, "rank %d has %d GPUs", i, r->ngpus);
            break;
        }
        /* Its sharers: every rank of its node on the same GPU. */
        json_t *want = json_array();
        int count = 0;
        for (int k = r->node * rpn; k < (r->node + 1) * rpn; k++) {
            const gpurun_rank_plan_t *o = &p->ranks[k];
            if (o->ngpus != 1 || o->gpus[0] != r->gpus[0])
                continue;
            count++;
            json_array_append_new(want, json_integer(k));
            if (k != i && (!visible(o) || !visible(r) || strcmp(visible(o), visible(r))))
                rc = fail(why, len, "ranks %d and %d share GPU %d but see %s and %s", i, k, t->gpus[r->gpus[0]].index,
                          visible(r) ? visible(r) : "(unset)", visible(o) ? visible(o) : "(unset)");
            else if (k != i && !cores_shared && hwloc_bitmap_intersects(o->cpuset, r->cpuset))
                rc = fail(why, len, "ranks %d and %d share GPU %d and cpus", i, k, t->gpus[r->gpus[0]].index);
        }
        int last_gpu_ranks = rpn % n ? rpn % n : n;
        bool last = r->local_rank >= rpn - last_gpu_ranks;
        if (rc == 0 && count != (last ? last_gpu_ranks : n))
            rc = fail(why, len, "GPU %d has %d ranks, ranks_per_gpu = %d", t->gpus[r->gpus[0]].index, count, n);
        hwloc_bitmap_t region = hwloc_bitmap_alloc();
        gpu_region(p, r, region);
        if (rc == 0 && !hwloc_bitmap_isincluded(r->cpuset, region) && !warned(p, "no usable cores"))
            rc = fail(why, len, "rank %d's cpus leave its GPU's locality", i);
        hwloc_bitmap_free(region);
        if (rc == 0 && !json_equal(json_object_get(json_array_get(jranks, (size_t)i), "gpu_ranks"), want)) {
            char *got = json_dumps(json_object_get(json_array_get(jranks, (size_t)i), "gpu_ranks"), JSON_ENCODE_ANY);
            char *w = json_dumps(want, 0);
            rc = fail(why, len, "rank %d: gpu_ranks %s, want %s", i, got ? got : "(none)", w);
            free(got);
            free(w);
        }
        json_decref(want);
    }
    json_decref(doc);
    return rc;
}
