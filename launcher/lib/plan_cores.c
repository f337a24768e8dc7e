/* SPDX-License-Identifier: BSD-3-Clause */
/* Where each rank's cores and memory are (plan_cores.h): the core pool, the
 * groups of ranks that share a GPU's locality, the package pools, the
 * memory nodes.  Moved whole from plan.c. */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_cores.h"
#include "plan_domains.h"
#include "plan_model.h"
#include "topology.h"
#include "util.h"

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
    char *lbl = gpurun_plan_domain_label(pc->t, dom);
    if (most <= 1) {
        gpurun_plan_warn(pc->p, "%d rank%s share the %d core%s of %s, one rank per hardware thread (%d PUs, SMT siblings "
                  "included): ranks will compete for cores", k, gpurun_plan_plural(k), ncores, gpurun_plan_plural(ncores), lbl, npus);
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
    gpurun_plan_warn(pc->p, "%d rank%s share the %d core%s (%d PUs) of %s: %s%s; ranks will compete for cores", k, gpurun_plan_plural(k),
              ncores, gpurun_plan_plural(ncores), npus, lbl, idle ? "" : "every PU has a rank and ", hist ? hist : "");
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
    char *lbl = gpurun_plan_domain_label(t, dom);
    if (!hwloc_bitmap_iszero(slow)) {
        char *l = gpurun_cpuset_list(slow);
        gpurun_plan_warn(p, "hybrid CPU in %s: local rank%s %s run%s on its slower cores, and the ranks on its faster cores "
                  "will wait for them; fewer ranks or threads fit on the faster cores alone", lbl,
                  gpurun_plan_plural(hwloc_bitmap_weight(slow)), l, hwloc_bitmap_weight(slow) == 1 ? "s" : "");
        free(l);
    }
    if (!hwloc_bitmap_iszero(mixed)) {
        char *l = gpurun_cpuset_list(mixed);
        gpurun_plan_warn(p, "hybrid CPU in %s: local rank%s %s mix%s faster and slower cores", lbl,
                  gpurun_plan_plural(hwloc_bitmap_weight(mixed)), l, hwloc_bitmap_weight(mixed) == 1 ? "es" : "");
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
    char *lbl = gpurun_plan_domain_label(pc->t, gp->g->dom);
    bool split = false; /* ranks with GPUs elsewhere too: their share of cores here */
    for (int j = 0; j < k; j++)
        split |= pc->parts[gp->g->members[j]].w < p->ranks[gp->ranks[j]].ngpus;
    if (gp->tpr && split && (long)req->threads_per_rank * navail / sum >= 1)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s with %d thread%s each need %d cores in %s, for their GPUs there (a "
                        "rank's cores are shared out over its GPUs' localities), which has %d free; use "
                        "threads_per_rank = %ld, fewer ranks per node, or oversubscribe = true to share cores",
                        k, gpurun_plan_plural(k), req->threads_per_rank, gpurun_plan_plural(req->threads_per_rank), sum, lbl, navail,
                        (long)req->threads_per_rank * navail / sum);
    else if (gp->tpr && navail / k >= 1)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s with %d thread%s each need %d cores in %s, which has %d free; "
                        "use threads_per_rank = %d, fewer ranks per node, or oversubscribe = true "
                        "to share cores",
                        k, gpurun_plan_plural(k), req->threads_per_rank, gpurun_plan_plural(req->threads_per_rank), sum, lbl,
                        navail, req->smt ? navail / k * hwloc_bitmap_weight(pc->cp.cores[gp->avail[0]]->cpuset)
                                         : navail / k);
    else
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s share %s, which has only %d free core%s: use at most %d rank%s there "
                        "(fewer ranks per node), or oversubscribe = true to share cores",
                        k, gpurun_plan_plural(k), lbl, navail, gpurun_plan_plural(navail), navail, gpurun_plan_plural(navail));
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
        char *lbl = gpurun_plan_domain_label(pc->t, g->dom);
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "no free cores left in %s for local rank%s %d%s: other ranks took them; "
                        "use fewer ranks per node or set oversubscribe = true to share cores",
                        lbl, gpurun_plan_plural(gp.k), gp.ranks[0], gp.k > 1 ? " and others" : "");
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
    unsigned px = gpurun_plan_domain_pos(pc->t, x->dom), py = gpurun_plan_domain_pos(pc->t, y->dom);
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
                        nr, gpurun_plan_plural(nr), req->threads_per_rank, gpurun_plan_plural(req->threads_per_rank), pp->given + pp->D,
                        where, freec,
                        req->smt && pp->np ? freec / nr * hwloc_bitmap_weight(pc->cp.cores[pp->pool[0]]->cpuset)
                                           : freec / nr);
    else
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%d rank%s share %s, which has only %d free core%s near their GPUs or on its NUMA "
                        "nodes without GPUs: use at most %d rank%s there (fewer ranks per node), or "
                        "oversubscribe = true to share cores",
                        nr, gpurun_plan_plural(nr), where, freec, gpurun_plan_plural(freec), freec, gpurun_plan_plural(freec));
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
            hwloc_bitmap_t dom = gpurun_plan_gpu_locality(t, p, rp->gpus[g]);
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
        gpurun_plan_warn(p, "NUMA node%s %s %s no memory: local rank%s %s bind%s memory to the nearest nodes that have some",
                  hwloc_bitmap_weight(empty) == 1 ? "" : "s", nl, hwloc_bitmap_weight(empty) == 1 ? "has" : "have",
                  hwloc_bitmap_weight(moved) == 1 ? "" : "s", rl, hwloc_bitmap_weight(moved) == 1 ? "s" : "");
        free(rl);
        free(nl);
    }
    if (!hwloc_bitmap_iszero(homeless)) {
        char *rl = gpurun_cpuset_list(homeless), *cl = gpurun_cpuset_list(homeless_cpus);
        gpurun_plan_warn(p, "cpus %s are in no NUMA node of the export (one with no memory, as hwloc 1.x wrote it): local "
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

int gpurun_plan_place_cores(const gpurun_topo_t *t, gpurun_plan_t *p, hwloc_bitmap_t *numa, int nd, int rpn, int gpr,
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
void gpurun_plan_warn_unused_cores(const gpurun_topo_t *t, gpurun_plan_t *p, int rpn)
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
        gpurun_plan_warn(p, "the ranks of a node use %d of the %d cores %s, leaving most idle: more ranks per node or "
                  "threads per rank would use them", nused, cp.n,
                  p->req.allowed_cpus ? "of the allocation" : "of the node");
    core_pool_free(&cp);
    hwloc_bitmap_free(used);
}
