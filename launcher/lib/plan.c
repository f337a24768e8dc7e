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

static void plan_warn(gpurun_plan_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void plan_warn(gpurun_plan_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    p->warnings = gpurun_xrealloc(p->warnings, (p->nwarnings + 1) * sizeof *p->warnings);
    p->warnings[p->nwarnings++] = s;
}

static const char *plural(long n)
{
    return n == 1 ? "" : "s";
}

/* --- GPUs ---------------------------------------------------------------- */

/* A GPU that hwloc hangs from the whole machine has no locality in the
 * export (a VM whose PCI devices report no NUMA node, an old kernel): on a
 * node of several NUMA domains its ranks' cores and memory are then spread
 * by count, not chosen by nearness, and the plan says so. */
static void warn_no_locality(gpurun_plan_t *p)
{
    const gpurun_topo_t *t = p->topo;
    if (hwloc_bitmap_weight(t->home_nodes) < 2)
        return;
    hwloc_obj_t root = hwloc_get_root_obj(t->hw);
    char *list = NULL;
    int n = 0;
    for (int i = 0; i < t->ngpus; i++) {
        const gpurun_gpu_t *g = &t->gpus[i];
        if (strcmp(g->vendor, p->gpu_vendor) || g->locality != root || (i > 0 && t->gpus[i - 1].pcidev == g->pcidev))
            continue; /* partitions of one GPU are listed once */
        char *s = gpurun_xasprintf("%s%s%s", list ? list : "", list ? ", " : "", g->pci);
        free(list);
        list = s;
        n++;
    }
    if (n)
        plan_warn(p, "GPU%s %s %s no NUMA locality in the topology (hwloc puts %s under the whole machine, as in a VM "
                  "whose PCI devices report no NUMA node): %s ranks' cores and memory are spread over the node, not "
                  "chosen by nearness", plural(n), list, n == 1 ? "has" : "have", n == 1 ? "it" : "them",
                  n == 1 ? "its" : "their");
    free(list);
}

struct gpu_order {
    int gpu;
    unsigned first_pu; /* logical index of the first PU local to the GPU */
};

static int gpu_order_cmp(const void *a, const void *b)
{
    const struct gpu_order *x = a, *y = b;
    if (x->first_pu != y->first_pu)
        return x->first_pu < y->first_pu ? -1 : 1;
    return x->gpu - y->gpu; /* topo->gpus is in PCI order */
}

/* GPUs in locality order: consecutive ranks land on neighbouring GPUs and
 * cores, whatever order the PCI bus numbers the GPUs in. */
static int *gpus_by_locality(const gpurun_topo_t *t)
{
    struct gpu_order *o = gpurun_xcalloc((size_t)t->ngpus, sizeof *o);
    for (int i = 0; i < t->ngpus; i++) {
        int first = hwloc_bitmap_first(t->gpus[i].cpuset);
        hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)first) : NULL;
        o[i].gpu = i;
        o[i].first_pu = pu ? pu->logical_index : UINT_MAX;
    }
    qsort(o, (size_t)t->ngpus, sizeof *o, gpu_order_cmp);
    int *order = gpurun_xcalloc((size_t)t->ngpus, sizeof *order);
    for (int i = 0; i < t->ngpus; i++)
        order[i] = o[i].gpu;
    free(o);
    return order;
}

/* --- CPU domains ----------------------------------------------------------- */

/* Tree order of a domain: the logical index of its first PU. */
static unsigned domain_pos(const gpurun_topo_t *t, hwloc_const_cpuset_t d)
{
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)hwloc_bitmap_first(d));
    return pu ? pu->logical_index : UINT_MAX;
}

/* The cpusets of the home NUMA nodes: an HBM node that shares its DRAM
 * node's cores, or a CXL node hanging from the package or the machine, is
 * not a domain of its own.  PUs under no NUMA node form domains too, one per
 * largest object holding none of the other domains' PUs: hwloc 2 imports the
 * memoryless NUMA nodes of an hwloc 1.x export (nodeset 0x0: a Threadripper
 * 2990WX's two dies without DIMMs) as Groups, and their cores would
 * otherwise never be given to a CPU-only rank. */
static hwloc_bitmap_t *cpu_numa_domains(const gpurun_topo_t *t, int *np)
{
    int nnuma = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE), cap = nnuma + 1, n = 0;
    hwloc_bitmap_t *d = gpurun_xcalloc((size_t)cap, sizeof *d);
    hwloc_bitmap_t rest = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    for (hwloc_obj_t node = NULL; (node = hwloc_get_next_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, node));)
        if (hwloc_bitmap_isset(t->home_nodes, node->os_index) && !hwloc_bitmap_iszero(node->cpuset)) {
            d[n++] = hwloc_bitmap_dup(node->cpuset);
            hwloc_bitmap_andnot(rest, rest, node->cpuset);
        }
    for (int i; n > 0 && (i = hwloc_bitmap_first(rest)) >= 0;) {
        hwloc_obj_t o = hwloc_get_pu_obj_by_os_index(t->hw, (unsigned)i);
        if (!o) { /* a PU bit with no PU object: never given to a rank anyway */
            hwloc_bitmap_clr(rest, (unsigned)i);
            continue;
        }
        hwloc_bitmap_t taken = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
        hwloc_bitmap_andnot(taken, taken, rest);
        while (o->parent && !hwloc_bitmap_intersects(o->parent->cpuset, taken))
            o = o->parent;
        hwloc_bitmap_free(taken);
        if (n == cap) {
            cap *= 2;
            d = gpurun_xrealloc(d, (size_t)cap * sizeof *d);
        }
        d[n] = hwloc_bitmap_alloc();
        hwloc_bitmap_and(d[n], o->cpuset, rest);
        hwloc_bitmap_set(d[n], (unsigned)i);
        hwloc_bitmap_andnot(rest, rest, d[n++]);
    }
    hwloc_bitmap_free(rest);
    if (n == 0)
        d[n++] = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t->hw));
    /* Tree order, so that consecutive ranks stay neighbours (insertion sort:
     * NUMA nodes come in tree order already, the extra domains after them). */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && domain_pos(t, d[b]) < domain_pos(t, d[b - 1]); b--) {
            hwloc_bitmap_t x = d[b];
            d[b] = d[b - 1];
            d[b - 1] = x;
        }
    *np = n;
    return d;
}

/* The cores near a GPU; a GPU whose locality has no usable PU (all offline
 * or disallowed) falls back to the nearest ancestor that has some. */
static hwloc_bitmap_t gpu_locality(const gpurun_topo_t *t, gpurun_plan_t *p, int gpu)
{
    const gpurun_gpu_t *g = &t->gpus[gpu];
    hwloc_obj_t loc = g->locality;
    while (loc && hwloc_bitmap_iszero(loc->cpuset))
        loc = loc->parent;
    if (loc && loc != g->locality)
        plan_warn(p, "GPU %d (%s) has no usable cores in its own locality; using cores of %s %u", g->index, g->pci,
                  hwloc_obj_type_string(loc->type), loc->os_index);
    hwloc_bitmap_t dom = hwloc_bitmap_alloc();
    if (loc)
        hwloc_bitmap_copy(dom, loc->cpuset);
    return dom;
}

/* "NUMA node 3 (cpus 48-63)", for messages. */
static char *domain_label(const gpurun_topo_t *t, hwloc_const_cpuset_t dom)
{
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    gpurun_topo_home_nodes(t, dom, nodes);
    char *n = gpurun_cpuset_list(nodes), *c = gpurun_cpuset_list(dom);
    char *s = gpurun_xasprintf("NUMA node%s %s (cpus %s)", hwloc_bitmap_weight(nodes) == 1 ? "" : "s", n, c);
    free(n);
    free(c);
    hwloc_bitmap_free(nodes);
    return s;
}

/* --- cores ------------------------------------------------------------------ */

struct core_pool {
    hwloc_obj_t *cores; /* Core objects, or PUs where the export has no cores */
    bool *taken;
    int *perf;          /* performance class of the core's kind: higher is faster; all 0 unless kinds really differ */
    int n;
    int *load;          /* how many ranks have each PU, by OS index */
    int *core_of;       /* the pool core of each PU, by OS index; -1 for none */
    int nload;
};

/* hwloc reports CPU kinds that are one kind of core in all but a few
 * percent of turbo frequency (favoured cores; hwloc 2.4 on a 72-core Arm
 * server gave five kinds 1 % apart).  Two kinds are ranked apart only when
 * they really differ: a core type hwloc names differently (CoreType
 * IntelCore/IntelAtom, the ARM part), or a frequency or capacity at least
 * 10 % apart.  10 % is hwloc's own rule for max frequencies
 * (topology-linux.c, hwloc_linux_cpukinds_adjust_maxfreqs(): "adjust max
 * frequencies by up to adjust_max percents", adjust_max = 10 unless
 * HWLOC_CPUKINDS_MAXFREQ says otherwise), by which hwloc 2.7 and later merge
 * such kinds themselves.  Kinds that share no such information keep hwloc's
 * ranking. */
#define KINDS_APART_PERCENT 10

static const char *kind_info(const gpurun_topo_t *t, unsigned kind, const char *name)
{
    unsigned n = 0;
    struct hwloc_info_s *infos = NULL;
    if (hwloc_cpukinds_get_info(t->hw, kind, NULL, NULL, &n, &infos, 0) < 0)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(infos[i].name, name))
            return infos[i].value;
    return NULL;
}

static bool kinds_differ(const gpurun_topo_t *t, unsigned a, unsigned b)
{
    static const char *const types[] = {"CoreType", "IntelCoreType", "CPUPart"};
    static const char *const amounts[] = {"FrequencyBaseMHz", "FrequencyMaxMHz", "LinuxCapacity"};
    bool compared = false;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *x = kind_info(t, a, types[i]), *y = kind_info(t, b, types[i]);
        if (x && y && strcmp(x, y))
            return true;
        compared |= x && y;
    }
    for (size_t i = 0; i < sizeof amounts / sizeof amounts[0]; i++) {
        const char *x = kind_info(t, a, amounts[i]), *y = kind_info(t, b, amounts[i]);
        if (!x || !y)
            continue;
        double lo = atof(x), hi = atof(y);
        if (lo > hi) {
            double tmp = lo;
            lo = hi;
            hi = tmp;
        }
        if (lo <= 0)
            continue;
        compared = true;
        if ((hi - lo) * 100 >= KINDS_APART_PERCENT * lo)
            return true;
    }
    return !compared;
}

/* Each hwloc CPU kind's performance class: 0 for the slowest, one more for
 * each kind that really differs from the slowest of the class below.  All 0
 * when hwloc has one kind or could not rank them.  Caller frees. */
static int *kind_classes(const gpurun_topo_t *t, int *nkinds)
{
    int n = hwloc_cpukinds_get_nr(t->hw, 0);
    *nkinds = n > 0 ? n : 0;
    int *cls = gpurun_xcalloc((size_t)(n > 0 ? n : 1), sizeof *cls);
    if (n < 2)
        return cls;
    /* hwloc lists kinds by efficiency, slowest first, when it ranked them. */
    unsigned anchor = 0;
    for (int k = 0; k < n; k++) {
        int eff = -1;
        if (hwloc_cpukinds_get_info(t->hw, (unsigned)k, NULL, &eff, NULL, NULL, 0) < 0 || eff < 0) {
            memset(cls, 0, (size_t)n * sizeof *cls);
            return cls;
        }
        if (k > 0 && kinds_differ(t, anchor, (unsigned)k)) {
            cls[k] = cls[k - 1] + 1;
            anchor = (unsigned)k;
        } else if (k > 0) {
            cls[k] = cls[k - 1];
        }
    }
    return cls;
}

/* The class of the kind of a core's first PU (the one planned without smt). */
static int core_perf(const gpurun_topo_t *t, const int *classes, int nkinds, hwloc_obj_t core)
{
    if (nkinds < 2)
        return 0;
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_only(one, (unsigned)hwloc_bitmap_first(core->cpuset));
    int kind = hwloc_cpukinds_get_by_cpuset(t->hw, one, 0);
    hwloc_bitmap_free(one);
    return kind >= 0 && kind < nkinds ? classes[kind] : 0;
}

int gpurun_core_class(const gpurun_topo_t *t, hwloc_obj_t core)
{
    int nkinds, *classes = kind_classes(t, &nkinds);
    int c = core_perf(t, classes, nkinds, core);
    free(classes);
    return c;
}

static void core_pool_init(const gpurun_topo_t *t, hwloc_const_cpuset_t allowed, struct core_pool *cp)
{
    hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int n = hwloc_get_nbobjs_by_type(t->hw, type), nkinds;
    int *classes = kind_classes(t, &nkinds);
    cp->cores = gpurun_xcalloc((size_t)n, sizeof *cp->cores);
    cp->taken = gpurun_xcalloc((size_t)n, sizeof *cp->taken);
    cp->perf = gpurun_xcalloc((size_t)n, sizeof *cp->perf);
    cp->n = 0;
    for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(t->hw, type, c));)
        if (!hwloc_bitmap_iszero(c->cpuset) /* a core whose PUs are all offline */
            && (!allowed || hwloc_bitmap_isincluded(c->cpuset, allowed))) {
            cp->perf[cp->n] = core_perf(t, classes, nkinds, c);
            cp->cores[cp->n++] = c;
        }
    free(classes);
    int last = hwloc_bitmap_last(hwloc_topology_get_topology_cpuset(t->hw));
    cp->nload = last >= 0 ? last + 1 : 1;
    cp->load = gpurun_xcalloc((size_t)cp->nload, sizeof *cp->load);
    cp->core_of = gpurun_xcalloc((size_t)cp->nload, sizeof *cp->core_of);
    for (int i = 0; i < cp->nload; i++)
        cp->core_of[i] = -1;
    for (int c = 0; c < cp->n; c++) {
        int pu;
        hwloc_bitmap_foreach_begin(pu, cp->cores[c]->cpuset)
        {
            if (pu < cp->nload)
                cp->core_of[pu] = c;
        }
        hwloc_bitmap_foreach_end();
    }
}

static void core_pool_free(struct core_pool *cp)
{
    free(cp->cores);
    free(cp->taken);
    free(cp->perf);
    free(cp->load);
    free(cp->core_of);
}

/* Hybrid CPUs: order the candidate cores fastest kind first (stably, so each
 * kind keeps its topology order) and say how many are of the fastest kind. */
static int fastest_first(const struct core_pool *cp, int *avail, int navail)
{
    for (int a = 1; a < navail; a++)
        for (int b = a; b > 0 && cp->perf[avail[b - 1]] < cp->perf[avail[b]]; b--) {
            int tmp = avail[b];
            avail[b] = avail[b - 1];
            avail[b - 1] = tmp;
        }
    int nbest = 0;
    while (nbest < navail && cp->perf[avail[nbest]] == cp->perf[avail[0]])
        nbest++;
    return nbest;
}

/* Whole cores for `need` threads: one PU per core, or every PU with smt. */
static int cores_for_threads(hwloc_obj_t sample, int threads, bool smt)
{
    if (!smt)
        return threads;
    int ppc = hwloc_bitmap_weight(sample->cpuset);
    if (ppc < 1)
        ppc = 1;
    return (threads + ppc - 1) / ppc;
}

static void add_core(hwloc_bitmap_t set, hwloc_obj_t core, bool smt)
{
    if (smt)
        hwloc_bitmap_or(set, set, core->cpuset);
    else
        hwloc_bitmap_set(set, (unsigned)hwloc_bitmap_first(core->cpuset));
}

/* One rank's cores near those of its GPUs that share one locality, or a
 * CPU-only rank's cores in its NUMA domains.  A rank whose GPUs lie in
 * several localities (one process driving every GPU of a node) has a part
 * in each, so that every GPU has cores near it. */
struct part {
    int rank;           /* local rank */
    hwloc_bitmap_t dom; /* where its own cores come from */
    int *gpus;          /* positions in the rank's GPU list of the GPUs of dom; NULL for a CPU-only rank */
    int w;              /* how many (1 for a CPU-only rank): its weight when cores are shared out */
    int need;           /* threads_per_rank given: the cores it is due */
    int deficit;        /* cores dom had no room for, due from its package's NUMA nodes without GPUs */
    int pkg;            /* its package (index of the pools); -1 when dom is in no single package */
    int *units;         /* the first PU of each of its places: nlocal from dom, then from its package */
    int nunits, nlocal, cap;
};

/* One plan's core placement. */
struct plan_cores {
    const gpurun_topo_t *t;
    gpurun_plan_t *p;
    struct core_pool cp;
    struct part *parts; /* in rank order, a rank's parts in the order of its GPUs */
    int nparts;
    /* cpu_locality = package: per package, the cpus of its NUMA domains near
     * no GPU of the plan, which its GPU ranks share out. */
    bool spill;
    int npkg;
    hwloc_obj_t *pkgobj;
    hwloc_bitmap_t *pool;
    int *pool_free;
};

struct group {
    hwloc_bitmap_t dom;
    int *members; /* parts, in rank order */
    int n;
};

static int group_cmp(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    int wx = hwloc_bitmap_weight(x->dom), wy = hwloc_bitmap_weight(y->dom);
    if (wx != wy)
        return wx - wy; /* most constrained first, so nested domains still get cores */
    return hwloc_bitmap_compare_first(x->dom, y->dom);
}

static void part_unit(struct part *pt, int pu)
{
    if (pt->nunits == pt->cap) {
        pt->cap = pt->cap ? 2 * pt->cap : 8;
        pt->units = gpurun_xrealloc(pt->units, (size_t)pt->cap * sizeof *pt->units);
    }
    pt->units[pt->nunits++] = pu;
}

/* A whole core for a part: its first PU, or all of them with smt. */
static void take_core(struct plan_cores *pc, struct part *pt, int c)
{
    struct core_pool *cp = &pc->cp;
    hwloc_obj_t core = cp->cores[c];
    bool smt = pc->p->req.smt;
    cp->taken[c] = true;
    add_core(pc->p->ranks[pt->rank].cpuset, core, smt);
    int pu;
    hwloc_bitmap_foreach_begin(pu, core->cpuset)
    {
        if (pu < cp->nload && (smt || pu == hwloc_bitmap_first(core->cpuset)))
            cp->load[pu]++;
    }
    hwloc_bitmap_foreach_end();
    part_unit(pt, hwloc_bitmap_first(core->cpuset));
}

static int core_load(const struct core_pool *cp, int c)
{
    int sum = 0, pu;
    hwloc_bitmap_foreach_begin(pu, cp->cores[c]->cpuset)
    {
        if (pu < cp->nload)
            sum += cp->load[pu];
    }
    hwloc_bitmap_foreach_end();
    return sum;
}

/* Ranks that must share cores (oversubscribe) take single PUs: the least
 * used PU of the least used core first, a core's first PU before its SMT
 * siblings, so that two ranks get one PU only once every PU of `dom` has a
 * rank.  A rank never gets two PUs of one core (as without sharing).
 * need[j] PUs for part members[j]. */
static void share_pus(struct plan_cores *pc, hwloc_const_cpuset_t dom, const int *members, const int *need, int n)
{
    struct core_pool *cp = &pc->cp;
    int *cand = gpurun_xcalloc((size_t)(cp->n ? cp->n : 1), sizeof *cand), ncand = 0;
    for (int c = 0; c < cp->n; c++)
        if (hwloc_bitmap_isincluded(cp->cores[c]->cpuset, dom))
            cand[ncand++] = c;
    for (int j = 0; j < n; j++) {
        struct part *pt = &pc->parts[members[j]];
        gpurun_rank_plan_t *r = &pc->p->ranks[pt->rank];
        for (int x = 0; x < need[j]; x++) {
            int best = -1, bl = 0, bcl = 0, blev = 0;
            for (int i = 0; i < ncand; i++) {
                hwloc_obj_t core = cp->cores[cand[i]];
                if (hwloc_bitmap_intersects(core->cpuset, r->cpuset))
                    continue;
                int cl = core_load(cp, cand[i]), lev = 0, pu;
                hwloc_bitmap_foreach_begin(pu, core->cpuset)
                {
                    int l = pu < cp->nload ? cp->load[pu] : 0;
                    if (best < 0 || l < bl || (l == bl && (cl < bcl || (cl == bcl && lev < blev)))) {
                        best = pu;
                        bl = l;
                        bcl = cl;
                        blev = lev;
                    }
                    lev++;
                }
                hwloc_bitmap_foreach_end();
            }
            if (best < 0)
                break; /* it has a PU on every core of dom */
            hwloc_bitmap_set(r->cpuset, (unsigned)best);
            if (best < cp->nload) {
                cp->load[best]++;
                if (cp->core_of[best] >= 0)
                    cp->taken[cp->core_of[best]] = true;
            }
            part_unit(pt, best);
        }
    }
    free(cand);
}

/* After sharing: how many ranks each PU of `dom` has, in one warning. */
static void warn_sharing(struct plan_cores *pc, hwloc_const_cpuset_t dom, int k)
{
    const struct core_pool *cp = &pc->cp;
    int ncores = 0, npus = 0, idle = 0, most = 0;
    for (int c = 0; c < cp->n; c++) {
        if (!hwloc_bitmap_isincluded(cp->cores[c]->cpuset, dom))
            continue;
        ncores++;
        int pu;
        hwloc_bitmap_foreach_begin(pu, cp->cores[c]->cpuset)
        {
            int l = pu < cp->nload ? cp->load[pu] : 0;
            npus++;
            idle += l == 0;
            if (l > most)
                most = l;
        }
        hwloc_bitmap_foreach_end();
    }
    char *lbl = domain_label(pc->t, dom);
    if (most <= 1) {
        plan_warn(pc->p, "%d rank%s share the %d core%s of %s, one rank per hardware thread (%d PUs, SMT siblings "
                  "included): ranks will compete for cores", k, plural(k), ncores, plural(ncores), lbl, npus);
        free(lbl);
        return;
    }
    /* "4 PUs have 3 ranks, 12 have 2": the most shared first, at most four counts. */
    char *hist = NULL;
    int shown = 0;
    for (int v = most; v >= 2 && shown < 4; v--) {
        int count = 0;
        for (int c = 0; c < cp->n; c++) {
            if (!hwloc_bitmap_isincluded(cp->cores[c]->cpuset, dom))
                continue;
            int pu;
            hwloc_bitmap_foreach_begin(pu, cp->cores[c]->cpuset)
            {
                count += pu < cp->nload && cp->load[pu] == v;
            }
            hwloc_bitmap_foreach_end();
        }
        if (!count)
            continue;
        char *s = gpurun_xasprintf("%s%s%d %s %s %d ranks", hist ? hist : "", hist ? ", " : "", count,
                                   hist ? "" : count == 1 ? "PU" : "PUs", count == 1 ? "has" : "have", v);
        free(hist);
        hist = s;
        shown++;
    }
    plan_warn(pc->p, "%d rank%s share the %d core%s (%d PUs) of %s: %s%s; ranks will compete for cores", k, plural(k),
              ncores, plural(ncores), npus, lbl, idle ? "" : "every PU has a rank and ", hist ? hist : "");
    free(hist);
    free(lbl);
}

/* Ranks given some of a hybrid CPU's slower cores hold back the others. */
static void warn_slow_cores(const gpurun_topo_t *t, gpurun_plan_t *p, const struct core_pool *cp,
                            const int *ranks, int n, hwloc_const_cpuset_t dom, int best)
{
    hwloc_bitmap_t slow = hwloc_bitmap_alloc(), mixed = hwloc_bitmap_alloc();
    for (int j = 0; j < n; j++) {
        const gpurun_rank_plan_t *r = &p->ranks[ranks[j]];
        bool fast = false, other = false;
        for (int c = 0; c < cp->n; c++)
            if (hwloc_bitmap_intersects(cp->cores[c]->cpuset, r->cpuset)) {
                fast |= cp->perf[c] == best;
                other |= cp->perf[c] != best;
            }
        if (other)
            hwloc_bitmap_set(fast ? mixed : slow, (unsigned)ranks[j]);
    }
    char *lbl = domain_label(t, dom);
    if (!hwloc_bitmap_iszero(slow)) {
        char *l = gpurun_cpuset_list(slow);
        plan_warn(p, "hybrid CPU in %s: local rank%s %s run%s on its slower cores, and the ranks on its faster cores "
                  "will wait for them; fewer ranks or threads fit on the faster cores alone", lbl,
                  plural(hwloc_bitmap_weight(slow)), l, hwloc_bitmap_weight(slow) == 1 ? "s" : "");
        free(l);
    }
    if (!hwloc_bitmap_iszero(mixed)) {
        char *l = gpurun_cpuset_list(mixed);
        plan_warn(p, "hybrid CPU in %s: local rank%s %s mix%s faster and slower cores", lbl,
                  plural(hwloc_bitmap_weight(mixed)), l, hwloc_bitmap_weight(mixed) == 1 ? "es" : "");
        free(l);
    }
    free(lbl);
    hwloc_bitmap_free(slow);
    hwloc_bitmap_free(mixed);
}

/* place_group()'s working state: one domain's parts and its cores. */
struct group_place {
    struct plan_cores *pc;
    const struct group *g;
    bool tpr;        /* threads_per_rank was given */
    int k, W;        /* parts, their total weight */
    int *need;       /* cores each part gets */
    int *ranks;      /* each part's local rank */
    int *avail;      /* the domain's cores to give, as indices of pc->cp */
    int navail, nall, nbest, room;
    bool shared;     /* cores are shared between ranks */
    bool hybrid;     /* the cores given out are of several kinds */
};

/* The domain's free cores (all of them when others took every one and
 * sharing is allowed), fastest first. */
static void group_collect(struct group_place *gp)
{
    struct plan_cores *pc = gp->pc;
    struct core_pool *cp = &pc->cp;
    for (int j = 0; j < gp->k; j++) {
        gp->W += pc->parts[gp->g->members[j]].w;
        gp->ranks[j] = pc->parts[gp->g->members[j]].rank;
    }
    for (int c = 0; c < cp->n; c++) {
        if (!hwloc_bitmap_isincluded(cp->cores[c]->cpuset, gp->g->dom))
            continue;
        gp->nall++;
        if (!cp->taken[c])
            gp->avail[gp->navail++] = c;
    }
    const struct part *p0 = &pc->parts[gp->g->members[0]];
    gp->room = pc->spill && p0->pkg >= 0 ? pc->pool_free[p0->pkg] : 0;
    if (gp->navail == 0 && gp->nall > 0 && pc->p->req.oversubscribe && gp->room == 0) {
        /* Everything here went to ranks with narrower domains: share them. */
        for (int c = 0; c < cp->n; c++)
            if (hwloc_bitmap_isincluded(cp->cores[c]->cpuset, gp->g->dom))
                gp->avail[gp->navail++] = c;
        gp->shared = true;
    }
    /* On a hybrid CPU the ranks' threads run in lockstep at the pace of the
     * slowest core: use the fastest kind alone when it is enough. */
    gp->nbest = fastest_first(cp, gp->avail, gp->navail);
}

/* Each part's cores: its threads, or its weight's share of the domain. */
static void group_needs(struct group_place *gp, int *sum, int *least)
{
    struct plan_cores *pc = gp->pc;
    *sum = 0;
    *least = INT_MAX;
    if (gp->tpr) {
        for (int j = 0; j < gp->k; j++)
            *sum += gp->need[j] = pc->parts[gp->g->members[j]].need;
        if (*sum <= gp->nbest)
            gp->navail = gp->nbest;
    } else if (gp->nbest >= gp->k) {
        gp->navail = gp->nbest;
    }
    gp->hybrid = gp->nbest < gp->navail;
    *sum = 0;
    for (int j = 0; j < gp->k; j++) {
        if (!gp->tpr)
            gp->need[j] = (int)((long)gp->navail * pc->parts[gp->g->members[j]].w / gp->W);
        *sum += gp->need[j];
        if (gp->need[j] < *least)
            *least = gp->need[j];
    }
}

/* Each part a fair share of what is here, as many as can a core at least;
 * the package's NUMA nodes without GPUs give the rest (its deficit). */
static void group_fair_share(struct group_place *gp)
{
    struct plan_cores *pc = gp->pc;
    int k = gp->k, *need = gp->need;
    int *due = gpurun_xcalloc((size_t)k, sizeof *due), left = gp->navail;
    for (int j = 0; j < k; j++) {
        int fair = (int)((long)gp->navail * pc->parts[gp->g->members[j]].w / gp->W);
        due[j] = need[j] > 0 ? need[j] : 1;
        if (need[j] > fair)
            need[j] = fair;
        left -= need[j];
    }
    for (bool more = true; more && left > 0;) {
        more = false;
        for (int j = 0; j < k && left > 0; j++)
            if (need[j] < due[j]) {
                need[j]++;
                left--;
                more = true;
            }
    }
    for (int j = 0; j < k; j++)
        pc->parts[gp->g->members[j]].deficit = due[j] - need[j];
    free(due);
    gp->hybrid = false;
}

/* Too few cores here and no sharing allowed: say what would fit. */
static int group_refuse(const struct group_place *gp, int sum, gpurun_error_t *err)
{
    const struct plan_cores *pc = gp->pc;
    const gpurun_plan_t *p = pc->p;
    const gpurun_request_t *req = &p->req;
    int k = gp->k, navail = gp->navail, rc;
    char *lbl = domain_label(pc->t, gp->g->dom);
    bool split = false; /* ranks with GPUs elsewhere too: their share of cores here */
    for (int j = 0; j < k; j++)
        split |= pc->parts[gp->g->members[j]].w < p->ranks[gp->ranks[j]].ngpus;
    if (gp->tpr && split && (long)req->threads_per_rank * navail / sum >= 1)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s with %d thread%s each need %d cores in %s, for their GPUs there (a "
                        "rank's cores are shared out over its GPUs' localities), which has %d free; use "
                        "threads_per_rank = %ld, fewer ranks per node, or oversubscribe = true to share cores",
                        k, plural(k), req->threads_per_rank, plural(req->threads_per_rank), sum, lbl, navail,
                        (long)req->threads_per_rank * navail / sum);
    else if (gp->tpr && navail / k >= 1)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s with %d thread%s each need %d cores in %s, which has %d free; "
                        "use threads_per_rank = %d, fewer ranks per node, or oversubscribe = true "
                        "to share cores",
                        k, plural(k), req->threads_per_rank, plural(req->threads_per_rank), sum, lbl,
                        navail, req->smt ? navail / k * hwloc_bitmap_weight(pc->cp.cores[gp->avail[0]]->cpuset)
                                         : navail / k);
    else
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s share %s, which has only %d free core%s: use at most %d rank%s there "
                        "(fewer ranks per node), or oversubscribe = true to share cores",
                        k, plural(k), lbl, navail, plural(navail), navail, plural(navail));
    free(lbl);
    return rc;
}

/* Shared, no SMT: one PU each, SMT siblings before two ranks on one PU. */
static void group_share_pus(struct group_place *gp)
{
    struct plan_cores *pc = gp->pc;
    struct core_pool *cp = &pc->cp;
    int freepus = 0;
    for (int c = 0; c < cp->n; c++)
        if (hwloc_bitmap_isincluded(cp->cores[c]->cpuset, gp->g->dom)) {
            int pu;
            hwloc_bitmap_foreach_begin(pu, cp->cores[c]->cpuset)
            {
                freepus += pu < cp->nload && cp->load[pu] == 0;
            }
            hwloc_bitmap_foreach_end();
        }
    for (int j = 0; j < gp->k; j++)
        if (!gp->tpr) {
            int w = pc->parts[gp->g->members[j]].w;
            gp->need[j] = freepus >= gp->k && (long)freepus * w / gp->W > 1 ? (int)((long)freepus * w / gp->W) : 1;
        }
    share_pus(pc, gp->g->dom, gp->g->members, gp->need, gp->k);
    warn_sharing(pc, gp->g->dom, gp->k);
}

/* Shared with SMT: whole cores, stacked, each rank a fair share apart. */
static void group_stack_cores(struct group_place *gp)
{
    int most = 1, k = gp->k, navail = gp->navail, *need = gp->need;
    for (int j = 0; j < k; j++) {
        if (need[j] < 1)
            need[j] = 1;
        if (need[j] > navail)
            need[j] = navail;
        if (need[j] > most)
            most = need[j];
    }
    int stride = navail / k >= most ? navail / k : most;
    for (int j = 0; j < k; j++)
        for (int x = 0; x < need[j]; x++)
            take_core(gp->pc, &gp->pc->parts[gp->g->members[j]], gp->avail[(j * stride + x) % navail]);
    warn_sharing(gp->pc, gp->g->dom, k);
}

/* Spread the parts over the domain: each starts a fair share apart.  Of
 * several kinds, pack them fastest first instead, each part inside one
 * kind when the parts after it still fit. */
static void group_spread(struct group_place *gp)
{
    struct plan_cores *pc = gp->pc;
    struct core_pool *cp = &pc->cp;
    int k = gp->k, navail = gp->navail, *need = gp->need, *avail = gp->avail;
    int spread = 0;
    for (int j = 0; j < k; j++) {
        int fair = (int)((long)navail * pc->parts[gp->g->members[j]].w / gp->W);
        spread += fair > need[j] ? fair : need[j];
    }
    int start = 0, pos = 0, rest = 0;
    for (int j = 0; j < k; j++)
        rest += need[j];
    for (int j = 0; j < k; j++) {
        struct part *pt = &pc->parts[gp->g->members[j]];
        int fair = (int)((long)navail * pt->w / gp->W), s = start;
        if (gp->hybrid) {
            int b = pos;
            while (b < navail && cp->perf[avail[b]] == cp->perf[avail[pos % navail]])
                b++;
            s = pos;
            if (pos + need[j] > b && b < navail && navail - b >= rest)
                s = b;
            pos = s + need[j];
        }
        for (int x = 0; x < need[j]; x++)
            take_core(pc, pt, avail[(s + x) % navail]);
        start += spread > navail || fair < need[j] ? need[j] : fair;
        rest -= need[j];
    }
    if (gp->hybrid)
        warn_slow_cores(pc->t, pc->p, cp, gp->ranks, k, gp->g->dom, cp->perf[avail[0]]);
}

/* Give every part of one domain its own whole cores, shared out by weight
 * (its rank's GPUs there).  Where the domain is short and its package has
 * free cores on NUMA nodes without GPUs (cpu_locality = package), each part
 * gets a fair share of the domain and the rest is left to place_pools(). */
static int place_group(struct plan_cores *pc, struct group *g, gpurun_error_t *err)
{
    struct core_pool *cp = &pc->cp;
    const gpurun_request_t *req = &pc->p->req;
    struct group_place gp = {
        .pc = pc, .g = g, .k = g->n, .tpr = req->threads_per_rank != GPURUN_UNSET,
        .avail = gpurun_xcalloc((size_t)(cp->n ? cp->n : 1), sizeof(int)),
        .need = gpurun_xcalloc((size_t)g->n, sizeof(int)),
        .ranks = gpurun_xcalloc((size_t)g->n, sizeof(int)),
    };
    int rc = 0, sum, least;
    group_collect(&gp);
    if (gp.navail == 0 && gp.room == 0) {
        char *lbl = domain_label(pc->t, g->dom);
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "no free cores left in %s for local rank%s %d%s: other ranks took them; "
                        "use fewer ranks per node or set oversubscribe = true to share cores",
                        lbl, plural(gp.k), gp.ranks[0], gp.k > 1 ? " and others" : "");
        free(lbl);
        goto out;
    }
    group_needs(&gp, &sum, &least);
    if (least < 1 || sum > gp.navail) {
        if (gp.room > 0)
            group_fair_share(&gp);
        else if (!req->oversubscribe) {
            rc = group_refuse(&gp, sum, err);
            goto out;
        } else
            gp.shared = true;
    }
    if (gp.shared && !req->smt)
        group_share_pus(&gp);
    else if (gp.shared)
        group_stack_cores(&gp);
    else
        group_spread(&gp);
out:
    free(gp.avail);
    free(gp.need);
    free(gp.ranks);
    return rc;
}

static int part_pos_cmp(const struct plan_cores *pc, int a, int b)
{
    const struct part *x = &pc->parts[a], *y = &pc->parts[b];
    unsigned px = domain_pos(pc->t, x->dom), py = domain_pos(pc->t, y->dom);
    if (px != py)
        return px < py ? -1 : 1;
    return a - b;
}

/* One package's pool: its GPU parts in domain order and the free cores of
 * its NUMA nodes near no GPU. */
struct pkg_pool {
    int k;       /* the package */
    int *order;  /* its parts, in the order of their domains */
    int n;
    int *pool;   /* the free cores of its NUMA nodes without GPUs */
    int np;
    int D;       /* the cores its parts' own domains had no room for */
    int Wp;      /* their total weight */
    int given;   /* the cores their domains gave them */
};

static void pool_collect(struct plan_cores *pc, struct pkg_pool *pp, bool tpr)
{
    struct core_pool *cp = &pc->cp;
    pp->n = pp->D = pp->Wp = pp->np = pp->given = 0;
    for (int i = 0; i < pc->nparts; i++) {
        struct part *pt = &pc->parts[i];
        if (pt->pkg != pp->k || !pt->gpus || (tpr && pt->need == 0))
            continue;
        int j = pp->n++;
        while (j > 0 && part_pos_cmp(pc, pp->order[j - 1], i) > 0) {
            pp->order[j] = pp->order[j - 1];
            j--;
        }
        pp->order[j] = i;
        pp->D += pt->deficit;
        pp->Wp += pt->w;
        pp->given += pt->nunits;
    }
    for (int c = 0; c < cp->n; c++)
        if (!cp->taken[c] && hwloc_bitmap_isincluded(cp->cores[c]->cpuset, pc->pool[pp->k]))
            pp->pool[pp->np++] = c;
}

/* Too few cores in the package and no sharing allowed: say what fits. */
static int pool_refuse(struct plan_cores *pc, const struct pkg_pool *pp, bool tpr, gpurun_error_t *err)
{
    const gpurun_request_t *req = &pc->p->req;
    hwloc_bitmap_t all = hwloc_bitmap_dup(pc->pool[pp->k]);
    hwloc_bitmap_t rk = hwloc_bitmap_alloc();
    for (int j = 0; j < pp->n; j++) {
        hwloc_bitmap_or(all, all, pc->parts[pp->order[j]].dom);
        hwloc_bitmap_set(rk, (unsigned)pc->parts[pp->order[j]].rank);
    }
    int nr = hwloc_bitmap_weight(rk), freec = pp->given + pp->np, rc;
    char *cl = gpurun_cpuset_list(all);
    char *where = pc->pkgobj[pp->k]->type == HWLOC_OBJ_PACKAGE
                      ? gpurun_xasprintf("package %u (cpus %s)", pc->pkgobj[pp->k]->os_index, cl)
                      : gpurun_xasprintf("the node (cpus %s)", cl);
    if (tpr && freec / nr >= 1)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s with %d thread%s each need %d cores in %s, near their GPUs or on its "
                        "NUMA nodes without GPUs, which has %d free; use threads_per_rank = %d, fewer "
                        "ranks per node, or oversubscribe = true to share cores",
                        nr, plural(nr), req->threads_per_rank, plural(req->threads_per_rank), pp->given + pp->D,
                        where, freec,
                        req->smt && pp->np ? freec / nr * hwloc_bitmap_weight(pc->cp.cores[pp->pool[0]]->cpuset)
                                           : freec / nr);
    else
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s share %s, which has only %d free core%s near their GPUs or on its NUMA "
                        "nodes without GPUs: use at most %d rank%s there (fewer ranks per node), or "
                        "oversubscribe = true to share cores",
                        nr, plural(nr), where, freec, plural(freec), freec, plural(freec));
    free(where);
    free(cl);
    hwloc_bitmap_free(all);
    hwloc_bitmap_free(rk);
    return rc;
}

/* Each part its due in one piece, the pieces spread over the pool as the
 * parts are over the package (so a part's piece tends to be the NUMA node
 * beside its own); short of cores, each part gets the pool in proportion
 * to what it is due. */
static void pool_give(struct plan_cores *pc, const struct pkg_pool *pp, bool tpr)
{
    int n = pp->n, np = pp->np, D = pp->D;
    int per = !tpr && np > D ? (np - D) / pp->Wp : 0, next = 0, rest = 0, wsum = 0;
    int *want = gpurun_xcalloc((size_t)n, sizeof *want);
    for (int j = 0, given_out = 0; j < n; j++) {
        struct part *pt = &pc->parts[pp->order[j]];
        want[j] = D > np ? (int)((long)np * pt->deficit / D) : pt->deficit + per * pt->w;
        given_out += want[j];
        if (D > np && j == n - 1)
            for (int x = 0; x < n && given_out < np; x++)
                if (want[x] < pc->parts[pp->order[x]].deficit) {
                    want[x]++;
                    given_out++;
                }
    }
    for (int j = 0; j < n; j++)
        rest += want[j];
    for (int j = 0; j < n; j++) {
        struct part *pt = &pc->parts[pp->order[j]];
        int spread = (int)((long)wsum * np / pp->Wp);
        if (next < spread)
            next = spread;
        if (next > np - rest)
            next = np - rest;
        for (int x = 0; x < want[j]; x++)
            take_core(pc, pt, pp->pool[next++]);
        pt->deficit -= pt->deficit < want[j] ? pt->deficit : want[j]; /* left only when sharing */
        rest -= want[j];
        wsum += pt->w;
    }
    free(want);
}

/* oversubscribe: what the pool could not give shares PUs near the parts'
 * GPUs and in the pool. */
static void pool_share_rest(struct plan_cores *pc, const struct pkg_pool *pp, bool tpr)
{
    hwloc_bitmap_t dom = hwloc_bitmap_dup(pc->pool[pp->k]);
    for (int j = 0; j < pp->n; j++)
        hwloc_bitmap_or(dom, dom, pc->parts[pp->order[j]].dom);
    for (int j = 0; j < pp->n; j++) {
        struct part *pt = &pc->parts[pp->order[j]];
        if (pt->deficit > 0) {
            hwloc_bitmap_t d = hwloc_bitmap_dup(pt->dom);
            hwloc_bitmap_or(d, d, pc->pool[pp->k]);
            int one = pp->order[j], due = tpr ? pt->deficit : 1;
            share_pus(pc, d, &one, &due, 1);
            hwloc_bitmap_free(d);
        }
    }
    warn_sharing(pc, dom, pp->n);
    hwloc_bitmap_free(dom);
}

/* cpu_locality = package: the free cores of a package's NUMA nodes near no
 * GPU of the plan go to its GPU ranks.  First what their own domains had no
 * room for; then, without threads_per_rank, the rest in equal shares (per
 * GPU), each part its share in one piece, in the order of the domains. */
static int place_pools(struct plan_cores *pc, gpurun_error_t *err)
{
    const gpurun_request_t *req = &pc->p->req;
    bool tpr = req->threads_per_rank != GPURUN_UNSET;
    struct pkg_pool pp = {
        .order = gpurun_xcalloc((size_t)pc->nparts, sizeof(int)),
        .pool = gpurun_xcalloc((size_t)(pc->cp.n ? pc->cp.n : 1), sizeof(int)),
    };
    int rc = 0;
    for (pp.k = 0; pp.k < pc->npkg && rc == 0; pp.k++) {
        pool_collect(pc, &pp, tpr);
        if (pp.n == 0)
            continue;
        if (pp.D > pp.np && !req->oversubscribe) {
            rc = pool_refuse(pc, &pp, tpr, err);
            break;
        }
        pool_give(pc, &pp, tpr);
        if (pp.D > pp.np)
            pool_share_rest(pc, &pp, tpr);
    }
    free(pp.order);
    free(pp.pool);
    return rc;
}

static int unit_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The PUs of one place of a rank: the whole core with smt, else the PU. */
static void place_set(const struct core_pool *cp, const gpurun_rank_plan_t *r, int pu, bool smt, hwloc_bitmap_t out)
{
    hwloc_bitmap_only(out, (unsigned)pu);
    if (smt && pu < cp->nload && cp->core_of[pu] >= 0)
        hwloc_bitmap_and(out, cp->cores[cp->core_of[pu]]->cpuset, r->cpuset);
}

/* Each rank's places in order (the cores of its first GPU first, its own
 * locality's before its package's) and which cores go with which GPU: a
 * part's local and package cores are split in order over its GPUs. */
static void finish_ranks(struct plan_cores *pc, int rpn)
{
    const gpurun_request_t *req = &pc->p->req;
    hwloc_bitmap_t added = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
    int i = 0;
    for (int r = 0; r < rpn; r++) {
        gpurun_rank_plan_t *rp = &pc->p->ranks[r];
        hwloc_bitmap_zero(added);
        int cap = 0;
        for (int x = i; x < pc->nparts && pc->parts[x].rank == r; x++)
            cap += pc->parts[x].nunits;
        rp->places = gpurun_xcalloc((size_t)(cap ? cap : 1), sizeof *rp->places);
        if (rp->ngpus) {
            rp->gpu_cpus = gpurun_xcalloc((size_t)rp->ngpus, sizeof *rp->gpu_cpus);
            for (int g = 0; g < rp->ngpus; g++)
                rp->gpu_cpus[g] = hwloc_bitmap_alloc();
        }
        for (; i < pc->nparts && pc->parts[i].rank == r; i++) {
            struct part *pt = &pc->parts[i];
            int nl = pt->nlocal, ne = pt->nunits - pt->nlocal, ng = pt->gpus ? pt->w : 1;
            if (nl > 1) /* (qsort of NULL is undefined even for 0 items) */
                qsort(pt->units, (size_t)nl, sizeof *pt->units, unit_cmp);
            if (ne > 1)
                qsort(pt->units + nl, (size_t)ne, sizeof *pt->units, unit_cmp);
            for (int g = 0; g < ng; g++) {
                int lo = (int)((long)g * nl / ng), hi = (int)((long)(g + 1) * nl / ng);
                int elo = (int)((long)g * ne / ng), ehi = (int)((long)(g + 1) * ne / ng);
                if (lo == hi && nl > 0)
                    hi = lo + 1; /* fewer cores than GPUs here: GPUs share a core */
                for (int u = lo; u < hi + (ehi - elo); u++) {
                    int pu = u < hi ? pt->units[u] : pt->units[nl + elo + (u - hi)];
                    place_set(&pc->cp, rp, pu, req->smt, set);
                    if (pt->gpus)
                        hwloc_bitmap_or(rp->gpu_cpus[pt->gpus[g]], rp->gpu_cpus[pt->gpus[g]], set);
                    if (!hwloc_bitmap_isset(added, (unsigned)pu)) {
                        hwloc_bitmap_set(added, (unsigned)pu);
                        rp->places[rp->nplaces++] = pu;
                    }
                }
            }
        }
        rp->threads = req->threads_per_rank != GPURUN_UNSET ? req->threads_per_rank : hwloc_bitmap_weight(rp->cpuset);
    }
    hwloc_bitmap_free(added);
    hwloc_bitmap_free(set);
}

/* Memory goes to the home NUMA nodes of the rank's cores, not to the HBM,
 * CXL, NVM or GPU memory nodes that hwloc puts near those cores too. */
static void memory_nodes(const gpurun_topo_t *t, gpurun_rank_plan_t *r)
{
    gpurun_topo_home_nodes(t, r->cpuset, r->nodeset);
    if (hwloc_bitmap_iszero(r->nodeset))
        hwloc_cpuset_to_nodeset(t->hw, r->cpuset, r->nodeset);
}

static bool has_memory(const gpurun_topo_t *t, unsigned node)
{
    hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(t->hw, node);
    return n && n->attr->numanode.local_memory > 0;
}

/* A NUMA node can hold CPUs and no memory (DIMM slots left empty, LPARs):
 * binding to it alone makes the kernel refuse the policy.  Such a rank's
 * memory goes to the home nodes with memory nearest in the tree.  Returns
 * whether it moved (exports that record no memory at all are left alone). */
static bool memory_elsewhere(const gpurun_topo_t *t, gpurun_rank_plan_t *r)
{
    if (hwloc_get_root_obj(t->hw)->total_memory == 0)
        return false;
    int i;
    hwloc_bitmap_foreach_begin(i, r->nodeset)
    {
        if (has_memory(t, (unsigned)i))
            return false;
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    for (hwloc_obj_t o = hwloc_get_obj_covering_cpuset(t->hw, r->cpuset); o; o = o->parent) {
        gpurun_topo_home_nodes(t, o->cpuset, near);
        hwloc_bitmap_foreach_begin(i, near)
        {
            if (!has_memory(t, (unsigned)i))
                hwloc_bitmap_clr(near, (unsigned)i);
        }
        hwloc_bitmap_foreach_end();
        if (!hwloc_bitmap_iszero(near))
            break;
    }
    bool moved = !hwloc_bitmap_iszero(near);
    if (moved)
        hwloc_bitmap_copy(r->nodeset, near);
    hwloc_bitmap_free(near);
    return moved;
}

/* CPU-only ranks spread over NUMA domains: with fewer ranks than domains each
 * rank spans several, else consecutive ranks share one. */
static hwloc_bitmap_t cpu_domain(hwloc_bitmap_t *numa, int nd, int r, int rpn)
{
    hwloc_bitmap_t dom = hwloc_bitmap_alloc();
    if (rpn < nd) {
        for (int d = (int)((long)r * nd / rpn); d < (int)((long)(r + 1) * nd / rpn); d++)
            hwloc_bitmap_or(dom, dom, numa[d]);
    } else {
        hwloc_bitmap_copy(dom, numa[(long)r * nd / rpn]);
    }
    return dom;
}

/* The parts of every rank: one per locality of its GPUs (GPUs of one
 * locality together, in the rank's GPU order), or its NUMA domains. */
static void make_parts(struct plan_cores *pc, hwloc_bitmap_t *numa, int nd, int rpn, int gpr)
{
    const gpurun_topo_t *t = pc->t;
    gpurun_plan_t *p = pc->p;
    pc->parts = gpurun_xcalloc((size_t)rpn * (size_t)(gpr > 0 ? gpr : 1), sizeof *pc->parts);
    for (int r = 0; r < rpn; r++) {
        gpurun_rank_plan_t *rp = &p->ranks[r];
        int first = pc->nparts;
        if (gpr == 0) {
            struct part *pt = &pc->parts[pc->nparts++];
            pt->rank = r;
            pt->dom = cpu_domain(numa, nd, r, rpn);
            pt->w = 1;
        }
        for (int g = 0; g < rp->ngpus; g++) {
            hwloc_bitmap_t dom = gpu_locality(t, p, rp->gpus[g]);
            struct part *pt = NULL;
            for (int x = first; x < pc->nparts && !pt; x++)
                if (hwloc_bitmap_isequal(pc->parts[x].dom, dom))
                    pt = &pc->parts[x];
            if (pt) {
                hwloc_bitmap_free(dom);
            } else {
                pt = &pc->parts[pc->nparts++];
                pt->rank = r;
                pt->dom = dom;
                pt->gpus = gpurun_xcalloc((size_t)rp->ngpus, sizeof *pt->gpus);
            }
            pt->gpus[pt->w++] = g;
        }
        if (p->req.threads_per_rank == GPURUN_UNSET)
            continue;
        /* threads_per_rank: the rank's cores split over its parts by their
         * GPUs, largest remainders first (a part may get none). */
        /* PUs per core from the first of the fastest cores of its domain, as
         * place_group() gives those first. */
        hwloc_obj_t sample = pc->cp.n ? pc->cp.cores[0] : NULL;
        int fastest = -1;
        for (int c = 0; c < pc->cp.n; c++)
            if (hwloc_bitmap_isincluded(pc->cp.cores[c]->cpuset, pc->parts[first].dom) && pc->cp.perf[c] > fastest) {
                sample = pc->cp.cores[c];
                fastest = pc->cp.perf[c];
            }
        int total = sample ? cores_for_threads(sample, p->req.threads_per_rank, p->req.smt)
                           : p->req.threads_per_rank;
        int W = 0, given = 0;
        for (int x = first; x < pc->nparts; x++)
            W += pc->parts[x].w;
        for (int x = first; x < pc->nparts; x++)
            given += pc->parts[x].need = (int)((long)total * pc->parts[x].w / W);
        int left = total - given;
        bool *extra = gpurun_xcalloc((size_t)(pc->nparts - first), sizeof *extra);
        while (left-- > 0) {
            int best = -1;
            long best_rem = -1;
            for (int x = first; x < pc->nparts; x++) {
                long rem = (long)total * pc->parts[x].w % W;
                if (!extra[x - first] && rem > best_rem) {
                    best = x;
                    best_rem = rem;
                }
            }
            extra[best - first] = true;
            pc->parts[best].need++;
        }
        free(extra);
    }
}

/* cpu_locality = package: each package's NUMA domains near no GPU of the
 * plan are its GPU ranks' to share (never another package's). */
static void find_pools(struct plan_cores *pc, hwloc_bitmap_t *numa, int nd, int gpr)
{
    const gpurun_topo_t *t = pc->t;
    int npkg = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
    pc->npkg = npkg > 0 ? npkg : 1;
    pc->pkgobj = gpurun_xcalloc((size_t)pc->npkg, sizeof *pc->pkgobj);
    pc->pool = gpurun_xcalloc((size_t)pc->npkg, sizeof *pc->pool);
    pc->pool_free = gpurun_xcalloc((size_t)pc->npkg, sizeof *pc->pool_free);
    for (int k = 0; k < pc->npkg; k++) {
        pc->pkgobj[k] = npkg > 0 ? hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, (unsigned)k) : hwloc_get_root_obj(t->hw);
        pc->pool[k] = hwloc_bitmap_alloc();
    }
    for (int i = 0; i < pc->nparts; i++) {
        pc->parts[i].pkg = -1;
        for (int k = 0; k < pc->npkg && pc->parts[i].gpus; k++)
            if (!hwloc_bitmap_iszero(pc->parts[i].dom) && hwloc_bitmap_isincluded(pc->parts[i].dom, pc->pkgobj[k]->cpuset))
                pc->parts[i].pkg = k;
    }
    if (pc->p->req.cpu_locality != GPURUN_CPULOC_PACKAGE || gpr <= 0)
        return;
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    for (int i = 0; i < pc->nparts; i++)
        hwloc_bitmap_or(near, near, pc->parts[i].dom);
    for (int d = 0; d < nd; d++)
        for (int k = 0; k < pc->npkg; k++)
            if (!hwloc_bitmap_intersects(numa[d], near) && hwloc_bitmap_isincluded(numa[d], pc->pkgobj[k]->cpuset))
                hwloc_bitmap_or(pc->pool[k], pc->pool[k], numa[d]);
    hwloc_bitmap_free(near);
    for (int k = 0; k < pc->npkg; k++) {
        for (int c = 0; c < pc->cp.n; c++)
            pc->pool_free[k] += hwloc_bitmap_isincluded(pc->cp.cores[c]->cpuset, pc->pool[k]);
        pc->spill |= pc->pool_free[k] > 0;
    }
}

/* The parts grouped by their domain, narrowest first, and each group
 * given its cores. */
static int place_groups(struct plan_cores *pc, gpurun_error_t *err)
{
    struct group *groups = gpurun_xcalloc((size_t)(pc->nparts ? pc->nparts : 1), sizeof *groups);
    int ng = 0, rc = 0;
    for (int i = 0; i < pc->nparts; i++) {
        if (pc->p->req.threads_per_rank != GPURUN_UNSET && pc->parts[i].need == 0)
            continue; /* fewer threads than the rank has GPU localities */
        int g = 0;
        while (g < ng && !hwloc_bitmap_isequal(groups[g].dom, pc->parts[i].dom))
            g++;
        if (g == ng) {
            groups[ng].dom = pc->parts[i].dom;
            groups[ng].members = gpurun_xcalloc((size_t)pc->nparts, sizeof(int));
            ng++;
        }
        groups[g].members[groups[g].n++] = i;
    }
    qsort(groups, (size_t)ng, sizeof *groups, group_cmp);
    for (int g = 0; g < ng && rc == 0; g++)
        rc = place_group(pc, &groups[g], err);
    for (int g = 0; g < ng; g++)
        free(groups[g].members);
    free(groups);
    return rc;
}

static void plan_cores_free(struct plan_cores *pc)
{
    for (int i = 0; i < pc->nparts; i++) {
        hwloc_bitmap_free(pc->parts[i].dom);
        free(pc->parts[i].gpus);
        free(pc->parts[i].units);
    }
    free(pc->parts);
    for (int k = 0; k < pc->npkg; k++)
        hwloc_bitmap_free(pc->pool[k]);
    free(pc->pool);
    free(pc->pool_free);
    free(pc->pkgobj);
    core_pool_free(&pc->cp);
}

/* Ranks moved off memoryless NUMA nodes, and ranks whose cores have no
 * NUMA node at all (see cpu_numa_domains), each with what they lack. */
static void place_memory(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn)
{
    hwloc_bitmap_t moved = hwloc_bitmap_alloc(), empty = hwloc_bitmap_alloc();
    hwloc_bitmap_t homeless = hwloc_bitmap_alloc(), homeless_cpus = hwloc_bitmap_alloc();
    for (int r = 0; r < rpn; r++) {
        memory_nodes(t, &p->ranks[r]);
        hwloc_bitmap_t own = hwloc_bitmap_dup(p->ranks[r].nodeset);
        if (memory_elsewhere(t, &p->ranks[r])) {
            hwloc_bitmap_set(hwloc_bitmap_iszero(own) ? homeless : moved, (unsigned)r);
            if (hwloc_bitmap_iszero(own))
                hwloc_bitmap_or(homeless_cpus, homeless_cpus, p->ranks[r].cpuset);
            hwloc_bitmap_or(empty, empty, own);
        }
        hwloc_bitmap_free(own);
    }
    if (!hwloc_bitmap_iszero(moved)) {
        char *rl = gpurun_cpuset_list(moved), *nl = gpurun_cpuset_list(empty);
        plan_warn(p, "NUMA node%s %s %s no memory: local rank%s %s bind%s memory to the nearest nodes that have some",
                  hwloc_bitmap_weight(empty) == 1 ? "" : "s", nl, hwloc_bitmap_weight(empty) == 1 ? "has" : "have",
                  hwloc_bitmap_weight(moved) == 1 ? "" : "s", rl, hwloc_bitmap_weight(moved) == 1 ? "s" : "");
        free(rl);
        free(nl);
    }
    if (!hwloc_bitmap_iszero(homeless)) {
        char *rl = gpurun_cpuset_list(homeless), *cl = gpurun_cpuset_list(homeless_cpus);
        plan_warn(p, "cpus %s are in no NUMA node of the export (one with no memory, as hwloc 1.x wrote it): local "
                  "rank%s %s bind%s memory to the nearest nodes that have some", cl,
                  hwloc_bitmap_weight(homeless) == 1 ? "" : "s", rl, hwloc_bitmap_weight(homeless) == 1 ? "s" : "");
        free(rl);
        free(cl);
    }
    hwloc_bitmap_free(moved);
    hwloc_bitmap_free(empty);
    hwloc_bitmap_free(homeless);
    hwloc_bitmap_free(homeless_cpus);
}

static int place_cores(const gpurun_topo_t *t, gpurun_plan_t *p, hwloc_bitmap_t *numa, int nd, int rpn, int gpr,
                       gpurun_error_t *err)
{
    struct plan_cores pc = {.t = t, .p = p};
    core_pool_init(t, p->req.allowed_cpus, &pc.cp);
    make_parts(&pc, numa, nd, rpn, gpr);
    find_pools(&pc, numa, nd, gpr);
    int rc = place_groups(&pc, err);
    for (int i = 0; i < pc.nparts; i++)
        pc.parts[i].nlocal = pc.parts[i].nunits;
    if (rc == 0 && pc.spill)
        rc = place_pools(&pc, err);
    if (rc == 0)
        finish_ranks(&pc, rpn);
    plan_cores_free(&pc);
    if (rc == 0)
        place_memory(t, p, rpn);
    return rc;
}

/* A plan that keeps most of the cores it may use idle is rarely what was
 * meant (CPU kinds taken for a hybrid CPU once gave a rank 10 of 72 cores
 * without a word): say so, with the numbers. */
static void warn_unused_cores(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn)
{
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    for (int r = 0; r < rpn; r++)
        hwloc_bitmap_or(used, used, p->ranks[r].cpuset);
    struct core_pool cp;
    core_pool_init(t, p->req.allowed_cpus, &cp);
    int nused = 0;
    for (int c = 0; c < cp.n; c++)
        nused += hwloc_bitmap_intersects(cp.cores[c]->cpuset, used);
    if (cp.n > 1 && 2 * nused < cp.n)
        plan_warn(p, "the ranks of a node use %d of the %d cores %s, leaving most idle: more ranks per node or "
                  "threads per rank would use them", nused, cp.n,
                  p->req.allowed_cpus ? "of the allocation" : "of the node");
    core_pool_free(&cp);
    hwloc_bitmap_free(used);
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
        plan_warn(p, "local rank%s %s reach%s the nearest high-speed NIC only across the CPU interconnect (SYS)",
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
    int *order = gpus_by_locality(t), ngpus = 0;
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
            plan_warn(p, "ranks_per_node = %d is not a multiple of ranks_per_gpu = %d: the last GPU has %d rank%s, "
                      "the others %d each", rpn, share, rpn % share, plural(rpn % share), share);
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
                              rpn, plural(rpn), gpr, plural(gpr), rpn * gpr, t->hostname, ngpus,
                              ngpus < nvendor ? " in this allocation" : "", units);
        }
        plan_warn(p, "%d ranks share %d GPU%s (%d per rank): ranks on one GPU compete for it", rpn, units * gpr,
                  plural(units * gpr), gpr);
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
        plan_warn(p, "ranks get the %s GPUs only; not planned: %s", p->gpu_vendor, others);
        free(others);
    }
    if (gpr > 0)
        warn_no_locality(p);
    if (t->gpus_without_pci) {
        bool one = !strchr(t->gpus_without_pci, ',');
        plan_warn(p, "GPU runtime device%s %s %s under no PCI device in the topology (an SoC GPU such as Jetson's, or "
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
                          "gpus_per_rank = %d or fewer", gpr, t->hostname, nv, p->gpu_vendor, plural(nv), nv);
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
    hwloc_bitmap_t *numa = cpu_numa_domains(t, &nd);
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
        rc = place_cores(t, p, numa, nd, rpn, gpr, err);
        if (rc == 0)
            warn_unused_cores(t, p, rpn);
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
