/* SPDX-License-Identifier: BSD-3-Clause */
/* libgpurun's public API (gpurun.h): thin handles over the topology and
 * plan modules the gpurun program uses, so that the library and
 * `gpurun plan` give one plan for one request. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpurun.h"
#include "gpurun_private.h"

#include "error.h"
#include "plan.h"
#include "topology.h"
#include "util.h"

/* Callers see GPURUN_ERR_* codes: gpurun's exit codes for the same cases. */
_Static_assert((int)GPURUN_ERR_CONFIG == (int)GPURUN_EXIT_CONFIG, "error codes follow exit codes");
_Static_assert((int)GPURUN_ERR_ENV == (int)GPURUN_EXIT_ENV, "error codes follow exit codes");
_Static_assert(GPURUN_REQ_BIND_NONE == (int)GPURUN_BIND_NONE && GPURUN_REQ_BIND_CLOSEST == (int)GPURUN_BIND_CLOSEST,
               "bind values follow the job file's");
_Static_assert(GPURUN_REQ_GPUS_SHARED == (int)GPURUN_GPUVIS_SHARED && GPURUN_REQ_GPUS_ISOLATE == (int)GPURUN_GPUVIS_ISOLATE,
               "gpu_visibility values follow the job file's");
_Static_assert(GPURUN_REQ_CPUS_PACKAGE == (int)GPURUN_CPULOC_PACKAGE && GPURUN_REQ_CPUS_GPU == (int)GPURUN_CPULOC_GPU,
               "cpu_locality values follow the job file's");

struct gpurun_topology {
    gpurun_topo_t *topo;
};

struct gpurun_plan_request {
    gpurun_request_t req;
    hwloc_bitmap_t allowed_cpus; /* NULL: all; req.allowed_cpus points here */
};

struct gpurun_placement {
    gpurun_plan_t *plan;
    hwloc_bitmap_t allowed_cpus; /* the request's, copied: the plan's req points here */
};

struct gpurun_binding {
    int rank, threads;
    char *cpus, *mems;
    size_t nenv;
    char **names, **values;
};

/* The internal modules report GPURUN_EXIT_* codes; callers see 2 or 3. */
static int fail_code(gpurun_error_t *err)
{
    if (err && err->code != GPURUN_ERR_CONFIG)
        err->code = GPURUN_ERR_ENV;
    return err ? err->code : GPURUN_ERR_ENV;
}

static int fail(gpurun_error_t *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(gpurun_error_t *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpurun_verr(err, code, fmt, ap);
    va_end(ap);
    return code;
}

static int ok(gpurun_error_t *err)
{
    if (err) {
        err->code = GPURUN_OK;
        err->text[0] = '\0';
    }
    return GPURUN_OK;
}

int gpurun_api_version(void)
{
    return GPURUN_API_VERSION;
}

/* --- topology ------------------------------------------------------------ */

int gpurun_topology_load(const char *xml, unsigned flags, gpurun_topology_t **topop, gpurun_error_t *err)
{
    gpurun_error_t local;
    gpurun_error_t *e = err ? err : &local;
    if (!topop)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_topology_load: topop is NULL");
    *topop = NULL;
    if (flags & ~GPURUN_TOPOLOGY_FROM_ENV)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_topology_load: unknown flags 0x%x", flags);
    gpurun_topology_t *t = calloc(1, sizeof *t);
    if (!t)
        return fail(err, GPURUN_ERR_ENV, "gpurun_topology_load: out of memory");
    int rc = flags & GPURUN_TOPOLOGY_FROM_ENV ? gpurun_topo_load(xml, &t->topo, e)
                                              : gpurun_topo_load_xml(xml, &t->topo, e);
    if (rc < 0) {
        free(t);
        return fail_code(e);
    }
    *topop = t;
    return ok(err);
}

void gpurun_topology_destroy(gpurun_topology_t *t)
{
    if (!t)
        return;
    gpurun_topo_destroy(t->topo);
    free(t);
}

const gpurun_topo_t *gpurun_topology_internal(const gpurun_topology_t *t)
{
    return t ? t->topo : NULL;
}

int gpurun_topology_export(const gpurun_topology_t *t, const char *path, gpurun_error_t *err)
{
    gpurun_error_t local;
    gpurun_error_t *e = err ? err : &local;
    if (!t || !path)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_topology_export: topology or path is NULL");
    if (gpurun_topo_export(t->topo, path, e) < 0)
        return fail_code(e);
    return ok(err);
}

int gpurun_topology_count(const gpurun_topology_t *t, enum gpurun_topology_count what)
{
    if (!t)
        return -1;
    switch (what) {
    case GPURUN_COUNT_PACKAGES: return t->topo->packages;
    case GPURUN_COUNT_NUMA: return t->topo->numa_nodes;
    case GPURUN_COUNT_CORES: return t->topo->cores;
    case GPURUN_COUNT_PUS: return t->topo->pus;
    case GPURUN_COUNT_GPUS: return t->topo->ngpus;
    case GPURUN_COUNT_NICS: return t->topo->nhsnics;
    }
    return -1;
}

/* Dump (and release) a document into a caller-freed string. */
static int dump_json(json_t *doc, unsigned flags, char **jsonp, gpurun_error_t *err)
{
    char *s = doc ? json_dumps(doc, flags & GPURUN_JSON_INDENT ? JSON_INDENT(2) : JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!s)
        return fail(err, GPURUN_ERR_ENV, "cannot write the JSON document (out of memory)");
    *jsonp = s;
    return ok(err);
}

int gpurun_topology_json(const gpurun_topology_t *t, unsigned flags, char **jsonp, gpurun_error_t *err)
{
    if (!t || !jsonp)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_topology_json: topology or jsonp is NULL");
    *jsonp = NULL;
    if (flags & ~(GPURUN_JSON_INDENT | GPURUN_JSON_FULL))
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_topology_json: unknown flags 0x%x", flags);
    json_t *doc = json_pack("{s:i, s:o}", "gpurun_topo", 1, "topology",
                            gpurun_topo_json(t->topo, (flags & GPURUN_JSON_FULL) != 0));
    return dump_json(doc, flags, jsonp, err);
}

/* --- request ------------------------------------------------------------- */

int gpurun_plan_request_create(gpurun_plan_request_t **reqp, gpurun_error_t *err)
{
    if (!reqp)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_create: reqp is NULL");
    *reqp = calloc(1, sizeof **reqp);
    if (!*reqp)
        return fail(err, GPURUN_ERR_ENV, "gpurun_plan_request_create: out of memory");
    gpurun_request_init(&(*reqp)->req);
    return ok(err);
}

void gpurun_plan_request_destroy(gpurun_plan_request_t *r)
{
    if (!r)
        return;
    hwloc_bitmap_free(r->allowed_cpus);
    free(r);
}

static int in_range(const char *key, int value, int lo, int hi, bool auto_ok, gpurun_error_t *err)
{
    if ((auto_ok && value == GPURUN_REQ_AUTO) || (value >= lo && value <= hi))
        return GPURUN_OK;
    return fail(err, GPURUN_ERR_CONFIG, "request: %s = %d is out of range (%d..%d%s)", key, value, lo, hi,
                auto_ok ? ", or GPURUN_REQ_AUTO" : "");
}

int gpurun_plan_request_set(gpurun_plan_request_t *r, enum gpurun_request_key key, int value, gpurun_error_t *err)
{
    if (!r)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_set: request is NULL");
    gpurun_request_t *q = &r->req;
    int rc;
    /* The same bounds as the gpurun plan flags. */
    switch (key) {
    case GPURUN_REQ_NODES:
        if ((rc = in_range("nodes", value, 1, 100000, false, err)) == 0)
            q->nodes = value;
        return rc;
    case GPURUN_REQ_RANKS_PER_NODE:
        if ((rc = in_range("ranks_per_node", value, 1, 4096, true, err)) == 0)
            q->ranks_per_node = value;
        return rc;
    case GPURUN_REQ_GPUS_PER_RANK:
        if ((rc = in_range("gpus_per_rank", value, 0, 64, true, err)) == 0)
            q->gpus_per_rank = value;
        return rc;
    case GPURUN_REQ_THREADS_PER_RANK:
        if ((rc = in_range("threads_per_rank", value, 1, 4096, true, err)) == 0)
            q->threads_per_rank = value;
        return rc;
    case GPURUN_REQ_SMT:
        if ((rc = in_range("smt", value, 0, 1, false, err)) == 0)
            q->smt = value;
        return rc;
    case GPURUN_REQ_OVERSUBSCRIBE:
        if ((rc = in_range("oversubscribe", value, 0, 1, false, err)) == 0)
            q->oversubscribe = value;
        return rc;
    case GPURUN_REQ_BIND:
        if ((rc = in_range("bind", value, 0, 1, false, err)) == 0)
            q->bind = value == GPURUN_REQ_BIND_NONE ? GPURUN_BIND_NONE : GPURUN_BIND_CLOSEST;
        return rc;
    case GPURUN_REQ_GPU_VISIBILITY:
        if ((rc = in_range("gpu_visibility", value, 0, 1, false, err)) == 0)
            q->gpu_visibility = value == GPURUN_REQ_GPUS_SHARED ? GPURUN_GPUVIS_SHARED : GPURUN_GPUVIS_ISOLATE;
        return rc;
    case GPURUN_REQ_CPU_LOCALITY:
        if ((rc = in_range("cpu_locality", value, 0, 1, false, err)) == 0)
            q->cpu_locality = value == GPURUN_REQ_CPUS_GPU ? GPURUN_CPULOC_GPU : GPURUN_CPULOC_PACKAGE;
        return rc;
    }
    return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_set: unknown key %d", (int)key);
}

/* The keys and their JSON types are those gpurun_request_json() writes, so
 * a key the planner gains is settable here without a change. */
int gpurun_plan_request_set_json(gpurun_plan_request_t *r, const char *text, gpurun_error_t *err)
{
    if (!r || !text)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_set_json: request or JSON is NULL");
    json_error_t jerr;
    json_t *given = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!given || !json_is_object(given)) {
        json_decref(given);
        return fail(err, GPURUN_ERR_CONFIG, "request: not a JSON object%s%s", given ? "" : ": ",
                    given ? "" : jerr.text);
    }
    json_t *now = gpurun_request_json(&r->req);
    const char *key;
    json_t *v;
    int rc = GPURUN_OK;
    json_object_foreach(given, key, v) {
        json_t *was = json_object_get(now, key);
        if (!was) {
            rc = fail(err, GPURUN_ERR_CONFIG, "request: unknown key '%s'", key);
            break;
        }
        bool same = json_typeof(was) == json_typeof(v) || (json_is_boolean(was) && json_is_boolean(v));
        if (!same) {
            rc = fail(err, GPURUN_ERR_CONFIG, "request: '%s' must be a%s", key,
                      json_is_integer(was) ? "n integer" : json_is_boolean(was) ? " boolean" : " string");
            break;
        }
        if (json_is_integer(v) && (json_integer_value(v) < GPURUN_REQ_AUTO || json_integer_value(v) > 100000)) {
            rc = fail(err, GPURUN_ERR_CONFIG, "request: '%s' = %" JSON_INTEGER_FORMAT " is out of range", key,
                      json_integer_value(v));
            break;
        }
        if (json_is_string(v)) {
            const char *s = json_string_value(v);
            bool known = !strcmp(key, "bind") ? !strcmp(s, "closest") || !strcmp(s, "none")
                         : !strcmp(key, "gpu_visibility") ? !strcmp(s, "isolate") || !strcmp(s, "shared")
                         : !strcmp(key, "cpu_locality")   ? !strcmp(s, "package") || !strcmp(s, "gpu")
                                                          : true;
            if (!known) {
                rc = fail(err, GPURUN_ERR_CONFIG, "request: '%s' = '%s' is not a value it takes", key, s);
                break;
            }
        }
        json_object_set(now, key, v);
    }
    if (rc == GPURUN_OK) {
        hwloc_const_cpuset_t allowed = r->req.allowed_cpus;
        int gpus[GPURUN_MAX_ALLOWED_GPUS], ngpus = r->req.nallowed_gpus;
        memcpy(gpus, r->req.allowed_gpus, sizeof gpus);
        gpurun_request_from_json(&r->req, now);
        /* What the allocation allows is not part of the JSON. */
        r->req.allowed_cpus = allowed;
        memcpy(r->req.allowed_gpus, gpus, sizeof gpus);
        r->req.nallowed_gpus = ngpus;
        if (r->req.nodes < 1)
            rc = fail(err, GPURUN_ERR_CONFIG, "request: nodes must be at least 1");
        else
            ok(err);
    }
    json_decref(now);
    json_decref(given);
    return rc;
}

int gpurun_plan_request_allow_cpus(gpurun_plan_request_t *r, const char *cpulist, gpurun_error_t *err)
{
    if (!r)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_allow_cpus: request is NULL");
    if (!cpulist) {
        hwloc_bitmap_free(r->allowed_cpus);
        r->allowed_cpus = NULL;
        r->req.allowed_cpus = NULL;
        return ok(err);
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return fail(err, GPURUN_ERR_ENV, "gpurun_plan_request_allow_cpus: out of memory");
    /* The text may be a job's (SPANK): refused before the set grows past
     * the PUs gpurun accepts. */
    const char *why = NULL;
    if (gpurun_bitmap_list_parse(set, cpulist, GPURUN_TOPO_MAX_PU_INDEX, &why) < 0) {
        char shown[64];
        gpurun_short_text(shown, sizeof shown, cpulist);
        hwloc_bitmap_free(set);
        return fail(err, GPURUN_ERR_CONFIG,
                    "request: allowed cpus '%s' is not a list of PU numbers (\"0-7,16-23\", each below %d): %s", shown,
                    GPURUN_TOPO_MAX_PU_INDEX, why);
    }
    hwloc_bitmap_free(r->allowed_cpus);
    r->allowed_cpus = set;
    r->req.allowed_cpus = set;
    return ok(err);
}

int gpurun_plan_request_allow_gpus(gpurun_plan_request_t *r, const char *gpulist, gpurun_error_t *err)
{
    if (!r)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_plan_request_allow_gpus: request is NULL");
    if (!gpulist) {
        r->req.nallowed_gpus = -1;
        return ok(err);
    }
    if (!*gpulist) { /* no GPU */
        r->req.nallowed_gpus = 0;
        return ok(err);
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return fail(err, GPURUN_ERR_ENV, "gpurun_plan_request_allow_gpus: out of memory");
    /* The text may be a job's (SPANK: CUDA_VISIBLE_DEVICES): no open or
     * huge range ever reaches the set, and the copy stops at the array's end. */
    const int max = (int)(sizeof r->req.allowed_gpus / sizeof r->req.allowed_gpus[0]);
    const char *why = NULL;
    char shown[64];
    gpurun_short_text(shown, sizeof shown, gpulist);
    int rc = GPURUN_OK;
    if (!strncmp(gpulist, "GPU-", 4) || !strncmp(gpulist, "MIG-", 4) || strstr(gpulist, ",GPU-") ||
        strstr(gpulist, ",MIG-"))
        rc = fail(err, GPURUN_ERR_CONFIG,
                  "request: allowed GPUs '%s' names GPUs by UUID (GPU-..., MIG-...): only GPU indexes (\"0,2\") can "
                  "be placed",
                  shown);
    else if (gpurun_bitmap_list_parse(set, gpulist, GPURUN_MAX_GPU_INDEX, &why) < 0)
        rc = fail(err, GPURUN_ERR_CONFIG,
                  "request: allowed GPUs '%s' is not a list of GPU indexes (\"0,2\", each below %d): %s", shown,
                  GPURUN_MAX_GPU_INDEX, why);
    else if (hwloc_bitmap_weight(set) > max)
        rc = fail(err, GPURUN_ERR_CONFIG, "request: allowed GPUs '%s' names %d GPUs: at most %d can be", shown,
                  hwloc_bitmap_weight(set), max);
    else {
        int n = 0;
        for (int i = hwloc_bitmap_first(set); i >= 0 && n < max; i = hwloc_bitmap_next(set, i))
            r->req.allowed_gpus[n++] = i;
        r->req.nallowed_gpus = n;
        ok(err);
    }
    hwloc_bitmap_free(set);
    return rc;
}

/* --- plan ---------------------------------------------------------------- */

int gpurun_placement_create(const gpurun_topology_t *t, const gpurun_plan_request_t *r, gpurun_placement_t **pp,
                            gpurun_error_t *err)
{
    gpurun_error_t local;
    gpurun_error_t *e = err ? err : &local;
    if (!t || !r || !pp)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_placement_create: topology, request or placementp is NULL");
    *pp = NULL;
    gpurun_placement_t *p = calloc(1, sizeof *p);
    if (!p)
        return fail(err, GPURUN_ERR_ENV, "gpurun_placement_create: out of memory");
    /* The plan keeps a copy of the request: it gets its own allowed set, so
     * that the request may change or go once planned. */
    gpurun_request_t req = r->req;
    if (r->allowed_cpus) {
        p->allowed_cpus = hwloc_bitmap_dup(r->allowed_cpus);
        req.allowed_cpus = p->allowed_cpus;
    }
    if (gpurun_plan_create(t->topo, &req, &p->plan, e) < 0) {
        hwloc_bitmap_free(p->allowed_cpus);
        free(p);
        return fail_code(e);
    }
    *pp = p;
    return ok(err);
}

void gpurun_placement_destroy(gpurun_placement_t *p)
{
    if (!p)
        return;
    gpurun_plan_destroy(p->plan);
    hwloc_bitmap_free(p->allowed_cpus);
    free(p);
}

int gpurun_placement_json(const gpurun_placement_t *p, unsigned flags, char **jsonp, gpurun_error_t *err)
{
    if (!p || !jsonp)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_placement_json: placement or jsonp is NULL");
    *jsonp = NULL;
    if (flags & ~GPURUN_JSON_INDENT)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_placement_json: unknown flags 0x%x", flags);
    return dump_json(gpurun_plan_json(p->plan), flags, jsonp, err);
}

const gpurun_plan_t *gpurun_placement_internal(const gpurun_placement_t *p)
{
    return p ? p->plan : NULL;
}

int gpurun_placement_ranks(const gpurun_placement_t *p)
{
    return p ? p->plan->nranks : -1;
}

int gpurun_placement_ranks_per_node(const gpurun_placement_t *p)
{
    return p ? p->plan->req.ranks_per_node : -1;
}

size_t gpurun_placement_warnings(const gpurun_placement_t *p)
{
    return p ? p->plan->nwarnings : 0;
}

const char *gpurun_placement_warning(const gpurun_placement_t *p, size_t i)
{
    return p && i < p->plan->nwarnings ? p->plan->warnings[i] : NULL;
}

/* --- one rank's binding -------------------------------------------------- */

void gpurun_binding_destroy(gpurun_binding_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nenv; i++) {
        free(b->names[i]);
        free(b->values[i]);
    }
    free(b->names);
    free(b->values);
    free(b->cpus);
    free(b->mems);
    free(b);
}

int gpurun_binding_get(const gpurun_placement_t *p, int node, int local_rank, gpurun_binding_t **bp,
                       gpurun_error_t *err)
{
    if (!p || !bp)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_binding_get: placement or bindingp is NULL");
    *bp = NULL;
    const gpurun_plan_t *plan = p->plan;
    int rpn = plan->req.ranks_per_node;
    if (node < 0 || node >= plan->req.nodes || local_rank < 0 || local_rank >= rpn)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_binding_get: no local rank %d on node %d (the plan has %d node%s x %d rank%s)",
                    local_rank, node, plan->req.nodes, plan->req.nodes == 1 ? "" : "s", rpn, rpn == 1 ? "" : "s");
    const gpurun_rank_plan_t *rk = NULL;
    for (int i = 0; i < plan->nranks && !rk; i++)
        if (plan->ranks[i].node == node && plan->ranks[i].local_rank == local_rank)
            rk = &plan->ranks[i];
    if (!rk)
        return fail(err, GPURUN_ERR_ENV, "gpurun_binding_get: the plan has no local rank %d on node %d", local_rank,
                    node);
    gpurun_binding_t *b = calloc(1, sizeof *b);
    if (!b)
        return fail(err, GPURUN_ERR_ENV, "gpurun_binding_get: out of memory");
    b->rank = rk->rank;
    b->threads = rk->threads;
    b->cpus = hwloc_bitmap_iszero(rk->cpuset) ? strdup("") : gpurun_cpuset_list(rk->cpuset);
    b->mems = hwloc_bitmap_iszero(rk->nodeset) ? strdup("") : gpurun_cpuset_list(rk->nodeset);
    size_t n = json_object_size(rk->env);
    b->names = calloc(n ? n : 1, sizeof *b->names);
    b->values = calloc(n ? n : 1, sizeof *b->values);
    bool oom = !b->cpus || !b->mems || !b->names || !b->values;
    const char *key;
    json_t *v;
    json_object_foreach(rk->env, key, v) {
        if (oom)
            break;
        b->names[b->nenv] = strdup(key);
        b->values[b->nenv] = strdup(json_is_string(v) ? json_string_value(v) : "");
        oom = !b->names[b->nenv] || !b->values[b->nenv];
        b->nenv++;
    }
    if (oom) {
        gpurun_binding_destroy(b);
        return fail(err, GPURUN_ERR_ENV, "gpurun_binding_get: out of memory");
    }
    *bp = b;
    return ok(err);
}

int gpurun_binding_rank(const gpurun_binding_t *b)
{
    return b ? b->rank : -1;
}

int gpurun_binding_threads(const gpurun_binding_t *b)
{
    return b ? b->threads : -1;
}

const char *gpurun_binding_cpus(const gpurun_binding_t *b)
{
    return b ? b->cpus : NULL;
}

const char *gpurun_binding_mems(const gpurun_binding_t *b)
{
    return b ? b->mems : NULL;
}

size_t gpurun_binding_env_count(const gpurun_binding_t *b)
{
    return b ? b->nenv : 0;
}

const char *gpurun_binding_env(const gpurun_binding_t *b, size_t i, const char **value)
{
    if (!b || i >= b->nenv)
        return NULL;
    if (value)
        *value = b->values[i];
    return b->names[i];
}

const char *gpurun_binding_getenv(const gpurun_binding_t *b, const char *name)
{
    for (size_t i = 0; b && name && i < b->nenv; i++)
        if (!strcmp(b->names[i], name))
            return b->values[i];
    return NULL;
}

/* The kernel's calls, as the rank step makes them (launcher/run/rank.c). */
#define LIB_MPOL_DEFAULT 0
#define LIB_MPOL_BIND 2
#define LIB_NODEMASK_WORDS 64 /* 4096 NUMA nodes, GPURUN_TOPO_MAX_NUMA_INDEX */

int gpurun_binding_apply(const gpurun_binding_t *b, pid_t pid, gpurun_error_t *err)
{
    if (!b || pid < 0)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_binding_apply: binding is NULL or pid negative");
    if (!*b->cpus)
        return ok(err); /* bind = none */
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), mems = hwloc_bitmap_alloc();
    int rc = GPURUN_OK;
    if (!cpus || !mems || hwloc_bitmap_list_sscanf(cpus, b->cpus) < 0 ||
        (*b->mems && hwloc_bitmap_list_sscanf(mems, b->mems) < 0)) {
        rc = fail(err, GPURUN_ERR_ENV, "gpurun_binding_apply: out of memory");
        goto out;
    }
    int last = hwloc_bitmap_last(cpus);
    size_t size = CPU_ALLOC_SIZE(last + 1);
    cpu_set_t *set = CPU_ALLOC(last + 1);
    if (!set) {
        rc = fail(err, GPURUN_ERR_ENV, "gpurun_binding_apply: out of memory");
        goto out;
    }
    CPU_ZERO_S(size, set);
    int i;
    hwloc_bitmap_foreach_begin(i, cpus) CPU_SET_S((size_t)i, size, set);
    hwloc_bitmap_foreach_end();
    int r = sched_setaffinity(pid, size, set);
    CPU_FREE(set);
    if (r < 0) {
        char who[32] = "this thread";
        if (pid)
            snprintf(who, sizeof who, "process %d", (int)pid);
        rc = fail(err, GPURUN_ERR_ENV, "cannot bind %s to cpus %s: %s", who, b->cpus, strerror(errno));
        goto out;
    }
    if (pid == 0 && *b->mems) {
        unsigned long mask[LIB_NODEMASK_WORDS] = {0};
        hwloc_bitmap_foreach_begin(i, mems) if (i < LIB_NODEMASK_WORDS * 64) mask[i / 64] |= 1UL << (i % 64);
        hwloc_bitmap_foreach_end();
        if (syscall(SYS_set_mempolicy, LIB_MPOL_BIND, mask, (unsigned long)LIB_NODEMASK_WORDS * 64) < 0) {
            rc = fail(err, GPURUN_ERR_ENV, "cannot bind memory to NUMA %s: %s", b->mems, strerror(errno));
            goto out;
        }
    }
    ok(err);
out:
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(mems);
    return rc;
}

/* Mems_allowed_list of /proc/PID/status: another process's memory policy
 * is not readable, its cpuset's memory nodes are. */
static char *mems_allowed(pid_t pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    char *out = NULL;
    if (!f)
        return NULL;
    while (!out && fgets(line, sizeof line, f))
        if (!strncmp(line, "Mems_allowed_list:", 18)) {
            char *v = line + 18;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = '\0';
            out = strdup(v);
        }
    fclose(f);
    return out;
}

int gpurun_binding_read(pid_t pid, char **cpusp, char **memsp, gpurun_error_t *err)
{
    if (pid < 0)
        return fail(err, GPURUN_ERR_CONFIG, "gpurun_binding_read: pid is negative");
    if (cpusp)
        *cpusp = NULL;
    if (memsp)
        *memsp = NULL;
    char *cpus = NULL, *mems = NULL;
    hwloc_bitmap_t got = hwloc_bitmap_alloc();
    if (!got)
        return fail(err, GPURUN_ERR_ENV, "gpurun_binding_read: out of memory");
    int rc = -1;
    for (int n = 1024; n <= 1 << 20; n *= 2) {
        size_t size = CPU_ALLOC_SIZE(n);
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            break;
        rc = sched_getaffinity(pid, size, set);
        int saved = errno;
        if (rc == 0)
            for (int i = 0; i < n; i++)
                if (CPU_ISSET_S((size_t)i, size, set))
                    hwloc_bitmap_set(got, (unsigned)i);
        CPU_FREE(set);
        errno = saved;
        if (rc == 0 || errno != EINVAL)
            break;
    }
    if (rc < 0) {
        int e = errno;
        hwloc_bitmap_free(got);
        return fail(err, GPURUN_ERR_ENV, "cannot read the cpus of %s%d: %s", pid ? "process " : "thread ",
                    pid ? (int)pid : 0, strerror(e));
    }
    cpus = gpurun_cpuset_list(got);
    if (pid == 0) {
        unsigned long mask[LIB_NODEMASK_WORDS] = {0};
        int mode = LIB_MPOL_DEFAULT;
        hwloc_bitmap_zero(got);
        if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)LIB_NODEMASK_WORDS * 64, NULL, 0UL) == 0 &&
            mode == LIB_MPOL_BIND)
            for (int i = 0; i < LIB_NODEMASK_WORDS * 64; i++)
                if (mask[i / 64] & (1UL << (i % 64)))
                    hwloc_bitmap_set(got, (unsigned)i);
        mems = hwloc_bitmap_iszero(got) ? strdup("") : gpurun_cpuset_list(got);
    } else {
        mems = mems_allowed(pid);
        if (!mems)
            mems = strdup("");
    }
    hwloc_bitmap_free(got);
    if (!cpus || !mems) {
        free(cpus);
        free(mems);
        return fail(err, GPURUN_ERR_ENV, "gpurun_binding_read: out of memory");
    }
    if (cpusp)
        *cpusp = cpus;
    else
        free(cpus);
    if (memsp)
        *memsp = mems;
    else
        free(mems);
    return ok(err);
}
