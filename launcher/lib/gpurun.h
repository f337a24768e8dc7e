/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_H
#define GPURUN_H

/* libgpurun: gpurun's binding planner as a library (libgpurun(3)).
 *
 * Load a node's topology (the live node or an hwloc XML export), describe
 * it, plan a request into the per-rank binding `gpurun plan --json` prints,
 * take one local rank's binding and environment, apply it to a process and
 * read back what a process really got.
 *
 * Every function that can fail returns 0 or a GPURUN_ERR_* code and then
 * fills the caller's gpurun_error_t (when not NULL) with the code and a
 * message.  Nothing prints, exits or keeps global state; handles are
 * opaque, and separate handles may be used from separate threads. */

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API this header describes: raised when a function or key is added
 * (additions only; the soname changes when the ABI does, see libgpurun(3)). */
#define GPURUN_API_VERSION 2

/* Which API the library that is loaded offers (GPURUN_API_VERSION at its build). */
int gpurun_api_version(void);

enum gpurun_errcode {
    GPURUN_OK = 0,
    GPURUN_ERR_CONFIG = 2, /* malformed request or XML file (gpurun's exit 2) */
    GPURUN_ERR_ENV = 3,    /* the node cannot meet the request, or the system refused (exit 3) */
};

/* The caller's error buffer; the same layout gpurun's own modules fill. */
#ifndef GPURUN_ERROR_T_DEFINED
#define GPURUN_ERROR_T_DEFINED
typedef struct gpurun_error {
    int code;        /* a GPURUN_ERR_* value */
    char text[2048]; /* one or more sentences, no trailing newline */
} gpurun_error_t;
#endif

typedef struct gpurun_topology gpurun_topology_t;
typedef struct gpurun_plan_request gpurun_plan_request_t;
typedef struct gpurun_placement gpurun_placement_t;
typedef struct gpurun_binding gpurun_binding_t;

/* --- topology ------------------------------------------------------------ */

/* Honour $GPURUN_TOPOLOGY as gpurun does when xml is NULL (an export that
 * stands in for the live node; %h is this host's short name). */
#define GPURUN_TOPOLOGY_FROM_ENV 0x1u

/* xml: an hwloc XML export, or NULL for the live node. */
int gpurun_topology_load(const char *xml, unsigned flags, gpurun_topology_t **topop, gpurun_error_t *err);
void gpurun_topology_destroy(gpurun_topology_t *topo);

/* Write it as hwloc XML (to plan for this node elsewhere); the file is
 * replaced whole or not at all. */
int gpurun_topology_export(const gpurun_topology_t *topo, const char *path, gpurun_error_t *err);

enum gpurun_topology_count {
    GPURUN_COUNT_PACKAGES,
    GPURUN_COUNT_NUMA,
    GPURUN_COUNT_CORES,
    GPURUN_COUNT_PUS,
    GPURUN_COUNT_GPUS,
    GPURUN_COUNT_NICS, /* high-speed NICs, the ones plans use */
};
/* How many of a kind; -1 for an unknown kind. */
int gpurun_topology_count(const gpurun_topology_t *topo, enum gpurun_topology_count what);

/* JSON documents are returned in *jsonp, NUL-terminated; free() them. */
#define GPURUN_JSON_INDENT 0x1u /* two-space indentation, as gpurun prints */
#define GPURUN_JSON_FULL 0x2u   /* topology: also NUMA details, Ethernet, affinity matrix */

/* `gpurun topo --json`: {"gpurun_topo": 1, "topology": {...}}; without
 * GPURUN_JSON_FULL the "topology" object of a plan. */
int gpurun_topology_json(const gpurun_topology_t *topo, unsigned flags, char **jsonp, gpurun_error_t *err);

/* --- request ------------------------------------------------------------- */

/* A new request holds gpurun's defaults: 1 node, one rank per GPU (per NUMA
 * domain without GPUs), 1 GPU per rank where there are GPUs, closest
 * binding, no SMT, no oversubscription, the whole node allowed. */
int gpurun_plan_request_create(gpurun_plan_request_t **reqp, gpurun_error_t *err);
void gpurun_plan_request_destroy(gpurun_plan_request_t *req);

enum gpurun_request_key {
    GPURUN_REQ_NODES = 1,        /* >= 1 */
    GPURUN_REQ_RANKS_PER_NODE,   /* >= 1, or GPURUN_REQ_AUTO */
    GPURUN_REQ_GPUS_PER_RANK,    /* >= 0, or GPURUN_REQ_AUTO */
    GPURUN_REQ_THREADS_PER_RANK, /* >= 1, or GPURUN_REQ_AUTO */
    GPURUN_REQ_SMT,              /* 0 or 1 */
    GPURUN_REQ_OVERSUBSCRIBE,    /* 0 or 1 */
    GPURUN_REQ_BIND,             /* GPURUN_REQ_BIND_CLOSEST or _NONE */
    GPURUN_REQ_GPU_VISIBILITY,   /* GPURUN_REQ_GPUS_ISOLATE or _SHARED */
    GPURUN_REQ_CPU_LOCALITY,     /* GPURUN_REQ_CPUS_PACKAGE or _GPU (API 2) */
};
#define GPURUN_REQ_AUTO (-1) /* let the planner choose */
#define GPURUN_REQ_BIND_CLOSEST 0  /* cores, memory, GPUs and NICs by locality */
#define GPURUN_REQ_BIND_NONE 1     /* GPUs and NICs only */
#define GPURUN_REQ_GPUS_ISOLATE 0  /* each rank sees its own GPUs only */
#define GPURUN_REQ_GPUS_SHARED 1   /* every rank sees all the node's GPUs */
#define GPURUN_REQ_CPUS_PACKAGE 0  /* GPU ranks also share out their package's NUMA nodes without GPUs */
#define GPURUN_REQ_CPUS_GPU 1      /* GPU ranks get cores near their GPUs only */

/* GPURUN_ERR_CONFIG for an unknown key or a value out of range. */
int gpurun_plan_request_set(gpurun_plan_request_t *req, enum gpurun_request_key key, int value, gpurun_error_t *err);
/* Set several keys from a JSON object of the keys of the "request" gpurun
 * keeps in run folders ({"ranks_per_node": 4, "bind": "none", ...}); keys
 * not named keep their values. */
int gpurun_plan_request_set_json(gpurun_plan_request_t *req, const char *json, gpurun_error_t *err);
/* What a resource manager gave the job on this node: only these PUs (hwloc
 * list form, "0-7,16-23"; NULL: all) and only GPUs of these runtime indexes
 * ("0,2"; NULL: all).  Plans never bind outside them. */
int gpurun_plan_request_allow_cpus(gpurun_plan_request_t *req, const char *cpulist, gpurun_error_t *err);
int gpurun_plan_request_allow_gpus(gpurun_plan_request_t *req, const char *gpulist, gpurun_error_t *err);

/* --- plan ---------------------------------------------------------------- */

/* Plan a request for a topology.  The placement refers to topo, which must
 * outlive it.  GPURUN_ERR_ENV when the topology cannot meet the request. */
int gpurun_placement_create(const gpurun_topology_t *topo, const gpurun_plan_request_t *req,
                            gpurun_placement_t **placementp, gpurun_error_t *err);
void gpurun_placement_destroy(gpurun_placement_t *placement);

/* The version-1 document of `gpurun plan --json` (SPEC §5). */
int gpurun_placement_json(const gpurun_placement_t *placement, unsigned flags, char **jsonp, gpurun_error_t *err);
int gpurun_placement_ranks(const gpurun_placement_t *placement);         /* on all nodes */
int gpurun_placement_ranks_per_node(const gpurun_placement_t *placement);
size_t gpurun_placement_warnings(const gpurun_placement_t *placement);
const char *gpurun_placement_warning(const gpurun_placement_t *placement, size_t i); /* NULL past the end */

/* --- one rank's binding -------------------------------------------------- */

/* The binding of local rank `local_rank` of node `node` (both from 0).
 * The binding refers to the placement, which must outlive it. */
int gpurun_binding_get(const gpurun_placement_t *placement, int node, int local_rank, gpurun_binding_t **bindingp,
                       gpurun_error_t *err);
void gpurun_binding_destroy(gpurun_binding_t *binding);

int gpurun_binding_rank(const gpurun_binding_t *b);   /* its global rank */
int gpurun_binding_threads(const gpurun_binding_t *b);
/* PU and NUMA OS indexes in hwloc list form; "" when the request binds none. */
const char *gpurun_binding_cpus(const gpurun_binding_t *b);
const char *gpurun_binding_mems(const gpurun_binding_t *b);
/* The variables gpurun exports for the rank, in export order. */
size_t gpurun_binding_env_count(const gpurun_binding_t *b);
/* NULL past the end; *value (when not NULL) gets the value. */
const char *gpurun_binding_env(const gpurun_binding_t *b, size_t i, const char **value);
/* The value of one variable, NULL when the rank gets none. */
const char *gpurun_binding_getenv(const gpurun_binding_t *b, const char *name);

/* Bind process pid (0: the calling thread, which its children inherit) to
 * the binding's cpus and, for pid 0 only (Linux sets another process's
 * memory policy nowhere), its memory.  A binding of none is a no-op.
 * GPURUN_ERR_ENV with the kernel's reason when refused. */
int gpurun_binding_apply(const gpurun_binding_t *b, pid_t pid, gpurun_error_t *err);

/* What process pid (0: the calling thread) really has: its cpus (hwloc
 * list form) in *cpusp and, for pid 0, the NUMA nodes its memory is bound
 * to in *memsp ("" when not bound; for another pid, its Mems_allowed).
 * Either pointer may be NULL; free() what is returned. */
int gpurun_binding_read(pid_t pid, char **cpusp, char **memsp, gpurun_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
