/* SPDX-License-Identifier: BSD-3-Clause */
/* bench/mpibind-compare: gpurun's plans against LLNL mpibind's for the same
 * node and request (bench/mpibind.sh builds mpibind from ../shared/peer and
 * this program; never part of gpurun or of its tests).
 *
 * For every hwloc export given and six scenarios it plans with libgpurun
 * (the public API) and with mpibind's library, driven as mpibind's own
 * test suite drives it (test-suite/test_utils.c: the same type filters,
 * mpibind_set_topology, ntasks, nthreads, greedy and gpu_optim at their
 * defaults), in a child process, since mpibind crashes on some exports.
 * Both plans are then measured the same way, from the topology alone:
 *
 *   no GPU        ranks of a GPU scenario that got no GPU
 *   far GPU       GPUs of a rank none of whose cores is in the GPU's package
 *                 (counted where the rank has a core for each such package)
 *   stacked       PUs with two ranks or more while a PU of the node has none
 *   core shared   cores with two ranks or more while a core of the node has none
 *   idle          cores of the packages holding the ranks' GPUs (the whole
 *                 node without GPUs) that no rank has, where no
 *                 threads_per_rank bounds the ranks
 *
 * A case is "identical" when both give every rank the same cpus, GPUs and
 * thread count; "gpurun better" / "gpurun worse" when one plan has fewer of
 * a defect and none more; "both valid" otherwise, with what differs.
 * gpurun plans with oversubscribe = true: mpibind never refuses, it stacks. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hwloc.h>
#include <jansson.h>
#include <mpibind.h>

#include "gpurun.h"

#define MAXR 4096

struct rank {
    hwloc_bitmap_t cpus;
    char gpus[64][20];
    int ngpus, threads;
};

struct plan {
    int n;
    struct rank r[MAXR];
    char why[512]; /* why there is no plan; "" when there is */
};

struct node {
    const char *file;
    hwloc_topology_t hw; /* CPU side only, for the measures */
    int ngpus, vendor_gpus, cores, pus, numa;
    char analysis_xml[64]; /* a gpurun export for hwloc 2 (an hwloc 3 file); "" when none */
    char gpu_pci[64][20];
    hwloc_bitmap_t gpu_cpus[64];
};

struct scenario {
    const char *name;
    bool gpus_needed;
    int rpn, gpr, tpr, rpg; /* -1: gpurun's default */
    bool cpu_only;
    int tasks, threads, gpu_optim; /* mpibind's */
};

static void plan_free(struct plan *p)
{
    for (int i = 0; i < p->n; i++)
        hwloc_bitmap_free(p->r[i].cpus);
    p->n = 0;
}

/* --- gpurun ------------------------------------------------------------- */

static int gpurun_side(const struct node *nd, const struct scenario *s, struct plan *out)
{
    gpurun_error_t err = {0, ""};
    gpurun_topology_t *t = NULL;
    gpurun_plan_request_t *q = NULL;
    gpurun_placement_t *pl = NULL;
    char *doc = NULL;
    int rc = gpurun_topology_load(nd->file, 0, &t, &err);
    if (!rc)
        rc = gpurun_plan_request_create(&q, &err);
    if (!rc && s->rpn > 0)
        rc = gpurun_plan_request_set(q, GPURUN_REQ_RANKS_PER_NODE, s->rpn, &err);
    if (!rc && s->gpr >= 0)
        rc = gpurun_plan_request_set(q, GPURUN_REQ_GPUS_PER_RANK, s->gpr, &err);
    if (!rc && s->tpr > 0)
        rc = gpurun_plan_request_set(q, GPURUN_REQ_THREADS_PER_RANK, s->tpr, &err);
    if (!rc && s->rpg > 1) {
        char j[64];
        snprintf(j, sizeof j, "{\"ranks_per_gpu\": %d}", s->rpg);
        rc = gpurun_plan_request_set_json(q, j, &err);
    }
    if (!rc)
        rc = gpurun_plan_request_set(q, GPURUN_REQ_OVERSUBSCRIBE, 1, &err);
    if (!rc)
        rc = gpurun_placement_create(t, q, &pl, &err);
    if (!rc)
        rc = gpurun_placement_json(pl, 0, &doc, &err);
    out->n = 0;
    if (rc) {
        snprintf(out->why, sizeof out->why, "gpurun refuses: %s", err.text);
    } else {
        json_t *j = json_loads(doc, 0, NULL), *ranks = json_object_get(j, "ranks");
        size_t i;
        json_t *rk;
        json_array_foreach(ranks, i, rk)
        {
            if (out->n == MAXR)
                break;
            struct rank *r = &out->r[out->n++];
            r->cpus = hwloc_bitmap_alloc();
            const char *c = json_string_value(json_object_get(rk, "cpus"));
            if (c)
                hwloc_bitmap_list_sscanf(r->cpus, c);
            r->threads = (int)json_integer_value(json_object_get(rk, "threads"));
            r->ngpus = 0;
            size_t g;
            json_t *pci;
            json_array_foreach(json_object_get(rk, "gpu_pci"), g, pci)
            {
                if (r->ngpus < 64)
                    snprintf(r->gpus[r->ngpus++], 20, "%s", json_string_value(pci));
            }
        }
        json_decref(j);
        out->why[0] = 0;
    }
    free(doc);
    gpurun_placement_destroy(pl);
    gpurun_plan_request_destroy(q);
    gpurun_topology_destroy(t);
    return rc ? -1 : 0;
}

/* --- mpibind, in a child ---------------------------------------------------- */

static void mpibind_child(const char *file, const struct scenario *s, FILE *w)
{
    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    if (hwloc_topology_set_xml(topo, file) < 0) {
        fprintf(w, "error cannot load the export\n");
        return;
    }
    hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hwloc_topology_load(topo);
    mpibind_t *h;
    mpibind_init(&h);
    mpibind_set_topology(h, topo);
    mpibind_set_ntasks(h, s->tasks);
    mpibind_set_nthreads(h, s->threads);
    mpibind_set_greedy(h, 1);
    mpibind_set_gpu_optim(h, s->gpu_optim);
    if (mpibind(h)) {
        fprintf(w, "error mpibind() failed\n");
        return;
    }
    mpibind_set_gpu_ids(h, MPIBIND_ID_PCIBUS);
    hwloc_bitmap_t *cpus = mpibind_get_cpus(h);
    int *th = mpibind_get_nthreads(h);
    fprintf(w, "gpus %d\n", mpibind_get_num_gpus(h));
    for (int i = 0; i < s->tasks; i++) {
        char *c;
        hwloc_bitmap_list_asprintf(&c, cpus[i]);
        int ng = 0;
        char **g = mpibind_get_gpus_ptask(h, i, &ng);
        fprintf(w, "task %d %s", th[i], *c ? c : "-");
        for (int k = 0; k < ng; k++)
            fprintf(w, " %s", g[k]);
        fprintf(w, "\n");
        free(c);
    }
    mpibind_finalize(h);
    hwloc_topology_destroy(topo);
}

static int mpibind_side(const struct node *nd, const struct scenario *s, struct plan *out, int *seen_gpus)
{
    int fd[2];
    out->n = 0;
    *seen_gpus = -1;
    if (pipe(fd) < 0)
        return snprintf(out->why, sizeof out->why, "pipe: %s", strerror(errno)), -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        FILE *w = fdopen(fd[1], "w");
        if (!freopen("/dev/null", "w", stderr)) /* mpibind's own warnings */
            _exit(2);
        alarm(60);
        mpibind_child(nd->file, s, w);
        fclose(w);
        _exit(0);
    }
    close(fd[1]);
    FILE *r = fdopen(fd[0], "r");
    char *line = NULL;
    size_t cap = 0;
    bool error = false;
    out->why[0] = 0;
    while (getline(&line, &cap, r) > 0) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "error ", 6)) {
            snprintf(out->why, sizeof out->why, "mpibind: %s", line + 6);
            error = true;
        } else if (!strncmp(line, "gpus ", 5)) {
            *seen_gpus = atoi(line + 5);
        } else if (!strncmp(line, "task ", 5) && out->n < MAXR) {
            struct rank *rk = &out->r[out->n++];
            char *save = NULL, *tok = strtok_r(line + 5, " ", &save);
            rk->threads = tok ? atoi(tok) : 0;
            rk->cpus = hwloc_bitmap_alloc();
            tok = strtok_r(NULL, " ", &save);
            if (tok && strcmp(tok, "-"))
                hwloc_bitmap_list_sscanf(rk->cpus, tok);
            rk->ngpus = 0;
            while ((tok = strtok_r(NULL, " ", &save)) && rk->ngpus < 64)
                snprintf(rk->gpus[rk->ngpus++], 20, "%s", tok);
        }
    }
    free(line);
    fclose(r);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) {
        snprintf(out->why, sizeof out->why, "mpibind crashes (signal %d%s)", WTERMSIG(st),
                 WTERMSIG(st) == SIGSEGV ? ", SIGSEGV" : "");
        error = true;
    }
    if (!error && out->n != s->tasks) {
        snprintf(out->why, sizeof out->why, "mpibind: %d tasks planned of %d", out->n, s->tasks);
        error = true;
    }
    if (error)
        plan_free(out);
    return error ? -1 : 0;
}

/* --- measures --------------------------------------------------------------- */

struct measure {
    int no_gpu, far, off_numa, stacked, core_shared, idle, remote, smt_ranks, more_cpus_than_threads;
};

static int gpu_index(const struct node *nd, const char *pci)
{
    for (int g = 0; g < nd->ngpus; g++)
        if (!strcasecmp(nd->gpu_pci[g], pci))
            return g;
    return -1;
}

static hwloc_obj_t package_of(hwloc_topology_t hw, hwloc_const_cpuset_t set)
{
    int pu = hwloc_bitmap_first(set);
    hwloc_obj_t o = pu >= 0 ? hwloc_get_pu_obj_by_os_index(hw, (unsigned)pu) : NULL;
    hwloc_obj_t pk = o ? hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, o) : NULL;
    return pk ? pk : hwloc_get_root_obj(hw);
}

static void measure(const struct node *nd, const struct scenario *s, const struct plan *p, struct measure *m)
{
    hwloc_topology_t hw = nd->hw;
    memset(m, 0, sizeof *m);
    int last = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(hw));
    int *load = calloc((size_t)last + 2, sizeof *load);
    hwloc_bitmap_t used = hwloc_bitmap_alloc(), near_pkgs = hwloc_bitmap_alloc();
    for (int i = 0; i < p->n; i++) {
        const struct rank *r = &p->r[i];
        int pu;
        hwloc_bitmap_foreach_begin(pu, r->cpus)
        {
            if (pu <= last)
                load[pu]++;
        }
        hwloc_bitmap_foreach_end();
        hwloc_bitmap_or(used, used, r->cpus);
        if (s->gpus_needed && r->ngpus == 0)
            m->no_gpu++;
        /* far GPUs: none of the rank's cores in the GPU's package, where the
         * rank has a core for each package of its GPUs; apart from those,
         * GPUs none of whose locality's cores (its NUMA node) the rank has */
        int ncores = 0, npk = 0;
        for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_covering_cpuset_by_type(hw, r->cpus, HWLOC_OBJ_CORE, c));)
            ncores++;
        hwloc_bitmap_t gpkgs = hwloc_bitmap_alloc();
        for (int g = 0; g < r->ngpus; g++) {
            int x = gpu_index(nd, r->gpus[g]);
            if (x < 0 || hwloc_bitmap_iszero(nd->gpu_cpus[x]))
                continue;
            hwloc_obj_t pk = package_of(hw, nd->gpu_cpus[x]);
            npk += !hwloc_bitmap_isincluded(pk->cpuset, gpkgs);
            hwloc_bitmap_or(gpkgs, gpkgs, pk->cpuset);
        }
        for (int g = 0; g < r->ngpus; g++) {
            int x = gpu_index(nd, r->gpus[g]);
            if (x < 0 || hwloc_bitmap_iszero(nd->gpu_cpus[x]))
                continue;
            hwloc_obj_t pk = package_of(hw, nd->gpu_cpus[x]);
            if (ncores >= npk && !hwloc_bitmap_intersects(r->cpus, pk->cpuset))
                m->far++;
            else if (!hwloc_bitmap_intersects(r->cpus, nd->gpu_cpus[x]))
                m->off_numa++;
        }
        if (!hwloc_bitmap_iszero(gpkgs)) {
            hwloc_bitmap_t out = hwloc_bitmap_dup(r->cpus);
            hwloc_bitmap_andnot(out, out, gpkgs);
            m->remote += !hwloc_bitmap_iszero(out);
            hwloc_bitmap_free(out);
            hwloc_bitmap_or(near_pkgs, near_pkgs, gpkgs);
        }
        hwloc_bitmap_free(gpkgs);
        /* SMT: a rank with two PUs of one core */
        bool smt = false;
        for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_covering_cpuset_by_type(hw, r->cpus, HWLOC_OBJ_CORE, c));) {
            hwloc_bitmap_t in = hwloc_bitmap_alloc();
            hwloc_bitmap_and(in, c->cpuset, r->cpus);
            smt |= hwloc_bitmap_weight(in) > 1;
            hwloc_bitmap_free(in);
        }
        m->smt_ranks += smt;
        m->more_cpus_than_threads += r->threads > 0 && hwloc_bitmap_weight(r->cpus) > r->threads;
    }
    hwloc_const_cpuset_t online = hwloc_topology_get_topology_cpuset(hw);
    bool idle_pu = false, idle_core = false;
    int pu;
    hwloc_bitmap_foreach_begin(pu, online)
    {
        idle_pu |= pu <= last && load[pu] == 0;
    }
    hwloc_bitmap_foreach_end();
    for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_CORE, c));)
        idle_core |= !hwloc_bitmap_iszero(c->cpuset) && !hwloc_bitmap_intersects(c->cpuset, used);
    hwloc_bitmap_foreach_begin(pu, online)
    {
        if (idle_pu && pu <= last && load[pu] > 1)
            m->stacked++;
    }
    hwloc_bitmap_foreach_end();
    if (s->cpu_only || nd->ngpus == 0)
        hwloc_bitmap_copy(near_pkgs, online);
    for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_CORE, c));) {
        if (hwloc_bitmap_iszero(c->cpuset))
            continue;
        int ranks = 0;
        for (int i = 0; i < p->n; i++)
            ranks += hwloc_bitmap_intersects(c->cpuset, p->r[i].cpus);
        if (idle_core && ranks > 1)
            m->core_shared++;
        if (s->tpr <= 0 && ranks == 0 && hwloc_bitmap_isincluded(c->cpuset, near_pkgs))
            m->idle++;
    }
    hwloc_bitmap_free(used);
    hwloc_bitmap_free(near_pkgs);
    free(load);
}

/* Same ranks (cpus, GPUs, threads), whatever their order. */
static int rank_key_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool identical(const struct plan *a, const struct plan *b)
{
    if (a->n != b->n)
        return false;
    char **ka = calloc((size_t)a->n, sizeof *ka), **kb = calloc((size_t)b->n, sizeof *kb);
    for (int pass = 0; pass < 2; pass++) {
        const struct plan *p = pass ? b : a;
        char **k = pass ? kb : ka;
        for (int i = 0; i < p->n; i++) {
            char *c, gpus[1400] = "";
            hwloc_bitmap_list_asprintf(&c, p->r[i].cpus);
            /* GPUs sorted, in lower case */
            char sorted[64][20];
            int n = p->r[i].ngpus;
            for (int g = 0; g < n; g++) {
                snprintf(sorted[g], 20, "%s", p->r[i].gpus[g]);
                for (char *x = sorted[g]; *x; x++)
                    *x = (char)tolower((unsigned char)*x);
            }
            qsort(sorted, (size_t)n, sizeof sorted[0], (int (*)(const void *, const void *))strcmp);
            for (int g = 0; g < n; g++)
                snprintf(gpus + strlen(gpus), sizeof gpus - strlen(gpus), "%s%s", g ? "," : "", sorted[g]);
            if (asprintf(&k[i], "%s|%s|%d", c, gpus, p->r[i].threads) < 0)
                k[i] = NULL;
            free(c);
        }
        qsort(k, (size_t)p->n, sizeof *k, rank_key_cmp);
    }
    bool same = true;
    for (int i = 0; i < a->n; i++) {
        same &= ka[i] && kb[i] && !strcmp(ka[i], kb[i]);
        free(ka[i]);
        free(kb[i]);
    }
    free(ka);
    free(kb);
    return same;
}

static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
    size_t l = strlen(buf);
    if (l && l + 2 < len) {
        strcat(buf, "; ");
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, len - l, fmt, ap);
    va_end(ap);
}

/* --- the cases ---------------------------------------------------------- */

static int verdicts[4], not_applicable;
static const char *const verdict_names[] = {"identical", "both valid", "gpurun better", "gpurun worse"};

static void report(const char *file, const char *scen, int v, const char *why)
{
    verdicts[v]++;
    const char *base = strrchr(file, '/');
    printf("| %s | %s | %s | %s |\n", base ? base + 1 : file, scen, verdict_names[v], why);
}

static void compare(const struct node *nd, const struct scenario *s)
{
    static struct plan gp, mp;
    char why[2048] = "";
    if (s->gpus_needed && nd->ngpus == 0) {
        not_applicable++; /* a GPU case on a node without GPUs */
        return;
    }
    int seen = -1;
    int grc = gpurun_side(nd, s, &gp);
    int mrc = mpibind_side(nd, s, &mp, &seen);
    if (grc && mrc) {
        snprintf(why, sizeof why, "neither plans: %s; %s", gp.why, mp.why);
        report(nd->file, s->name, 1, why);
        return;
    }
    if (mrc) {
        snprintf(why, sizeof why, "%s", mp.why);
        report(nd->file, s->name, 2, why);
        plan_free(&gp);
        return;
    }
    if (grc) {
        report(nd->file, s->name, 3, gp.why);
        plan_free(&mp);
        return;
    }
    if (s->gpus_needed && seen == 0) {
        snprintf(why, sizeof why, "mpibind finds none of the %d GPUs (it sees GPUs only as NVML/RSMI/Level Zero OS "
                 "devices), its ranks get none", nd->ngpus);
        report(nd->file, s->name, 2, why);
        plan_free(&gp);
        plan_free(&mp);
        return;
    }
    if (identical(&gp, &mp)) {
        report(nd->file, s->name, 0, "same cpus, GPUs and threads for every rank");
        plan_free(&gp);
        plan_free(&mp);
        return;
    }
    struct measure g, m;
    measure(nd, s, &gp, &g);
    measure(nd, s, &mp, &m);
    char better[1024] = "", worse[1024] = "", other[1024] = "";
    struct {
        const char *what;
        int a, b;
    } d[] = {
        {"ranks without a GPU", g.no_gpu, m.no_gpu},
        {"GPUs with no core of their rank in their package", g.far, m.far},
        {"PUs with two ranks or more while PUs are idle", g.stacked, m.stacked},
        {"cores with two ranks or more while cores are idle", g.core_shared, m.core_shared},
        {"idle cores in the packages of the ranks' GPUs (of the node without GPUs)", g.idle, m.idle},
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        if (d[i].a < d[i].b)
            add(better, sizeof better, "%s: %d, mpibind %d", d[i].what, d[i].a, d[i].b);
        else if (d[i].a > d[i].b)
            add(worse, sizeof worse, "%s: %d, mpibind %d", d[i].what, d[i].a, d[i].b);
    }
    if (g.off_numa != m.off_numa)
        add(other, sizeof other, "GPUs whose rank has cores in their package but none on their NUMA node: gpurun %d, "
            "mpibind %d", g.off_numa, m.off_numa);
    if (g.remote != m.remote)
        add(other, sizeof other, "ranks with cores in a package without their GPUs: gpurun %d, mpibind %d", g.remote,
            m.remote);
    if (g.smt_ranks != m.smt_ranks)
        add(other, sizeof other, "ranks on SMT siblings of one core: gpurun %d, mpibind %d (gpurun: smt = false)",
            g.smt_ranks, m.smt_ranks);
    if (g.more_cpus_than_threads != m.more_cpus_than_threads)
        add(other, sizeof other, "ranks with more PUs than threads: gpurun %d, mpibind %d",
            g.more_cpus_than_threads, m.more_cpus_than_threads);
    int tg = 0, tm = 0;
    for (int i = 0; i < gp.n; i++)
        tg += gp.r[i].threads;
    for (int i = 0; i < mp.n; i++)
        tm += mp.r[i].threads;
    if (tg != tm)
        add(other, sizeof other, "threads in all: gpurun %d, mpibind %d", tg, tm);
    int gg = 0, gm = 0;
    for (int i = 0; i < gp.n; i++)
        gg += gp.r[i].ngpus;
    for (int i = 0; i < mp.n; i++)
        gm += mp.r[i].ngpus;
    if (gg != gm)
        add(other, sizeof other, "GPUs given to ranks: gpurun %d, mpibind %d%s", gg, gm,
            s->cpu_only ? " (mpibind's gpu_optim = 0 still hands out GPUs)" : "");
    if (!*other) {
        /* The first rank of gpurun's whose cpus no rank of mpibind's has. */
        char *a = NULL, *b = NULL;
        for (int i = 0; i < gp.n && !a; i++) {
            bool same = false;
            for (int k = 0; k < mp.n && !same; k++)
                same = hwloc_bitmap_isequal(gp.r[i].cpus, mp.r[k].cpus);
            if (!same && i < mp.n) {
                hwloc_bitmap_list_asprintf(&a, gp.r[i].cpus);
                hwloc_bitmap_list_asprintf(&b, mp.r[i].cpus);
            }
        }
        if (a)
            add(other, sizeof other, "the same measures, other cores (a rank of gpurun's on cpus %s, of mpibind's on %s)",
                a, b);
        else
            add(other, sizeof other, "the same cores, another GPU order or thread count");
        free(a);
        free(b);
    }
    if (*worse && *better) {
        snprintf(why, sizeof why, "worse: %s; better: %s", worse, better);
        report(nd->file, s->name, 3, why);
    } else if (*worse) {
        snprintf(why, sizeof why, "%s", worse);
        report(nd->file, s->name, 3, why);
    } else if (*better) {
        snprintf(why, sizeof why, "%s", better);
        report(nd->file, s->name, 2, why);
    } else {
        report(nd->file, s->name, 1, other);
    }
    plan_free(&gp);
    plan_free(&mp);
}

static int load_node(const char *file, struct node *nd)
{
    memset(nd, 0, sizeof *nd);
    nd->file = file;
    gpurun_error_t err = {0, ""};
    gpurun_topology_t *t;
    if (gpurun_topology_load(file, 0, &t, &err)) {
        fprintf(stderr, "%s: %s\n", file, err.text);
        return -1;
    }
    nd->cores = gpurun_topology_count(t, GPURUN_COUNT_CORES);
    nd->pus = gpurun_topology_count(t, GPURUN_COUNT_PUS);
    char *doc = NULL;
    gpurun_topology_json(t, 0, &doc, &err);
    json_t *j = json_loads(doc ? doc : "{}", 0, NULL), *topo = json_object_get(j, "topology");
    nd->numa = (int)json_array_size(json_object_get(topo, "numa_nodes"));
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(topo, "gpus"), i, g)
    {
        if (nd->ngpus == 64)
            break;
        const char *v = json_string_value(json_object_get(g, "vendor"));
        int same = 0;
        size_t k;
        json_t *h;
        json_array_foreach(json_object_get(topo, "gpus"), k, h)
        {
            same += v && json_string_value(json_object_get(h, "vendor")) &&
                    !strcmp(v, json_string_value(json_object_get(h, "vendor")));
        }
        if (same > nd->vendor_gpus)
            nd->vendor_gpus = same; /* a rank's GPUs are of one vendor: the one with most */
        snprintf(nd->gpu_pci[nd->ngpus], 20, "%s", json_string_value(json_object_get(g, "pci")));
        nd->gpu_cpus[nd->ngpus] = hwloc_bitmap_alloc();
        const char *c = json_string_value(json_object_get(g, "cpus"));
        if (c)
            hwloc_bitmap_list_sscanf(nd->gpu_cpus[nd->ngpus], c);
        nd->ngpus++;
    }
    json_decref(j);
    free(doc);
    /* What hwloc 2 cannot read (an hwloc 3 export) is measured on gpurun's
     * own export of it; mpibind still gets the file as given. */
    const char *measured = file;
    hwloc_topology_t probe;
    hwloc_topology_init(&probe);
    bool readable = hwloc_topology_set_xml(probe, file) == 0 && hwloc_topology_load(probe) == 0;
    hwloc_topology_destroy(probe);
    if (!readable) {
        snprintf(nd->analysis_xml, sizeof nd->analysis_xml, "/tmp/mpibind-compare-XXXXXX");
        int fd = mkstemp(nd->analysis_xml);
        if (fd >= 0)
            close(fd);
        if (fd < 0 || gpurun_topology_export(t, nd->analysis_xml, &err)) {
            fprintf(stderr, "%s: hwloc cannot load it, nor gpurun's export of it\n", file);
            gpurun_topology_destroy(t);
            return -1;
        }
        measured = nd->analysis_xml;
    }
    gpurun_topology_destroy(t);
    hwloc_topology_init(&nd->hw);
    if (hwloc_topology_set_xml(nd->hw, measured) < 0 || hwloc_topology_load(nd->hw) < 0) {
        fprintf(stderr, "%s: hwloc cannot load it\n", file);
        hwloc_topology_destroy(nd->hw);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.xml...\n", argv[0]);
        return 2;
    }
    printf("| topology | case | verdict | why |\n|---|---|---|---|\n");
    for (int a = 1; a < argc; a++) {
        struct node nd;
        if (load_node(argv[a], &nd) < 0)
            continue;
        int ng = nd.vendor_gpus, numa = nd.numa > 0 ? nd.numa : 1;
        struct scenario sc[] = {
            {"1 rank, every GPU, 1 thread per GPU", true, 1, ng, ng, 1, false, 1, ng, 1},
            {"1 rank, every GPU", true, 1, ng, -1, 1, false, 1, 0, 1},
            {"ranks = cores, oversubscribed", ng > 0, nd.cores, -1, -1, 1, false, nd.cores, 0, 1},
            {"2 ranks per GPU", true, 2 * ng, 1, -1, 2, false, 2 * ng, 0, 1},
            {"1 rank per GPU", true, ng, 1, -1, 1, false, ng, 0, 1},
            {"1 rank per NUMA node, CPU only", false, numa, 0, -1, 1, true, numa, 0, 0},
        };
        for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
            compare(&nd, &sc[i]);
        for (int g = 0; g < nd.ngpus; g++)
            hwloc_bitmap_free(nd.gpu_cpus[g]);
        hwloc_topology_destroy(nd.hw);
        if (nd.analysis_xml[0])
            unlink(nd.analysis_xml);
    }
    printf("\n%d cases: %d identical, %d both valid, %d gpurun better, %d gpurun worse (%d GPU cases left out on "
           "nodes without GPUs)\n",
           verdicts[0] + verdicts[1] + verdicts[2] + verdicts[3], verdicts[0], verdicts[1], verdicts[2], verdicts[3],
           not_applicable);
    return 0;
}
