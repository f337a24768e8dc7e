/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_GPUDIRECT_H
#define GPURUN_GPUDIRECT_H

/* GPUDirect RDMA (job key `gpudirect = auto | on | off`): whether this node
 * has the pieces (peer-memory kernel module, RDMA devices with an active
 * port, unlimited locked memory, a CUDA- or ROCm-aware Open MPI or UCX;
 * GDRCopy is reported but optional), then, per rank, whether the path from
 * its GPU to its NIC makes it pay (PIX/PXB: on; PHB/NODE/SYS: through the
 * CPU, off in auto).  The probe reads files under a root folder ("/", or a
 * fake sysfs/proc tree for tests) and runs ompi_info/ucx_info from PATH,
 * never through a shell. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include <jansson.h>

#include "error.h"
#include "job.h"
#include "plan.h"
#include "topology.h"

#include "tool.h" /* gpurun_tool_run(): the probes run their tools through it */

/* --- the node's pieces -------------------------------------------------------- */

struct gpurun_rdma_port {
    char device[64];  /* mlx5_0, rdmap16s27, hfi1_0 */
    int port;         /* 1 */
    char state[32];   /* "ACTIVE", "DOWN", "INIT"... from ports/N/state */
    bool active;
};

/* A tristate: what a tool said, or that no tool could tell. */
enum gpurun_tristate { GPURUN_UNKNOWN = -1, GPURUN_NO = 0, GPURUN_YES = 1 };

typedef struct gpurun_gdr_probe {
    char *root;                   /* "/" or the fake root */
    char peermem[32];             /* "nvidia_peermem", "nv_peer_mem"; "" when none is loaded */
    bool amdgpu;                  /* amdgpu loaded: ROCm's peer-to-peer DMA for AMD GPUs */
    bool gdrcopy;                 /* /dev/gdrdrv (optional: small-message latency) */
    struct gpurun_rdma_port *ports;
    int nports, nactive;
    bool memlock_unlimited;
    unsigned long long memlock_bytes; /* when limited */
    /* Open MPI, from `ompi_info --parsable --all` */
    bool ompi;                    /* ompi_info ran */
    char ompi_version[64];
    enum gpurun_tristate ompi_cuda, ompi_rocm, ompi_pml_ucx;
    /* UCX, from `ucx_info -v` and `ucx_info -d` */
    bool ucx;
    char ucx_version[64];
    enum gpurun_tristate ucx_cuda, ucx_rocm, ucx_gdr_copy;
} gpurun_gdr_probe_t;

struct gpurun_gdr_probe_opts {
    const char *root;             /* NULL: "/" */
    const struct rlimit *memlock; /* NULL: ROOT/proc/self/limits below a fake root, else
                                     getrlimit(RLIMIT_MEMLOCK); tests pass their own */
    double tool_timeout_s;        /* <= 0: 10 s per tool */
    bool no_tools;                /* skip ompi_info/ucx_info (every tool answer stays unknown) */
};

/* Never fails for a missing piece (that is what it reports); -1 only when
 * the root folder itself cannot be read. */
int gpurun_gdr_probe(const struct gpurun_gdr_probe_opts *opts, gpurun_gdr_probe_t **probep, gpurun_error_t *err);
void gpurun_gdr_probe_destroy(gpurun_gdr_probe_t *probe);
/* {"root", "peer_memory", "amdgpu", "gdrcopy", "rdma_ports": [...], "memlock", "open_mpi", "ucx"} */
json_t *gpurun_gdr_probe_json(const gpurun_gdr_probe_t *probe);

/* What a GPU of `vendor` ("nvidia", "amd") lacks on this node for GPUDirect
 * RDMA, as "; "-separated sentences each naming its fix, into buf; returns
 * how many pieces are missing (0: the node can do it). */
int gpurun_gdr_node_missing(const gpurun_gdr_probe_t *probe, const char *vendor, char *buf, size_t len);

/* --- per-rank decisions -------------------------------------------------------- */

struct gpurun_gdr_rank {
    int rank;
    bool on;
    bool has_gpu;
    const char *level;   /* NCCL_NET_GDR_LEVEL: PIX, PXB, PHB, SYS when on; LOC when off; NULL without a GPU */
    char why[384];       /* one sentence */
};

typedef struct gpurun_gdr_decision {
    enum gpurun_gpudirect mode;
    int nranks, non;
    struct gpurun_gdr_rank *ranks;
    json_t *pieces;      /* the probe, as gpurun_gdr_probe_json() */
    char missing[1024];  /* node-level pieces missing for the job's GPUs; "" when none */
} gpurun_gdr_decision_t;

/* Decide for every rank of the plan.  mode = on on a node or for a rank
 * that cannot do it is GPURUN_EXIT_ENV with everything that is missing;
 * auto never fails; off turns every rank off.  probe may be NULL (not
 * probed): GPU ranks are then off, and `on` fails. */
int gpurun_gdr_decide(const gpurun_gdr_probe_t *probe, const gpurun_plan_t *plan, enum gpurun_gpudirect mode,
                      gpurun_gdr_decision_t **decp, gpurun_error_t *err);
void gpurun_gdr_decision_destroy(gpurun_gdr_decision_t *dec);

/* Add the decision to every GPU rank's environment in the plan:
 * UCX_IB_GPU_DIRECT_RDMA=yes|no and NCCL_NET_GDR_LEVEL per rank; when any
 * rank is on, OMPI_MCA_pml=ucx on every rank (one pml for the whole job;
 * none when ompi_info showed no UCX pml); and, on the ranks that are on,
 * `extra` (the template's env {}, NULL: none).  UCX_NET_DEVICES and
 * NCCL_IB_HCA stay as planned; CPU-only ranks get nothing. */
void gpurun_gdr_apply(const gpurun_gdr_decision_t *dec, const gpurun_gdr_probe_t *probe, gpurun_plan_t *plan,
                      const struct gpurun_kvlist *extra);

/* The record's "gpudirect" object: {"mode", "on_ranks", "ranks": [{"rank",
 * "on", "level", "why"}], "missing", "pieces"}. */
json_t *gpurun_gdr_decision_json(const gpurun_gdr_decision_t *dec);

/* NCCL's name for a GPU-NIC distance (NODE is PHB to NCCL). */
const char *gpurun_gdr_nccl_level(enum gpurun_affinity a);

/* "auto", "on", "off" and back (anything else is auto). */
const char *gpurun_gdr_mode_name(enum gpurun_gpudirect m);
enum gpurun_gpudirect gpurun_gdr_mode_from_name(const char *s);

/* All of it for one plan, as `gpurun run` (and the rank step planning
 * another host) needs it: probe this node once (*probep caches it; not at
 * all when mode is off or no rank has a GPU), decide, add the environment
 * to the plan, and give the record's object in *recordp (NULL: not
 * wanted).  -1 with GPURUN_EXIT_ENV when gpudirect = on cannot be met. */
int gpurun_gdr_setup(gpurun_plan_t *plan, enum gpurun_gpudirect mode, const struct gpurun_kvlist *extra,
                     gpurun_gdr_probe_t **probep, json_t **recordp, gpurun_error_t *err);

#endif
